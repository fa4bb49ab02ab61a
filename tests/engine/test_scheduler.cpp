// The scheduler against the transformers fixtures: greedy continuations, batch = single,
// chunked prefill, preemption, cancellation, admission errors, prefix sharing, concurrency.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "recording_backend.h"
#include "scheduler_harness.h"

namespace tessera {
namespace {

using testing::greedy;
using testing::Harness;
using testing::with_stop;

std::vector<std::string> names() {
  std::vector<std::string> n;
  for (const auto& f : testing::load_model_fixtures()) n.push_back(f.name);
  return n;
}

class SchedulerFixture : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (auto& f : testing::load_model_fixtures())
      if (f.name == GetParam()) fx_ = std::move(f);
    ASSERT_FALSE(fx_.name.empty());
  }
  testing::ModelFixture fx_;
};

TEST_P(SchedulerFixture, GreedyMatchesTransformersOneAtATime) {
  Harness h(fx_.name);
  for (size_t s = 0; s < fx_.sequences.size(); ++s) {
    const int n = fx_.expected["new_tokens"];
    EXPECT_EQ(with_stop(h.generate(fx_.sequences[s], greedy(n))), fx_.greedy[s])
        << "sequence " << s;
    EXPECT_EQ(with_stop(h.generate(fx_.sequences[s], greedy(n, n))), fx_.greedy_min[s])
        << "sequence " << s;
  }
  EXPECT_EQ(h.blocks_in_use(), 0);
}

TEST_P(SchedulerFixture, BatchEqualsSingleWithSmallChunks) {
  // Budget of 7 tokens per step: prompts are prefilled in chunks mixed with other sequences'
  // decodes; every greedy continuation still equals the reference.
  Harness h(fx_.name, /*max_batch_tokens=*/7);
  const int n = fx_.expected["new_tokens"];
  std::vector<std::shared_ptr<RequestShared>> reqs;
  for (int rep = 0; rep < 2; ++rep)
    for (const auto& seq : fx_.sequences) reqs.push_back(h.submit(seq, greedy(n, n)));
  for (size_t i = 0; i < reqs.size(); ++i) {
    Harness::wait(*reqs[i]);
    EXPECT_EQ(with_stop(reqs[i]->result), fx_.greedy_min[i % fx_.sequences.size()])
        << "request " << i;
    EXPECT_EQ(reqs[i]->result.finish_reason, FinishReason::length);
  }
  EXPECT_EQ(h.blocks_in_use(), 0);
}

TEST_P(SchedulerFixture, PreemptionKeepsResultsExact) {
  // A pool of about 22 blocks per group (one full context's bytes) for 9 sequences of up to 14
  // blocks each, admitted eagerly: the scheduler must preempt and recompute, and
  // every result must still be the reference continuation.
  Harness probe(fx_.name);
  size_t per_seq = probe.pool->bytes() / 8;  // default pool: 8 full-context sequences
  Harness h(fx_.name, 16, 8, per_seq, 128, /*prefix_cache=*/false);
  const int n = fx_.expected["new_tokens"];
  std::vector<std::shared_ptr<RequestShared>> reqs;
  for (int rep = 0; rep < 3; ++rep)
    for (const auto& seq : fx_.sequences) reqs.push_back(h.submit(seq, greedy(n, n)));
  for (size_t i = 0; i < reqs.size(); ++i) {
    Harness::wait(*reqs[i]);
    EXPECT_EQ(with_stop(reqs[i]->result), fx_.greedy_min[i % fx_.sequences.size()])
        << "request " << i;
  }
  EXPECT_EQ(h.blocks_in_use(), 0);
  EXPECT_GT(h.sched->stats().preemptions, 0);
}

INSTANTIATE_TEST_SUITE_P(Transformers, SchedulerFixture, ::testing::ValuesIn(names()),
                         [](const auto& info) { return info.param; });

