// The BPE model on hand-built vocabularies: merge priority, merge formats, ignore_merges,
// byte_fallback, unk_token / fuse_unk, continuing_subword_prefix and end_of_word_suffix.
// ref: tokenizers models/bpe/model.rs (merge_word) and word.rs (merge_all).
#include <gtest/gtest.h>

#include "tessera/error.h"
#include "tokenizer/mini_tokenizer.h"

namespace tessera::test {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

// a=0 b=1 c=2 ab=3 bc=4 abc=5
MiniTokenizer abc(json merges) {
  MiniTokenizer m;
  m.vocab = {"a", "b", "c", "ab", "bc", "abc"};
  m.merges = merges;
  return m;
}

TEST(BpeModel, LowestRankMergesFirst) {
  EXPECT_EQ(abc(json::array({"b c", "a b", "a bc"})).load()->encode("abc", false), (Ids{5}));
  EXPECT_EQ(abc(json::array({"b c", "a b"})).load()->encode("abc", false), (Ids{0, 4}));
  EXPECT_EQ(abc(json::array({"a b", "b c"})).load()->encode("abc", false), (Ids{3, 2}));
  // Equal ranks cannot happen; at equal pairs the leftmost goes first: "ab" "ab" from "abab".
  MiniTokenizer m = abc(json::array({"a b", "b a"}));
  m.vocab.push_back("ba");
  EXPECT_EQ(m.load()->encode("abab", false), (Ids{3, 3}));
  EXPECT_EQ(m.load()->encode("bab", false), (Ids{1, 3}));  // "a b" outranks "b a"
}

TEST(BpeModel, MergesAsPairsOrStrings) {
  auto pairs = abc(json::array({json::array({"a", "b"}), json::array({"ab", "c"})}));
  EXPECT_EQ(pairs.load()->encode("abc", false), (Ids{5}));
  EXPECT_EQ(abc(json::array({"a b", "ab c"})).load()->encode("abc", false), (Ids{5}));
  // A merges.txt header line is not a merge.
  EXPECT_EQ(abc(json::array({"#version: 0.2", "a b"})).load()->encode("abc", false), (Ids{3, 2}));
}

TEST(BpeModel, IgnoreMergesUsesAWholeWordToken) {
  MiniTokenizer m = abc(json::array({"a b"}));
  EXPECT_EQ(m.load()->encode("abc", false), (Ids{3, 2}));
  m.model_extra = {{"ignore_merges", true}};
  EXPECT_EQ(m.load()->encode("abc", false), (Ids{5}));
  EXPECT_EQ(m.load()->encode("abcab", false), (Ids{3, 2, 3}));  // not a token: merges apply
}

TEST(BpeModel, ByteFallbackForCharactersOutsideTheVocabulary) {
  MiniTokenizer m;
  m.vocab = {"a"};
  for (const std::string& b : byte_tokens()) m.vocab.push_back(b);  // <0xNN> = NN + 1
  m.model_extra = {{"byte_fallback", true}, {"unk_token", "<0x00>"}};
  m.decoder = {{"type", "Sequence"},
               {"decoders", json::array({{{"type", "ByteFallback"}}, {{"type", "Fuse"}}})}};
  auto t = m.load();
  EXPECT_EQ(t->encode("a\u00e9", false), (Ids{0, 0xC3 + 1, 0xA9 + 1}));
  EXPECT_EQ(t->decode(Ids{0, 0xC3 + 1, 0xA9 + 1}, false), "a\u00e9");
  // A run of byte tokens that is not UTF-8 gives one U+FFFD per byte, the valid ones included.
  EXPECT_EQ(t->decode(Ids{0x41 + 1, 0xC3 + 1}, false), "\ufffd\ufffd");
  EXPECT_EQ(t->decode(Ids{0xC3 + 1, 0, 0xA9 + 1}, false), "\ufffda\ufffd");
}

TEST(BpeModel, UnknownCharactersAndFuseUnk) {
  MiniTokenizer m;
  m.vocab = {"a", "<unk>"};
  EXPECT_EQ(m.load()->encode("a\u00e9\u00e9a", false), (Ids{0, 0}));  // no unk: dropped
  m.model_extra = {{"unk_token", "<unk>"}};
  EXPECT_EQ(m.load()->encode("a\u00e9\u00e9a", false), (Ids{0, 1, 1, 0}));
  m.model_extra["fuse_unk"] = true;
  EXPECT_EQ(m.load()->encode("a\u00e9\u00e9a\u00e9", false), (Ids{0, 1, 0, 1}));
}

TEST(BpeModel, ContinuingSubwordPrefix) {
  // Non-initial characters are looked up as "##x"; "a ##b" makes "ab".
  MiniTokenizer m;
  m.vocab = {"a", "##b", "##c", "ab", "abc"};
  m.merges = json::array({"a ##b", "ab ##c"});
  m.model_extra = {{"continuing_subword_prefix", "##"}};
  auto t = m.load();
  EXPECT_EQ(t->encode("ab", false), (Ids{3}));
  EXPECT_EQ(t->encode("abc", false), (Ids{4}));
  EXPECT_EQ(t->encode("ac", false), (Ids{0, 2}));
}

TEST(BpeModel, EndOfWordSuffix) {
  MiniTokenizer m;
  m.vocab = {"a", "b", "b</w>", "ab</w>", "ab"};
  m.merges = json::array({"a b</w>", "a b"});
  m.model_extra = {{"end_of_word_suffix", "</w>"}};
  auto t = m.load();
  EXPECT_EQ(t->encode("ab", false), (Ids{3}));
  EXPECT_EQ(t->encode("abb", false), (Ids{4, 2}));
}

TEST(BpeModel, LongWordsGiveTheSameIdsAsShortOnes) {
  // Words of 256+ bytes are cut where no merge can cross; the result must not change.
  MiniTokenizer m;
  m.vocab = {"x", "y", "z", "xy", "xyz", "zx", "zxy"};
  m.merges = json::array({"x y", "xy z", "z x", "zx y"});
  auto t = m.load();
  std::string shortw = "xyzxyzy", longw;
  Ids expected_one = t->encode(shortw, false), expected;
  for (int i = 0; i < 100; ++i) {
    longw += shortw;
    expected.insert(expected.end(), expected_one.begin(), expected_one.end());
  }
  // "y" never precedes "x" inside a token: every "yx" boundary is a safe cut, and the repeats
  // are independent.
  EXPECT_EQ(t->encode(longw, false), expected);
}

TEST(BpeModel, LargeMergeListsLoadInRankOrder) {
  // 110,000 merges are resolved by two threads: ranks, duplicates and errors in the second half
  // must come out as in a single pass.
  constexpr int kN = 110000;
  MiniTokenizer m;
  m.vocab = {"a", "b", "ab", "u"};
  for (int i = 0; i < kN; ++i) {
    std::string t(1, 't');  // (appended: GCC 12 warns falsely on "lit" + std::string)
    t += std::to_string(i);
    m.vocab.push_back(t);
    m.vocab.push_back(t + 'u');
    m.merges.push_back(t + " u");
  }
  m.merges.push_back("b a");  // unknown merged token "ba": an error in the second half
  json merges = m.merges;
  try {
    m.load();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("merge 110000: merged token \"ba\""), std::string::npos)
        << e.what();
  }
  merges.erase(merges.size() - 1);
  merges.push_back("a b");  // rank 110000, in the second half
  m.merges = merges;
  auto t = m.load();
  EXPECT_EQ(t->encode("ab", false), (Ids{2}));
  EXPECT_EQ(t->encode("ba", false), (Ids{1, 0}));
}

TEST(BpeModel, VocabularyAccessors) {
  MiniTokenizer m = abc(json::array({"a b"}));
  int special = m.add_token("<s>", true);
  auto t = m.load();
  EXPECT_EQ(t->vocab_size(), 7);
  EXPECT_EQ(t->token_to_id("bc"), 4);
  EXPECT_EQ(t->token_to_id("<s>"), special);
  EXPECT_FALSE(t->token_to_id("zz").has_value());
  EXPECT_EQ(t->id_to_token(5), "abc");
  EXPECT_EQ(t->id_to_token(special), "<s>");
  EXPECT_EQ(t->id_to_token(99), "");
  EXPECT_TRUE(t->is_special(special));
  EXPECT_FALSE(t->is_special(0));
  // Unknown ids are skipped by decode; without a decoder tokens are joined with spaces.
  EXPECT_EQ(t->decode(Ids{0, 99, 4, -1}, false), "a bc");
}

}  // namespace
}  // namespace tessera::test
