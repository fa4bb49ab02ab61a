// Response shapes and the SSE chunk sequence a stream writes, checked against OpenAI's API
// reference (chunk objects, deltas, logprobs objects, the include_usage chunk, [DONE]).
#include <gtest/gtest.h>

#include "server/openai_response.h"
#include "server/stream_chunks.h"

namespace tessera::server {
namespace {

using nlohmann::json;

// The JSON payloads of an SSE text ("data: {...}\n\n" ...); "[DONE]" kept as a string.
std::vector<json> payloads(const std::string& sse) {
  std::vector<json> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    EXPECT_EQ(sse.compare(pos, 6, "data: "), 0) << sse.substr(pos);
    const size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos);
    const std::string data = sse.substr(pos + 6, end - pos - 6);
    out.push_back(data == "[DONE]" ? json("[DONE]") : json::parse(data));
    pos = end + 2;
  }
  return out;
}

RequestStream::Event token(int32_t id, const std::string& piece) {
  RequestStream::Event ev;
  ev.id = id;
  ev.piece = piece;
  return ev;
}

RequestStream::Event done(FinishReason why, int n_ids, const std::string& error = "") {
  RequestStream::Event ev;
  ev.done = true;
  ev.result.finish_reason = why;
  ev.result.ids.assign(static_cast<size_t>(n_ids), 7);
  ev.result.error = error;
  return ev;
}

TokenLogprob lp(int32_t id, const std::string& text, float logprob) {
  TokenLogprob t;
  t.id = id;
  t.text = text;
  t.logprob = logprob;
  return t;
}

StepLogprobs step(TokenLogprob chosen, std::vector<TokenLogprob> top) {
  StepLogprobs s;
  s.chosen = std::move(chosen);
  s.top = std::move(top);
  return s;
}

StreamFormat format(bool chat, int choices) {
  StreamFormat f;
  f.chat = chat;
  f.id = "id-1";
  f.model = "tiny";
  f.created = 123;
  for (int i = 0; i < choices; ++i) f.choice_prompt.push_back(0);
  f.prompt_tokens = {5};
  return f;
}

