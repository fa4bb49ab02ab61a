// A GGUF file's tokenizer.ggml.* metadata (tokenizer/gguf_tokenizer.cpp: the SentencePiece and
// GPT-2 BPE vocabularies, scores, token types, merges, pre-tokenizer names, special ids), then
// encode and decode with the tokenizer it builds.
#include <vector>

#include "fuzz_common.h"
#include "io/gguf.h"
#include "tessera/error.h"
#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = tessera::fuzz::scratch_dir() + "/vocab.gguf";
  tessera::fuzz::write_file(path, data, size);
  std::unique_ptr<tessera::Tokenizer> tok;
  try {
    tessera::GgufFile f(path);
    tessera::GgufSpecialTokens special;
    tok = tessera::tokenizer_from_gguf(f, &special);
  } catch (const tessera::Error&) {
    return 0;
  }
  for (const char* text :
       {"Hello world  \n\tx", "caf\xc3\xa9 \xe4\xb8\xad 12345 don't", "<s></s>"}) {
    for (bool add : {false, true}) {
      try {
        const std::vector<int32_t> ids = tok->encode(text, add);
        (void)tok->decode(ids, false);
        (void)tok->decode(ids, true);
      } catch (const tessera::Error&) {
      }
    }
  }
  std::vector<int32_t> all;
  for (int32_t id = 0; id < std::min(tok->vocab_size(), 256); ++id) {
    (void)tok->token_to_id(tok->id_to_token(id));
    all.push_back(id);
  }
  try {
    (void)tok->decode(all, false);
  } catch (const tessera::Error&) {
  }
  return 0;
}
