// Programmer-invariant checks (abort with file:line) and helpers that throw tessera::Error.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tessera/error.h"

#define TS_ASSERT(cond)                                                                          \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "tessera: internal error at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)

namespace tessera {

[[noreturn]] inline void fail(ErrorKind kind, const std::string& msg) {
  throw Error(kind, msg);
}
[[noreturn]] inline void fail_model(const std::string& msg) {
  fail(ErrorKind::invalid_model, msg);
}
[[noreturn]] inline void fail_arg(const std::string& msg) {
  fail(ErrorKind::invalid_argument, msg);
}

}  // namespace tessera
