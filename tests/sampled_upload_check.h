// The pipelined sampler contract (backend.h: sample_async / sample_wait / HostBatch::sampled),
// checked the same way on every backend: the next upload() takes ids that are still on the
// device, the wait brings the same ids to the host, and misuse is a clear Error.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "backend/backend.h"
#include "tessera/error.h"

namespace tessera::testing {

// A batch of three one-token sequences at position 0 of blocks 0, 1, 2 (block size 16), tokens
// 7, 8, 9, logits for all three.
inline HostBatch three_token_batch() {
  HostBatch b;
  b.tokens = {7, 8, 9};
  b.positions = {0, 0, 0};
  b.token_seq = {0, 1, 2};
  b.seq_q_start = {0, 1, 2};
  b.seq_q_len = {1, 1, 1};
  b.seq_kv_len = {1, 1, 1};
  HostBatch::Group g;
  g.block_table = {0, 1, 2};
  g.slot_mapping = {0, 16, 32};
  g.max_blocks = 1;
  b.groups = {g};
  b.logit_rows = {0, 1, 2};
  return b;
}

// `logits` holds two rows of V on the backend's device; `host` the same values.
inline void check_sampled_upload(ComputeBackend& be, Tensor logits, const std::vector<float>& host,
                                 int V) {
  std::vector<int32_t> argmax(2);
  for (int r = 0; r < 2; ++r)
    argmax[r] =
        static_cast<int32_t>(std::max_element(host.begin() + static_cast<int64_t>(r) * V,
                                              host.begin() + static_cast<int64_t>(r + 1) * V) -
                             (host.begin() + static_cast<int64_t>(r) * V));
  SampleBatch sb;
  sb.rows.assign(2, SampleParams{});  // greedy
  be.sample_async(logits, sb);
  HostBatch hb = three_token_batch();
  hb.sampled = {{0, 1}, {2, 0}};  // token 0 <- row 1, token 2 <- row 0; token 1 stays 8
  const BatchView v = be.upload(hb);
  std::vector<int32_t> tokens(3);
  be.copy_to_host(tokens.data(), v.tokens, sizeof(int32_t) * 3);
  SampleOutput out;
  be.sample_wait(out);
  EXPECT_EQ(out.ids, argmax);
  EXPECT_EQ(tokens, (std::vector<int32_t>{argmax[1], 8, argmax[0]}));

  EXPECT_THROW(be.sample_wait(out), Error);  // nothing outstanding
  be.sample_async(logits, sb);
  EXPECT_THROW(be.sample_async(logits, sb), Error);  // one outstanding at a time
  be.sample_wait(out);
  EXPECT_EQ(out.ids, argmax);
  hb.sampled = {{0, 2}};  // the last sample had two rows
  EXPECT_THROW(be.upload(hb), Error);
  hb.sampled = {{3, 0}};  // the batch has three tokens
  EXPECT_THROW(be.upload(hb), Error);
  // sample() is sample_async() + sample_wait(); the backend is usable after the errors.
  SampleOutput again;
  be.sample(logits, sb, again);
  EXPECT_EQ(again.ids, argmax);
}

}  // namespace tessera::testing
