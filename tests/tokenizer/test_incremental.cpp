// IncrementalDetokenizer: text appears only once it is final, and the pieces add up to decode().
#include <gtest/gtest.h>

#include "tokenizer/mini_tokenizer.h"
#include "tokenizer/tokenizer_fixtures.h"

namespace tessera::test {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

// Gemma-like: ▁ decodes to a space, byte fallback, fuse. ids: a=0 ▁b=1, <0xNN> = NN + 2.
MiniTokenizer gemma_like() {
  MiniTokenizer m;
  m.vocab = {"a", "\u2581b"};
  for (const std::string& b : byte_tokens()) m.vocab.push_back(b);
  m.decoder = {
      {"type", "Sequence"},
      {"decoders",
       json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}}})}};
  return m;
}

std::vector<std::string> stream(const Tokenizer& t, const Ids& ids, bool skip) {
  IncrementalDetokenizer d(t, skip);
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(d.push(id));
  out.push_back(d.flush());
  return out;
}

TEST(IncrementalDetokenizer, WaitsForCompleteUtf8FromByteTokens) {
  auto t = gemma_like().load();
  Ids ids = {0, 0xE4 + 2, 0xB8 + 2, 0xAD + 2, 1};  // a 中 ▁b
  EXPECT_EQ(stream(*t, ids, false), (std::vector<std::string>{"a", "", "", "", "\u4e2d b", ""}));
}

TEST(IncrementalDetokenizer, HoldsByteRunsThatMayStillTurnInvalid) {
  auto t = gemma_like().load();
  // <0x41> alone is "A", but with the <0xE4> after it the run is invalid: "\uFFFD\uFFFD".
  Ids ids = {0x41 + 2, 0xE4 + 2, 0};
  std::string all;
  for (const std::string& s : stream(*t, ids, false)) all += s;
  EXPECT_EQ(all, t->decode(ids, false));
  EXPECT_EQ(all, "\ufffd\ufffda");
  // Ending on an incomplete sequence: flush() gives the rest.
  EXPECT_EQ(stream(*t, {0, 0xE4 + 2}, false), (std::vector<std::string>{"a", "", "\ufffd"}));
}

TEST(IncrementalDetokenizer, FirstTokenRulesOfTheDecoder) {
  MiniTokenizer m;
  m.vocab = {"\u2581a", "\u2581b"};
  int s = m.add_token("<s>", true);
  m.decoder = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}};
  auto t = m.load();
  EXPECT_EQ(stream(*t, {0, 1, 1}, false), (std::vector<std::string>{"a", " b", " b", ""}));
  // A skipped special token at the start must not make "▁b" lose its space later on.
  EXPECT_EQ(stream(*t, {s, 0, s, 1}, true), (std::vector<std::string>{"", "a", "", " b", ""}));
  EXPECT_EQ(t->decode(Ids{s, 0, s, 1}, true), "a b");
  std::string all;
  for (const std::string& x : stream(*t, {s, 0, s, 1}, false)) all += x;
  EXPECT_EQ(all, t->decode(Ids{s, 0, s, 1}, false));
}

TEST(IncrementalDetokenizer, LongStreamOfARealTokenizer) {
  for (const char* name : {"gemma3", "llama3", "qwen3"}) {
    const Tokenizer& t = real_tokenizer(name);
    std::string text;
    for (const std::string& line : corpus()) text += line + "\n";
    Ids ids = t.encode(text, true);
    ASSERT_GT(ids.size(), 5000u);  // long enough to trim the kept ids
    IncrementalDetokenizer d(t, true);
    std::string all;
    size_t empty = 0;
    for (int32_t id : ids) {
      std::string piece = d.push(id);
      empty += piece.empty();
      all += piece;
    }
    all += d.flush();
    EXPECT_EQ(all, t.decode(ids, true)) << name;
    EXPECT_LT(empty, ids.size() / 4) << name << ": text should flow as tokens arrive";
  }
}

}  // namespace
}  // namespace tessera::test
