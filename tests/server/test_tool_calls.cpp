// Per-family tool-call parsing on recorded model outputs (the shapes Qwen 2.5/3, Llama 3.1+ and
// Gemma 3 write, as vLLM's tool parsers' tests record them): calls, content around them, and
// outputs that are not calls left as content.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/tool_calls.h"

namespace tessera::server {
namespace {

using nlohmann::json;

TEST(ToolCalls, FormatFromModelType) {
  EXPECT_EQ(tool_format_for("qwen3"), ToolFormat::qwen);
  EXPECT_EQ(tool_format_for("qwen2"), ToolFormat::qwen);
  EXPECT_EQ(tool_format_for("llama"), ToolFormat::llama3);
  EXPECT_EQ(tool_format_for("gemma3_text"), ToolFormat::gemma);
  EXPECT_EQ(tool_format_for("mistral"), ToolFormat::none);
}

TEST(ToolCalls, QwenBlocksWithContentAround) {
  const std::string out =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"unit\": \"c\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
      "\"arguments\": {}}\n</tool_call>";
  ParsedOutput p = parse_tool_calls(ToolFormat::qwen, out);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(p.calls[0].arguments), (json{{"city", "Paris"}, {"unit", "c"}}));
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","unit":"c"})");  // the model's key order
  EXPECT_EQ(p.calls[1].name, "get_time");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  EXPECT_EQ(p.content, "Let me check.");
  // Cut off before </tool_call> (max_tokens, or the stop at <|im_end|>): still a call.
  p = parse_tool_calls(ToolFormat::qwen,
                       "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.content, "");
}

TEST(ToolCalls, Llama3JsonAndPythonTagAndParallel) {
  ParsedOutput p = parse_tool_calls(ToolFormat::llama3,
                                    R"({"name": "search", "parameters": {"query": "tessera"}})");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "search");
  EXPECT_EQ(p.calls[0].arguments, R"({"query":"tessera"})");
  p = parse_tool_calls(ToolFormat::llama3,
                       "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", "
                       "\"parameters\": {\"n\": 2}}");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1].name, "b");
  EXPECT_EQ(p.calls[1].arguments, R"({"n":2})");
}

TEST(ToolCalls, GemmaFencedJsonAndArrays) {
  ParsedOutput p = parse_tool_calls(
      ToolFormat::gemma, "```json\n{\"name\": \"lookup\", \"parameters\": {\"id\": 7}}\n```");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "lookup");
  p = parse_tool_calls(ToolFormat::gemma,
                       R"([{"name": "a", "arguments": "{\"k\": 1}"}, {"name": "b"}])");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, "{\"k\": 1}");  // a JSON string stays as given
  EXPECT_EQ(p.calls[1].arguments, "{}");
}

TEST(ToolCalls, OutputsThatAreNotCallsStayContent) {
  const char* texts[] = {
      "The weather in Paris is sunny.",
      "<tool_call>\n{not json}\n</tool_call>",
      "{\"answer\": 42}",                   // JSON, but not a call
      "{\"name\": 5, \"parameters\": {}}",  // a name that is not a string
      "[1, 2]",
      "```json\n{\"name\": \"x\"",  // an unterminated fence
  };
  for (ToolFormat f : {ToolFormat::qwen, ToolFormat::llama3, ToolFormat::gemma})
    for (const char* t : texts) {
      ParsedOutput p = parse_tool_calls(f, t);
      EXPECT_TRUE(p.calls.empty()) << t;
      EXPECT_EQ(p.content, t);
    }
  EXPECT_TRUE(parse_tool_calls(ToolFormat::none, R"({"name":"f","parameters":{}})").calls.empty());
}

}  // namespace
}  // namespace tessera::server
