// Added tokens on hand-built tokenizers: leftmost-longest matching, lstrip / rstrip /
// single_word, normalized vs raw matching, special tokens in decode.
// ref: tokenizers tokenizer/added_vocabulary.rs (find_matches, extract_and_normalize).
#include <gtest/gtest.h>

#include "tokenizer/mini_tokenizer.h"

namespace tessera::test {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

// Characters only, no merges: every character of plain text is its own id, so the ids show
// exactly which characters an added token took.
MiniTokenizer chars() {
  MiniTokenizer m;
  m.vocab = {" ", "a", "b", "c", "s", "y", "h", "e", "l", "o", "x", "<", ">", "t", "_"};
  return m;
}
constexpr int32_t SP = 0, A = 1, B = 2, C = 3, S = 4, Y = 5, X = 10, LT = 11, GT = 12, T = 13;

TEST(AddedTokens, MatchedAnywhereInTheText) {
  MiniTokenizer m = chars();
  int tok = m.add_token("<t>", true);
  auto t = m.load();
  EXPECT_EQ(t->encode("a<t>b", false), (Ids{A, tok, B}));
  EXPECT_EQ(t->encode("<t><t>", false), (Ids{tok, tok}));
  EXPECT_EQ(t->encode("<t", false), (Ids{LT, T}));
  EXPECT_EQ(t->encode("", false), (Ids{}));
}

TEST(AddedTokens, LongestMatchAtTheLeftmostPosition) {
  MiniTokenizer m = chars();
  int shorter = m.add_token("<t>", true);
  int longer = m.add_token("<t>x", false, {{"normalized", false}});
  int other = m.add_token("t>xa", false, {{"normalized", false}});
  auto t = m.load();
  EXPECT_EQ(t->encode("<t>xa", false), (Ids{longer, A}));  // leftmost wins over "t>xa"
  EXPECT_EQ(t->encode("<t>b", false), (Ids{shorter, B}));
  EXPECT_EQ(t->encode("at>xa", false), (Ids{A, other}));
}

TEST(AddedTokens, LstripAndRstripTakeTheSurroundingWhitespace) {
  MiniTokenizer left = chars();
  int l = left.add_token("<t>", false, {{"lstrip", true}, {"normalized", false}});
  EXPECT_EQ(left.load()->encode(" a <t> b", false), (Ids{SP, A, l, SP, B}));

  MiniTokenizer right = chars();
  int r = right.add_token("<t>", false, {{"rstrip", true}, {"normalized", false}});
  EXPECT_EQ(right.load()->encode(" a <t> b", false), (Ids{SP, A, SP, r, B}));

  MiniTokenizer both = chars();
  int lr =
      both.add_token("<t>", false, {{"lstrip", true}, {"rstrip", true}, {"normalized", false}});
  auto t = both.load();
  EXPECT_EQ(t->encode(" a  <t>  b", false), (Ids{SP, A, lr, B}));
  // The spaces between two tokens go to the first one's rstrip, not the second one's lstrip.
  EXPECT_EQ(t->encode("<t>  <t>", false), (Ids{lr, lr}));
  // U+3000 is White_Space too.
  EXPECT_EQ(t->encode("a\u3000<t>", false), (Ids{A, lr}));
}

TEST(AddedTokens, SingleWordOnlyMatchesWholeWords) {
  MiniTokenizer m = chars();
  int ab = m.add_token("ab", false, {{"single_word", true}, {"normalized", false}});
  auto t = m.load();
  EXPECT_EQ(t->encode("ab cab ab", false), (Ids{ab, SP, C, A, B, SP, ab}));
  EXPECT_EQ(t->encode("ab_", false), (Ids{A, B, 14}));  // "_" is a word character
  EXPECT_EQ(t->encode("ab<", false), (Ids{ab, LT}));
  EXPECT_EQ(t->encode("\u00e9ab", false), (Ids{A, B}));  // é is a letter (and not in vocab)
}

TEST(AddedTokens, NormalizedTokensMatchTheNormalizedText) {
  MiniTokenizer m = chars();
  m.normalizer = {{"type", "Lowercase"}};
  int hello = m.add_token("HELLO", false, {{"normalized", true}});
  int raw = m.add_token("XY", false, {{"normalized", false}});
  auto t = m.load();
  // "HELLO" is lowercased like the text, so "HeLLo" matches it after normalization.
  EXPECT_EQ(t->encode("say HeLLo", false), (Ids{S, A, Y, SP, hello}));
  // A raw token matches the text as written, before the normalizer.
  EXPECT_EQ(t->encode("aXYa", false), (Ids{A, raw, A}));
  EXPECT_EQ(t->encode("axya", false), (Ids{A, X, Y, A}));
}

TEST(AddedTokens, NormalizerRunsOnEachPieceBetweenRawTokens) {
  // Llama 2's normalizer prepends "▁" to every piece, also the one after a special token.
  MiniTokenizer m;
  m.vocab = {"\u2581", "a", "b"};
  m.normalizer = {{"type", "Prepend"}, {"prepend", "\u2581"}};
  int s = m.add_token("<s>", true);
  auto t = m.load();
  EXPECT_EQ(t->encode("a<s>b", false), (Ids{0, 1, s, 0, 2}));
  EXPECT_EQ(t->encode("<s>", false), (Ids{s}));
}

TEST(AddedTokens, SpecialTokensAndDecode) {
  MiniTokenizer m = chars();
  int bos = m.add_token("<s>", true);
  int plain = m.add_token("<x>", false, {{"normalized", false}});
  auto t = m.load();
  Ids ids = t->encode("<s>ab<x>", false);
  EXPECT_EQ(ids, (Ids{bos, A, B, plain}));
  EXPECT_EQ(t->decode(ids, false), "<s> a b <x>");
  EXPECT_EQ(t->decode(ids, true), "a b <x>");  // only special tokens are skipped
  EXPECT_TRUE(t->is_special(bos));
  EXPECT_FALSE(t->is_special(plain));
}

}  // namespace
}  // namespace tessera::test
