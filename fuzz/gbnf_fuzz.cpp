// A GBNF grammar (grammar/gbnf_parser.cpp, llama.cpp's format), compiled and walked.
#include "grammar_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzz::compile_constraint(tessera::OutputConstraint::Kind::grammar, data, size);
  return 0;
}
