// out[M, N] = x[M, K] W[N, K]^T + bias: the portable path. Threads split N (each thread streams
// its own slice of W once for all M rows).
#include <algorithm>

#include "backend/cpu/cpu_kernels.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

void linear(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out) {
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

}  // namespace tessera::cpu
