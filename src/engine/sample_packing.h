// Sampling-parameter packing: one request's sampling options and token history as one row of
// the batched sampler (SampleParams, with its penalty and suppression ranges appended to the
// SampleBatch), and the history the penalties read.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "backend/backend.h"
#include "tessera/engine.h"

namespace tessera {

// The ids the penalties of one request look at, kept only for the penalties it asks for: the
// distinct prompt and output ids (repetition, as transformers) and the output ids' counts
// (presence and frequency, as OpenAI).
class PenaltyHistory {
 public:
  PenaltyHistory() = default;
  PenaltyHistory(const SamplingOptions& o, std::span<const int32_t> prompt);
  void add(int32_t id);  // one generated id

  const std::unordered_set<int32_t>& seen() const { return seen_; }
  const std::unordered_map<int32_t, int>& counts() const { return counts_; }

 private:
  bool track_seen_ = false, track_counts_ = false;
  std::unordered_set<int32_t> seen_;
  std::unordered_map<int32_t, int> counts_;
};

// One request's next pick, as packing reads it.
struct SampleRequest {
  const SamplingOptions* options = nullptr;
  uint64_t seed = 0, step = 0;  // the counter-based generator's key: one seed, one text
  const PenaltyHistory* history = nullptr;
  std::span<const int32_t> suppress;  // ids that must not be picked (stop ids before min_tokens)
};

// The ids to suppress at this step: the stop ids while fewer than min_tokens are generated.
inline std::span<const int32_t> suppressed_ids(std::span<const int32_t> stop_ids, int generated,
                                               int min_tokens) {
  return generated < min_tokens ? stop_ids : std::span<const int32_t>();
}

void clear(SampleBatch& sb);  // keeps the vectors' capacity
// Appends r's row to sb (the penalty ids of the row, then the suppressed ids).
void pack_sample_row(const SampleRequest& r, SampleBatch& sb);
// A row for a sequence that no longer needs its pick (finished by its in-flight token): sampled
// for nothing, plainly.
void pack_unused_row(SampleBatch& sb);

// Whether the request's next pick is plain greedy (backend.h plain_greedy of the row it will
// pack to), as far as is known before the ids in flight arrive: those can end a min_tokens
// suppression, never start one. `generated` counts the ids received so far.
bool plain_greedy_next(const SamplingOptions& o, int generated, int min_tokens, bool has_stop_ids);

}  // namespace tessera
