// ggml's block formats (the tensor types of GGUF files), decoded two ways:
//   - gguf_dequantize_row: the reference, f32 values exactly as llama.cpp's dequantize_row_*
//     (ggml/src/ggml-quants.c) and gguf-py's quants.py compute them;
//   - gguf_affine_row: the same row in the affine form tessera's packed kernels take
//     (backend.h HostQuantTensor: w = scale * q + bias per group of consecutive elements, q
//     unsigned), with f32 scales and biases.
// Block layouts: ggml/src/ggml-common.h (block_q4_0, ..., block_q6_K).
//
// Exactness. Every f16 d (11 significant bits) times a 6-bit K-quant scale or min (or Q6_K's
// 8-bit signed scale) is exact in f32, and so is d times any q of the type (at most 24
// significant bits), so:
//   - Q8_0, Q4_0, Q5_0, Q6_K (symmetric, reference d * (q - o) with offset o = 128, 8, 16, 32):
//     scale * q + bias with bias = -o * scale is exact, hence equal to the reference value (a
//     product the reference also computes exactly); the only difference is the sign of zero: the
//     reference's d * 0 may be -0 where the affine sum gives +0.
//   - Q4_1, Q5_1 (reference q * d + m) and Q4_K, Q5_K (reference (d * sc) * q - dmin * m): the
//     product is exact and the one addition rounds the same in both forms: bit for bit equal.
// So the affine values equal the reference values as floats (==), whether a kernel evaluates
// scale * q + bias with a fused multiply-add or not.
#pragma once

#include <cstdint>

#include "core/ggml_type.h"

namespace tessera::quant {

// F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K.
bool gguf_type_supported(uint32_t type_id);

// The affine form of a quantized type: bits and group size (Q4_0/Q4_1: 4, 32; Q5_0/Q5_1: 5, 32;
// Q8_0: 8, 32; Q4_K: 4, 32; Q5_K: 5, 32; Q6_K: 6, 16); {0, 0} for F32, F16, BF16.
struct GgufAffineFormat {
  int bits = 0;
  int group_size = 0;
};
GgufAffineFormat gguf_affine_format(GgmlType t);

// The most compact exact storage of a type's affine form: symmetric types (Q8_0, Q4_0, Q5_0,
// Q6_K) need no biases (bias = bias_per_scale * scale, bias_per_scale = -offset); the scales (and
// Q4_1 / Q5_1's biases) of the one-group-per-block types are the file's own f16 d (and m), so f16
// holds them exactly; the K-quants' d * sc products need f32. Decode speed is bytes: Q4_0 is 4.5
// bits per weight so stored, 6 with f32 scales and biases.
struct GgufAffineStorage {
  bool symmetric = false;
  float bias_per_scale = 0.f;  // -offset when symmetric
  bool f16_scales = false;
};
GgufAffineStorage gguf_affine_storage(GgmlType t);

// Bytes of a row of n elements (n a multiple of the type's block size).
int64_t gguf_row_bytes(GgmlType t, int64_t n);

// The reference values of one row of n elements (n a multiple of the block size). Throws
// Error(unsupported) naming the type for a type gguf_type_supported() rejects.
void gguf_dequantize_row(GgmlType t, const void* row, int64_t n, float* out);

// One row of a quantized type in affine form: q [n] (each < 2^bits), scales and biases
// [n / group_size]. Throws Error(unsupported) for F32/F16/BF16 and unsupported types.
void gguf_affine_row(GgmlType t, const void* row, int64_t n, uint8_t* q, float* scales,
                     float* biases);

}  // namespace tessera::quant
