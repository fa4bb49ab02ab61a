// Each step of the sampler chain (backend.h SampleParams) against distributions computed by
// hand: the pick for a given (seed, step) must be the inverse CDF, over the kept tokens in id
// order, of the uniform that core/rng.h draws for it.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "backend/backend.h"
#include "core/rng.h"

namespace tessera {
namespace {

struct SamplerTest : ::testing::Test {
  std::unique_ptr<ComputeBackend> be = make_cpu_backend();

  // Samples one row of `logits` with p.
  SampleOutput run(const std::vector<float>& logits, const SampleParams& p,
                   SampleBatch batch = {}) {
    DeviceArray a =
        be->alloc_array(1, static_cast<int64_t>(logits.size()), DType::f32, "test logits");
    be->copy_to_device(a.view.data, logits.data(), logits.size() * 4);
    batch.rows = {p};
    SampleOutput out;
    be->sample(a.view, batch, out);
    return out;
  }

  // The id the inverse CDF of `probs` (kept tokens > 0, ascending id order) gives for u.
  static int expected_pick(const std::vector<double>& probs, double u) {
    double total = std::accumulate(probs.begin(), probs.end(), 0.0), cum = 0;
    for (size_t i = 0; i < probs.size(); ++i) {
      if (probs[i] <= 0) continue;
      cum += probs[i];
      if (cum > u * total) return static_cast<int>(i);
    }
    return -1;
  }

  static std::vector<double> softmax(const std::vector<float>& l, double temperature) {
    std::vector<double> p(l.size());
    double mx = *std::max_element(l.begin(), l.end()), z = 0;
    for (size_t i = 0; i < l.size(); ++i) z += p[i] = std::exp((l[i] - mx) / temperature);
    for (double& x : p) x /= z;
    return p;
  }
};

TEST_F(SamplerTest, GreedyTakesArgmaxLowestIdOnTies) {
  SampleParams p;  // temperature 0
  EXPECT_EQ(run({0.1f, 2.0f, -1.0f, 2.0f}, p).ids[0], 1);
  p.top_k = 1;
  p.top_p = 0.1f;  // ignored under temperature 0
  EXPECT_EQ(run({3.0f, 2.0f}, p).ids[0], 0);
}

TEST_F(SamplerTest, TemperatureFollowsTheInverseCdf) {
  const std::vector<float> l = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f};
  for (float t : {0.5f, 1.0f, 2.0f}) {
    const auto probs = softmax(l, t);
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      SampleParams p;
      p.temperature = t;
      p.seed = seed;
      p.step = 3;
      EXPECT_EQ(run(l, p).ids[0], expected_pick(probs, sample_uniform(seed, 3)))
          << "t " << t << " seed " << seed;
    }
  }
}

TEST_F(SamplerTest, TopKKeepsTheKLargest) {
  const std::vector<float> l = {1.0f, 3.0f, 2.0f, 0.0f, 2.5f};
  auto probs = softmax(l, 1.0);
  for (int i : {0, 2, 3}) probs[i] = 0;  // top-2 keeps ids 1 and 4
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SampleParams p;
    p.temperature = 1.0f;
    p.top_k = 2;
    p.seed = seed;
    int got = run(l, p).ids[0];
    EXPECT_TRUE(got == 1 || got == 4);
    EXPECT_EQ(got, expected_pick(probs, sample_uniform(seed, 0)));
  }
}

TEST_F(SamplerTest, TopPKeepsTheSmallestSetReachingP) {
  // Probabilities 0.5, 0.3, 0.15, 0.05 (as logits log p).
  const std::vector<float> l = {std::log(0.15f), std::log(0.5f), std::log(0.05f), std::log(0.3f)};
  for (auto [top_p, kept] : std::vector<std::pair<float, std::vector<int>>>{{0.5f, {1}},
                                                                            {0.75f, {1, 3}},
                                                                            {0.79f, {1, 3}},
                                                                            {0.81f, {0, 1, 3}},
                                                                            {0.96f, {0, 1, 2, 3}},
                                                                            {1.0f, {0, 1, 2, 3}}}) {
    std::vector<double> probs = {0.15, 0.5, 0.05, 0.3};
    for (int i = 0; i < 4; ++i)
      if (std::find(kept.begin(), kept.end(), i) == kept.end()) probs[i] = 0;
    for (uint64_t seed = 1; seed <= 30; ++seed) {
      SampleParams p;
      p.temperature = 1.0f;
      p.top_p = top_p;
      p.seed = seed;
      EXPECT_EQ(run(l, p).ids[0], expected_pick(probs, sample_uniform(seed, 0)))
          << "top_p " << top_p;
    }
  }
}

