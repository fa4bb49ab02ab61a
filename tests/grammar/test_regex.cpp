#include <gtest/gtest.h>

#include "grammar_test_util.h"

namespace tessera::testing {
namespace {

TEST(Regex, ClassesQuantifiersAndGroups) {
  auto g = regex(R"(^\d{3}-[A-Z]\w*(?:\.(com|org))?$)");
  EXPECT_TRUE(matches(g, "123-Abc_9"));
  EXPECT_TRUE(matches(g, "123-A.org"));
  EXPECT_FALSE(matches(g, "123-A.net"));
  EXPECT_FALSE(matches(g, "12-A"));
  EXPECT_FALSE(matches(g, "123-a"));
}

TEST(Regex, AlternationDotAndEscapes) {
  auto g = regex(R"(yes|no|maybe\?|a.c|\x41\u00e9|[^\s]+!)");
  EXPECT_TRUE(matches(g, "yes"));
  EXPECT_TRUE(matches(g, "maybe?"));
  EXPECT_TRUE(matches(g,
                      "a\xE2\x82\xAC"
                      "c"));
  EXPECT_FALSE(matches(g, "a\nc"));
  EXPECT_TRUE(matches(g, "A\xC3\xA9"));
  EXPECT_TRUE(matches(g, "xyz!"));
  EXPECT_FALSE(matches(g, "x z!"));
}

TEST(Regex, LazyAndOpenCounts) {
  auto g = regex(R"(a{2,}?b+?c*)");
  EXPECT_TRUE(matches(g, "aab"));
  EXPECT_TRUE(matches(g, "aaaabbcc"));
  EXPECT_FALSE(matches(g, "ab"));
}

TEST(Regex, BadPatternsAreClearErrors) {
  for (const char* bad : {"(ab", "ab)", "[abc", "*a", R"(\p{L})", "(?=a)", "a{2,1}"}) {
    try {
      regex(bad);
      ADD_FAILURE() << bad << " compiled";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << bad;
    }
  }
}

TEST(Choice, ExactlyOneOfTheChoices) {
  OutputConstraint c;
  c.kind = OutputConstraint::Kind::choice;
  c.choices = {"red", "green", "gr\xC3\xBCn"};
  auto g = grammar::compile(c);
  EXPECT_TRUE(matches(g, "green"));
  EXPECT_TRUE(matches(g, "gr\xC3\xBCn"));
  EXPECT_FALSE(matches(g, "gre"));
  EXPECT_FALSE(matches(g, "greens"));
  c.choices.clear();
  EXPECT_THROW(grammar::compile(c), Error);
}

}  // namespace
}  // namespace tessera::testing
