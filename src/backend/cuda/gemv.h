// The decode GEMVs (M <= 8 rows of x, bf16 weights [N, K]) as linear.cpp's dispatch launches
// them: the one-row-per-warp kernel (gemv_rows.cu), the persistent streaming kernel
// (gemv_stream.cu) and the tensor-core kernel (gemv_mma.cu), with the decoder stages the streaming
// and tensor-core kernels can take over (GemvFusion) and the L2 prefetch the one-row kernel can
// issue for a later GEMV (L2Prefetch).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/cuda_common.h"

namespace tessera::cuda {

// Decoder stages a small-M GEMV can take over (the streaming and tensor-core kernels), each saving
// a launch per layer:
//  - norm: the GEMV's input x is add_rms_norm(res, y, w_y, w_out) (ComputeBackend::add_rms_norm
//    with out = h), computed by the GEMV itself; res and h are written as add_rms_norm writes
//    them. x's data is not read (only its shape).
//  - gated: W is [gate; up] (N = 2 I rows) and out [M, I] = act(x gate^T) * (x up^T), as
//    gated_act computes it from a bf16 gate_up output (which is not written).
struct GemvFusion {
  bool norm = false;
  float* res = nullptr;
  int64_t res_stride = 0;
  const bf16* y = nullptr;
  int64_t y_stride = 0;
  const float* w_y = nullptr;
  const float* w_out = nullptr;
  float eps = 0.f;
  bf16* h = nullptr;
  int64_t h_stride = 0;
  int* counter = nullptr;  // zero before, left zero
  bool gated = false;
  Activation act = Activation::gelu_tanh;
  // The greedy pick of an LM head's logits (M = 1, f32 out, amax_id set): every block's first
  // (logit, row) in the greedy sampler's order into amax_part[2 * block, +2], and the last block
  // to finish writes the row's id to *amax_id, as greedy_rows would pick it from the logits
  // written (greedy.cu): one kernel launch fewer per greedy decode step.
  float* amax_part = nullptr;  // 2 x kGemvArgmaxMaxBlocks
  int* amax_count = nullptr;   // zero before, left zero
  int32_t* amax_id = nullptr;
};
constexpr int kGemvArgmaxMaxBlocks = 1024;

// Part of a gated weight W [2 N, K] ([gate; up]) to bring into the L2 ahead of the streaming GEMV
// that reads it (run by an earlier kernel, where HBM would otherwise idle): `take` pairs (rows j
// and N + j) of each of the G blocks' pair ranges [N b / G, N (b + 1) / G) after its first `skip`,
// by prefetch.global.L2 of each 128-byte line. (The GEMV's own first rows go out before its PDL
// wait once its blocks are resident, so the first of each block's rows are left to it.)
struct L2Prefetch {
  const bf16* W = nullptr;
  int64_t N = 0;
  int K = 0;
  int G = 0, take = 0;
  int skip = 0;  // rows skipped at the start of each block's range
};
// The prefetch of 30 % of each streaming-GEMV block's pairs of the gated weight w [rows, K], after
// its first 15 %, as that GEMV will read them on `sms` SMs (the shares that measured best on a
// 1B model's decode step: bench/NOTES-cuda.md, "Decisions recorded in the code"); empty (W null)
// where the shape does not suit it (gemv_stream.cu).
L2Prefetch gated_prefetch(const void* w, int64_t rows, int64_t K, int sms);

// One decode GEMV launch (the streaming and tensor-core kernels): out[m, r] = W[r] . x[m]
// (+ bias), with the fusions in f.
struct GemvArgs {
  const bf16* W = nullptr;
  int N = 0, K8 = 0, wpr = 1;  // N: output columns (gate/up pairs when gated); K8 = K / 8
  int64_t up = 0;              // gated: row offset of the up half (I)
  const bf16* x = nullptr;
  int64_t xs = 0;
  const float* bias = nullptr;
  void* out = nullptr;
  int64_t os = 0;
  GemvFusion f;  // the norm prologue's operands (f.norm), the activation (f.act)
};

// gemv_rows.cu: out [M, N] (bf16 or f32, row stride os) = x [M, K] W^T (+ bias), one output row
// per warp; issues `pf` before its PDL wait at M = 1 (ignored otherwise).
void launch_gemv_rows(int M, const bf16* W, int64_t N, int64_t K, const bf16* x, int64_t xs,
                      const float* bias, void* out, DType out_dt, int64_t os, cudaStream_t st,
                      const L2Prefetch& pf);

// gemv_stream.cu. Load slots per lane per row: 8, or 5 for the gated pairs (two rows per item).
constexpr int kStreamLoads = 8, kStreamGatedLoads = 5;
// Blocks per SM: 2, and 3 for the M = 1 kernels whose registers allow it.
constexpr int kStreamBlocksPerSm = 2, kStreamBlocksPerSm3 = 3;
// Slices per row for the streaming GEMV (`rows` output rows or pairs of K inputs, `ku` load slots
// per lane), or 0 when the shape does not fit it.
int stream_wpr(int64_t rows, int64_t K, int sms, int ku);
// Whether the norm prologue's shared memory fits (M rows of K), and the deferred one (M = 1).
bool stream_norm_fits(int M, int64_t K);
bool stream_defer_fits(int64_t K);
// The launch arguments of x [M, K] . w [N, K] into out, with the fusions in f (null: none; gated:
// N counts both halves); wpr for the streaming kernel on `sms` SMs.
GemvArgs gemv_args(Tensor x, const void* w, int64_t N, int64_t K, const float* bias, Tensor out,
                   const GemvFusion* f, int sms);
// The streaming GEMV at M rows (bf16 or f32 out; the norm with f32 out only at M = 1 with the
// deferred prologue: an LM head).
void launch_gemv_stream(int M, const GemvArgs& a, bool norm, bool gated, DType out_dt,
                        cudaStream_t st, int sms);

// gemv_mma.cu: whether the tensor-core GEMV takes this shape (M <= 8, K >= 256 in steps of 32,
// its shared memory within bounds; N: output rows, pairs when gated), and the launch (bf16 or
// f32 out; fusions only with bf16).
bool gemv_mma_fits(int M, int64_t N, int64_t K, bool norm, int sms);
void launch_gemv_mma(int M, const GemvArgs& a, bool norm, bool gated, DType out_dt, cudaStream_t st,
                     int sms);

}  // namespace tessera::cuda
