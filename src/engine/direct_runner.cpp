#include "engine/direct_runner.h"

#include "core/check.h"
#include "engine/batch_builder.h"
#include "engine/request_prep.h"

namespace tessera {

void validate_tokens(std::span<const int32_t> ids, int vocab) {
  if (ids.empty()) fail_arg("the token list is empty");
  if (std::string why = token_range_error(ids, vocab); !why.empty()) fail_arg(why);
}

namespace {
KvPoolOptions runner_pool_options(int max_context, int max_seqs, int block_size) {
  KvPoolOptions o;
  o.max_context = max_context;
  o.max_seqs = max_seqs;
  o.block_size = block_size;
  o.max_step_tokens = max_context;
  return o;
}
}  // namespace

DirectRunner::DirectRunner(Model& model, int max_context, int max_seqs, int block_size)
    : model_(model),
      pool_(model.backend(), model.kv_spec(),
            runner_pool_options(max_context, max_seqs, block_size)) {}

void DirectRunner::reset() {
  seqs_.clear();
}

std::vector<std::vector<std::vector<float>>> DirectRunner::step(
    std::span<const std::vector<int32_t>> new_tokens, bool all_positions) {
  const int vocab = model_.info().vocab_size;
  while (seqs_.size() < new_tokens.size()) seqs_.push_back(std::make_unique<SequenceKv>(pool_));
  std::vector<BatchEntry> entries;
  for (size_t i = 0; i < new_tokens.size(); ++i) {
    if (new_tokens[i].empty()) continue;
    validate_tokens(new_tokens[i], vocab);
    if (!seqs_[i]->reserve(static_cast<int>(new_tokens[i].size())))
      fail(ErrorKind::out_of_memory, "the KV pool is too small for this batch");
    BatchEntry e;
    e.kv = seqs_[i].get();
    e.tokens = new_tokens[i];
    e.logits_all = all_positions;
    e.logits_last = true;
    entries.push_back(e);
  }
  HostBatch b = build_batch(pool_, entries);
  std::vector<float> logits(static_cast<size_t>(b.logit_rows.size()) * vocab);
  Tensor lg = model_.forward(b, pool_.layers()).logits;
  model_.backend().copy_to_host(logits.data(), lg.data, logits.size() * sizeof(float));
  std::vector<std::vector<std::vector<float>>> out(new_tokens.size());
  size_t row = 0;
  for (size_t i = 0; i < new_tokens.size(); ++i) {
    if (new_tokens[i].empty()) continue;
    size_t n = all_positions ? new_tokens[i].size() : 1;
    for (size_t r = 0; r < n; ++r, ++row)
      out[i].emplace_back(logits.begin() + static_cast<int64_t>(row * vocab),
                          logits.begin() + static_cast<int64_t>((row + 1) * vocab));
  }
  return out;
}

}  // namespace tessera
