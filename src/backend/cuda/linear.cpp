// The linear layer's dispatch (linear.h): which kernel family computes out = x W^T (+ bias) for a
// shape, by the sizes where bench/NOTES-cuda.md measured each fastest on the H200, or as the
// tuning forces it (CudaTuning::linear, ::gemv).
// ref: cpu/linear.cpp (the contract; fp32 accumulation, one rounding on the store).
#include "backend/cuda/linear.h"

#include <limits>

#include "core/check.h"

namespace tessera::cuda {

namespace {

// A "small" layer for the GEMV choices (qkv, o of a 1B model; gate_up, down are larger): up to
// this many weights the GEMVs beat cuBLASLt at any decode M and the one-row and tensor-core
// kernels beat the streaming one.
constexpr double kSmallLayerWeights = 4e6;
constexpr int kMaxGemvM = 8;

}  // namespace

LinearOps::LinearOps() {
  int dev = 0;
  TS_CUDA(cudaGetDevice(&dev));
  TS_CUDA(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev));
}

LinearPath LinearOps::choose_path(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K,
                                  Tensor out) const {
  const int64_t M = x.rows;
  const bool bf = w_dt == DType::bf16 && x.dtype == DType::bf16 &&
                  (out.dtype == DType::bf16 || out.dtype == DType::f32);
  const bool aligned8 =
      K % 8 == 0 && x.stride % 8 == 0 && alignment_of(x.data) >= 16 && alignment_of(w) >= 16;
  const bool gemv_ok = bf && aligned8 && M <= kMaxGemvM;
  const bool lt_ok = bf && aligned8 && out.stride % (out.dtype == DType::f32 ? 4 : 8) == 0 &&
                     alignment_of(out.data) >= 16;
  if (force_path_ == LinearPath::gemv && gemv_ok) return LinearPath::gemv;
  if (force_path_ == LinearPath::cublaslt && lt_ok) return LinearPath::cublaslt;
  if (force_path_ != LinearPath::automatic) return LinearPath::tiled;
  // GEMV where it beat cuBLASLt in bench/NOTES-cuda.md: small layers up to M = 8 (gemv_ok),
  // large ones (> 4M weights) at M <= 2, never the LM head (cuBLASLt reads it at 4.1 TB/s).
  const bool gemv_wins = N < 65536 && (static_cast<double>(N) * K <= kSmallLayerWeights || M <= 2);
  return gemv_ok && (gemv_wins || !lt_ok) ? LinearPath::gemv
         : lt_ok                          ? LinearPath::cublaslt
                                          : LinearPath::tiled;
}

bool LinearOps::gemv_fusable(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, Tensor out,
                             const GemvFusion& f) const {
  const int64_t M = x.rows;
  // An LM head (N >= 64K, which choose_path leaves to cuBLASLt) at M = 1 after its norm: the
  // streaming GEMV with the deferred norm as its prologue, f32 logits, instead of the norm kernel
  // and cuBLASLt (one launch fewer, and the GEMV reads the head as fast).
  const bool lm_head = M == 1 && f.norm && !f.gated && N >= 65536 &&
                       force_path_ == LinearPath::automatic && stream_defer_fits(K);
  if (M < 1 || M > kMaxGemvM || N > std::numeric_limits<int>::max()) return false;
  if (out.dtype != DType::bf16 && !(lm_head && out.dtype == DType::f32)) return false;
  if (f.gated && (N % 2 != 0 || out.cols != N / 2)) return false;
  if (!f.gated && out.cols != N) return false;
  Tensor probe = out;
  probe.cols = N;  // the path check looks at the weight's shape
  const LinearPath path = choose_path(x, w, w_dt, N, K, probe);
  // cuBLASLt for an LM head: its operands suit a GEMV too
  if (path != LinearPath::gemv && !(lm_head && path == LinearPath::cublaslt)) return false;
  if (out.dtype == DType::bf16 && use_mma(M, f.gated ? N / 2 : N, K, f.norm, f.gated)) return true;
  if (f.norm && !stream_norm_fits(static_cast<int>(M), K)) return false;
  return stream_wpr(f.gated ? N / 2 : N, K, sms_, f.gated ? kStreamGatedLoads : kStreamLoads) > 0;
}

