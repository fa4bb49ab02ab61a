// Linear layers: cuBLASLt for bf16 GEMMs, a GEMV kernel for decode-sized M, a tiled fallback.
// ref: cpu/linear.cpp (the contract; fp32 accumulation, one rounding on the store).
#include <cstdlib>
#include <string>
#include <type_traits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/linear.h"
#include "core/check.h"

namespace tessera::cuda {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;
constexpr int kMaxGemvM = 8;

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorKind::internal, std::string("cuBLASLt ") + what + " failed with status " +
                                         std::to_string(static_cast<int>(s)));
}

int alignment_of(const void* p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  int al = 256;
  while (al > 1 && a % al) al >>= 1;
  return al;
}

__device__ __forceinline__ float dot8(uint4 w, uint4 x) {
  const __nv_bfloat162* w2 = reinterpret_cast<const __nv_bfloat162*>(&w);
  const __nv_bfloat162* x2 = reinterpret_cast<const __nv_bfloat162*>(&x);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 a = __bfloat1622float2(w2[i]);
    const float2 b = __bfloat1622float2(x2[i]);
    s = fmaf(a.x, b.x, s);
    s = fmaf(a.y, b.y, s);
  }
  return s;
}

// GEMV for small M: 8 warps per block, one output row per warp, K split over `wpr` warps when N
// is too small to fill the GPU. Each lane keeps kU 16-byte evict-first weight loads in flight,
// in guarded batches (no serial remainder loop); the first batch is issued before waiting on the
// previous kernel (weights depend on nothing), so it overlaps that kernel's tail. x is re-read
// from L1. Few registers, so 6-8 blocks share an SM and many bytes stay in flight.
constexpr int kU = 8;

// One row of add_rms_norm by a whole block (256 threads), y read from L2 (other blocks of this
// kernel wrote it). Same operation order as norm.cu's add_rms_norm_kernel.
__device__ void block_add_rms_norm_row(float* __restrict__ xr, const bf16* yr,
                                       const float* __restrict__ w_y,
                                       const float* __restrict__ w_out, float eps,
                                       bf16* __restrict__ hr, int n, float* red) {
  float inv_y = 1.f;
  if (w_y) {
    float ss = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const float a = __bfloat162float(__ldcg(yr + i));
      ss += a * a;
    }
    ss = block_sum(ss, red);
    inv_y = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
  }
  float ss = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float a = __bfloat162float(__ldcg(yr + i));
    const float v = xr[i] + (w_y ? a * inv_y * w_y[i] : a);
    xr[i] = v;
    ss += v * v;
  }
  if (!w_out) return;
  ss = block_sum(ss, red);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    hr[i] = __float2bfloat16_rn(xr[i] * inv * w_out[i]);
}

template <int M, class TO>
__global__ void __launch_bounds__(256, M == 1   ? 4
                                       : M <= 4 ? 2
                                                : 1)
    gemv_kernel(const bf16* __restrict__ W, int64_t N, int K8, const bf16* __restrict__ x,
                int64_t xs, const float* __restrict__ bias, TO* __restrict__ out, int64_t os,
                int wpr, NormEpilogue ep) {
  __shared__ float red[8][M];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (8 / wpr) + warp / wpr;
  const int slice = warp % wpr;
  const int c0 = static_cast<int>(static_cast<int64_t>(K8) * slice / wpr);
  const int c1 = row < N ? static_cast<int>(static_cast<int64_t>(K8) * (slice + 1) / wpr) : c0;
  const uint4* wr = reinterpret_cast<const uint4*>(W) + (row < N ? row : 0) * K8;
  uint4 wv[kU];
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int c = c0 + u * 32 + lane;
    if (c < c1) wv[u] = __ldcs(wr + c);
  }
  pdl_wait();
  pdl_trigger();
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0.f;
  for (int base = c0;;) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int c = base + u * 32 + lane;
      if (c < c1) {
#pragma unroll
        for (int m = 0; m < M; ++m)
          acc[m] += dot8(wv[u], __ldg(reinterpret_cast<const uint4*>(x + m * xs) + c));
      }
    }
    base += 32 * kU;
    if (base >= c1) break;
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int c = base + u * 32 + lane;
      if (c < c1) wv[u] = __ldcs(wr + c);
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = warp_sum(acc[m]);
  if (wpr > 1) {
    if (lane == 0) {
#pragma unroll
      for (int m = 0; m < M; ++m) red[warp][m] = acc[m];
    }
    __syncthreads();
    if (slice == 0) {
#pragma unroll
      for (int m = 0; m < M; ++m) {
        float t = 0.f;
        for (int j = 0; j < wpr; ++j) t += red[warp + j][m];
        acc[m] = t;
      }
    }
  }
  if (slice == 0 && lane == 0 && row < N) {
    const float b = bias ? bias[row] : 0.f;
#pragma unroll
    for (int m = 0; m < M; ++m) out[m * os + row] = from_f32<TO>(acc[m] + b);
  }
  if constexpr (std::is_same_v<TO, bf16>) {
    if (ep.res == nullptr) return;
    // The last block to finish runs the add_rms_norm over the complete output rows.
    __shared__ int is_last;
    __shared__ float nred[32];
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) is_last = atomicAdd(ep.counter, 1) == static_cast<int>(gridDim.x) - 1;
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    for (int m = 0; m < M; ++m)
      block_add_rms_norm_row(ep.res + m * ep.res_stride, out + m * os, ep.w_y, ep.w_out, ep.eps,
                             ep.h ? ep.h + m * ep.h_stride : nullptr, static_cast<int>(N), nred);
    if (threadIdx.x == 0) *ep.counter = 0;
  }
}

