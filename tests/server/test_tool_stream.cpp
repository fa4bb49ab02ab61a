// Tool calls streamed (server/tool_output.h and ChunkWriter with tools): text that may be a call
// waits, content that cannot be one goes out at once, calls arrive as OpenAI's delta.tool_calls
// (an id, type and name with empty arguments, then the arguments), finish_reason "tool_calls".
#include <gtest/gtest.h>

#include "server/stream_chunks.h"
#include "server/tool_output.h"

namespace tessera::server {
namespace {

using nlohmann::json;

// Feeds pieces; returns the content sent as it came, and what finish() gives.
std::pair<std::string, ParsedOutput> feed(ToolFormat f, const std::vector<std::string>& pieces,
                                          bool parallel = true) {
  ToolCallStream s(f, parallel);
  std::string sent;
  for (const std::string& p : pieces) sent += s.push(p);
  return {sent, s.finish()};
}

TEST(ToolStream, QwenContentFlowsUntilTheTag) {
  auto [sent, rest] = feed(ToolFormat::qwen, {"Let me ", "check.\n<tool", "_call>\n{\"name\": ",
                                              "\"f\", \"arguments\": {\"a\": 1}}\n</tool_call>"});
  EXPECT_EQ(sent, "Let me check.\n");
  ASSERT_EQ(rest.calls.size(), 1u);
  EXPECT_EQ(rest.calls[0].name, "f");
  EXPECT_EQ(rest.calls[0].arguments, R"({"a":1})");
  EXPECT_EQ(rest.content, "");
  // A '<' that does not become the tag is released with what follows.
  ToolCallStream s(ToolFormat::qwen, true);
  EXPECT_EQ(s.push("a <"), "a ");
  EXPECT_EQ(s.push("b"), "<b");
  EXPECT_EQ(s.finish().content, "");
}

TEST(ToolStream, QwenMalformedCallIsContentAtTheEnd) {
  auto [sent, rest] = feed(ToolFormat::qwen, {"<tool_call>\n{oops"});
  EXPECT_EQ(sent, "");
  EXPECT_TRUE(rest.calls.empty());
  EXPECT_EQ(rest.content, "<tool_call>\n{oops");
}

TEST(ToolStream, JsonFormatsHoldAnOpeningBrace) {
  for (ToolFormat f : {ToolFormat::llama3, ToolFormat::gemma}) {
    auto [sent, rest] = feed(f, {"\n", " {\"name\": \"f\", ", "\"parameters\": {}};",
                                 "{\"name\": \"g\", \"parameters\": {\"x\": \"a;b\"}}"});
    EXPECT_EQ(sent, "");
    ASSERT_EQ(rest.calls.size(), 2u);
    EXPECT_EQ(rest.calls[1].name, "g");
    EXPECT_EQ(rest.calls[1].arguments, R"({"x":"a;b"})");  // ';' inside a string is no separator
    auto [sent1, rest1] = feed(f, {"{\"name\": \"f\", \"parameters\": {}};{\"name\": \"g\"}"},
                               /*parallel=*/false);
    EXPECT_EQ(rest1.calls.size(), 1u);  // parallel_tool_calls false keeps the first
  }
  auto [text, none] = feed(ToolFormat::llama3, {" ", "Hello", " there"});
  EXPECT_EQ(text, " Hello there");  // not a call: content at once
  EXPECT_TRUE(none.calls.empty());
  EXPECT_EQ(none.content, "");
  // Gemma's ```tool_code fence; and a partial <|python_tag|> waits.
  auto [g, gc] = feed(ToolFormat::gemma, {"``", "`tool_code\n{\"name\": \"f\"}\n```"});
  EXPECT_EQ(g, "");
  ASSERT_EQ(gc.calls.size(), 1u);
  ToolCallStream s(ToolFormat::llama3, true);
  EXPECT_EQ(s.push("<|py"), "");
  EXPECT_EQ(s.push("x"), "<|pyx");
}

std::vector<json> payloads(const std::string& sse) {
  std::vector<json> out;
  for (size_t pos = 0; pos < sse.size();) {
    const size_t end = sse.find("\n\n", pos);
    const std::string data = sse.substr(pos + 6, end - pos - 6);
    out.push_back(data == "[DONE]" ? json("[DONE]") : json::parse(data));
    pos = end + 2;
  }
  return out;
}

TEST(ToolStream, ChunksCarryDeltaToolCalls) {
  StreamFormat f;
  f.chat = true;
  f.id = "id";
  f.model = "m";
  f.choice_prompt = {0};
  f.prompt_tokens = {3};
  f.tools = true;
  f.tool_format = ToolFormat::qwen;
  ChunkWriter w(f);
  auto tok = [](const std::string& piece) {
    RequestStream::Event ev;
    ev.id = 1;
    ev.piece = piece;
    return ev;
  };
  std::string sse = w.event(0, tok("Hi "));
  sse += w.event(0, tok("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1]}}"));
  sse += w.event(0, tok("\n</tool_call>"));
  RequestStream::Event done;
  done.done = true;
  done.result.finish_reason = FinishReason::stop;
  sse += w.event(0, done);
  sse += w.finish();
  auto p = payloads(sse);
  ASSERT_EQ(p.size(), 6u);  // role, "Hi ", call head, call arguments, finish, [DONE]
  EXPECT_EQ(p[1]["choices"][0]["delta"]["content"], "Hi ");
  const json head = p[2]["choices"][0]["delta"]["tool_calls"][0];
  EXPECT_EQ(head["index"], 0);
  EXPECT_EQ(head["type"], "function");
  EXPECT_EQ(head["function"]["name"], "f");
  EXPECT_EQ(head["function"]["arguments"], "");
  EXPECT_EQ(head["id"].get<std::string>().rfind("call_", 0), 0u);
  const json args = p[3]["choices"][0]["delta"]["tool_calls"][0];
  EXPECT_EQ(args["index"], 0);
  EXPECT_FALSE(args.contains("id"));
  EXPECT_EQ(json::parse(args["function"]["arguments"].get<std::string>()), (json{{"a", {1}}}));
  EXPECT_EQ(p[4]["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(p[5], "[DONE]");
}

TEST(ToolStream, CallsJsonHasFreshIds) {
  json a = tool_calls_json({{"f", "{}"}, {"g", "{\"x\":1}"}});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_NE(a[0]["id"], a[1]["id"]);
  EXPECT_EQ(a[1]["function"], (json{{"name", "g"}, {"arguments", "{\"x\":1}"}}));
  EXPECT_EQ(tool_call_deltas(a).size(), 4u);
}

}  // namespace
}  // namespace tessera::server