// The tensor-core GEMV: everywhere it fits with GemvKernel::mma; by default for 2 <= M <= 8 on
// layers of <= 4M weights, where it measured faster than the streaming and one-row kernels (its
// time does not grow with M). At M = 1 and on large layers its 8-row tiles read W in 64-byte
// pieces per row, which the L2 and HBM serve at half rate.
bool LinearOps::use_mma(int64_t M, int64_t rows, int64_t K, bool norm, bool gated) const {
  const double weights = static_cast<double>(rows) * K * (gated ? 2 : 1);
  const bool wanted = gemv_kind_ == GemvKernel::mma || (gemv_kind_ == GemvKernel::automatic &&
                                                        M >= 2 && weights <= kSmallLayerWeights);
  return wanted && gemv_mma_fits(static_cast<int>(M), rows, K, norm, sms_);
}

void LinearOps::linear(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, const float* bias,
                       Tensor out, cudaStream_t st, const GemvFusion* f, const L2Prefetch& pf) {
  const int64_t M = x.rows;
  if (M == 0 || N == 0) return;
  if (f) {
    TS_ASSERT(x.cols == K && gemv_fusable(x, w, w_dt, N, K, out, *f));
    const GemvArgs a = gemv_args(x, w, N, K, bias, out, f, sms_);
    if (out.dtype == DType::f32) {  // an LM head (gemv_fusable)
      TS_ASSERT(!f->amax_id || sms_ * kStreamBlocksPerSm3 <= kGemvArgmaxMaxBlocks);
      launch_gemv_stream(1, a, true, false, DType::f32, st, sms_);
      return;
    }
    if (use_mma(M, a.N, K, f->norm, f->gated)) {
      launch_gemv_mma(static_cast<int>(M), a, f->norm, f->gated, DType::bf16, st, sms_);
    } else {
      launch_gemv_stream(static_cast<int>(M), a, f->norm, f->gated, DType::bf16, st, sms_);
    }
    return;
  }
  TS_ASSERT(x.cols == K && out.cols == N && out.rows >= M);
  const LinearPath path = choose_path(x, w, w_dt, N, K, out);
  if (path == LinearPath::gemv && use_mma(M, N, K, false, false)) {
    launch_gemv_mma(static_cast<int>(M), gemv_args(x, w, N, K, bias, out, nullptr, sms_), false,
                    false, out.dtype, st, sms_);
    return;
  }
  if (path == LinearPath::gemv) {
    // The streaming kernel where it measured faster (large layers), the one-row-per-warp kernel
    // for small ones (all loads in flight at once).
    const bool stream =
        gemv_kind_ == GemvKernel::stream ||
        (gemv_kind_ != GemvKernel::rows && static_cast<double>(N) * K > kSmallLayerWeights);
    if (stream && N <= std::numeric_limits<int>::max() &&
        stream_wpr(N, K, sms_, kStreamLoads) > 0) {
      launch_gemv_stream(static_cast<int>(M), gemv_args(x, w, N, K, bias, out, nullptr, sms_),
                         false, false, out.dtype, st, sms_);
      return;
    }
    launch_gemv_rows(static_cast<int>(M), static_cast<const bf16*>(w), N, K, x.ptr<const bf16>(),
                     x.stride, bias, out.data, out.dtype, out.stride, st, pf);
    return;
  }
  if (path == LinearPath::cublaslt) {
    lt_.matmul(x, w, N, K, out, st);
    if (bias) launch_add_bias(out, M, N, bias, st);
    return;
  }
  launch_tiled_gemm(x, w, w_dt, N, K, bias, out, st);
}

void LinearOps::dense(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, const float* bias,
                      Tensor out, cudaStream_t st) {
  if (x.rows == 0 || N == 0) return;
  const LinearPath path = choose_path(x, w, w_dt, N, K, out);
  const bool lt_ok = x.dtype == DType::bf16 && w_dt == DType::bf16 && K % 8 == 0 &&
                     x.stride % 8 == 0 && alignment_of(x.data) >= 16 && alignment_of(w) >= 16 &&
                     (out.dtype == DType::bf16 || out.dtype == DType::f32) &&
                     out.stride % (out.dtype == DType::f32 ? 4 : 8) == 0 &&
                     alignment_of(out.data) >= 16;
  if (lt_ok && path != LinearPath::tiled) {
    lt_.matmul(x, w, N, K, out, st);
    if (bias) launch_add_bias(out, x.rows, N, bias, st);
    return;
  }
  launch_tiled_gemm(x, w, w_dt, N, K, bias, out, st);
}

}  // namespace tessera::cuda