template <class TO>
void launch_gemv(int M, const bf16* W, int64_t N, int64_t K, const bf16* x, int64_t xs,
                 const float* bias, TO* out, int64_t os, cudaStream_t st, NormEpilogue ep) {
  const int K8 = static_cast<int>(K / 8);
  int wpr = 1;
  while (wpr < 8 && N * wpr < 8192 && K8 / (wpr * 2) >= 64) wpr *= 2;
  const unsigned grid = ceil_div(N, 8 / wpr);
#define TS_GEMV_CASE(m_)                                                                           \
  case m_:                                                                                         \
    launch(gemv_kernel<m_, TO>, grid, 256, 0, st, "linear (gemv)", W, N, K8, x, xs, bias, out, os, \
           wpr, ep);                                                                               \
    break;
  switch (M) {
    TS_GEMV_CASE(1)
    TS_GEMV_CASE(2)
    TS_GEMV_CASE(3)
    TS_GEMV_CASE(4)
    TS_GEMV_CASE(5)
    TS_GEMV_CASE(6)
    TS_GEMV_CASE(7)
    TS_GEMV_CASE(8)
    default:
      break;
  }
#undef TS_GEMV_CASE
}

// The fallback: 16x16 output tiles, K in steps of 16 through shared memory, fp32 accumulation.
template <class TX, class TW, class TO>
__global__ void tiled_gemm_kernel(const TX* __restrict__ x, int64_t xs, const TW* __restrict__ W,
                                  const float* __restrict__ bias, TO* __restrict__ out, int64_t os,
                                  int64_t M, int64_t N, int64_t K) {
  pdl_enter();
  __shared__ float xt[16][17], wt[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t m = static_cast<int64_t>(blockIdx.y) * 16 + ty;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * 16 + tx;
  const int64_t wn = static_cast<int64_t>(blockIdx.x) * 16 + ty;  // W row this thread loads
  float acc = 0.f;
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    xt[ty][tx] = (m < M && k0 + tx < K) ? to_f32(x[m * xs + k0 + tx]) : 0.f;
    wt[ty][tx] = (wn < N && k0 + tx < K) ? to_f32(W[wn * K + k0 + tx]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) acc += xt[ty][k] * wt[tx][k];
    __syncthreads();
  }
  if (m < M && n < N) out[m * os + n] = from_f32<TO>(acc + (bias ? bias[n] : 0.f));
}

template <class TO>
__global__ void add_bias_kernel(TO* __restrict__ out, int64_t os, int64_t M, int64_t N,
                                const float* __restrict__ bias) {
  pdl_enter();
  const int64_t total = M * N;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t m = e / N, n = e - m * N;
    TO& o = out[m * os + n];
    o = from_f32<TO>(to_f32(o) + bias[n]);
  }
}

}  // namespace

LinearOps::LinearOps() {
  check_lt(cublasLtCreate(&handle_), "create");
  workspace_ = std::make_unique<CudaBuffer>(kWorkspaceBytes, "cuBLASLt workspace");
  if (const char* e = std::getenv("TESSERA_GEMV_MAX_M")) gemv_max_m_ = std::atoi(e);
}

LinearOps::~LinearOps() {
  for (auto& [k, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.op);
  }
  if (handle_) cublasLtDestroy(handle_);
}

LinearOps::Plan& LinearOps::plan(int64_t M, int64_t N, int64_t K, int64_t ldx, int64_t ldo,
                                 DType out_dt, int al_w, int al_x, int al_o) {
  Key key{M, N, K, ldx, ldo, static_cast<int>(out_dt), al_w, al_x, al_o};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan p;
  check_lt(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  // Column-major view: D^T[N, M] = W[K, N]^T (op T) * X^T[K, M].
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
           "transa");
  check_lt(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
           "transb");
  const cudaDataType_t odt = out_dt == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
  check_lt(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, K, N, K), "layout a");
  check_lt(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, K, M, ldx), "layout b");
  check_lt(cublasLtMatrixLayoutCreate(&p.c, odt, N, M, ldo), "layout c");
  cublasLtMatmulPreference_t pref;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "pref");
  const uint64_t ws = kWorkspaceBytes;
  const uint32_t aw = al_w, ax = al_x, ao = al_o;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                       sizeof ws);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aw,
                                       sizeof aw);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ax,
                                       sizeof ax);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ao,
                                       sizeof ao);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ao,
                                       sizeof ao);
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.c, p.c, pref, 1, &res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.op);
    throw Error(ErrorKind::internal, "cuBLASLt found no algorithm for a " + std::to_string(M) +
                                         "x" + std::to_string(N) + "x" + std::to_string(K) +
                                         " GEMM");
  }
  p.algo = res.algo;
  return plans_.emplace(key, p).first->second;
}

