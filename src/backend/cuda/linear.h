// out[M, N] = x[M, K] W[N, K]^T (+ bias) on the GPU (launcher). bf16 weights and activations take
// either the bandwidth-bound GEMV kernel (M <= gemv_max_m) or cuBLASLt on the tensor cores
// (fp32 accumulation); other dtype mixes take a simple tiled kernel (f32 weights: tests and
// fixtures, not speed).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <tuple>

#include "backend/backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_memory.h"

namespace tessera::cuda {

// A device weight [rows, cols] row-major in `dtype`.
struct CudaWeight : Weight {
  std::unique_ptr<CudaBuffer> buffer;
  const void* data() const { return buffer->data(); }
};

// Decoder stages a small-M GEMV can take over (the streaming kernel in linear.cu), each saving
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
  // written (sampling.cu): one kernel launch fewer per greedy decode step.
  float* amax_part = nullptr;  // 2 x kGemvArgmaxMaxBlocks
  int* amax_count = nullptr;   // zero before, left zero
  int32_t* amax_id = nullptr;
};
constexpr int kGemvArgmaxMaxBlocks = 1024;

// Part of a gated weight W [2 N, K] ([gate; up]) to bring into the L2 ahead of the streaming GEMV
// that reads it (run by an earlier kernel, where HBM would otherwise idle): `take` pairs (rows j
// and N + j) of each of the G blocks' pair ranges [N b / G, N (b + 1) / G) after its first `skip`,
// by prefetch.global.L2 of each 128-byte line. (The GEMV's own first rows go out before its PDL
// wait once its blocks are resident; skipping a few of them measured better, bench/NOTES-cuda.md
// run 24.)
struct L2Prefetch {
  const bf16* W = nullptr;
  int64_t N = 0;
  int K = 0;
  int G = 0, take = 0;
  int skip = 0;  // rows skipped at the start of each block's range
};
// The prefetch of `percent` % of each streaming-GEMV block's pairs of the gated weight w [rows, K],
// after its first `skip_percent` %, as that GEMV will read them on `sms` SMs; empty (W null) where
// the shape does not suit it.
L2Prefetch gated_prefetch(const void* w, int64_t rows, int64_t K, int percent, int skip_percent,
                          int sms);

// One decode GEMV launch (linear.cu's streaming kernel, gemv_mma.cu's tensor-core one): out[m,
// r] = W[r] . x[m] (+ bias), with the fusions in f.
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

// The tensor-core GEMV (gemv_mma.cu): whether it takes this shape (M <= 8, K >= 256 in steps of
// 32, its shared memory within bounds; N: output rows, pairs when gated), and the launch (bf16 or
// f32 out; fusions only with bf16).
bool gemv_mma_fits(int M, int64_t N, int64_t K, bool norm, int sms);
void launch_gemv_mma(int M, const GemvArgs& a, bool norm, bool gated, DType out_dt, cudaStream_t st,
                     int sms);

class LinearOps {
 public:
  LinearOps();
  ~LinearOps();
  LinearOps(const LinearOps&) = delete;
  LinearOps& operator=(const LinearOps&) = delete;

  // With `f`, gemv_fusable() must hold (out is [M, N / 2] when f->gated). `pf`: an L2 prefetch the
  // kernel issues when it is the one-row GEMV at M = 1 (else ignored).
  void linear(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, const float* bias,
              Tensor out, cudaStream_t st, const GemvFusion* f = nullptr,
              const L2Prefetch& pf = {});
  bool gemv_fusable(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, Tensor out,
                    const GemvFusion& f) const;

  // Which path: 0 auto, 1 always GEMV (when eligible), 2 always cuBLASLt (when eligible),
  // 3 always the tiled fallback. For the op tests and the crossover benchmark.
  void set_force_path(int p) { force_path_ = p; }
  void set_gemv_max_m(int m) { gemv_max_m_ = m; }
  // Which GEMV kernel: 0 one row per warp, 1 auto (default: by M and layer size), 2 auto
  // without the tensor-core one, 3 the persistent streaming one, 4 the tensor-core one wherever
  // it fits, fusions included (TESSERA_GEMV=rows|auto|cores|stream|mma); 0 and 3 apply to
  // unfused GEMVs only.
  void set_gemv_kind(int k) { gemv_kind_ = k; }
  int gemv_max_m() const { return gemv_max_m_; }
  int sms() const { return sms_; }

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int>;
  Plan& plan(int64_t M, int64_t N, int64_t K, int64_t ldx, int64_t ldo, DType out_dt, int al_w,
             int al_x, int al_o);
  int choose_path(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, Tensor out) const;
  void lt_matmul(Tensor x, const void* w, int64_t N, int64_t K, Tensor out, cudaStream_t st);
  bool use_mma(int64_t M, int64_t rows, int64_t K, bool norm, bool gated) const;

  cublasLtHandle_t handle_ = nullptr;
  std::unique_ptr<CudaBuffer> workspace_;
  std::map<Key, Plan> plans_;
  int force_path_ = 0;
  int gemv_max_m_ = 8;
  int sms_ = 132;
  int gemv_kind_ = 1;
};

}  // namespace tessera::cuda
