// The sampler chain on the GPU (launcher): penalties, suppression, temperature, top-k, top-p,
// min-p and the seeded pick, plus raw logprobs and top-N, with the semantics documented on
// SampleParams in backend.h. A cluster of blocks per logits row (sampling.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tessera::cuda {

struct SampleRowDev {
  float temperature;
  int top_k;
  float top_p, min_p;
  unsigned long long seed, step;
  float repetition_penalty, presence_penalty, frequency_penalty;
  int rep_begin, rep_count, freq_begin, freq_count, suppress_begin, suppress_count;
  int want_logprob;  // chosen token's logprob
  int top_n;         // this row's top_logprobs
  int work_row;      // row of the work buffer, -1 when the row needs none
};

// logits: [R, V] f32 with row stride `stride`. work: [rows needing it, V] f32.
// ids [R]; lp [R]; top_ids / top_lp [R, top_n_max].
void sample_rows(const float* logits, int64_t stride, int R, int V, const SampleRowDev* rows,
                 const int32_t* penalty_ids, const int32_t* penalty_counts,
                 const int32_t* suppress_ids, float* work, int32_t* ids, float* lp,
                 int32_t* top_ids, float* top_lp, int top_n_max, cudaStream_t st);

// Greedy ids only (no penalties, no logprobs): each row is scanned by up to kGreedyBlocks blocks
// with 16-byte loads and the last one to finish merges their (max, id) pairs. `part` holds
// 2 * kGreedyBlocks words per row; `counters` R zeros (left zero). 128 blocks for a few rows: a
// thread's loads of a 262,144-token vocabulary are two 16-byte loads, one round trip (32 blocks
// would leave eight loads in series); fewer per row as the rows fill the GPU (greedy.cu).
constexpr int kGreedyBlocks = 128;

// The device's SM count, which both samplers size their grids by (greedy.cu).
int sampler_sms();
void greedy_rows(const float* logits, int64_t stride, int R, int V, float* part, int* counters,
                 int32_t* ids, cudaStream_t st);

}  // namespace tessera::cuda