TEST_F(SamplerTest, MinPDropsTokensBelowAFractionOfTheMax) {
  const std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  std::vector<double> probs = {0.5, 0.3, 0.15, 0};  // min_p 0.2: keep p >= 0.1
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SampleParams p;
    p.temperature = 1.0f;
    p.min_p = 0.2f;
    p.seed = seed;
    EXPECT_EQ(run(l, p).ids[0], expected_pick(probs, sample_uniform(seed, 0)));
  }
}

TEST_F(SamplerTest, PenaltiesAndSuppression) {
  SampleParams p;  // greedy, so the pick shows the penalised argmax
  SampleBatch b;
  // Repetition (transformers): positive logits divided, negative multiplied.
  b.penalty_ids = {0};
  b.penalty_counts = {0};
  p.repetition_penalty = 2.0f;
  p.rep_count = 1;
  EXPECT_EQ(run({2.0f, 1.5f, -1.0f}, p, b).ids[0], 1);  // 2.0 / 2 = 1.0 < 1.5
  p.repetition_penalty = 1.2f;
  EXPECT_EQ(run({2.0f, 1.5f, -1.0f}, p, b).ids[0], 0);  // 1.67 > 1.5
  b.penalty_ids = {1};
  p.repetition_penalty = 3.0f;
  EXPECT_EQ(run({-1.0f, -0.5f, -1.2f}, p, b).ids[0], 0);  // -0.5 * 3 = -1.5
  // Frequency and presence (OpenAI): subtract presence + frequency * count.
  SampleParams f;
  SampleBatch fb;
  fb.penalty_ids = {0};
  fb.penalty_counts = {2};
  f.freq_count = 1;
  f.frequency_penalty = 0.1f;
  EXPECT_EQ(run({1.0f, 0.9f}, f, fb).ids[0], 1);  // 1.0 - 0.2 < 0.9
  f.frequency_penalty = 0.0f;
  f.presence_penalty = 0.05f;
  EXPECT_EQ(run({1.0f, 0.9f}, f, fb).ids[0], 0);  // 0.95 > 0.9
  f.presence_penalty = -0.5f;
  EXPECT_EQ(run({0.5f, 0.9f}, f, fb).ids[0], 0);  // a negative presence penalty encourages
  // Suppression: EOS before min_tokens.
  SampleParams s;
  SampleBatch sbat;
  sbat.suppress_ids = {2, 0};
  s.suppress_count = 2;
  EXPECT_EQ(run({5.0f, 1.0f, 9.0f}, s, sbat).ids[0], 1);
}

TEST_F(SamplerTest, LogprobsAreRawLogSoftmax) {
  const std::vector<float> l = {1.0f, 3.0f, 2.0f, 0.0f};
  SampleParams p;
  p.logprobs = true;
  p.top_logprobs = 3;
  p.repetition_penalty = 5.0f;  // does not change the reported logprobs
  SampleBatch b;
  b.penalty_ids = {1};
  b.penalty_counts = {0};
  p.rep_count = 1;
  auto out = run(l, p, b);
  const auto probs = softmax(l, 1.0);
  EXPECT_EQ(out.ids[0], 2);  // 3 / 5 = 0.6 < 2
  EXPECT_NEAR(out.logprobs[0], std::log(probs[2]), 1e-5);
  ASSERT_EQ(out.top_n, 3);
  EXPECT_EQ(out.top_ids[0], 1);
  EXPECT_EQ(out.top_ids[1], 2);
  EXPECT_EQ(out.top_ids[2], 0);
  EXPECT_NEAR(out.top_logprobs[0], std::log(probs[1]), 1e-5);
  EXPECT_NEAR(out.top_logprobs[2], std::log(probs[0]), 1e-5);
}

TEST_F(SamplerTest, RowsAreIndependent) {
  // Two rows in one call sample exactly as each alone.
  std::vector<float> rows = {1.0f, 0.2f, 0.4f, 0.1f, 0.9f, 0.3f};
  DeviceArray a = be->alloc_array(2, 3, DType::f32, "logits");
  be->copy_to_device(a.view.data, rows.data(), rows.size() * 4);
  SampleBatch b;
  for (uint64_t s : {7u, 8u}) {
    SampleParams p;
    p.temperature = 1.0f;
    p.seed = s;
    b.rows.push_back(p);
  }
  SampleOutput out;
  be->sample(a.view, b, out);
  SampleParams p0 = b.rows[0], p1 = b.rows[1];
  EXPECT_EQ(out.ids[0], run({1.0f, 0.2f, 0.4f}, p0).ids[0]);
  EXPECT_EQ(out.ids[1], run({0.1f, 0.9f, 0.3f}, p1).ids[0]);
}

}  // namespace
}  // namespace tessera
