// Runs whole sequences through a model without the scheduler: one ragged forward over all of
// them, logits for the rows asked for. Used by `tessera logits` and the parity tests.
#pragma once

#include <span>
#include <vector>

#include "engine/kv_pool.h"
#include "models/model.h"

namespace tessera {

// Throws Error(invalid_argument) for an empty list or an id outside [0, vocab).
void validate_tokens(std::span<const int32_t> ids, int vocab);

class DirectRunner {
 public:
  // A pool big enough for `max_seqs` sequences of `max_context` positions.
  DirectRunner(Model& model, int max_context, int max_seqs = 1, int block_size = 16);

  // Appends tokens to the given sequences (one forward) and returns, per sequence, the logits
  // rows: every new position when all_positions, else the last. Sequence i continues where its
  // previous call left off.
  std::vector<std::vector<std::vector<float>>> step(
      std::span<const std::vector<int32_t>> new_tokens, bool all_positions);

  KvPool& pool() { return pool_; }
  void reset();

 private:
  Model& model_;
  KvPool pool_;
  std::vector<std::unique_ptr<SequenceKv>> seqs_;
};

}  // namespace tessera
