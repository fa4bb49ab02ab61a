// RMSNorm and the fused residual-add + RMSNorm. ref: transformers Gemma3RMSNorm / LlamaRMSNorm
// (both normalise in fp32; Gemma's (1 + w) is folded into w at load). The scalar path is the
// reference (sum of squares in double); the SIMD rows (norm_impl.h) sum in fp32 lanes.
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/simd_kernels.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

void norm_row(const float* x, const float* w, float eps, int64_t n, float* y) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  float inv = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(n)) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * w[i];
}

// Rows per parallel task: a row is ~1 us of work, so small batches run on one thread.
constexpr int64_t kRowGrain = 8;

}  // namespace

void rms_norm(Tensor x, Tensor w, float eps, Tensor out) {
  const int64_t n = x.cols;
  const Isa isa = active_isa();
  if (isa != Isa::scalar && x.dtype == DType::f32 && out.dtype == DType::f32) {
    auto row = isa == Isa::avx512 ? avx512::rms_norm_row : avx2::rms_norm_row;
    ThreadPool::global().parallel_for(
        x.rows,
        [&](int64_t r0, int64_t r1, int) {
          for (int64_t r = r0; r < r1; ++r)
            row(x.ptr<const float>() + r * x.stride, w.ptr<const float>(), eps, n,
                out.ptr<float>() + r * out.stride);
        },
        kRowGrain);
    return;
  }
  ThreadPool::global().parallel_for(x.rows, [&](int64_t r0, int64_t r1, int) {
    std::vector<float> buf(static_cast<size_t>(n)), res(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t i = 0; i < n; ++i) buf[i] = load_elem(x.data, x.dtype, r * x.stride + i);
      norm_row(buf.data(), w.ptr<const float>(), eps, n, res.data());
      for (int64_t i = 0; i < n; ++i) store_elem(out.data, out.dtype, r * out.stride + i, res[i]);
    }
  });
}

void add_rms_norm(Tensor residual, Tensor y, const Tensor* w_y, const Tensor* w_out, float eps,
                  Tensor out) {
  const int64_t n = residual.cols;
  const Isa isa = active_isa();
  if (isa != Isa::scalar && y.dtype == DType::f32 && (!w_out || out.dtype == DType::f32)) {
    auto row = isa == Isa::avx512 ? avx512::add_rms_norm_row : avx2::add_rms_norm_row;
    ThreadPool::global().parallel_for(
        residual.rows,
        [&](int64_t r0, int64_t r1, int) {
          for (int64_t r = r0; r < r1; ++r)
            row(residual.ptr<float>() + r * residual.stride, y.ptr<const float>() + r * y.stride,
                w_y ? w_y->ptr<const float>() : nullptr,
                w_out ? w_out->ptr<const float>() : nullptr, eps, n,
                w_out ? out.ptr<float>() + r * out.stride : nullptr);
        },
        kRowGrain);
    return;
  }
  ThreadPool::global().parallel_for(residual.rows, [&](int64_t r0, int64_t r1, int) {
    std::vector<float> buf(static_cast<size_t>(n)), res(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      float* xr = residual.ptr<float>() + r * residual.stride;
      for (int64_t i = 0; i < n; ++i) buf[i] = load_elem(y.data, y.dtype, r * y.stride + i);
      if (w_y) {
        norm_row(buf.data(), w_y->ptr<const float>(), eps, n, res.data());
        for (int64_t i = 0; i < n; ++i) xr[i] += res[i];
      } else {
        for (int64_t i = 0; i < n; ++i) xr[i] += buf[i];
      }
      if (w_out) {
        norm_row(xr, w_out->ptr<const float>(), eps, n, res.data());
        for (int64_t i = 0; i < n; ++i) store_elem(out.data, out.dtype, r * out.stride + i, res[i]);
      }
    }
  });
}

}  // namespace tessera::cpu
