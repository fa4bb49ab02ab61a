// POST /v1/responses without a model: the request parser (responses_request.h) and the response
// object and typed event sequence (responses_format.h), against OpenAI's API reference.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/responses_format.h"
#include "server/responses_request.h"

namespace tessera::server {
namespace {

using nlohmann::json;

// The ApiError's param and message for a body the parser refuses.
std::pair<std::string, std::string> refusal(const json& body) {
  try {
    parse_responses_request(body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return {e.param, e.what()};
  }
  ADD_FAILURE() << "accepted: " << body.dump();
  return {};
}

TEST(ResponsesRequest, StringInputAndInstructions) {
  const ResponsesRequest r = parse_responses_request({{"model", "m"},
                                                      {"input", "hi"},
                                                      {"instructions", "be brief"},
                                                      {"max_output_tokens", 5},
                                                      {"temperature", 0},
                                                      {"top_p", 0.5},
                                                      {"stream", true},
                                                      {"store", false},
                                                      {"metadata", {{"k", "v"}}},
                                                      {"text", {{"format", {{"type", "text"}}}}}});
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "be brief");
  EXPECT_EQ(r.messages[1].role, "user");
  EXPECT_EQ(r.messages[1].content, "hi");
  EXPECT_EQ(r.gen.max_tokens, 5);
  EXPECT_TRUE(r.max_tokens_given);
  EXPECT_EQ(r.gen.sampling.temperature, 0.0f);
  EXPECT_EQ(r.gen.sampling.top_p, 0.5f);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.metadata["k"], "v");
}

TEST(ResponsesRequest, MessageItemsAsTheClientsSendThem) {
  // The AI SDK's shape: system as a string, user parts input_text, an earlier reply output_text.
  const ResponsesRequest r = parse_responses_request(
      {{"input",
        json::array({{{"role", "system"}, {"content", "sys"}},
                     {{"role", "user"},
                      {"content", json::array({{{"type", "input_text"}, {"text", "a"}},
                                               {{"type", "input_text"}, {"text", "b"}}})}},
                     {{"type", "message"},
                      {"role", "assistant"},
                      {"content", json::array({{{"type", "output_text"}, {"text", "c"}}})}},
                     {{"role", "developer"}, {"content", "dev"}}})}});
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.messages[2].role, "assistant");
  EXPECT_EQ(r.messages[2].content, "c");
  EXPECT_EQ(r.messages[3].role, "system");
  EXPECT_FALSE(r.max_tokens_given);
}

// text.format is structured output: the same constraint chat's response_format gives.
TEST(ResponsesRequest, TextFormatIsTheConstraint) {
  using K = OutputConstraint::Kind;
  EXPECT_EQ(parse_responses_request({{"input", "x"}}).gen.constraint.kind, K::none);
  EXPECT_EQ(parse_responses_request({{"input", "x"}, {"text", {{"format", {{"type", "text"}}}}}})
                .gen.constraint.kind,
            K::none);
  const auto obj =
      parse_responses_request({{"input", "x"}, {"text", {{"format", {{"type", "json_object"}}}}}});
  EXPECT_EQ(obj.gen.constraint.kind, K::json_object);
  const json schema = {{"type", "object"},
                       {"properties", {{"a", {{"type", "integer"}}}}},
                       {"required", {"a"}},
                       {"additionalProperties", false}};
  const auto js = parse_responses_request(
      {{"input", "x"},
       {"text", {{"format", {{"type", "json_schema"}, {"name", "n"}, {"schema", schema}}}}}});
  EXPECT_EQ(js.gen.constraint.kind, K::json_schema);
  EXPECT_EQ(json::parse(js.gen.constraint.text), schema);
  EXPECT_EQ(js.gen.constraint.field, "text.format.schema");
}

TEST(ResponsesRequest, RefusalsNameTheField) {
  EXPECT_EQ(refusal(json::object()).first, "input");
  EXPECT_EQ(refusal({{"input", 3}}).first, "input");
  EXPECT_EQ(refusal({{"input", json::array()}}).first, "input");
  EXPECT_EQ(refusal({{"input", "x"}, {"store", true}}).first, "store");
  EXPECT_EQ(refusal({{"input", "x"}, {"previous_response_id", "resp_1"}}).first,
            "previous_response_id");
  EXPECT_EQ(refusal({{"input", "x"}, {"tools", json::array({{{"type", "function"}}})}}).first,
            "tools");
  EXPECT_EQ(
      refusal({{"input", "x"}, {"text", {{"format", {{"type", "json_schema"}, {"name", "n"}}}}}})
          .first,
      "text.format.schema");
  EXPECT_EQ(refusal({{"input", "x"}, {"text", {{"format", {{"type", "xml"}}}}}}).first,
            "text.format.type");
  EXPECT_EQ(refusal({{"input", "x"}, {"text", {{"format", "json"}}}}).first, "text.format");
  EXPECT_EQ(refusal({{"input", "x"}, {"max_output_tokens", 0}}).first, "max_output_tokens");
  EXPECT_EQ(refusal({{"input", "x"}, {"max_output_tokens", "5"}}).first, "max_output_tokens");
  EXPECT_EQ(refusal({{"input", "x"}, {"temperature", "hot"}}).first, "temperature");
  EXPECT_EQ(refusal({{"input", json::array({{{"type", "function_call_output"}}})}}).first,
            "input[0].type");
  EXPECT_EQ(
      refusal({{"input", json::array({{{"role", "user"},
                                       {"content", json::array({{{"type", "input_image"}}})}}})}})
          .first,
      "input[0].content[0].type");
  EXPECT_EQ(refusal({{"input", json::array({{{"role", "tool"}, {"content", "x"}}})}}).first,
            "input[0].role");
  EXPECT_EQ(refusal({{"input", "x"}, {"stream_options", json::object()}}).first, "stream_options");
}

