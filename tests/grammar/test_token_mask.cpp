#include <gtest/gtest.h>

#include <random>

#include "grammar/token_mask.h"
#include "grammar_test_util.h"

namespace tessera::testing {
namespace {

using grammar::Matcher;
using grammar::TokenGrammar;
using grammar::TokenMask;
using grammar::VocabTrie;

std::shared_ptr<const VocabTrie> small_vocab() {
  // id 0: a special token (no bytes); the others overlap as BPE pieces do.
  return std::make_shared<VocabTrie>(
      std::vector<std::string>{"", "{", "}", "\"", "a", "ab", "abc", "\":", "1", "12", "{\"", " ",
                               "\n", "x", "\xC3", "\xA9", "\xC3\xA9", "true", "tr"});
}

std::vector<int32_t> allowed(const TokenMask& m, int n) {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < n; ++i)
    if (m.allows(i)) out.push_back(i);
  return out;
}

TEST(TokenMask, MaskIsExactlyTheTokensThatContinue) {
  auto v = small_vocab();
  TokenGrammar tg(regex("(ab|a)c?\xC3\xA9"), v);
  auto m = tg.mask(tg.start());
  EXPECT_EQ(allowed(*m, v->vocab_size()), (std::vector<int32_t>{4, 5, 6}));  // a ab abc
  int32_t s = tg.advance(tg.start(), 5);                                     // "ab"
  ASSERT_NE(s, Matcher::kDead);
  // c, é as one token or its first byte
  EXPECT_EQ(allowed(*tg.mask(s), v->vocab_size()), (std::vector<int32_t>{14, 16}));
  s = tg.advance(s, 14);
  EXPECT_EQ(allowed(*tg.mask(s), v->vocab_size()), (std::vector<int32_t>{15}));
  s = tg.advance(s, 15);
  EXPECT_TRUE(tg.accepting(s));
  EXPECT_FALSE(tg.can_continue(s));
  EXPECT_EQ(tg.mask(s)->allowed, 0);
  EXPECT_EQ(tg.advance(tg.start(), 0), Matcher::kDead);  // a token without bytes never fits
}

// Against the definition: a token is allowed iff its bytes keep the matcher alive, for every
// state met along random walks (the trie's subtree skipping must not drop or add any token).
TEST(TokenMask, TrieWalkAgreesWithPerTokenCheck) {
  std::mt19937 rng(7);
  std::vector<std::string> vocab = {""};
  const std::string alphabet = "{}[]\",:0123456789-.eEtrufalsnb \n\\a";
  for (char c : alphabet) vocab.push_back(std::string(1, c));
  for (int i = 0; i < 3000; ++i) {
    std::string t;
    const int len = 1 + static_cast<int>(rng() % 5);
    for (int k = 0; k < len; ++k) t += alphabet[rng() % alphabet.size()];
    vocab.push_back(t);
  }
  auto v = std::make_shared<VocabTrie>(vocab);
  auto g = schema(R"({"type":"object","properties":{"a":{"type":"array","items":{"type":
    "number"},"maxItems":4},"s":{"type":"string","maxLength":5},"b":{"type":"boolean"}},
    "required":["a","s","b"]})");
  TokenGrammar tg(g, v);
  Matcher ref(g);
  for (int walk = 0; walk < 20; ++walk) {
    int32_t s = tg.start(), rs = ref.start();
    for (int step = 0; step < 60 && tg.can_continue(s); ++step) {
      auto m = tg.mask(s);
      std::vector<int32_t> ok;
      for (int32_t id = 0; id < v->vocab_size(); ++id) {
        const bool expect = !vocab[id].empty() && ref.next(rs, vocab[id]) != Matcher::kDead;
        ASSERT_EQ(m->allows(id), expect) << "token '" << vocab[id] << "' at step " << step;
        if (expect) ok.push_back(id);
      }
      ASSERT_FALSE(ok.empty());
      const int32_t id = ok[rng() % ok.size()];
      s = tg.advance(s, id);
      rs = ref.next(rs, vocab[id]);
    }
  }
}

}  // namespace
}  // namespace tessera::testing
