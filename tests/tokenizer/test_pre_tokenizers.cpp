// Pre-tokenizers on hand-built tokenizers. The expected ids follow from Hugging Face tokenizers'
// documented semantics (SplitDelimiterBehavior, Metaspace prepend_scheme, ByteLevel
// add_prefix_space): the BPE merges below would join characters across any piece boundary, so
// the ids show exactly where the pieces were cut.
#include <gtest/gtest.h>

#include "tokenizer/mini_tokenizer.h"

namespace tessera::test {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

// ids: a=0 b=1 -=2 a-=3 -b=4 a-b=5 --=6. Unsplit, "a-b" merges to [5] and "a--b" to [3,4].
MiniTokenizer dash_tokenizer(json pre_tokenizer) {
  MiniTokenizer m;
  m.vocab = {"a", "b", "-", "a-", "-b", "a-b", "--"};
  m.merges = json::array({json::array({"a", "-"}), json::array({"a-", "b"}),
                          json::array({"-", "b"}), json::array({"-", "-"})});
  m.pre_tokenizer = pre_tokenizer;
  return m;
}

json split(const std::string& behavior, bool invert = false, json pattern = {{"String", "-"}}) {
  return {{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", invert}};
}

TEST(SplitPreTokenizer, WithoutSplittingMergesCrossTheDash) {
  auto t = dash_tokenizer(nullptr).load();
  EXPECT_EQ(t->encode("a-b", false), (Ids{5}));
  EXPECT_EQ(t->encode("a--b", false), (Ids{3, 4}));
}

TEST(SplitPreTokenizer, Removed) {
  auto t = dash_tokenizer(split("Removed")).load();
  EXPECT_EQ(t->encode("a-b", false), (Ids{0, 1}));
  EXPECT_EQ(t->encode("a--b", false), (Ids{0, 1}));
  EXPECT_EQ(t->encode("---", false), (Ids{}));
}

TEST(SplitPreTokenizer, Isolated) {
  auto t = dash_tokenizer(split("Isolated")).load();
  EXPECT_EQ(t->encode("a-b", false), (Ids{0, 2, 1}));
  EXPECT_EQ(t->encode("a--b", false), (Ids{0, 2, 2, 1}));
}

TEST(SplitPreTokenizer, MergedWithPreviousOnlyMergesAMatchThatFollowsANonMatch) {
  auto t = dash_tokenizer(split("MergedWithPrevious")).load();
  EXPECT_EQ(t->encode("a-b", false), (Ids{3, 1}));      // "a-" "b"
  EXPECT_EQ(t->encode("a--b", false), (Ids{3, 2, 1}));  // "a-" "-" "b"
  EXPECT_EQ(t->encode("-b", false), (Ids{2, 1}));       // a leading match stands alone
}

TEST(SplitPreTokenizer, MergedWithNextOnlyMergesAMatchThatPrecedesANonMatch) {
  auto t = dash_tokenizer(split("MergedWithNext")).load();
  EXPECT_EQ(t->encode("a-b", false), (Ids{0, 4}));      // "a" "-b"
  EXPECT_EQ(t->encode("a--b", false), (Ids{0, 2, 4}));  // "a" "-" "-b"
  EXPECT_EQ(t->encode("a-", false), (Ids{0, 2}));       // a trailing match stands alone
}

TEST(SplitPreTokenizer, ContiguousJoinsRunsOfMatches) {
  auto t = dash_tokenizer(split("Contiguous")).load();
  EXPECT_EQ(t->encode("a-b", false), (Ids{0, 2, 1}));
  EXPECT_EQ(t->encode("a--b", false), (Ids{0, 6, 1}));  // "a" "--" "b"
}

TEST(SplitPreTokenizer, InvertSwapsMatchesAndGaps) {
  auto removed = dash_tokenizer(split("Removed", true)).load();
  EXPECT_EQ(removed->encode("a-b", false), (Ids{2}));  // only the dash is kept
  // Inverted, "a" and "b" are the matches: "b" merges into the "-" before it.
  auto prev = dash_tokenizer(split("MergedWithPrevious", true)).load();
  EXPECT_EQ(prev->encode("a--b", false), (Ids{0, 2, 4}));
}

TEST(SplitPreTokenizer, RegexPattern) {
  auto t = dash_tokenizer(split("Isolated", false, {{"Regex", "-+"}})).load();
  EXPECT_EQ(t->encode("a--b", false), (Ids{0, 6, 1}));
  // Oniguruma's \s includes U+0085 (PCRE2's does not): the NEL must be removed like a space.
  MiniTokenizer m;
  m.vocab = {"a", "b", "ab"};
  m.merges = json::array({"a b"});
  m.pre_tokenizer = split("Removed", false, {{"Regex", "\\s+"}});
  auto s = m.load();
  EXPECT_EQ(s->encode("a\u0085b", false), (Ids{0, 1}));
  EXPECT_EQ(s->encode("a\u3000 b", false), (Ids{0, 1}));
  EXPECT_EQ(s->encode("ab", false), (Ids{2}));
}

TEST(SplitPreTokenizer, CaseInsensitiveGroup) {
  // The Llama 3 contraction rule (?i:'s|'t): "'S" is a piece of its own, so "S" and "x" stay apart.
  MiniTokenizer m;
  m.vocab = {"'", "S", "x", "'S", "Sx"};
  m.merges = json::array({"S x", "' S"});
  m.pre_tokenizer = split("Isolated", false, {{"Regex", "(?i:'s|'t)"}});
  auto t = m.load();
  EXPECT_EQ(t->encode("'Sx", false), (Ids{3, 2}));
}

// Digits: "ab12c3". Unsplit, b+1 merges first: [a, b1, 2, c, 3].
MiniTokenizer digit_tokenizer(json pre) {
  MiniTokenizer m;
  m.vocab = {"a", "b", "c", "1", "2", "3", "12", "ab", "b1"};
  m.merges = json::array({"b 1", "1 2", "a b"});
  m.pre_tokenizer = pre;
  return m;
}

TEST(DigitsPreTokenizer, RunsOrSingleDigits) {
  EXPECT_EQ(digit_tokenizer(nullptr).load()->encode("ab12c3", false), (Ids{0, 8, 4, 2, 5}));
  auto runs = digit_tokenizer({{"type", "Digits"}, {"individual_digits", false}}).load();
  EXPECT_EQ(runs->encode("ab12c3", false), (Ids{7, 6, 2, 5}));
  auto single = digit_tokenizer({{"type", "Digits"}, {"individual_digits", true}}).load();
  EXPECT_EQ(single->encode("ab12c3", false), (Ids{7, 3, 4, 2, 5}));
}

// Metaspace: ids ▁=0 a=1 b=2 ▁a=3 ▁b=4, special <s>=5.
MiniTokenizer metaspace_tokenizer(const std::string& scheme, bool split_words) {
  MiniTokenizer m;
  m.vocab = {"\u2581", "a", "b", "\u2581a", "\u2581b"};
  m.merges = json::array({"\u2581 a", "\u2581 b"});
  m.pre_tokenizer = {{"type", "Metaspace"},
                     {"replacement", "\u2581"},
                     {"prepend_scheme", scheme},
                     {"split", split_words}};
  m.decoder = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", scheme}};
  m.add_token("<s>", true);
  return m;
}

TEST(MetaspacePreTokenizer, PrependSchemes) {
  auto always = metaspace_tokenizer("always", true).load();
  EXPECT_EQ(always->encode("a b", false), (Ids{3, 4}));
  EXPECT_EQ(always->encode("<s>a b", false), (Ids{5, 3, 4}));  // every piece gets the prefix
  auto first = metaspace_tokenizer("first", true).load();
  EXPECT_EQ(first->encode("a b", false), (Ids{3, 4}));
  EXPECT_EQ(first->encode("<s>a b", false), (Ids{5, 1, 4}));  // not at offset 0: no prefix
  auto never = metaspace_tokenizer("never", true).load();
  EXPECT_EQ(never->encode("a b", false), (Ids{1, 4}));
  // A text starting with a space already starts with the replacement: nothing is prepended.
  EXPECT_EQ(always->encode(" a", false), (Ids{3}));
}

TEST(MetaspacePreTokenizer, SplitFalseKeepsOnePiece) {
  // ids ▁=0 a=1 b=2 ▁a=3 ▁b=4 a▁=5; "a ▁" is the first merge, so it wins unless the words are
  // separate pieces.
  MiniTokenizer m;
  m.vocab = {"\u2581", "a", "b", "\u2581a", "\u2581b", "a\u2581"};
  m.merges = json::array({"a \u2581", "\u2581 a", "\u2581 b"});
  m.pre_tokenizer = {{"type", "Metaspace"},
                     {"replacement", "\u2581"},
                     {"prepend_scheme", "always"},
                     {"split", false}};
  EXPECT_EQ(m.load()->encode("a b", false), (Ids{0, 5, 2}));  // ▁ a▁ b
  m.pre_tokenizer["split"] = true;
  EXPECT_EQ(m.load()->encode("a b", false), (Ids{3, 4}));
}

TEST(MetaspaceDecoder, FirstTokenLosesItsReplacementUnlessNever) {
  auto always = metaspace_tokenizer("always", true).load();
  EXPECT_EQ(always->decode(Ids{3, 4}, false), "a b");
  EXPECT_EQ(always->decode(Ids{5, 3, 4}, false), "<s> a b");
  EXPECT_EQ(always->decode(Ids{5, 3, 4}, true), "a b");   // <s> skipped: ▁a is first
  EXPECT_EQ(always->decode(Ids{0, 0, 3}, false), "  a");  // only the first token's ▁ goes
  auto never = metaspace_tokenizer("never", true).load();
  EXPECT_EQ(never->decode(Ids{3, 4}, false), " a b");
}

// ByteLevel: "Ġ" is the byte-level character of a space.
TEST(ByteLevelPreTokenizer, PrefixSpaceAndRegex) {
  MiniTokenizer m;
  m.vocab = {"\u0120", "h", "i", "!", "\u0120h", "\u0120hi", "hi", "i!"};
  m.merges = json::array({"\u0120 h", "\u0120h i", "i !", "h i"});
  m.pre_tokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  m.decoder = {{"type", "ByteLevel"}};
  auto t = m.load();
  EXPECT_EQ(t->encode("hi", false), (Ids{5}));      // " hi"
  EXPECT_EQ(t->encode("hi!", false), (Ids{5, 3}));  // " hi" | "!" (i+! cannot merge)
  EXPECT_EQ(t->decode(Ids{5, 3}, false), " hi!");
  m.pre_tokenizer["add_prefix_space"] = false;
  EXPECT_EQ(m.load()->encode("hi", false), (Ids{6}));
  m.pre_tokenizer["use_regex"] = false;
  EXPECT_EQ(m.load()->encode("hi!", false), (Ids{1, 7}));  // one piece: h | i!
}

TEST(ByteLevelDecoder, InvalidBytesBecomeOneReplacementPerMaximalSubpart) {
  MiniTokenizer m;
  // Ã (byte 0xC3), ¤ (0xA4), ä = C3 A4; "€" is not a byte-level character: kept as it is.
  m.vocab = {"\u00c3", "\u00a4", "a", "\u20ac"};
  m.decoder = {{"type", "ByteLevel"}};
  auto t = m.load();
  EXPECT_EQ(t->decode(Ids{0, 1}, false), "\u00e4");
  EXPECT_EQ(t->decode(Ids{0, 2}, false), "\ufffda");
  EXPECT_EQ(t->decode(Ids{1, 1, 2}, false), "\ufffd\ufffda");
  EXPECT_EQ(t->decode(Ids{3, 2}, false), "\u20aca");
}

}  // namespace
}  // namespace tessera::test
