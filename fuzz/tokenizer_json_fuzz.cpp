// tokenizer.json (tokenizer/tokenizer_load.cpp and the components it builds: model, normalizer,
// pre-tokenizer, post-processor, decoder, added tokens), then encode and decode with whatever
// loaded: a tokenizer that loads must encode and decode anything without failing other than
// with tessera::Error (invalid UTF-8 input is one).
#include <vector>

#include "fuzz_common.h"
#include "tessera/error.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = tessera::fuzz::scratch_subdir("tokenizer") + "/tokenizer.json";
  tessera::fuzz::write_file(path, data, size);
  std::unique_ptr<tessera::Tokenizer> tok;
  try {
    tok = tessera::Tokenizer::load(path);
  } catch (const tessera::Error&) {
    return 0;
  }
  static const char* const kTexts[] = {"Hello world",
                                       "  two  spaces\tand\nlines\n\n",
                                       "caf\xc3\xa9 na\xc3\xafve \xe4\xb8\xad\xe6\x96\x87",
                                       "<s>special</s><|endoftext|><bos><eos>",
                                       "\xf0\x9f\x98\x80 123 4567 don't",
                                       ""};
  for (const char* text : kTexts) {
    for (bool special : {false, true}) {
      try {
        const std::vector<int32_t> ids = tok->encode(text, special);
        (void)tok->decode(ids, false);
        (void)tok->decode(ids, true);
        tessera::IncrementalDetokenizer detok(*tok, true);
        for (int32_t id : ids) (void)detok.push(id);
        (void)detok.flush();
      } catch (const tessera::Error&) {
      }
    }
  }
  // Every id of a small vocabulary (the first 256 of a large one), one at a time and together.
  const int n = std::min(tok->vocab_size(), 256);
  std::vector<int32_t> all;
  for (int32_t id = 0; id < n; ++id) {
    const std::string t = tok->id_to_token(id);
    (void)tok->token_to_id(t);
    (void)tok->is_special(id);
    all.push_back(id);
  }
  try {
    (void)tok->decode(all, false);
    (void)tok->decode(all, true);
  } catch (const tessera::Error&) {
  }
  (void)tok->bos_token();
  (void)tok->eos_token();
  return 0;
}
