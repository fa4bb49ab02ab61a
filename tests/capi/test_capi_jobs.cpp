// The C ABI's many-prompt jobs: classify equals the C++ API's, batch equals one-at-a-time
// generation, per-prompt errors stay per prompt, and cancellation keeps partial results and
// leaves no KV block held.
#include <thread>

#include "capi_fixture.h"
#include "tessera/engine.h"

namespace tessera {
namespace {

using testing::CEngine;
using testing::greedy;
using testing::ids_of;
using testing::ids_prompt;
using testing::text_prompt;

TEST(CApiClassify, EqualsTheCppApiWithLogitsAndTopLogprobs) {
  CEngine ce;
  const std::vector<int32_t> ids = {2, 651, 1045, 18};
  const tessera_prompt prompts[] = {text_prompt("And it came to pass"), ids_prompt(ids),
                                    text_prompt("The king said")};
  tessera_classify_options co;
  tessera_classify_options_init(&co);
  co.return_logits = 1;
  co.top_logprobs = 3;
  tessera_classify_results out;
  char* err = nullptr;
  ASSERT_EQ(tessera_classify(ce.get(), prompts, 3, &co, &out, &err), TESSERA_OK) << err;
  ASSERT_EQ(out.n, 3u);
  EXPECT_EQ(out.metrics.requests, 3);

  EngineOptions eo;
  eo.model_dir = testing::tiny_en_dir();
  eo.device = "cpu";
  eo.context_length = 256;
  auto e = Engine::load(eo);
  ClassifyOptions o;
  o.return_logits = true;
  o.top_logprobs = 3;
  const auto want =
      e->classify({std::string("And it came to pass"), ids, std::string("The king said")}, o);
  for (size_t i = 0; i < 3; ++i) {
    const tessera_classify_result& c = out.results[i];
    ASSERT_EQ(c.status, TESSERA_OK) << c.error;
    EXPECT_EQ(c.error, nullptr);
    EXPECT_EQ(c.token, want[i].token);
    EXPECT_EQ(std::string(c.text), want[i].text);
    EXPECT_EQ(c.prompt_tokens, want[i].prompt_tokens);
    ASSERT_EQ(c.n_logits, want[i].logits.size());
    EXPECT_EQ(std::vector<float>(c.logits, c.logits + c.n_logits), want[i].logits);
    ASSERT_EQ(c.n_top_logprobs, 3u);
    EXPECT_EQ(c.top_logprobs[0].id, c.token);  // greedy: the pick is the most likely
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(c.top_logprobs[k].id, want[i].top_logprobs[k].id);
      EXPECT_FLOAT_EQ(c.top_logprobs[k].logprob, want[i].top_logprobs[k].logprob);
    }
  }
  tessera_classify_results_free(&out);
  EXPECT_EQ(out.results, nullptr);
}

TEST(CApiClassify, PromptErrorsArePerPromptAndOptionErrorsFailTheCall) {
  CEngine ce;
  const std::vector<int32_t> bad = {2, 99999999};
  const std::vector<int32_t> empty;
  const tessera_prompt prompts[] = {ids_prompt(bad), text_prompt("Hello"), ids_prompt(empty)};
  tessera_classify_results out;
  char* err = nullptr;
  ASSERT_EQ(tessera_classify(ce.get(), prompts, 3, nullptr, &out, &err), TESSERA_OK);
  ASSERT_EQ(out.n, 3u);
  EXPECT_EQ(out.results[0].status, TESSERA_INVALID_ARGUMENT);
  EXPECT_EQ(out.results[0].token, -1);
  EXPECT_NE(std::string(out.results[0].error).find("99999999"), std::string::npos);
  EXPECT_EQ(out.results[1].status, TESSERA_OK);
  EXPECT_GE(out.results[1].token, 0);
  EXPECT_EQ(out.results[1].logits, nullptr);  // not asked for
  EXPECT_EQ(out.results[2].status, TESSERA_INVALID_ARGUMENT);
  tessera_classify_results_free(&out);

  tessera_classify_options co;
  tessera_classify_options_init(&co);
  co.temperature = -1;
  EXPECT_EQ(tessera_classify(ce.get(), prompts, 3, &co, &out, &err), TESSERA_INVALID_ARGUMENT);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("temperature"), std::string::npos);
  tessera_string_free(err);
  EXPECT_EQ(out.results, nullptr);
  tessera_classify_options_init(&co);
  co.top_logprobs = 21;
  EXPECT_EQ(tessera_classify(ce.get(), prompts, 3, &co, &out, &err), TESSERA_INVALID_ARGUMENT);
  tessera_string_free(err);
  EXPECT_EQ(tessera_classify(ce.get(), nullptr, 2, nullptr, &out, &err), TESSERA_INVALID_ARGUMENT);
  tessera_string_free(err);
  EXPECT_EQ(tessera_classify(nullptr, prompts, 1, nullptr, &out, &err), TESSERA_INVALID_ARGUMENT);
  tessera_string_free(err);
  EXPECT_EQ(tessera_classify(ce.get(), prompts, 1, nullptr, nullptr, nullptr),
            TESSERA_INVALID_ARGUMENT);
}

