// Builds the ragged HostBatch for one forward from the sequences taking part in it.
#pragma once

#include <span>
#include <vector>

#include "backend/backend.h"
#include "engine/kv_pool.h"

namespace tessera {

struct BatchEntry {
  const SequenceKv* kv = nullptr;  // reserve()d already: its last tokens.size() positions are new
  std::span<const int32_t> tokens;
  bool logits_all = false;   // logits for every new token (tests, `tessera logits --all-positions`)
  bool logits_last = false;  // logits for the last new token
  // >= 0: the entry's one token is row `sampled_row` of the backend's last sample_async, still on
  // the device (tokens holds a placeholder); HostBatch::sampled.
  int sampled_row = -1;
};

HostBatch build_batch(const KvPool& pool, std::span<const BatchEntry> entries);

}  // namespace tessera
