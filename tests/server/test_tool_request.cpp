// tools / tool_choice / parallel_tool_calls (server/tool_request.h): the checks, and the grammar
// of tool_choice "required" or a named function, compiled by the grammar engine, in each
// family's call format: what it accepts is what tool_calls.h parses back.
#include <gtest/gtest.h>

#include "grammar/compile.h"
#include "grammar/matcher.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/tool_request.h"

namespace tessera::server {
namespace {

using ojson = nlohmann::ordered_json;
using Choice = ToolsRequest::Choice;

const ojson kTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
   "properties": {"unit": {"enum": ["c", "f"]}, "city": {"type": "string", "maxLength": 8}},
   "required": ["unit", "city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "now"}}])");

ojson body(ojson extra = ojson::object()) {
  ojson b = {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tools", kTools}};
  for (auto& [k, v] : extra.items()) b[k] = v;
  return b;
}

bool matches(const OutputConstraint& c, const std::string& s) {
  grammar::Matcher m(grammar::compile(c));
  const int32_t st = m.next(m.start(), s);
  return st != grammar::Matcher::kDead && m.accepting(st);
}

TEST(ToolRequest, ChoicesAndDefaults) {
  ToolsRequest t = parse_tools_request(body());
  EXPECT_EQ(t.choice, Choice::automatic);
  EXPECT_TRUE(t.parallel);
  EXPECT_TRUE(t.active());
  EXPECT_EQ(t.names, (std::vector<std::string>{"get_weather", "now"}));
  EXPECT_EQ(parse_tools_request(body({{"tool_choice", "none"}})).active(), false);
  EXPECT_EQ(parse_tools_request(body({{"tool_choice", "required"}})).choice, Choice::required);
  t = parse_tools_request(
      body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "now"}}}}},
            {"parallel_tool_calls", false}}));
  EXPECT_EQ(t.choice, Choice::named);
  EXPECT_EQ(t.named, "now");
  EXPECT_FALSE(t.parallel);
  EXPECT_FALSE(parse_tools_request(ojson{{"messages", ojson::array()}}).active());
}

TEST(ToolRequest, ErrorsNameTheField) {
  const std::vector<std::pair<ojson, std::string>> cases = {
      {{{"tools", "x"}}, "tools"},
      {{{"tools", {5}}}, "tools[0]"},
      {{{"tools", {{{"type", "retrieval"}}}}}, "tools[0].type"},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "a b"}}}}}}},
       "tools[0].function.name"},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", "{}"}}}}}}},
       "tools[0].function.parameters"},
      {{{"tools", {{{"function", {{"name", "f"}}}}, {{"function", {{"name", "f"}}}}}}},
       "tools[1].function.name"},
      {{{"tool_choice", "always"}}, "tool_choice"},
      {{{"tool_choice", {{"function", {{"name", "nope"}}}}}}, "tool_choice"},
      {{{"tools", ojson::array()}, {"tool_choice", "required"}}, "tool_choice"},
      {{{"parallel_tool_calls", "yes"}}, "parallel_tool_calls"},
      {{{"functions", {{{"name", "f"}}}}}, "functions"},
  };
  for (const auto& [extra, param] : cases) {
    try {
      parse_tools_request(body(extra));
      ADD_FAILURE() << "no error for " << extra.dump();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400);
      EXPECT_EQ(e.param, param) << extra.dump() << " -> " << e.what();
    }
  }
}

