#include "engine/sample_packing.h"

namespace tessera {

PenaltyHistory::PenaltyHistory(const SamplingOptions& o, std::span<const int32_t> prompt)
    : track_seen_(o.repetition_penalty != 1.0f),
      track_counts_(o.presence_penalty != 0.0f || o.frequency_penalty != 0.0f) {
  if (track_seen_) seen_.insert(prompt.begin(), prompt.end());
}

void PenaltyHistory::add(int32_t id) {
  if (track_seen_) seen_.insert(id);
  if (track_counts_) ++counts_[id];
}

void clear(SampleBatch& sb) {
  sb.rows.clear();
  sb.penalty_ids.clear();
  sb.penalty_counts.clear();
  sb.suppress_ids.clear();
}

void pack_sample_row(const SampleRequest& r, SampleBatch& sb) {
  const SamplingOptions& so = *r.options;
  SampleParams p;
  p.temperature = so.temperature;
  p.top_k = so.top_k;
  p.top_p = so.top_p;
  p.min_p = so.min_p;
  p.seed = r.seed;
  p.step = r.step;
  p.repetition_penalty = so.repetition_penalty;
  p.presence_penalty = so.presence_penalty;
  p.frequency_penalty = so.frequency_penalty;
  if (so.repetition_penalty != 1.0f) {
    p.rep_begin = static_cast<int>(sb.penalty_ids.size());
    for (int32_t t : r.history->seen()) sb.penalty_ids.push_back(t), sb.penalty_counts.push_back(0);
    p.rep_count = static_cast<int>(sb.penalty_ids.size()) - p.rep_begin;
  }
  if (so.presence_penalty != 0.0f || so.frequency_penalty != 0.0f) {
    p.freq_begin = static_cast<int>(sb.penalty_ids.size());
    for (auto [t, c] : r.history->counts())
      sb.penalty_ids.push_back(t), sb.penalty_counts.push_back(c);
    p.freq_count = static_cast<int>(sb.penalty_ids.size()) - p.freq_begin;
  }
  if (!r.suppress.empty()) {
    p.suppress_begin = static_cast<int>(sb.suppress_ids.size());
    sb.suppress_ids.insert(sb.suppress_ids.end(), r.suppress.begin(), r.suppress.end());
    p.suppress_count = static_cast<int>(r.suppress.size());
  }
  p.logprobs = so.logprobs;
  p.top_logprobs = so.top_logprobs;
  sb.rows.push_back(p);
}

void pack_unused_row(SampleBatch& sb) {
  sb.rows.emplace_back();
}

bool plain_greedy_next(const SamplingOptions& o, int generated, int min_tokens, bool has_stop_ids) {
  return o.temperature <= 0.0f && o.repetition_penalty == 1.0f && o.presence_penalty == 0.0f &&
         o.frequency_penalty == 0.0f && !o.logprobs && o.top_logprobs <= 0 &&
         (generated >= min_tokens || !has_stop_ids);
}

}  // namespace tessera
