// out[M, N] = x[M, K] W[N, K]^T + bias: picks the path per shape and ISA.
//  - scalar ISA: the portable reference loop (threads split N).
//  - few rows (decode): the hand-written GEMV (gemv_impl.h), bandwidth-bound, threads stream
//    disjoint row ranges of W. bf16 weights use the exact path (bf16 -> f32 in registers, fp32
//    FMA) or, when forced, vdpbf16ps with x rounded to bf16.
//  - many rows (prefill): oneDNN sgemm over tiles of W widened to f32 (gemm_dnnl.cpp).
// The row threshold and the bf16 kernel come from bench/cpu_bench measurements on the dev machine
// (bench/NOTES-cpu.md).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/simd_kernels.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

LinearPath env_path() {
  const char* e = std::getenv("TESSERA_LINEAR");
  if (!e) return LinearPath::automatic;
  if (std::strcmp(e, "gemv") == 0) return LinearPath::gemv;
  if (std::strcmp(e, "dpbf16") == 0) return LinearPath::gemv_dpbf16;
  if (std::strcmp(e, "gemm") == 0) return LinearPath::gemm;
  return LinearPath::automatic;
}

LinearPath& forced_path() {
  static LinearPath p = env_path();
  return p;
}

void linear_scalar(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out) {
  const int64_t M = x.rows, K = x.cols, N = w.rows;
  const float* bias_p = bias ? bias->ptr<const float>() : nullptr;
  ThreadPool::global().parallel_for(
      N,
      [&](int64_t n0, int64_t n1, int) {
        std::vector<float> xrow(static_cast<size_t>(K));
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t k = 0; k < K; ++k) xrow[k] = load_elem(x.data, x.dtype, m * x.stride + k);
          for (int64_t n = n0; n < n1; ++n) {
            float acc = 0.f;
            if (w.dtype == DType::f32) {
              const float* wr = static_cast<const float*>(w.data()) + n * K;
              for (int64_t k = 0; k < K; ++k) acc += xrow[k] * wr[k];
            } else {
              const uint16_t* wr = static_cast<const uint16_t*>(w.data()) + n * K;
              for (int64_t k = 0; k < K; ++k) acc += xrow[k] * bf16_to_f32(wr[k]);
            }
            if (bias_p) acc += bias_p[n];
            store_elem(out.data, out.dtype, m * out.stride + n, acc);
          }
        }
      },
      16);
}

// x in the layout the GEMV kernel wants (simd_kernels.h, GemvArgs).
struct PreparedX {
  std::vector<float> f;
  std::vector<uint16_t> h;
};

void gemv(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out, bool dpbf16) {
  const Isa isa = active_isa();
  const int64_t M = x.rows, K = x.cols, N = w.rows;
  thread_local PreparedX prep;
  GemvArgs a;
  a.w = w.data();
  a.K = K;
  a.M = static_cast<int>(M);
  a.bias = bias ? bias->ptr<const float>() : nullptr;
  a.out = out.data;
  a.out_dtype = out.dtype;
  a.out_stride = out.stride;
  void (*kernel)(const GemvArgs&, int64_t, int64_t) = nullptr;
  if (w.dtype == DType::f32) {
    if (x.dtype == DType::f32) {
      a.x = x.data;
      a.x_stride = x.stride;
    } else {
      prep.f.resize(static_cast<size_t>(M * K));
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) prep.f[m * K + k] = load_elem(x.data, x.dtype, m * x.stride + k);
      a.x = prep.f.data();
      a.x_stride = K;
    }
    kernel = isa == Isa::avx512 ? avx512::gemv_f32 : avx2::gemv_f32;
  } else if (dpbf16) {
    // x rounded to bf16, each row zero padded to a multiple of 32.
    const int64_t ld = (K + 31) / 32 * 32;
    prep.h.assign(static_cast<size_t>(M * ld), 0);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k)
        prep.h[m * ld + k] = f32_to_bf16(load_elem(x.data, x.dtype, m * x.stride + k));
    a.x = prep.h.data();
    a.x_stride = ld;
    kernel = avx512::gemv_dpbf16;
  } else {
    // Even elements, then odd ones, each padded with zeros to `half` (a multiple of 16 floats).
    const int64_t half = ((K + 1) / 2 + 15) / 16 * 16;
    prep.f.assign(static_cast<size_t>(M * 2 * half), 0.f);
    for (int64_t m = 0; m < M; ++m) {
      float* e = prep.f.data() + m * 2 * half;
      for (int64_t k = 0; k < K; ++k)
        e[(k & 1) * half + k / 2] = load_elem(x.data, x.dtype, m * x.stride + k);
    }
    a.x = prep.f.data();
    a.x_stride = 2 * half;
    a.half = half;
    kernel = isa == Isa::avx512 ? avx512::gemv_bf16 : avx2::gemv_bf16;
  }
  // Chunks of rows taken dynamically: long enough to stream (>= 64 rows), enough of them that a
  // thread preempted by another process does not hold up the whole op.
  ThreadPool& pool = ThreadPool::global();
  const int64_t chunk = std::clamp<int64_t>(N / (pool.size() * 8) / 16 * 16, 64, 4096);
  pool.parallel_dynamic(N, chunk, [&](int64_t n0, int64_t n1, int) { kernel(a, n0, n1); });
}

}  // namespace

void set_linear_path(LinearPath p) { forced_path() = p; }

LinearPath linear_path_for(int64_t M, const CpuWeight& w) {
  const LinearPath f = forced_path();
  if (f == LinearPath::gemv_dpbf16 && (w.dtype != DType::bf16 || active_isa() != Isa::avx512))
    return LinearPath::gemv;
  if (f != LinearPath::automatic) return f;
  return M >= kGemmMinRows ? LinearPath::gemm : LinearPath::gemv;
}

void linear(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out) {
  if (active_isa() == Isa::scalar) return linear_scalar(x, w, bias, out);
  switch (linear_path_for(x.rows, w)) {
    case LinearPath::gemm: return gemm_dnnl(x, w, bias, out);
    case LinearPath::gemv_dpbf16: return gemv(x, w, bias, out, true);
    default: return gemv(x, w, bias, out, false);
  }
}

}  // namespace tessera::cpu