TEST_P(SchedulerFixture, PipelinedStepsWaitAfterIssuingTheNextForward) {
  auto rec = std::make_unique<testing::RecordingBackend>(make_cpu_backend());
  const testing::RecordingBackend* calls = rec.get();
  Harness h(fx_.name, 64, 8, 0, 128, true, std::move(rec));
  const int n = fx_.expected["new_tokens"];
  EXPECT_EQ(with_stop(h.generate(fx_.sequences[0], greedy(n, n))), fx_.greedy_min[0]);
  h.sched.reset();  // joins the scheduler thread: its calls are all logged
  // The prefill's sample is issued and not waited for; each later forward is uploaded with its
  // token still on the device before the host waits for that token; the last token (known to be
  // the last by length) runs no forward of its own.
  std::vector<std::string> want = {"upload:0", "async"};
  for (int i = 1; i < n; ++i) want.insert(want.end(), {"upload:1", "wait", "async"});
  want.push_back("wait");
  EXPECT_EQ(calls->log(), want);
}

TEST_P(SchedulerFixture, StopTokenWhileTheNextStepRuns) {
  // Request A stops at the k-th token of its continuation, whose next forward has already been
  // issued when the host sees it; B decodes beside it. Both stay exact and every block returns.
  Harness h(fx_.name);
  const int n = fx_.expected["new_tokens"];
  const std::vector<int32_t> eos = h.eos;
  h.eos.clear();  // A's continuation with no stop id at all
  const std::vector<int32_t> ref = h.generate(fx_.sequences[0], greedy(n)).ids;
  ASSERT_EQ(static_cast<int>(ref.size()), n);
  // The first token after the first that has not appeared before it (the first itself when the
  // continuation repeats one token).
  size_t k = 1;
  while (k < ref.size() && std::find(ref.begin(), ref.begin() + k, ref[k]) != ref.begin() + k) ++k;
  if (k == ref.size()) k = 0;
  h.eos = {ref[k]};
  auto a = h.submit(fx_.sequences[0], greedy(n));
  h.eos = eos;
  auto b = h.submit(fx_.sequences[1 % fx_.sequences.size()], greedy(n, n));
  Harness::wait(*a);
  Harness::wait(*b);
  EXPECT_EQ(a->result.ids, std::vector<int32_t>(ref.begin(), ref.begin() + k));
  ASSERT_TRUE(a->result.stop_token.has_value());
  EXPECT_EQ(*a->result.stop_token, ref[k]);
  EXPECT_EQ(with_stop(b->result), fx_.greedy_min[1 % fx_.sequences.size()]);
  EXPECT_EQ(h.blocks_in_use(), 0);
}

TEST(Scheduler, CancelFromCallbackReturnsPartialOutput) {
  Harness h("gemma3_gqa");
  int seen = 0;
  auto sh = h.submit({2, 10, 20, 30}, greedy(50, 50),
                     [&](int32_t id, std::string_view) { return id < 0 || ++seen < 5; });
  Harness::wait(*sh);
  EXPECT_EQ(sh->result.finish_reason, FinishReason::cancelled);
  EXPECT_EQ(sh->result.ids.size(), 5u);
  EXPECT_EQ(h.blocks_in_use(), 0);
}

TEST(Scheduler, CancelTokenFromAnotherThread) {
  Harness h("gemma3_gqa", 64, 8, 0, 128);
  CancelToken cancel;
  std::atomic<int> produced{0};
  auto sh = h.submit(
      {2, 10, 20, 30}, greedy(120, 120),
      [&](int32_t, std::string_view) {
        if (++produced == 3) cancel.cancel();
        return true;
      },
      cancel);
  Harness::wait(*sh);
  EXPECT_EQ(sh->result.finish_reason, FinishReason::cancelled);
  EXPECT_GE(sh->result.ids.size(), 3u);
  EXPECT_LT(sh->result.ids.size(), 120u);
  EXPECT_EQ(h.blocks_in_use(), 0);
}

TEST(Scheduler, RequestLargerThanPoolFailsWhileOthersFinish) {
  Harness probe("llama3");
  const size_t per_seq = probe.pool->bytes() / 8;
  Harness h("llama3", 64, 8, per_seq / 2, 128);  // half a full-context sequence
  std::vector<int32_t> small{2, 5, 6, 7};
  auto a = h.submit(small, greedy(8, 8));
  auto big = h.submit(std::vector<int32_t>(60, 9), greedy(60, 60));
  auto b = h.submit(small, greedy(8, 8));
  Harness::wait(*big);
  EXPECT_EQ(big->result.finish_reason, FinishReason::error);
  EXPECT_NE(big->result.error.find("than the whole pool holds"), std::string::npos)
      << big->result.error;
  Harness::wait(*a);
  Harness::wait(*b);
  EXPECT_EQ(a->result.finish_reason, FinishReason::length);
  EXPECT_EQ(a->result.ids, b->result.ids);
  EXPECT_EQ(h.blocks_in_use(), 0);
}

