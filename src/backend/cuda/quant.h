// MLX affine-quantized weights on the GPU (ComputeBackend::upload_quantized): the device layout
// (CudaQuantWeight), the decode GEMV that reads it packed (gemv_quant.cu) and the dequantization
// of rows into bf16 for the batched products and the embedding gather (quant_dequant.cu).
//
// Layout: w = scale * q + bias per group of `group` consecutive inputs of a row (MLX's affine
// format). Values are stored at sb = 4 bits (MLX bits 2, 3, 4) or 8 bits (5, 6, 8), widened at
// load (exact: the values fit), so every row is K * sb / 32 words in MLX's own packing of 4- and
// 8-bit files (element k of a word at bits [k sb, (k + 1) sb)), read as 16-byte chunks of
// E = 128 / sb inputs, each inside one group (group >= E: 32, 64, 128, and 16 at sb 8). Scales and
// biases are pairs [N, K / group] of (scale, bias): bf16 pairs when the file's are bf16 (exact),
// else f32 pairs.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/linear.h"

namespace tessera::cuda {

// A quantized weight's device pointers and shape.
struct QuantView {
  const uint32_t* w = nullptr;  // [rows, cols * sb / 32]
  const void* s = nullptr;      // [rows, cols / group] (scale, bias) pairs
  int sb = 4, group = 64;
  bool f32_scales = false;
  int64_t rows = 0, cols = 0;
};

struct CudaQuantWeight : CudaWeight {  // buffer: the words
  std::unique_ptr<CudaBuffer> scales;
  int sb = 4;
  bool f32_scales = false;
  QuantView view() const {
    return {static_cast<const uint32_t*>(buffer->data()),
            scales->data(),
            sb,
            quant.group_size,
            f32_scales,
            rows,
            cols};
  }
};

// The largest M the packed GEMV takes (above it: dequantize + cuBLASLt), and the largest M its
// norm prologue takes (the bf16 streaming GEMV's).
constexpr int kQuantGemvMaxM = 16, kQuantNormMaxM = 8;

// gemv_quant.cu: whether the packed GEMV takes x [M, K] (bf16, 16-byte aligned rows) . w^T into
// out (bf16, or f32 without fusions or for an LM head: M = 1 with the norm, not gated), with the
// fusions (GemvFusion::norm, ::gated; N counts both halves when gated); and the launch.
bool quant_gemv_fits(Tensor x, const QuantView& w, Tensor out, const GemvFusion* f, int sms);
void launch_quant_gemv(Tensor x, const QuantView& w, const float* bias, Tensor out,
                       const GemvFusion* f, cudaStream_t st, int sms);

// quant_dequant.cu: rows [row0, row0 + n) of w into dst [n, cols] (contiguous; bf16: rounded
// once from the f32 value scale * q + bias, f32: exact); and the embedding gather out[t] =
// w[ids[t]] * scale with ComputeBackend::embed's rounding, dequantizing only the gathered rows.
void launch_dequant_rows(const QuantView& w, int64_t row0, int64_t n, Tensor dst, cudaStream_t st);
void embed_quant(const QuantView& w, const int32_t* ids, int n, float scale,
                 bool round_to_table_dtype, DType table_dt, Tensor out, cudaStream_t st);

}  // namespace tessera::cuda
