#include <gtest/gtest.h>

#include <chrono>

#include "grammar/utf8_ranges.h"
#include "grammar_test_util.h"

namespace tessera::testing {
namespace {

TEST(Gbnf, LiteralsAlternativesAndRepetition) {
  auto g = gbnf(R"(root ::= "a" ("b" | "c")* d{2,3}
d ::= [0-9])");
  EXPECT_TRUE(matches(g, "a12"));
  EXPECT_TRUE(matches(g, "abcb123"));
  EXPECT_FALSE(matches(g, "a1"));
  EXPECT_FALSE(matches(g, "a1234"));
  EXPECT_FALSE(matches(g, "ad12"));
  EXPECT_TRUE(viable(g, "abc"));
  EXPECT_FALSE(matches(g, "abc"));
}

TEST(Gbnf, ContinuationLinesCommentsAndEscapes) {
  auto g = gbnf(
      "# a comment\nroot ::= greeting \" \" name # trailing\n"
      "greeting ::= \"hi\"\n  | \"hello\"\n"
      "name ::= [a-z]+ \"\\n\" \"\\x41\\u00e9\"\n");
  EXPECT_TRUE(matches(g, "hi bob\nA\xC3\xA9"));
  EXPECT_TRUE(matches(g, "hello x\nA\xC3\xA9"));
  EXPECT_FALSE(matches(g, "hey x\nA\xC3\xA9"));
}

TEST(Gbnf, NegatedClassesAndDotAreUnicode) {
  auto g = gbnf(R"(root ::= [^a-z] . "!")");
  EXPECT_TRUE(matches(g, "A\xE2\x82\xAC!"));      // A, euro sign
  EXPECT_TRUE(matches(g, "\xF0\x9F\x98\x80z!"));  // an emoji, then z
  EXPECT_FALSE(matches(g, "az!"));
  EXPECT_FALSE(viable(g,
                      "\xC3"
                      "A"));                // a broken UTF-8 sequence
  EXPECT_FALSE(viable(g, "\xED\xA0\x80"));  // a surrogate has no UTF-8 form
}

TEST(Gbnf, RecursionNests) {
  auto g = gbnf(R"g(root ::= "(" root ")" | "x")g");
  EXPECT_TRUE(matches(g, "((x))"));
  EXPECT_FALSE(matches(g, "((x)"));
  EXPECT_FALSE(matches(g, "(x))"));
}

TEST(Gbnf, BadGrammarsAreClearErrors) {
  auto err = [](const std::string& src) {
    try {
      gbnf(src);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err("root ::= foo").find("undefined rule 'foo'"), std::string::npos);
  EXPECT_NE(err("start ::= \"a\"").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(err("root ::= root \"a\" | \"b\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(err("root ::= \"a\" root").find("can never finish"), std::string::npos);
  EXPECT_NE(err("root ::= \"abc").find("unterminated"), std::string::npos);
  EXPECT_NE(err("root ::= [z-a]").find("backwards"), std::string::npos);
  EXPECT_NE(err("root ::= \"a\"{3,1}").find("min <= max"), std::string::npos);
  EXPECT_NE(err("root = \"a\"").find("'::='"), std::string::npos);
}

// x{0,n} over a nullable x makes stack sets grow with n^2: refused quickly, not matched slowly.
TEST(Gbnf, TooAmbiguousGrammarsFailFast) {
  const auto t0 = std::chrono::steady_clock::now();
  for (const char* src :
       {"root ::= (\"a\"?){0,10000}", "root ::= ((\"a\" | \"b\")? \"c\"?){0,10000} \"x\""}) {
    try {
      matches(gbnf(src), "aa");
      ADD_FAILURE() << src << " matched";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("too ambiguous"), std::string::npos) << e.what();
    }
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_TRUE(matches(gbnf("root ::= (\"a\"?){0,40}"), "aaaa"));  // small counts are fine
}

TEST(Utf8Ranges, CoverExactlyTheEncodings) {
  // Every code point of a range that crosses each encoded length is matched, its neighbours not.
  auto seqs = grammar::utf8_sequences(0x70, 0x10010);
  auto hit = [&](uint32_t c) {
    std::string s;
    if (c < 0x80) {
      s = std::string(1, static_cast<char>(c));
    } else if (c < 0x800) {
      s = {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
    } else if (c < 0x10000) {
      s = {static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)),
           static_cast<char>(0x80 | (c & 0x3F))};
    } else {
      s = {static_cast<char>(0xF0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3F)),
           static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
    }
    int n = 0;
    for (const auto& q : seqs) {
      if (q.size() != s.size()) continue;
      bool ok = true;
      for (size_t i = 0; i < q.size(); ++i)
        ok = ok && static_cast<uint8_t>(s[i]) >= q[i].lo && static_cast<uint8_t>(s[i]) <= q[i].hi;
      n += ok;
    }
    return n;
  };
  for (uint32_t c = 0; c < 0x10020; ++c) {
    const bool in = c >= 0x70 && c <= 0x10010 && !(c >= 0xD800 && c <= 0xDFFF);
    ASSERT_EQ(hit(c), in ? 1 : 0) << std::hex << c;
  }
}

}  // namespace
}  // namespace tessera::testing
