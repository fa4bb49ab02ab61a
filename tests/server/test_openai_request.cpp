// OpenAI request parsing: defaults, every accepted form of prompt and stop, and the 400s that
// name the parameter at fault.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "tessera/engine.h"

namespace tessera::server {
namespace {

using nlohmann::json;

// The ApiError a parse throws (status 0 when it does not throw).
template <class F>
ApiError error_of(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "", "");
}

TEST(OpenAIRequest, CompletionDefaultsAreOpenAIs) {
  auto r = parse_completion_request(json{{"model", "m"}, {"prompt", "hello"}});
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(std::get<std::string>(r.prompts[0]), "hello");
  EXPECT_EQ(r.gen.max_tokens, 16);
  EXPECT_FLOAT_EQ(r.gen.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r.gen.sampling.top_p, 1.0f);
  EXPECT_EQ(r.gen.sampling.top_k, 0);
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.logprobs.has_value());
  EXPECT_FALSE(r.gen.sampling.seed.has_value());
}

TEST(OpenAIRequest, PromptForms) {
  auto strings = parse_completion_request(json{{"prompt", {"a", "b", "c"}}});
  ASSERT_EQ(strings.prompts.size(), 3u);
  EXPECT_EQ(std::get<std::string>(strings.prompts[2]), "c");
  auto ids = parse_completion_request(json{{"prompt", {2, 17, 99}}});
  ASSERT_EQ(ids.prompts.size(), 1u);
  EXPECT_EQ(std::get<std::vector<int32_t>>(ids.prompts[0]), (std::vector<int32_t>{2, 17, 99}));
  auto lists = parse_completion_request(json{{"prompt", json::array({json{2, 5}, json{7}})}});
  ASSERT_EQ(lists.prompts.size(), 2u);
  EXPECT_EQ(std::get<std::vector<int32_t>>(lists.prompts[1]), (std::vector<int32_t>{7}));
}

TEST(OpenAIRequest, BadPromptsNameThePrompt) {
  for (const json& p :
       {json(nullptr), json(5), json::array(), json{"a", 3}, json{1, "a"}, json{json{1}, 2},
        json::array({json::array()}), json{-1}, json{1.5}, json{{"a", 1}}}) {
    json body = {{"prompt", p}};
    ApiError e = error_of([&] { parse_completion_request(body); });
    EXPECT_EQ(e.status, 400) << p.dump();
    EXPECT_EQ(e.param, "prompt") << p.dump();
  }
}

TEST(OpenAIRequest, WrongTypesAreNamed) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"prompt", "x"}, {"temperature", "hot"}}, "temperature"},
      {{{"prompt", "x"}, {"max_tokens", 1.5}}, "max_tokens"},
      {{{"prompt", "x"}, {"max_tokens", "16"}}, "max_tokens"},
      {{{"prompt", "x"}, {"n", 0}}, "n"},
      {{{"prompt", "x"}, {"n", 1000}}, "n"},
      {{{"prompt", "x"}, {"stream", "yes"}}, "stream"},
      {{{"prompt", "x"}, {"stop", 3}}, "stop"},
      {{{"prompt", "x"}, {"stop", {"a", 3}}}, "stop"},
      {{{"prompt", "x"}, {"logprobs", 21}}, "logprobs"},
      {{{"prompt", "x"}, {"logprobs", true}}, "logprobs"},
      {{{"prompt", "x"}, {"seed", "1"}}, "seed"},
      {{{"prompt", "x"}, {"model", 3}}, "model"},
      {{{"prompt", "x"}, {"stream_options", {{"include_usage", true}}}}, "stream_options"},
      {{{"prompt", "x"}, {"echo", true}}, "echo"},
      {{{"prompt", "x"}, {"logit_bias", {{"5", 1}}}}, "logit_bias"},
      {{{"prompt", "x"}, {"best_of", 3}}, "best_of"},
  };
  for (const auto& [body, param] : cases) {
    ApiError e =
        error_of([&b = body] { parse_completion_request(b); });  // clang 14: no binding captures
    EXPECT_EQ(e.status, 400) << body.dump();
    EXPECT_EQ(e.param, param) << body.dump() << " -> " << e.what();
    EXPECT_EQ(e.type, "invalid_request_error");
  }
}