TEST(CApiClassify, CancelledBeforeItRunsFailsEveryPromptAsCancelled) {
  CEngine ce;
  std::vector<tessera_prompt> prompts(40, text_prompt("And the LORD spake unto Moses, saying"));
  tessera_cancel* c = tessera_cancel_new();
  tessera_cancel_trigger(c);
  EXPECT_EQ(tessera_cancel_is_triggered(c), 1);
  tessera_classify_options co;
  tessera_classify_options_init(&co);
  co.cancel = c;
  tessera_classify_results out;
  ASSERT_EQ(tessera_classify(ce.get(), prompts.data(), prompts.size(), &co, &out, nullptr),
            TESSERA_OK);
  for (size_t i = 0; i < out.n; ++i) EXPECT_EQ(out.results[i].status, TESSERA_CANCELLED);
  tessera_classify_results_free(&out);
  tessera_cancel_free(c);
  EXPECT_TRUE(ce.settles_to_no_kv());
}

TEST(CApiBatch, EqualsOneAtATimeWithEachTokensText) {
  CEngine ce;
  const char* texts[] = {"And it came to pass", "The king", "In the beginning", "Blessed are"};
  std::vector<tessera_prompt> prompts;
  for (const char* t : texts) prompts.push_back(text_prompt(t));
  const std::vector<int32_t> ids = {2, 651, 1045};
  prompts.push_back(ids_prompt(ids));
  tessera_generate_options o = greedy(12);
  tessera_batch_results out;
  char* err = nullptr;
  ASSERT_EQ(tessera_batch_generate(ce.get(), prompts.data(), prompts.size(), &o, &out, &err),
            TESSERA_OK)
      << err;
  ASSERT_EQ(out.n, prompts.size());
  EXPECT_EQ(out.metrics.requests, 5);
  int generated = 0;
  for (size_t i = 0; i < out.n; ++i) {
    tessera_result one;
    if (prompts[i].text)
      ASSERT_EQ(tessera_generate(ce.get(), prompts[i].text, &o, nullptr, nullptr, &one),
                TESSERA_OK);
    else
      ASSERT_EQ(
          tessera_generate_tokens(ce.get(), ids.data(), ids.size(), &o, nullptr, nullptr, &one),
          TESSERA_OK);
    const tessera_result& b = out.results[i];
    EXPECT_EQ(b.status, TESSERA_OK);
    EXPECT_EQ(ids_of(b), ids_of(one));
    EXPECT_STREQ(b.text, one.text);
    EXPECT_STREQ(b.finish_reason, one.finish_reason);
    // The pieces tile the text, as the one-at-a-time call's do.
    ASSERT_GT(b.n_ids, 0u);
    for (size_t k = 0; k < b.n_ids; ++k) EXPECT_EQ(b.piece_ends[k], one.piece_ends[k]);
    for (size_t k = 1; k < b.n_ids; ++k) EXPECT_GE(b.piece_ends[k], b.piece_ends[k - 1]);
    EXPECT_LE(b.piece_ends[b.n_ids - 1], std::strlen(b.text));
    generated += b.metrics.generated_tokens;
    tessera_result_free(&one);
  }
  EXPECT_EQ(out.metrics.generated_tokens, generated);
  tessera_batch_results_free(&out);
  EXPECT_TRUE(ce.settles_to_no_kv());
}