ResponseInfo info() {
  ResponseInfo i;
  i.id = "resp_1";
  i.message_id = "msg_1";
  i.model = "tiny";
  i.created_at = 7;
  i.input_tokens = 4;
  i.max_output_tokens = 3;
  return i;
}

RequestStream::Event piece(const std::string& p) {
  RequestStream::Event ev;
  ev.id = 1;
  ev.piece = p;
  return ev;
}

RequestStream::Event done(FinishReason why, const std::string& text, int n) {
  RequestStream::Event ev;
  ev.done = true;
  ev.result.finish_reason = why;
  ev.result.text = text;
  ev.result.ids.assign(static_cast<size_t>(n), 1);
  if (why == FinishReason::error) ev.result.error = "step failed";
  return ev;
}

// (event name, payload) pairs of an SSE text; the payload's type must equal the event name.
std::vector<std::pair<std::string, json>> events(const std::string& sse) {
  std::vector<std::pair<std::string, json>> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    EXPECT_EQ(sse.compare(pos, 7, "event: "), 0) << sse.substr(pos);
    const size_t nl = sse.find('\n', pos);
    const std::string name = sse.substr(pos + 7, nl - pos - 7);
    EXPECT_EQ(sse.compare(nl + 1, 6, "data: "), 0);
    const size_t end = sse.find("\n\n", nl);
    const json j = json::parse(sse.substr(nl + 7, end - nl - 7));
    EXPECT_EQ(j["type"], name);
    out.emplace_back(name, j);
    pos = end + 2;
  }
  return out;
}

TEST(ResponsesStream, EventSequenceAndSequenceNumbers) {
  ResponsesStreamWriter w(info());
  std::string sse = w.event(0, piece("Hel"));
  sse += w.event(0, piece(""));  // held-back text writes nothing
  sse += w.event(0, piece("lo"));
  sse += w.event(0, done(FinishReason::stop, "Hello", 2));
  EXPECT_EQ(w.finish(), "");  // no [DONE] in the Responses API
  const auto ev = events(sse);
  const std::vector<std::string> want = {
      "response.created",           "response.in_progress",
      "response.output_item.added", "response.content_part.added",
      "response.output_text.delta", "response.output_text.delta",
      "response.output_text.done",  "response.content_part.done",
      "response.output_item.done",  "response.completed"};
  ASSERT_EQ(ev.size(), want.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i].first, want[i]);
    EXPECT_EQ(ev[i].second["sequence_number"], static_cast<int>(i));
  }
  EXPECT_EQ(ev[0].second["response"]["status"], "in_progress");
  EXPECT_EQ(ev[0].second["response"]["id"], "resp_1");
  EXPECT_EQ(ev[4].second["delta"], "Hel");
  EXPECT_EQ(ev[4].second["item_id"], "msg_1");
  EXPECT_EQ(ev[6].second["text"], "Hello");
  const json& resp = ev[9].second["response"];
  EXPECT_EQ(resp["status"], "completed");
  EXPECT_EQ(resp["output"][0]["content"][0]["text"], "Hello");
  EXPECT_EQ(resp["usage"]["input_tokens"], 4);
  EXPECT_EQ(resp["usage"]["output_tokens"], 2);
  EXPECT_EQ(resp["usage"]["total_tokens"], 6);
}

TEST(ResponsesStream, TokenLimitIsIncompleteAndFailureIsFailed) {
  ResponsesStreamWriter w(info());
  const auto ev = events(w.event(0, done(FinishReason::length, "abc", 3)));
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().first, "response.incomplete");
  EXPECT_EQ(ev.back().second["response"]["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(ev.back().second["response"]["max_output_tokens"], 3);

  ResponsesStreamWriter f(info());
  const auto fe = events(f.event(0, done(FinishReason::error, "", 0)));
  EXPECT_EQ(fe.back().first, "response.failed");
  EXPECT_EQ(fe.back().second["response"]["status"], "failed");
  EXPECT_EQ(fe.back().second["response"]["error"]["message"], "step failed");
}

TEST(ResponsesObject, CompletedShape) {
  GenerateResult r;
  r.text = "out";
  r.ids = {1, 2};
  r.metrics.cached_prompt_tokens = 1;
  const json j = response_object(info(), r);
  EXPECT_EQ(j["object"], "response");
  EXPECT_EQ(j["status"], "completed");
  EXPECT_EQ(j["store"], false);
  EXPECT_TRUE(j["previous_response_id"].is_null());
  EXPECT_EQ(j["output"].size(), 1u);
  EXPECT_EQ(j["output"][0]["type"], "message");
  EXPECT_EQ(j["output"][0]["role"], "assistant");
  EXPECT_EQ(j["output"][0]["content"][0]["type"], "output_text");
  EXPECT_EQ(j["usage"]["input_tokens_details"]["cached_tokens"], 1);
}

}  // namespace
}  // namespace tessera::server