TEST(OpenAIRequest, SamplingAndExtensions) {
  json body = {{"prompt", "x"},
               {"max_tokens", 5},
               {"temperature", 0},
               {"top_p", 0.5},
               {"top_k", -1},
               {"min_p", 0.1},
               {"seed", -3},
               {"stop", "END"},
               {"presence_penalty", 0.5},
               {"frequency_penalty", 1},
               {"repetition_penalty", 1.2},
               {"min_tokens", 2},
               {"ignore_eos", true},
               {"logprobs", 3},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"n", 4},
               {"stop_token_ids", {1, 106}},
               {"user", "ignored"},
               {"max_tokens_extra", nullptr}};
  auto r = parse_completion_request(body);
  EXPECT_EQ(r.gen.max_tokens, 5);
  EXPECT_FLOAT_EQ(r.gen.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r.gen.sampling.top_p, 0.5f);
  EXPECT_EQ(r.gen.sampling.top_k, 0);  // -1: off, as vLLM
  EXPECT_FLOAT_EQ(r.gen.sampling.min_p, 0.1f);
  EXPECT_EQ(*r.gen.sampling.seed, static_cast<uint64_t>(int64_t{-3}));
  EXPECT_EQ(r.gen.stop, std::vector<std::string>{"END"});
  EXPECT_FLOAT_EQ(r.gen.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.gen.sampling.frequency_penalty, 1.0f);
  EXPECT_FLOAT_EQ(r.gen.sampling.repetition_penalty, 1.2f);
  EXPECT_EQ(r.gen.min_tokens, 2);
  EXPECT_TRUE(r.gen.ignore_eos);
  EXPECT_EQ(*r.logprobs, 3);
  EXPECT_TRUE(r.gen.sampling.logprobs);
  EXPECT_EQ(r.gen.sampling.top_logprobs, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.n, 4);
  EXPECT_EQ(r.gen.stop_token_ids, (std::vector<int32_t>{1, 106}));
}

TEST(OpenAIRequest, NullsMeanAbsent) {
  auto r = parse_completion_request(json{{"prompt", "x"},
                                         {"max_tokens", nullptr},
                                         {"stop", nullptr},
                                         {"seed", nullptr},
                                         {"logprobs", nullptr}});
  EXPECT_EQ(r.gen.max_tokens, 16);
  EXPECT_TRUE(r.gen.stop.empty());
  EXPECT_FALSE(r.gen.sampling.seed);
  EXPECT_FALSE(r.logprobs);
}

TEST(OpenAIRequest, ChatMessagesAndLogprobs) {
  json body = {{"model", "m"},
               {"messages",
                {{{"role", "developer"}, {"content", "be brief"}},
                 {{"role", "user"},
                  {"content", json::array({{{"type", "text"}, {"text", "hi "}},
                                           {{"type", "text"}, {"text", "there"}}})}}}},
               {"max_completion_tokens", 7},
               {"logprobs", true},
               {"top_logprobs", 2}};
  auto r = parse_chat_request(body);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "hi there");
  EXPECT_TRUE(r.max_tokens_given);
  EXPECT_EQ(r.gen.max_tokens, 7);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.gen.sampling.top_logprobs, 2);

  auto d = parse_chat_request(json{{"messages", {{{"role", "user"}, {"content", "x"}}}}});
  EXPECT_FALSE(d.max_tokens_given);
  EXPECT_FALSE(d.gen.sampling.logprobs);
}