TEST(ToolRequest, ChatRequestCarriesToolsAndHistory) {
  const ojson b = ojson::parse(R"({"messages": [
    {"role": "user", "content": "x"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"unit\": \"c\", \"city\": \"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "cold"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters":
      {"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "string"}}}}}],
    "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema":
      {"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "string"}}}}}})");
  const nlohmann::json sorted = nlohmann::json::parse(b.dump());
  ChatRequest r = parse_chat_request(sorted, &b);
  ASSERT_EQ(r.messages.size(), 3u);
  ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[1].tool_calls[0].id, "call_1");
  EXPECT_EQ(r.messages[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.messages[1].tool_calls[0].arguments, R"({"unit": "c", "city": "Oslo"})");
  EXPECT_EQ(r.messages[1].content, "");
  EXPECT_EQ(r.messages[2].tool_call_id, "call_1");
  // The client's key order, for the rendered tools and the schema ("z" before "a").
  EXPECT_LT(r.tools.tools.dump().find("\"z\""), r.tools.tools.dump().find("\"a\""));
  EXPECT_LT(r.gen.constraint.text.find("\"z\""), r.gen.constraint.text.find("\"a\""));
  // Without the ordered body: sorted, as before.
  ChatRequest s = parse_chat_request(sorted);
  EXPECT_GT(s.gen.constraint.text.find("\"z\""), s.gen.constraint.text.find("\"a\""));
}

TEST(ToolRequest, RequiredGrammarQwen) {
  ToolsRequest t = parse_tools_request(body({{"tool_choice", "required"}}));
  OutputConstraint c = tool_call_constraint(t, ToolFormat::qwen);
  ASSERT_EQ(c.kind, OutputConstraint::Kind::json_schema);
  const std::string w = R"(<tool_call>
{"name":"get_weather","arguments":{"unit":"c","city":"Oslo"}}
</tool_call>)";
  const std::string n = "<tool_call>\n{\"name\":\"now\",\"arguments\":{}}\n</tool_call>";
  EXPECT_TRUE(matches(c, w));
  EXPECT_TRUE(matches(c, n));
  EXPECT_TRUE(matches(c, w + "\n" + n));  // parallel calls
  EXPECT_FALSE(matches(c, "Sure!"));
  EXPECT_FALSE(matches(c, ""));  // required: at least one call
  EXPECT_FALSE(matches(c, R"({"name":"get_weather","arguments":{"unit":"c","city":"Oslo"}})"));
  // The arguments follow the tool's schema: the enum, maxLength, additionalProperties false.
  EXPECT_FALSE(matches(c,
                       "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"unit\":\"k\","
                       "\"city\":\"Oslo\"}}\n</tool_call>"));
  EXPECT_FALSE(matches(c,
                       "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"unit\":\"c\","
                       "\"city\":\"Copenhagen\"}}\n</tool_call>"));
  EXPECT_FALSE(matches(c, "<tool_call>\n{\"name\":\"now\",\"arguments\":{\"x\":1}}\n</tool_call>"));
  EXPECT_FALSE(matches(c, "<tool_call>\n{\"name\":\"later\",\"arguments\":{}}\n</tool_call>"));
  // What the grammar allows, the parser reads back.
  ParsedOutput p = parse_tool_calls(ToolFormat::qwen, w + "\n" + n);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, R"({"unit":"c","city":"Oslo"})");
}

TEST(ToolRequest, NamedAndSingleCallGrammarLlamaAndGemma) {
  for (ToolFormat f : {ToolFormat::llama3, ToolFormat::gemma}) {
    ToolsRequest t = parse_tools_request(
        body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
              {"parallel_tool_calls", false}}));
    OutputConstraint c = tool_call_constraint(t, f);
    const std::string w = R"({"name":"get_weather","parameters":{"unit":"f","city":""}})";
    EXPECT_TRUE(matches(c, w));
    EXPECT_FALSE(matches(c, w + ";" + w));                          // parallel_tool_calls false
    EXPECT_FALSE(matches(c, R"({"name":"now","parameters":{}})"));  // not the named one
    EXPECT_FALSE(matches(c, R"({"name":"get_weather","arguments":{"unit":"f","city":""}})"));
    t.parallel = true;
    EXPECT_TRUE(matches(tool_call_constraint(t, f), w + ";" + w));
    ParsedOutput p = parse_tool_calls(f, w + ";" + w);
    ASSERT_EQ(p.calls.size(), 2u) << static_cast<int>(f);
    EXPECT_EQ(p.calls[1].name, "get_weather");
  }
}

TEST(ToolRequest, AutoAndNoneHaveNoGrammar) {
  EXPECT_EQ(tool_call_constraint(parse_tools_request(body()), ToolFormat::qwen).kind,
            OutputConstraint::Kind::none);
  EXPECT_EQ(
      tool_call_constraint(parse_tools_request(body({{"tool_choice", "none"}})), ToolFormat::qwen)
          .kind,
      OutputConstraint::Kind::none);
  EXPECT_THROW(tool_call_constraint(parse_tools_request(body({{"tool_choice", "required"}})),
                                    ToolFormat::none),
               ApiError);
}

}  // namespace
}  // namespace tessera::server
