// cuBLASLt for the bf16 GEMMs of the linear layers (lt_gemm.cpp): out[M, N] = x[M, K] W[N, K]^T,
// bf16 in, fp32 accumulation, bf16 or f32 out.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <tuple>

#include "backend/backend.h"
#include "backend/cuda/cuda_memory.h"

namespace tessera::cuda {

// The largest power of two (up to 256) that divides the address: what cuBLASLt's alignment
// preferences and the GEMVs' 16-byte loads ask of an operand.
int alignment_of(const void* p);

class LtGemm {
 public:
  LtGemm();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // x and out may be strided (their row strides are the plan's leading dimensions).
  void matmul(Tensor x, const void* w, int64_t N, int64_t K, Tensor out, cudaStream_t st);

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int>;
  // The plan of a shape, created (and its algorithm chosen) the first time.
  Plan& plan(int64_t M, int64_t N, int64_t K, int64_t ldx, int64_t ldo, DType out_dt, int al_w,
             int al_x, int al_o);

  cublasLtHandle_t handle_ = nullptr;
  std::unique_ptr<CudaBuffer> workspace_;
  std::map<Key, Plan> plans_;
};

}  // namespace tessera::cuda
