// The vocabulary-only GGUF files of scripts/fixtures/make_gguf_tokenizer_fixtures.py, written at
// test time from a tokenizer.json directory by the same steps (that script's docstring says what
// they mirror in llama.cpp's converter). The full-vocabulary files are too large to commit; the
// tests check what this writes against the digests the script recorded
// (tests/fixtures/tokenizer/gguf/digests.json) and against the committed tessera_tiny_en.gguf.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::test {

struct GgufVocabSpec {
  std::string dir;                    // holds tokenizer.json and tokenizer_config.json
  std::string arch;                   // general.architecture
  std::optional<int64_t> vocab_size;  // config.json's vocab_size (none: the tokenizer's size)
};
// The script's MODELS: gemma3, llama3, qwen3, tessera_tiny_en.
GgufVocabSpec gguf_vocab_spec(const std::string& name);

struct GgufKeyDigest {
  std::string key;
  uint64_t fnv1a64;
  size_t bytes;  // the key's raw bytes: name, type and value as stored
};
struct GgufVocabFile {
  std::string bytes;  // the whole file
  std::vector<GgufKeyDigest> keys;
};
// Throws std::runtime_error for a tokenizer.json the script would not convert.
GgufVocabFile write_gguf_vocab(const GgufVocabSpec& spec);

uint64_t fnv1a64(const std::string& bytes);

}  // namespace tessera::test
