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

// The add_rms_norm that follows a GEMV on the same rows (the decoder's o-proj and down-proj):
// run by the GEMV's last block once every output is written, with the add_rms_norm contract
// (res += w_y ? norm(out) * w_y : out; h = norm(res) * w_out when w_out).
struct NormEpilogue {
  float* res = nullptr;
  int64_t res_stride = 0;
  const float* w_y = nullptr;
  const float* w_out = nullptr;
  float eps = 0.f;
  bf16* h = nullptr;
  int64_t h_stride = 0;
  int* counter = nullptr;  // zero before, left zero
};

class LinearOps {
 public:
  LinearOps();
  ~LinearOps();
  LinearOps(const LinearOps&) = delete;
  LinearOps& operator=(const LinearOps&) = delete;

  void linear(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, const float* bias,
              Tensor out, cudaStream_t st, const NormEpilogue* ep = nullptr);
  // Whether linear() takes the GEMV path for this call with a bf16 output, so that a following
  // add_rms_norm can ride on it as a NormEpilogue.
  bool gemv_fusable(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, Tensor out) const;

  // Which path: 0 auto, 1 always GEMV (when eligible), 2 always cuBLASLt (when eligible),
  // 3 always the tiled fallback. For the op tests and the crossover benchmark.
  void set_force_path(int p) { force_path_ = p; }
  void set_gemv_max_m(int m) { gemv_max_m_ = m; }
  int gemv_max_m() const { return gemv_max_m_; }

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

  cublasLtHandle_t handle_ = nullptr;
  std::unique_ptr<CudaBuffer> workspace_;
  std::map<Key, Plan> plans_;
  int force_path_ = 0;
  int gemv_max_m_ = 8;
};

}  // namespace tessera::cuda