TEST(CApiBatch, PromptErrorsArePerPromptAndOptionErrorsFailTheCall) {
  CEngine ce(8, 64);
  const std::vector<int32_t> bad = {2, -5};
  const std::string long_text(2000, 'a');
  const tessera_prompt prompts[] = {text_prompt("Hello"), ids_prompt(bad),
                                    text_prompt(long_text.c_str())};
  tessera_generate_options o = greedy(4);
  o.ignore_eos = 1;
  tessera_batch_results out;
  char* err = nullptr;
  ASSERT_EQ(tessera_batch_generate(ce.get(), prompts, 3, &o, &out, &err), TESSERA_OK);
  EXPECT_EQ(out.results[0].status, TESSERA_OK);
  EXPECT_EQ(out.results[0].n_ids, 4u);
  EXPECT_EQ(out.results[1].status, TESSERA_INVALID_ARGUMENT);
  EXPECT_STREQ(out.results[1].finish_reason, "error");
  EXPECT_EQ(out.results[2].status, TESSERA_INVALID_ARGUMENT);  // longer than the context
  EXPECT_NE(std::string(out.results[2].error).find("context"), std::string::npos);
  tessera_batch_results_free(&out);

  o.temperature = -1;
  EXPECT_EQ(tessera_batch_generate(ce.get(), prompts, 3, &o, &out, &err), TESSERA_INVALID_ARGUMENT);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("temperature"), std::string::npos);
  tessera_string_free(err);
  EXPECT_EQ(out.results, nullptr);
  o = greedy(4);
  o.n_stop = 1;  // stop strings NULL
  EXPECT_EQ(tessera_batch_generate(ce.get(), prompts, 3, &o, &out, &err), TESSERA_INVALID_ARGUMENT);
  tessera_string_free(err);
  const tessera_prompt null_ids = {nullptr, nullptr, 3};
  o = greedy(4);
  EXPECT_EQ(tessera_batch_generate(ce.get(), &null_ids, 1, &o, &out, &err),
            TESSERA_INVALID_ARGUMENT);
  tessera_string_free(err);
}

TEST(CApiBatch, CancelMidWayKeepsEachPromptsTokensAndFreesTheKv) {
  CEngine ce(8, 256);
  std::vector<tessera_prompt> prompts(6, text_prompt("And it came to pass"));
  tessera_generate_options o = greedy(200);
  o.ignore_eos = 1;
  tessera_cancel* c = tessera_cancel_new();
  o.cancel = c;
  std::thread canceller([&] {
    // Once some tokens exist (the engine's counter), from another thread.
    for (int i = 0; i < 2000 && ce.stats().generated_tokens < 12; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    tessera_cancel_trigger(c);
  });
  tessera_batch_results out;
  ASSERT_EQ(tessera_batch_generate(ce.get(), prompts.data(), prompts.size(), &o, &out, nullptr),
            TESSERA_OK);
  canceller.join();
  tessera_cancel_free(c);
  for (size_t i = 0; i < out.n; ++i) {
    const tessera_result& r = out.results[i];
    EXPECT_EQ(r.status, TESSERA_CANCELLED);
    EXPECT_STREQ(r.finish_reason, "cancelled");
    EXPECT_LT(r.n_ids, 200u);
    EXPECT_EQ(static_cast<size_t>(r.metrics.generated_tokens), r.n_ids);
  }
  EXPECT_GT(out.results[0].n_ids, 0u);  // partial results
  tessera_batch_results_free(&out);
  EXPECT_TRUE(ce.settles_to_no_kv());
}

}  // namespace
}  // namespace tessera
