// The message of loading a model directory on the CPU backend ("" if it loaded), and its error
// kind: what the load-error tests (test_load_errors.cpp, test_gemma_configs.cpp) assert on.
#pragma once

#include <string>

#include "backend/backend.h"
#include "models/model.h"
#include "tessera/error.h"

namespace tessera::testing {

inline std::string load_error(const std::string& dir, ErrorKind* kind = nullptr) {
  auto be = make_cpu_backend();
  try {
    ModelDir d(dir);
    load_model(d, *be, {});
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "";
}

}  // namespace tessera::testing
