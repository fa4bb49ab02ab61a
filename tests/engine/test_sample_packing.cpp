// Sampling-parameter packing: a request's options and token history as sampler rows, the
// penalty and suppression ranges of several rows side by side, and the plain-greedy prediction
// the forward's greedy ids rely on.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/sample_packing.h"

namespace tessera {
namespace {

std::vector<int32_t> range_of(const std::vector<int32_t>& v, int begin, int count) {
  std::vector<int32_t> out(v.begin() + begin, v.begin() + begin + count);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(PenaltyHistory, KeepsOnlyWhatItsPenaltiesRead) {
  SamplingOptions rep;
  rep.repetition_penalty = 1.3f;
  PenaltyHistory a(rep, std::vector<int32_t>{5, 6, 5});
  a.add(7);
  a.add(7);
  EXPECT_EQ(a.seen().size(), 3u);  // 5, 6, 7: prompt and output, distinct
  EXPECT_TRUE(a.counts().empty());

  SamplingOptions freq;
  freq.frequency_penalty = 0.5f;
  PenaltyHistory b(freq, std::vector<int32_t>{5, 6});
  b.add(7);
  b.add(7);
  b.add(5);
  EXPECT_TRUE(b.seen().empty());
  EXPECT_EQ(b.counts().size(), 2u);  // output only: 7 twice, 5 once
  EXPECT_EQ(b.counts().at(7), 2);
  EXPECT_EQ(b.counts().at(5), 1);

  PenaltyHistory none(SamplingOptions{}, std::vector<int32_t>{1, 2});
  none.add(3);
  EXPECT_TRUE(none.seen().empty());
  EXPECT_TRUE(none.counts().empty());
}

TEST(SamplePacking, OptionsSeedAndStepReachTheRow) {
  SamplingOptions o;
  o.temperature = 0.7f;
  o.top_k = 40;
  o.top_p = 0.9f;
  o.min_p = 0.05f;
  o.logprobs = true;
  o.top_logprobs = 3;
  PenaltyHistory h(o, std::vector<int32_t>{1});
  SampleBatch sb;
  pack_sample_row({&o, 1234, 7, &h, {}}, sb);
  ASSERT_EQ(sb.rows.size(), 1u);
  const SampleParams& p = sb.rows[0];
  EXPECT_FLOAT_EQ(p.temperature, 0.7f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.top_p, 0.9f);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_EQ(p.seed, 1234u);
  EXPECT_EQ(p.step, 7u);
  EXPECT_TRUE(p.logprobs);
  EXPECT_EQ(p.top_logprobs, 3);
  EXPECT_EQ(p.rep_count + p.freq_count + p.suppress_count, 0);
  EXPECT_TRUE(sb.penalty_ids.empty());
}

TEST(SamplePacking, PenaltyRangesOfSeveralRowsDoNotOverlap) {
  SamplingOptions rep;
  rep.repetition_penalty = 1.2f;
  SamplingOptions both = rep;
  both.presence_penalty = 0.5f;
  PenaltyHistory ha(rep, std::vector<int32_t>{3, 4});
  ha.add(9);
  PenaltyHistory hb(both, std::vector<int32_t>{8});
  hb.add(11);
  hb.add(11);
  SampleBatch sb;
  pack_sample_row({&rep, 1, 0, &ha, {}}, sb);
  pack_sample_row({&both, 2, 0, &hb, {}}, sb);
  ASSERT_EQ(sb.rows.size(), 2u);
  const SampleParams& a = sb.rows[0];
  const SampleParams& b = sb.rows[1];
  EXPECT_EQ(range_of(sb.penalty_ids, a.rep_begin, a.rep_count), (std::vector<int32_t>{3, 4, 9}));
  EXPECT_EQ(a.freq_count, 0);
  EXPECT_EQ(b.rep_begin, a.rep_begin + a.rep_count);
  EXPECT_EQ(range_of(sb.penalty_ids, b.rep_begin, b.rep_count), (std::vector<int32_t>{8, 11}));
  // Repetition ranges carry no counts; the presence/frequency range carries the output's.
  for (int i = b.rep_begin; i < b.rep_begin + b.rep_count; ++i) EXPECT_EQ(sb.penalty_counts[i], 0);
  ASSERT_EQ(b.freq_count, 1);
  EXPECT_EQ(sb.penalty_ids[b.freq_begin], 11);
  EXPECT_EQ(sb.penalty_counts[b.freq_begin], 2);
  EXPECT_EQ(sb.penalty_ids.size(), sb.penalty_counts.size());
  clear(sb);
  EXPECT_TRUE(sb.rows.empty() && sb.penalty_ids.empty() && sb.penalty_counts.empty());
}

TEST(SamplePacking, StopIdsAreSuppressedUntilMinTokens) {
  const std::vector<int32_t> stops{1, 106};
  EXPECT_EQ(suppressed_ids(stops, 2, 4).size(), 2u);
  EXPECT_TRUE(suppressed_ids(stops, 4, 4).empty());
  EXPECT_TRUE(suppressed_ids(stops, 0, 0).empty());
  SamplingOptions o;
  PenaltyHistory h;
  SampleBatch sb;
  pack_sample_row({&o, 0, 0, &h, {}}, sb);  // no suppression: its range is empty
  pack_sample_row({&o, 0, 0, &h, suppressed_ids(stops, 0, 3)}, sb);
  EXPECT_EQ(sb.rows[0].suppress_count, 0);
  const SampleParams& p = sb.rows[1];
  ASSERT_EQ(p.suppress_count, 2);
  EXPECT_EQ(std::vector<int32_t>(sb.suppress_ids.begin() + p.suppress_begin,
                                 sb.suppress_ids.begin() + p.suppress_begin + p.suppress_count),
            stops);
}

TEST(SamplePacking, UnusedRowIsPlainGreedy) {
  SampleBatch sb;
  pack_unused_row(sb);
  ASSERT_EQ(sb.rows.size(), 1u);
  EXPECT_TRUE(plain_greedy(sb.rows[0]));
}

TEST(SamplePacking, PlainGreedyPredictionMatchesThePackedRow) {
  // Whenever plain_greedy_next says yes before the forward, the row packed afterwards must be
  // plain greedy too (else the forward's greedy ids would replace a real sample); and a greedy
  // request with nothing else asked is predicted greedy.
  const std::vector<int32_t> stops{1};
  std::vector<SamplingOptions> cases(8);
  cases[0].temperature = 0;
  cases[1].temperature = 0.8f;
  cases[2].temperature = 0, cases[2].repetition_penalty = 1.1f;
  cases[3].temperature = 0, cases[3].presence_penalty = 0.2f;
  cases[4].temperature = 0, cases[4].frequency_penalty = -0.2f;
  cases[5].temperature = 0, cases[5].logprobs = true;
  cases[6].temperature = 0, cases[6].top_logprobs = 2;
  cases[7].temperature = 0, cases[7].top_k = 5, cases[7].top_p = 0.5f;  // moot when greedy
  for (size_t c = 0; c < cases.size(); ++c) {
    for (int generated : {0, 2, 5}) {
      const SamplingOptions& o = cases[c];
      PenaltyHistory h(o, std::vector<int32_t>{4, 5});
      for (int i = 0; i < generated; ++i) h.add(7);
      SampleBatch sb;
      pack_sample_row({&o, 0, 0, &h, suppressed_ids(stops, generated, 3)}, sb);
      const bool predicted = plain_greedy_next(o, generated, 3, true);
      if (predicted) {
        EXPECT_TRUE(plain_greedy(sb.rows[0])) << "case " << c << " at " << generated;
      }
      if (c == 0 || c == 7) {
        EXPECT_EQ(predicted, generated >= 3) << "case " << c;
      }
    }
  }
  EXPECT_TRUE(plain_greedy_next(cases[0], 0, 3, /*has_stop_ids=*/false));
  EXPECT_FALSE(plain_greedy_next(cases[1], 5, 0, true));
}

}  // namespace
}  // namespace tessera
