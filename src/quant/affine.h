// MLX's affine quantization as a file format and an algorithm, independent of any backend:
// packing (each row of q values one continuous little-endian bit stream in uint32 words, element
// k at bits [k bits, (k + 1) bits)) and the quantizer of ml-explore/mlx (mlx/ops.cpp
// affine_quantize and its fallback, mlx/backend/cpu/quantized.cpp quantize), so that what
// `tessera quantize` writes is what mlx-lm writes for the same bf16 weights.
#pragma once

#include <cstdint>
#include <string>

namespace tessera::quant {

// What MLX accepts: bits 2, 3, 4, 5, 6, 8; group sizes 32, 64, 128.
bool valid_bits(int bits);
bool valid_group_size(int group_size);
// What the backends' packed kernels take: MLX's group sizes and 16, the group of GGUF's Q6_K
// (quant/gguf_blocks.h). Config files stay on valid_group_size.
bool valid_kernel_group_size(int group_size);
// The uint32 words of one packed row of `cols` elements (cols * bits / 32; MLX requires
// cols * bits to be a multiple of 32, which holds whenever cols is a multiple of the group size).
inline int64_t words_per_row(int64_t cols, int bits) {
  return cols * bits / 32;
}

// Element k of a packed row.
inline uint32_t unpack_one(const uint32_t* row, int bits, int64_t k) {
  const int64_t bit = k * bits;
  const int64_t w = bit >> 5;
  const int sh = static_cast<int>(bit & 31);
  uint64_t v = row[w] >> sh;
  if (sh + bits > 32) v |= static_cast<uint64_t>(row[w + 1]) << (32 - sh);
  return static_cast<uint32_t>(v) & ((1u << bits) - 1u);
}
// q[0, n) (each < 2^bits) into words_per_row(n, bits) words.
void pack_row(const uint8_t* q, int64_t n, int bits, uint32_t* out);
// The n elements of a packed row as bytes.
void unpack_row(const uint32_t* row, int64_t n, int bits, uint8_t* q);

// Quantizes one row w[0, n) (n a multiple of group_size) exactly as MLX does: per group, in
// float32, scale from (max - min) / (2^bits - 1) (at least 1e-7) signed towards the edge of
// larger magnitude, the edge made exactly representable (scale = edge / rint(edge / scale), bias
// = edge) unless it rounds to 0, then q = clamp(rint((w - bias) / scale), 0, 2^bits - 1).
// scales and biases [n / group_size] are the float32 values, before the caller rounds them to
// the checkpoint's dtype (q is computed from the unrounded ones, as MLX does).
void quantize_row(const float* w, int64_t n, int bits, int group_size, uint32_t* packed,
                  float* scales, float* biases);

// w[k] = scales[k / group_size] * q[k] + biases[k / group_size] in float32.
void dequantize_row(const uint32_t* packed, const float* scales, const float* biases, int64_t n,
                    int bits, int group_size, float* w);

// The (bits, group_size) a packed weight of `words` columns and a scales tensor of `groups`
// columns imply for `cols` input features; false when no valid pair does.
bool infer_format(int64_t cols, int64_t words, int64_t groups, int* bits, int* group_size);

}  // namespace tessera::quant