TEST(StreamChunks, ChatDeltasRoleFirstThenContentThenFinish) {
  ChunkWriter w(format(true, 1));
  // One statement per call: the writer's state advances in order.
  std::string sse = w.event(0, token(10, "Hel"));
  sse += w.event(0, token(11, ""));
  sse += w.event(0, token(12, "lo"));
  sse += w.event(0, done(FinishReason::length, 3));
  sse += w.finish();
  auto p = payloads(sse);
  ASSERT_EQ(p.size(), 5u);  // role, "Hel", "lo" (the empty piece is held back text), finish, [DONE]
  EXPECT_EQ(p[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(p[0]["choices"][0]["delta"], (json{{"role", "assistant"}, {"content", ""}}));
  EXPECT_EQ(p[1]["choices"][0]["delta"]["content"], "Hel");
  EXPECT_TRUE(p[1]["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(p[2]["choices"][0]["delta"]["content"], "lo");
  EXPECT_EQ(p[3]["choices"][0]["delta"], json::object());
  EXPECT_EQ(p[3]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(p[4], "[DONE]");
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p[i]["id"], "id-1");
    EXPECT_EQ(p[i]["model"], "tiny");
    EXPECT_EQ(p[i]["created"], 123);
    EXPECT_FALSE(p[i].contains("usage"));  // only with include_usage
  }
}

TEST(StreamChunks, CompletionsWithUsageAndLogprobs) {
  StreamFormat f = format(false, 2);
  f.include_usage = true;
  f.logprobs = true;
  ChunkWriter w(f);
  RequestStream::Event a = token(10, "ab");
  a.logprobs = step(lp(10, "ab", -0.5f), {lp(10, "ab", -0.5f), lp(11, "c", -1.5f)});
  RequestStream::Event b = token(12, "");  // held-back text still reports its token's logprobs
  b.logprobs = step(lp(12, "d", -0.25f), {});
  std::string sse = w.event(0, a);
  sse += w.event(1, token(3, "x"));
  sse += w.event(0, b);
  sse += w.event(0, done(FinishReason::stop, 2));
  sse += w.event(1, done(FinishReason::length, 4));
  sse += w.finish();
  auto p = payloads(sse);
  ASSERT_EQ(p.size(), 7u);
  EXPECT_EQ(p[0]["object"], "text_completion");
  EXPECT_EQ(p[0]["choices"][0]["text"], "ab");
  EXPECT_EQ(p[0]["choices"][0]["logprobs"]["tokens"], json{"ab"});
  EXPECT_FLOAT_EQ(p[0]["choices"][0]["logprobs"]["token_logprobs"][0].get<float>(), -0.5f);
  EXPECT_EQ(p[0]["choices"][0]["logprobs"]["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(p[0]["choices"][0]["logprobs"]["text_offset"], json{0});
  EXPECT_TRUE(p[0].contains("usage") && p[0]["usage"].is_null());
  EXPECT_EQ(p[1]["choices"][0]["index"], 1);
  EXPECT_TRUE(p[1]["choices"][0]["logprobs"].is_null());  // no logprobs on that event
  EXPECT_EQ(p[2]["choices"][0]["text"], "");
  EXPECT_EQ(p[2]["choices"][0]["logprobs"]["text_offset"], json{2});  // after "ab"
  EXPECT_EQ(p[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(p[4]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(p[5]["choices"], json::array());
  EXPECT_EQ(p[5]["usage"],
            (json{{"prompt_tokens", 5}, {"completion_tokens", 6}, {"total_tokens", 11}}));
  EXPECT_EQ(p[6], "[DONE]");
}

TEST(StreamChunks, FailedChoiceSendsAnErrorObject) {
  ChunkWriter w(format(false, 1));
  auto p = payloads(w.event(0, done(FinishReason::error, 0, "step failed: boom")));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0]["error"]["message"], "step failed: boom");
  EXPECT_EQ(p[0]["error"]["type"], "server_error");
}

TEST(Responses, LogprobShapes) {
  std::vector<StepLogprobs> steps = {
      step(lp(1, "Hi", -0.1f), {lp(1, "Hi", -0.1f), lp(2, "Yo", -2.0f)}),
      step(lp(3, "!", -0.3f), {lp(3, "!", -0.3f)}), step(lp(4, "\xc3\xa9t\xc3\xa9", -0.2f), {})};
  int off = 0;
  json c = completion_logprobs_json(steps, off);
  EXPECT_EQ(c["tokens"], (json{"Hi", "!", "\xc3\xa9t\xc3\xa9"}));
  EXPECT_EQ(c["text_offset"], (json{0, 2, 3}));
  EXPECT_EQ(off, 6);  // offsets count characters: "été" is 3, not 5 bytes
  EXPECT_FLOAT_EQ(c["top_logprobs"][0]["Yo"].get<float>(), -2.0f);
  json ch = chat_logprobs_json(steps);
  ASSERT_EQ(ch["content"].size(), 3u);
  EXPECT_EQ(ch["content"][0]["token"], "Hi");
  EXPECT_EQ(ch["content"][0]["bytes"], (json{72, 105}));
  EXPECT_EQ(ch["content"][0]["top_logprobs"][1]["token"], "Yo");
  EXPECT_EQ(ch["content"][0]["top_logprobs"][1]["bytes"], (json{89, 111}));
}

TEST(Responses, EnvelopesAndInvalidUtf8) {
  json r = chat_response("c1", 5, "m", json::array({chat_choice(0, "hey", nullptr, "stop")}),
                         usage_json(3, 1));
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r["choices"][0]["message"]["content"], "hey");
  EXPECT_EQ(r["usage"]["total_tokens"], 4);
  // A token that is half a UTF-8 sequence must not break the response.
  const std::string text = dump(completion_choice(0, std::string("a\xe2\x82"), nullptr, "length"));
  EXPECT_TRUE(json::accept(text)) << text;
  EXPECT_EQ(new_response_id("cmpl-").size(), 5u + 24u);
  EXPECT_NE(new_response_id("cmpl-"), new_response_id("cmpl-"));
}

}  // namespace
}  // namespace tessera::server