TEST(Scheduler, OverContextFailsAtOnce) {
  Harness h("llama3", 64, 8, 0, 32);
  auto r = h.generate(std::vector<int32_t>(20, 5), greedy(20));
  EXPECT_EQ(r.finish_reason, FinishReason::error);
  EXPECT_NE(r.error.find("context length is 32"), std::string::npos) << r.error;
}

TEST(Scheduler, ConcurrentCallersShareTheScheduler) {
  auto fx = testing::load_model_fixtures();
  const auto& f = fx[0];
  Harness h(f.name);
  const int n = f.expected["new_tokens"];
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      const size_t s = t % f.sequences.size();
      if (with_stop(h.generate(f.sequences[s], greedy(n, n))) != f.greedy_min[s]) ++mismatches;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(h.blocks_in_use(), 0);
}

TEST(Scheduler, SeedsReproduceAndDiffer) {
  Harness h("qwen3");
  GenerateOptions g;
  g.sampling.temperature = 1.5f;
  g.sampling.top_k = 50;
  g.max_tokens = 16;
  g.min_tokens = 16;
  g.sampling.seed = 1234;
  auto a = h.generate({2, 40, 41, 42}, g);
  auto b = h.generate({2, 40, 41, 42}, g);
  g.sampling.seed = 99;
  auto c = h.generate({2, 40, 41, 42}, g);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_NE(a.ids, c.ids);
  EXPECT_EQ(a.ids.size(), 16u);
}

TEST(Scheduler, ClassifyTakesTheLastRowOnly) {
  auto fxs = testing::load_model_fixtures();
  for (const auto& f : fxs) {
    if (f.name != "gemma3_gqa" && f.name != "qwen2") continue;
    Harness h(f.name);
    ClassifyOptions o;
    o.return_logits = true;
    o.top_logprobs = 3;
    std::vector<std::shared_ptr<RequestShared>> reqs;
    for (const auto& s : f.sequences) reqs.push_back(h.submit_classify(s, o));
    for (size_t i = 0; i < reqs.size(); ++i) {
      Harness::wait(*reqs[i]);
      const auto& c = reqs[i]->classify;
      const auto& ref = f.logits[i].back();
      EXPECT_TRUE(c.error.empty()) << c.error;
      EXPECT_LE(testing::row_error(c.logits, ref), 1e-4);
      EXPECT_EQ(c.token, std::max_element(ref.begin(), ref.end()) - ref.begin());
      ASSERT_EQ(c.top_logprobs.size(), 3u);
      EXPECT_EQ(c.top_logprobs[0].id, c.token);
      EXPECT_FLOAT_EQ(c.top_logprobs[0].logprob, c.logprob);
      EXPECT_GE(c.top_logprobs[0].logprob, c.top_logprobs[1].logprob);
    }
    EXPECT_EQ(h.blocks_in_use(), 0);
  }
}

TEST(Scheduler, PrefixSharingReusesBlocksAndKeepsResults) {
  auto fxs = testing::load_model_fixtures();
  for (const auto& f : fxs) {
    // Gemma (sliding + full groups) and Mistral (all sliding) exercise both cache paths.
    if (f.name != "gemma3_gqa" && f.name != "mistral_window" && f.name != "llama3") continue;
    Harness h(f.name);
    const auto& longest = f.sequences.back();  // 41 tokens
    const int n = f.expected["new_tokens"];
    auto first = h.generate(longest, greedy(n, n));
    auto again = h.generate(longest, greedy(n, n));
    EXPECT_EQ(with_stop(first), f.greedy_min.back()) << f.name;
    EXPECT_EQ(with_stop(again), f.greedy_min.back()) << f.name;
    EXPECT_EQ(first.metrics.cached_prompt_tokens, 0);
    EXPECT_GT(again.metrics.cached_prompt_tokens, 0) << f.name;
    EXPECT_EQ(again.metrics.cached_prompt_tokens % 4, 0);
    EXPECT_EQ(h.blocks_in_use(), 0);
  }
}

}  // namespace
}  // namespace tessera
