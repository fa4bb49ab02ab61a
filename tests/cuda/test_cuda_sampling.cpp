// The GPU sampler against the CPU sampler on the same logits (Gemma's 262,144-token vocabulary):
// greedy ids equal (lowest id on ties), seeded picks equal except at near-ties of the cumulative
// walk, logprobs and top-N equal, per-row parameters mixed in one batch.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/rng.h"
#include "cuda_test_util.h"
#include "sampled_upload_check.h"
#include "tessera/error.h"

namespace tessera::cudatest {
namespace {

constexpr int kVocab = 262144;

// The CPU chain's kept distribution for one row (backend.h SampleParams semantics), to judge
// whether a disagreement sits at a near-tie of the walk.
struct Walk {
  std::vector<double> pr;
  double target = 0;
};
Walk cpu_walk(std::vector<float> l, const SampleParams& p) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (float& x : l) x /= p.temperature;
  if (p.top_k > 0 && p.top_k < static_cast<int>(l.size())) {
    std::vector<float> t(l);
    std::nth_element(t.begin(), t.begin() + (p.top_k - 1), t.end(), std::greater<float>());
    for (float& x : l)
      if (x < t[p.top_k - 1]) x = ninf;
  }
  const float mx = *std::max_element(l.begin(), l.end());
  Walk w;
  w.pr.resize(l.size());
  double tot = 0;
  for (size_t i = 0; i < l.size(); ++i)
    tot += w.pr[i] = l[i] == ninf ? 0.0 : std::exp(double(l[i] - mx));
  for (double& x : w.pr) x /= tot;
  double kept = 0;
  for (double x : w.pr) kept += x;
  w.target = sample_uniform(p.seed, p.step) * kept;
  return w;
}

// For two different picks a < b of a sampled row (logits row r of width V in lh): how far the
// walk's target lies from the boundary the two picks disagree on, the CPU's cumulative
// probability through min(a, b). A near-tie (< 1e-6) is the only difference allowed.
double tie_gap(const std::vector<float>& lh, int V, int r, const SampleParams& p, int a, int b) {
  std::vector<float> l(lh.begin() + static_cast<int64_t>(r) * V,
                       lh.begin() + static_cast<int64_t>(r + 1) * V);
  Walk w = cpu_walk(l, p);
  double cum = 0;
  for (int i = 0; i <= std::min(a, b); ++i) cum += w.pr[i];
  return std::fabs(cum - w.target);
}

TEST(CudaSampling, MatchesCpuSampler) {
  TS_REQUIRE_CUDA();
  const int per = 8;
  std::vector<SampleParams> configs(12);
  configs[1].repetition_penalty = 1.3f;
  configs[1].presence_penalty = 0.5f;
  configs[1].frequency_penalty = 0.25f;
  configs[2].temperature = 0.8f;
  configs[3].temperature = 1.0f, configs[3].top_k = 50;
  configs[4].temperature = 0.7f, configs[4].top_p = 0.9f;
  configs[5].temperature = 1.2f, configs[5].min_p = 0.05f;
  configs[6].temperature = 0.9f, configs[6].top_k = 100, configs[6].top_p = 0.8f;
  configs[6].min_p = 0.02f, configs[6].repetition_penalty = 1.1f;
  configs[7].temperature = 1.0f, configs[7].top_k = 1;
  configs[8].temperature = 1.5f, configs[8].top_p = 0.5f;
  // Its rows: one spike over a flat tail below 2^-23 of it, so that the top-p threshold lies
  // below the sampler's exponent bins (its full radix select).
  configs[9].temperature = 1.0f, configs[9].top_p = 0.995f;
  // The CLI's default (top-k on the candidate path), and a top-k too large for that path.
  configs[10].temperature = 0.8f, configs[10].top_k = 40, configs[10].top_p = 0.95f;
  configs[10].min_p = 0.05f;
  configs[11].temperature = 1.0f, configs[11].top_k = 1000, configs[11].top_p = 0.9f;
  SampleBatch sb;
  for (size_t c = 0; c < configs.size(); ++c) {
    for (int i = 0; i < per; ++i) {
      SampleParams p = configs[c];
      p.seed = rng()();
      p.step = i * 7 + c;
      p.logprobs = i % 2 == 0;
      p.top_logprobs = i % 3 == 0 ? 5 : 0;
      if (p.repetition_penalty != 1.f || p.presence_penalty != 0.f) {
        // Distinct ids (repetition over all, presence/frequency over a part with counts).
        std::vector<int32_t> ids;
        for (int k = 0; k < 40; ++k)
          ids.push_back(static_cast<int32_t>((rng()() % (kVocab / 40)) + k * (kVocab / 40)));
        p.rep_begin = static_cast<int>(sb.penalty_ids.size());
        p.rep_count = 40;
        p.freq_begin = p.rep_begin + 20;
        p.freq_count = p.presence_penalty != 0.f ? 20 : 0;
        for (int32_t id : ids) {
          sb.penalty_ids.push_back(id);
          sb.penalty_counts.push_back(1 + static_cast<int>(rng()() % 4));
        }
        p.suppress_begin = static_cast<int>(sb.suppress_ids.size());
        p.suppress_count = 2;
        sb.suppress_ids.push_back(static_cast<int32_t>(rng()() % kVocab));
        sb.suppress_ids.push_back(static_cast<int32_t>(rng()() % kVocab));
      }
      sb.rows.push_back(p);
    }
  }
  const int R = static_cast<int>(sb.rows.size());
  auto lh = randn(static_cast<size_t>(R) * kVocab, 3.f);
  for (int r = 9 * per; r < 10 * per; ++r) {
    for (int i = 0; i < kVocab; ++i) lh[static_cast<size_t>(r) * kVocab + i] *= 0.03f;
    lh[static_cast<size_t>(r) * kVocab + (r * 7919) % kVocab] = 16.5f;
  }
  // Row 0: a tie for the maximum at ids 5 and 100 -> greedy picks 5.
  lh[5] = lh[100] = 50.f;
  Pair logits = make_pair(R, kVocab, DType::f32, lh);
  // Rows [r0, r0 + n) as one batch. The GPU sampler gives each row as many blocks as the SMs
  // allow (up to a cluster of 16): the 96-row batch runs one block per row, each 8-row batch
  // (one config) clusters of 8.
  auto check = [&](int r0, int n) {
    SampleBatch part = sb;
    part.rows.assign(sb.rows.begin() + r0, sb.rows.begin() + r0 + n);
    SampleOutput oc, og;
    cpu().sample(logits.c.view.rows_from(r0, n), part, oc);
    cuda()->sample(logits.g.view.rows_from(r0, n), part, og);
    ASSERT_EQ(og.ids.size(), oc.ids.size());
    if (r0 == 0) {
      EXPECT_EQ(og.ids[0], 5);
    }
    int mismatches = 0, near_ties = 0;
    for (int j = 0; j < n; ++j) {
      const int r = r0 + j;
      const SampleParams& p = sb.rows[r];
      if (og.ids[j] == oc.ids[j]) continue;
      if (p.temperature <= 0.f) {
        ADD_FAILURE() << "greedy row " << r << ": gpu " << og.ids[j] << " cpu " << oc.ids[j];
        continue;
      }
      // Near-tie: the target falls within 1e-6 of the boundary between the two picks.
      const double gap = tie_gap(lh, kVocab, r, p, og.ids[j], oc.ids[j]);
      if (gap < 1e-6) {
        ++near_ties;
      } else {
        ++mismatches;
        ADD_FAILURE() << "row " << r << " (config " << r / per << ", batch of " << n << "): gpu "
                      << og.ids[j] << " cpu " << oc.ids[j] << ", target " << gap
                      << " from the boundary";
      }
    }
    EXPECT_EQ(mismatches, 0) << near_ties << " near-ties accepted";
    ASSERT_EQ(og.logprobs.size(), oc.logprobs.size());
    ASSERT_EQ(og.top_n, oc.top_n);
    for (int j = 0; j < n; ++j) {
      const int r = r0 + j;
      if (!(sb.rows[r].logprobs || sb.rows[r].top_logprobs > 0) || og.ids[j] != oc.ids[j]) continue;
      EXPECT_NEAR(og.logprobs[j], oc.logprobs[j], 1e-4) << "row " << r;
      for (int k = 0; k < og.top_n; ++k) {
        EXPECT_EQ(og.top_ids[j * og.top_n + k], oc.top_ids[j * og.top_n + k]) << r << "," << k;
        const float a = og.top_logprobs[j * og.top_n + k], b = oc.top_logprobs[j * og.top_n + k];
        if (std::isinf(b)) {
          EXPECT_TRUE(std::isinf(a));
        } else {
          EXPECT_NEAR(a, b, 1e-4) << r << "," << k;
        }
      }
    }
  };
  check(0, R);
  for (size_t c = 0; c < configs.size(); ++c) check(static_cast<int>(c) * per, per);
}

TEST(CudaSampling, SameSeedSameStepSamePick) {
  TS_REQUIRE_CUDA();
  SampleBatch sb;
  SampleParams p;
  p.temperature = 1.0f;
  p.seed = 1234;
  p.step = 9;
  sb.rows = {p, p};
  auto lh = randn(kVocab, 2.f);
  lh.insert(lh.end(), lh.begin(), lh.end());  // two identical rows
  Pair logits = make_pair(2, kVocab, DType::f32, lh);
  SampleOutput a, b;
  cuda()->sample(logits.g.view, sb, a);
  cuda()->sample(logits.g.view, sb, b);
  EXPECT_EQ(a.ids[0], a.ids[1]);
  EXPECT_EQ(a.ids, b.ids);
}

// Vocabularies that are not a multiple of 4 (rows misaligned for 16-byte loads, tails) and small
// ones (most threads of a cluster own no id): 3 rows of 1,001 (clusters of 16) and 70 rows of
// 70,001 (one block per row: the pick by warps, top-k's counts by warp). The chain's paths:
// top-k on candidates and by radix select, top-p by exponent bins, min-p, greedy.
TEST(CudaSampling, OddVocabularies) {
  TS_REQUIRE_CUDA();
  for (const int V : {1001, 70001}) {
    const int R = V == 1001 ? 3 : 70;
    SampleBatch sb;
    for (int r = 0; r < R; ++r) {
      SampleParams p;
      p.seed = 77 + r;
      p.step = r;
      switch (r % 4) {
        case 0:
          p.temperature = 0.8f, p.top_k = 40, p.top_p = 0.95f, p.min_p = 0.05f;
          break;
        case 1:
          p.temperature = 1.0f, p.top_p = 0.8f;
          break;
        case 2:
          p.temperature = 0.9f, p.top_k = 500, p.min_p = 0.02f;
          break;
        default:
          break;  // greedy
      }
      sb.rows.push_back(p);
    }
    const auto lh = randn(static_cast<size_t>(R) * V, 3.f);
    Pair logits = make_pair(R, V, DType::f32, lh);
    SampleOutput oc, og;
    cpu().sample(logits.c.view, sb, oc);
    cuda()->sample(logits.g.view, sb, og);
    ASSERT_EQ(og.ids.size(), oc.ids.size());
    for (int r = 0; r < R; ++r) {
      if (og.ids[r] == oc.ids[r]) continue;
      const SampleParams& p = sb.rows[r];
      ASSERT_GT(p.temperature, 0.f) << "greedy row " << r << " of V " << V;
      // Only a near-tie of the walk may differ (as in MatchesCpuSampler).
      EXPECT_LT(tie_gap(lh, V, r, p, og.ids[r], oc.ids[r]), 1e-6)
          << "V " << V << " row " << r << ": gpu " << og.ids[r] << " cpu " << oc.ids[r];
    }
  }
}

TEST(CudaSampling, RejectsOutOfVocabularyPenaltyIds) {
  TS_REQUIRE_CUDA();
  SampleBatch sb;
  SampleParams p;
  p.rep_count = 1;
  p.repetition_penalty = 1.2f;
  sb.rows = {p};
  sb.penalty_ids = {kVocab + 5};
  sb.penalty_counts = {1};
  Pair logits = random_pair(1, kVocab, DType::f32);
  SampleOutput o;
  EXPECT_THROW(cuda()->sample(logits.g.view, sb, o), Error);
}

// Plain greedy batches take the argmax kernel, whose blocks per row shrink as the rows grow (128
// per row for one row, ~4 per SM in all for many): every row's id equals the CPU's, ties to the
// lowest id, at batch sizes on both sides of the switch and with rows misaligned for 16-byte
// loads (odd vocabulary).
TEST(CudaSampling, GreedyRowsAtEveryBatchSize) {
  TS_REQUIRE_CUDA();
  for (const int V : {kVocab, 70001}) {
    for (const int R : {1, 8, 70, 128}) {
      auto lh = randn(static_cast<size_t>(R) * V, 3.f);
      for (int r = 0; r < R; ++r) {  // a tie for the maximum in every other row
        float* row = lh.data() + static_cast<int64_t>(r) * V;
        if (r % 2 == 0) row[(r * 7919) % V] = row[V - 1 - (r * 104729) % V] = 50.f;
      }
      Pair logits = make_pair(R, V, DType::f32, lh);
      SampleBatch sb;
      sb.rows.assign(R, SampleParams{});
      SampleOutput oc, og;
      cpu().sample(logits.c.view, sb, oc);
      cuda()->sample(logits.g.view, sb, og);
      EXPECT_EQ(og.ids, oc.ids) << "V " << V << ", " << R << " rows";
    }
  }
}

// The ids of a sample_async feed the next upload on the device (scheduler pipelining).
TEST(CudaSampling, PipelinedSampleFeedsTheNextUpload) {
  TS_REQUIRE_CUDA();
  const auto lh = randn(2 * static_cast<size_t>(kVocab), 3.f);
  Pair logits = make_pair(2, kVocab, DType::f32, lh);
  tessera::testing::check_sampled_upload(*cuda(), logits.g.view, lh, kVocab);
}

}  // namespace
}  // namespace tessera::cudatest