void LinearOps::lt_matmul(Tensor x, const void* w, int64_t N, int64_t K, Tensor out,
                          cudaStream_t st) {
  const int64_t M = x.rows;
  Plan& p = plan(M, N, K, x.stride, out.stride, out.dtype, alignment_of(w), alignment_of(x.data),
                 alignment_of(out.data));
  const float alpha = 1.f, beta = 0.f;
  check_lt(cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x.data, p.b, &beta, out.data, p.c,
                          out.data, p.c, &p.algo, workspace_->data(), kWorkspaceBytes, st),
           "matmul");
}

int LinearOps::choose_path(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K,
                           Tensor out) const {
  const int64_t M = x.rows;
  const bool bf = w_dt == DType::bf16 && x.dtype == DType::bf16 &&
                  (out.dtype == DType::bf16 || out.dtype == DType::f32);
  const bool aligned8 =
      K % 8 == 0 && x.stride % 8 == 0 && alignment_of(x.data) >= 16 && alignment_of(w) >= 16;
  const bool gemv_ok = bf && aligned8 && M <= kMaxGemvM;
  const bool lt_ok = bf && aligned8 && out.stride % (out.dtype == DType::f32 ? 4 : 8) == 0 &&
                     alignment_of(out.data) >= 16;
  if (force_path_ == 1 && gemv_ok) return 1;
  if (force_path_ == 2 && lt_ok) return 2;
  if (force_path_ != 0) return 3;
  // GEMV where it beat cuBLASLt in bench/NOTES-cuda.md: small layers up to gemv_max_m rows,
  // large ones (> 4M weights) at M <= 2, never the LM head (cuBLASLt reads it at 4.1 TB/s).
  const bool gemv_wins =
      M <= gemv_max_m_ && N < 65536 && (static_cast<double>(N) * K <= 4e6 || M <= 2);
  return gemv_ok && (gemv_wins || !lt_ok) ? 1 : lt_ok ? 2 : 3;
}

bool LinearOps::gemv_fusable(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K,
                             Tensor out) const {
  return x.rows > 0 && out.dtype == DType::bf16 && choose_path(x, w, w_dt, N, K, out) == 1;
}

void LinearOps::linear(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, const float* bias,
                       Tensor out, cudaStream_t st, const NormEpilogue* ep) {
  const int64_t M = x.rows;
  if (M == 0 || N == 0) return;
  TS_ASSERT(x.cols == K && out.cols == N && out.rows >= M);
  const int path = choose_path(x, w, w_dt, N, K, out);
  TS_ASSERT(!ep || (path == 1 && out.dtype == DType::bf16));
  if (path == 1) {
    if (out.dtype == DType::f32) {
      launch_gemv<float>(static_cast<int>(M), static_cast<const bf16*>(w), N, K,
                         x.ptr<const bf16>(), x.stride, bias, out.ptr<float>(), out.stride, st,
                         NormEpilogue{});
    } else {
      launch_gemv<bf16>(static_cast<int>(M), static_cast<const bf16*>(w), N, K, x.ptr<const bf16>(),
                        x.stride, bias, out.ptr<bf16>(), out.stride, st, ep ? *ep : NormEpilogue{});
    }
    return;
  }
  if (path == 2) {
    lt_matmul(x, w, N, K, out, st);
    if (bias) {
      dispatch_float(out.dtype, [&](auto to) {
        using TO = decltype(to);
        launch(add_bias_kernel<TO>, std::min<unsigned>(ceil_div(M * N, 256), 132 * 16), 256, 0, st,
               "linear", out.ptr<TO>(), out.stride, M, N, bias);
        TS_CUDA_LAUNCH("add_bias");
      });
    }
    return;
  }
  dispatch_float(x.dtype, [&](auto tx) {
    using TX = decltype(tx);
    dispatch_float(w_dt, [&](auto tw) {
      using TW = decltype(tw);
      dispatch_float(out.dtype, [&](auto to) {
        using TO = decltype(to);
        const dim3 grid(ceil_div(N, 16), ceil_div(M, 16));
        launch(tiled_gemm_kernel<TX, TW, TO>, grid, dim3(16, 16), 0, st, "linear",
               x.ptr<const TX>(), x.stride, static_cast<const TW*>(w), bias, out.ptr<TO>(),
               out.stride, M, N, K);
        TS_CUDA_LAUNCH("tiled_gemm");
      });
    });
  });
}

}  // namespace tessera::cuda