TEST(OpenAIRequest, BadChatRequests) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json::object(), "messages"},
      {{{"messages", "hi"}}, "messages"},
      {{{"messages", json::array()}}, "messages"},
      {{{"messages", {{{"content", "x"}}}}}, "messages[0].role"},
      {{{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}, "messages[0].role"},
      {{{"messages", {{{"role", "user"}}}}}, "messages[0].content"},
      {{{"messages", {{{"role", "user"}, {"content", 5}}}}}, "messages[0].content"},
      {{{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}},
       "messages[0].content"},
      {{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 2}}, "top_logprobs"},
      {{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"logprobs", 1}}, "logprobs"},
      {{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tools", {{{"type", "function"}}}}},
       "tools[0].function"},
      {{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"response_format", "json"}},
       "response_format"},
      {{{"messages",
         {{{"role", "user"}, {"content", "x"}},
          {{"role", "assistant"},
           {"tool_calls", {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", 5}}}}}}}}}},
       "messages[1].tool_calls"},
      {{{"messages", {{{"role", "user"}, {"content", "x"}}}},
        {"response_format", {{"type", "xml"}}}},
       "response_format.type"},
      {{{"messages", {{{"role", "user"}, {"content", "x"}}}},
        {"response_format", {{"type", "json_schema"}}}},
       "response_format.json_schema"},
      {{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"guided_choice", json::array()}},
       "guided_choice"},
      {{{"messages", {{{"role", "user"}, {"content", "x"}}}},
        {"response_format", {{"type", "json_object"}}},
        {"guided_regex", "a+"}},
       "guided_regex"},
  };
  for (const auto& [body, param] : cases) {
    ApiError e = error_of([&b = body] { parse_chat_request(b); });  // as above
    EXPECT_EQ(e.status, 400) << body.dump();
    EXPECT_EQ(e.param, param) << body.dump() << " -> " << e.what();
  }
}

TEST(OpenAIRequest, StructuredOutputFields) {
  const json msgs = {{{"role", "user"}, {"content", "x"}}};
  auto r = parse_chat_request(json{
      {"messages", msgs},
      {"response_format",
       {{"type", "json_schema"},
        {"json_schema", {{"name", "n"}, {"strict", true}, {"schema", {{"type", "integer"}}}}}}}});
  EXPECT_EQ(r.gen.constraint.kind, OutputConstraint::Kind::json_schema);
  EXPECT_EQ(json::parse(r.gen.constraint.text), (json{{"type", "integer"}}));
  EXPECT_EQ(r.gen.constraint.field, "response_format.json_schema.schema");
  r = parse_chat_request(json{{"messages", msgs}, {"response_format", {{"type", "text"}}}});
  EXPECT_EQ(r.gen.constraint.kind, OutputConstraint::Kind::none);
  r = parse_chat_request(json{{"messages", msgs}, {"response_format", {{"type", "json_object"}}}});
  EXPECT_EQ(r.gen.constraint.kind, OutputConstraint::Kind::json_object);
  auto c = parse_completion_request(
      json{{"prompt", "x"}, {"structured_outputs", {{"choice", {"a", "b"}}}}});
  EXPECT_EQ(c.gen.constraint.kind, OutputConstraint::Kind::choice);
  EXPECT_EQ(c.gen.constraint.choices, (std::vector<std::string>{"a", "b"}));
  c = parse_completion_request(json{{"prompt", "x"}, {"guided_regex", "[0-9]+"}});
  EXPECT_EQ(c.gen.constraint.kind, OutputConstraint::Kind::regex);
  EXPECT_EQ(c.gen.constraint.field, "guided_regex");
  c = parse_completion_request(json{{"prompt", "x"}, {"grammar", "root ::= \"a\""}});
  EXPECT_EQ(c.gen.constraint.kind, OutputConstraint::Kind::grammar);
}

TEST(OpenAIRequest, JsonBody) {
  EXPECT_EQ(parse_json_body(R"({"a": 1})")["a"], 1);
  for (const char* bad : {"", "{", "[1, 2]", "\"str\"", "{\"a\": }", "{\"a\": \"\xff\"}"}) {
    ApiError e = error_of([&] { parse_json_body(bad); });
    EXPECT_EQ(e.status, 400) << bad;
    EXPECT_FALSE(std::string(e.what()).empty());
  }
  ApiError e = error_of([] { parse_json_body("{\"a\": }"); });
  EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("column"), std::string::npos) << e.what();
  // A number past double's range is nlohmann's out_of_range, not a parse_error: found by
  // fuzz/openai_request_fuzz.cpp, it reached the handler's catch-all as a 500.
  for (const char* big : {"4e544", "{\"max_tokens\": 1e999}", "[-1e400]"}) {
    ApiError o = error_of([&] { parse_json_body(big); });
    EXPECT_EQ(o.status, 400) << big;
    EXPECT_NE(std::string(o.what()).find("not valid JSON"), std::string::npos) << o.what();
  }
}

TEST(OpenAIRequest, Classify) {
  auto r = parse_classify_request(
      json{{"prompt", {"a", "b"}}, {"top_logprobs", 5}, {"return_logits", true}});
  EXPECT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.opts.top_logprobs, 5);
  EXPECT_TRUE(r.opts.return_logits);
  EXPECT_FLOAT_EQ(r.opts.sampling.temperature, 0.0f);  // argmax unless told otherwise
  EXPECT_EQ(error_of([] {
              parse_classify_request(json{{"prompt", "a"}, {"top_logprobs", 50}});
            }).param,
            "top_logprobs");
  EXPECT_EQ(error_of([] { parse_classify_request(json{{"top_logprobs", 1}}); }).param, "prompt");
}

TEST(ApiErrors, EngineRequestErrorsNameTheirParameter) {
  // The engine's own check, through the mapping the handlers use.
  SamplingOptions bad;
  bad.top_p = 2;
  try {
    validate_sampling_options(bad);
    FAIL() << "top_p 2 accepted";
  } catch (const Error& e) {
    const ApiError a = api_error_from(e);
    EXPECT_EQ(a.status, 400);
    EXPECT_EQ(a.param, "top_p");
    EXPECT_EQ(a.type, "invalid_request_error");
  }
  const ApiError ctx =
      api_error_from(RequestError("max_tokens", "too long", "context_length_exceeded"));
  EXPECT_EQ(ctx.param, "max_tokens");
  EXPECT_EQ(ctx.code, "context_length_exceeded");
  EXPECT_EQ(ctx.status, 400);
  // Other invalid arguments are still the client's (400) but name nothing; the rest are ours.
  const ApiError plain = api_error_from(Error(ErrorKind::invalid_argument, "top_p is odd"));
  EXPECT_EQ(plain.status, 400);
  EXPECT_TRUE(plain.param.empty());
  EXPECT_EQ(api_error_from(Error(ErrorKind::internal, "boom")).status, 500);
  json j = error_json(
      ApiError(404, "no such model", "invalid_request_error", "model", "model_not_found"));
  EXPECT_EQ(j["error"]["message"], "no such model");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  EXPECT_TRUE(error_json(ApiError(400, "x", "invalid_request_error"))["error"]["param"].is_null());
}

}  // namespace
}  // namespace tessera::server
