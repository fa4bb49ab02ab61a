// The checks Engine::prepare composes, on plain numbers: each failure names its field, the
// context check speaks OpenAI's words, max_tokens "to the context" resolves from the prompt, and
// the stop ids are the EOS set then the request's own.
#include <gtest/gtest.h>

#include <optional>

#include "engine/request_prep.h"

namespace tessera {
namespace {

template <class F>
std::optional<RequestError> error_of(F&& f) {
  try {
    f();
  } catch (const RequestError& e) {
    return e;
  }
  return std::nullopt;
}

GenerateOptions gen(int max_tokens, int min_tokens = 0) {
  GenerateOptions g;
  g.max_tokens = max_tokens;
  g.min_tokens = min_tokens;
  return g;
}

TEST(RequestPrep, OptionErrorsNameTheirField) {
  struct Case {
    GenerateOptions g;
    std::string field;
  };
  std::vector<Case> cases;
  cases.push_back({gen(0), "max_tokens"});
  cases.push_back({gen(200), "max_tokens"});  // context 100
  cases.push_back({gen(8, -1), "min_tokens"});
  cases.push_back({gen(8, 9), "min_tokens"});
  GenerateOptions g = gen(8);
  g.stop_token_ids = {5, 1000};
  cases.push_back({g, "stop_token_ids"});
  g = gen(8);
  g.stop = {"ok", ""};
  cases.push_back({g, "stop"});
  g = gen(8);
  g.sampling.top_p = 0;
  cases.push_back({g, "top_p"});
  g = gen(8);
  g.sampling.presence_penalty = 3;
  cases.push_back({g, "presence_penalty"});
  for (const Case& c : cases) {
    auto e = error_of([&] { check_generate_options(c.g, 100, 1000); });
    ASSERT_TRUE(e) << c.field;
    EXPECT_EQ(e->field(), c.field) << e->what();
    EXPECT_EQ(e->kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e->what()).find(c.field == "stop_token_ids" ? "stop token id" : c.field),
              std::string::npos)
        << e->what();
  }
  EXPECT_FALSE(error_of([] { check_generate_options(gen(100, 100), 100, 1000); }));
  // To the context: max_tokens is not looked at until the prompt is known.
  GenerateOptions open = gen(0, 5);
  open.max_tokens_to_context = true;
  EXPECT_FALSE(error_of([&] { check_generate_options(open, 100, 1000); }));
}

TEST(RequestPrep, PromptIdsWithinTheVocabulary) {
  EXPECT_FALSE(error_of([] { check_prompt_ids(std::vector<int32_t>{0, 999}, 1000, "prompt"); }));
  auto e = error_of([] { check_prompt_ids(std::vector<int32_t>{2, 1000}, 1000, "prompt"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->field(), "prompt");
  EXPECT_NE(std::string(e->what()).find("token id 1000 at index 1 is outside the vocabulary"),
            std::string::npos);
  EXPECT_TRUE(error_of([] { check_prompt_ids({}, 1000, "prompt"); }));
  EXPECT_TRUE(error_of([] { check_prompt_ids(std::vector<int32_t>{-1}, 1000, "prompt"); }));
}

TEST(RequestPrep, ContextErrorNamesThePromptOrMaxTokens) {
  EXPECT_FALSE(error_of([] { check_context(90, 10, 100, "prompt"); }));
  auto long_prompt = error_of([] { check_context(120, 4, 100, "prompt"); });
  ASSERT_TRUE(long_prompt);
  EXPECT_EQ(long_prompt->field(), "prompt");
  EXPECT_EQ(long_prompt->code(), "context_length_exceeded");
  EXPECT_EQ(std::string(long_prompt->what()),
            "This model's maximum context length is 100 tokens. However, you requested 124 tokens "
            "(120 in the prompt, 4 for the completion). Please reduce the length of the prompt or "
            "the completion.");
  auto many = error_of([] { check_context(5, 100, 100, "messages"); });
  ASSERT_TRUE(many);
  EXPECT_EQ(many->field(), "max_tokens");  // the prompt alone fits
  EXPECT_NE(std::string(many->what()).find("5 in the messages"), std::string::npos);
  auto cls = error_of([] { check_classify_context(101, 100); });
  ASSERT_TRUE(cls);
  EXPECT_EQ(cls->field(), "prompt");
  EXPECT_EQ(cls->code(), "context_length_exceeded");
  EXPECT_FALSE(error_of([] { check_classify_context(100, 100); }));
}

TEST(RequestPrep, MaxTokensToTheContext) {
  GenerateOptions g = gen(16);
  EXPECT_EQ(resolve_max_tokens(g, 30, 100, "messages"), 16);
  g.max_tokens_to_context = true;
  EXPECT_EQ(resolve_max_tokens(g, 30, 100, "messages"), 70);
  auto full = error_of([&] { resolve_max_tokens(g, 100, 100, "messages"); });
  ASSERT_TRUE(full);
  EXPECT_EQ(full->field(), "messages");
  EXPECT_EQ(full->code(), "context_length_exceeded");
  g.min_tokens = 71;
  auto min = error_of([&] { resolve_max_tokens(g, 30, 100, "messages"); });
  ASSERT_TRUE(min);
  EXPECT_EQ(min->field(), "min_tokens");
}

TEST(RequestPrep, StopIdsAreTheEosSetThenTheRequests) {
  const std::vector<int32_t> eos = {1, 106};
  GenerateOptions g = gen(8);
  g.stop_token_ids = {7, 106, 7};
  EXPECT_EQ(stop_ids_for(g, eos), (std::vector<int32_t>{1, 106, 7}));
  g.ignore_eos = true;
  EXPECT_EQ(stop_ids_for(g, eos), (std::vector<int32_t>{7, 106}));
  g.stop_token_ids.clear();
  EXPECT_TRUE(stop_ids_for(g, eos).empty());
}

TEST(RequestPrep, ClassifyOptions) {
  ClassifyOptions o;
  o.top_logprobs = 21;
  auto e = error_of([&] { check_classify_options(o); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->field(), "top_logprobs");
  o.top_logprobs = 20;
  o.sampling.temperature = -1;
  e = error_of([&] { check_classify_options(o); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->field(), "temperature");
}

}  // namespace
}  // namespace tessera
