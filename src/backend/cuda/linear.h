// out[M, N] = x[M, K] W[N, K]^T (+ bias) on the GPU: the dispatch over the linear layer's kernel
// families (linear.cpp). bf16 weights and activations take one of the decode GEMVs (M <= 8,
// gemv.h) or cuBLASLt on the tensor cores (lt_gemm.h), fp32 accumulation; other dtype mixes take
// a simple tiled kernel (linear_tiled.cu: f32 weights, tests and fixtures, not speed).
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "backend/backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/cuda_tuning.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/lt_gemm.h"

namespace tessera::cuda {

// A device weight [rows, cols] row-major in `dtype`.
struct CudaWeight : Weight {
  std::unique_ptr<CudaBuffer> buffer;
  const void* data() const { return buffer->data(); }
};

// linear_tiled.cu: the tiled GEMM (any f32 / bf16 mix of x, W and out) and the bias add of
// out [M, N] after cuBLASLt.
void launch_tiled_gemm(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, const float* bias,
                       Tensor out, cudaStream_t st);
void launch_add_bias(Tensor out, int64_t M, int64_t N, const float* bias, cudaStream_t st);

class LinearOps {
 public:
  LinearOps();

  // With `f`, gemv_fusable() must hold (out is [M, N / 2] when f->gated). `pf`: an L2 prefetch the
  // kernel issues when it is the one-row GEMV at M = 1 (else ignored).
  void linear(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, const float* bias,
              Tensor out, cudaStream_t st, const GemvFusion* f = nullptr,
              const L2Prefetch& pf = {});
  // The same product on cuBLASLt (or the tiled kernel where its operands do not suit it), never
  // a GEMV: for a weight the previous kernel wrote (a dequantized tile), which the GEMVs would
  // start loading before their PDL wait.
  void dense(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, const float* bias,
             Tensor out, cudaStream_t st);
  bool gemv_fusable(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, Tensor out,
                    const GemvFusion& f) const;

  // The path and GEMV kernel (CudaTuning::linear, CudaTuning::gemv): forced ones for diagnosis,
  // the op tests and the crossover benchmark.
  void set_force_path(LinearPath p) { force_path_ = p; }
  void set_gemv_kind(GemvKernel k) { gemv_kind_ = k; }
  int sms() const { return sms_; }

 private:
  // gemv, cublaslt or tiled.
  LinearPath choose_path(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K,
                         Tensor out) const;
  bool use_mma(int64_t M, int64_t rows, int64_t K, bool norm, bool gated) const;

  LtGemm lt_;
  LinearPath force_path_ = LinearPath::automatic;
  int sms_ = 132;
  GemvKernel gemv_kind_ = GemvKernel::automatic;
};

}  // namespace tessera::cuda
