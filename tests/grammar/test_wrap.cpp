// OutputConstraint's prefix / suffix / separator / max_count (grammar/compile.cpp's wrap): the
// form tool calls take (Qwen's <tool_call> blocks, Llama 3's ';'-separated calls).
#include <gtest/gtest.h>

#include "grammar_test_util.h"
#include "tessera/error.h"

namespace tessera {
namespace {

using testing::matches;
using testing::viable;

OutputConstraint wrapped(int max_count) {
  OutputConstraint c;
  c.kind = OutputConstraint::Kind::json_schema;
  c.text = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],)"
           R"("additionalProperties":false})";
  c.prefix = "<tool_call>\n";
  c.suffix = "\n</tool_call>";
  c.separator = "\n";
  c.max_count = max_count;
  return c;
}

TEST(Wrap, OneMatch) {
  auto g = grammar::compile(wrapped(1));
  EXPECT_TRUE(matches(g, "<tool_call>\n{\"a\":1}\n</tool_call>"));
  EXPECT_FALSE(matches(g, "{\"a\":1}"));
  EXPECT_FALSE(
      matches(g, "<tool_call>\n{\"a\":1}\n</tool_call>\n<tool_call>\n{\"a\":2}\n</tool_call>"));
  EXPECT_FALSE(matches(g, "<tool_call>\n{\"b\":1}\n</tool_call>"));
  EXPECT_TRUE(viable(g, "<tool_"));
  EXPECT_FALSE(viable(g, "Sure"));
}

TEST(Wrap, RepeatedMatches) {
  auto any = grammar::compile(wrapped(-1));
  const std::string one = "<tool_call>\n{\"a\":1}\n</tool_call>";
  EXPECT_TRUE(matches(any, one));
  EXPECT_TRUE(matches(any, one + "\n" + one + "\n" + one));
  EXPECT_FALSE(matches(any, one + one));  // the separator is required
  auto two = grammar::compile(wrapped(2));
  EXPECT_TRUE(matches(two, one + "\n" + one));
  EXPECT_FALSE(matches(two, one + "\n" + one + "\n" + one));
}

TEST(Wrap, BadCounts) {
  EXPECT_THROW(grammar::compile(wrapped(0)), Error);
  OutputConstraint c = wrapped(-1);
  c.prefix.clear();
  c.separator.clear();
  EXPECT_THROW(grammar::compile(c), Error);
}

}  // namespace
}  // namespace tessera
