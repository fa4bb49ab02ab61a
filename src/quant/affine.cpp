#include "quant/affine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace tessera::quant {

bool valid_bits(int bits) {
  return bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
}
bool valid_group_size(int g) {
  return g == 32 || g == 64 || g == 128;
}
bool valid_kernel_group_size(int g) {
  return g == 16 || valid_group_size(g);
}

void pack_row(const uint8_t* q, int64_t n, int bits, uint32_t* out) {
  std::memset(out, 0, static_cast<size_t>(words_per_row(n, bits)) * 4);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t bit = k * bits;
    const int64_t w = bit >> 5;
    const int sh = static_cast<int>(bit & 31);
    out[w] |= static_cast<uint32_t>(q[k]) << sh;
    if (sh + bits > 32) out[w + 1] |= static_cast<uint32_t>(q[k]) >> (32 - sh);
  }
}

void unpack_row(const uint32_t* row, int64_t n, int bits, uint8_t* q) {
  for (int64_t k = 0; k < n; ++k) q[k] = static_cast<uint8_t>(unpack_one(row, bits, k));
}

// ref: mlx/backend/cpu/quantized.cpp quantize() (and mlx/ops.cpp affine_quantize's fallback,
// which computes the same in float32 ops).
void quantize_row(const float* w, int64_t n, int bits, int group_size, uint32_t* packed,
                  float* scales, float* biases) {
  const float n_bins = static_cast<float>((1 << bits) - 1);
  const float eps = 1e-7f;
  std::vector<uint8_t> q(static_cast<size_t>(n));
  for (int64_t g = 0; g * group_size < n; ++g) {
    const float* x = w + g * group_size;
    float w_min = std::numeric_limits<float>::infinity(), w_max = -w_min;
    for (int j = 0; j < group_size; ++j) {
      w_max = std::max(w_max, x[j]);
      w_min = std::min(w_min, x[j]);
    }
    const bool mask = std::abs(w_min) > std::abs(w_max);
    float scale = std::max((w_max - w_min) / n_bins, eps);
    scale = mask ? scale : -scale;
    const float edge = mask ? w_min : w_max;
    const float q0 = std::rint(edge / scale);
    float bias = 0;
    if (q0 != 0) {
      scale = edge / q0;
      bias = edge;
    }
    for (int j = 0; j < group_size; ++j) {
      const float v = std::min(std::max(std::rint((x[j] - bias) / scale), 0.0f), n_bins);
      q[g * group_size + j] = static_cast<uint8_t>(v);
    }
    scales[g] = scale;
    biases[g] = bias;
  }
  pack_row(q.data(), n, bits, packed);
}

void dequantize_row(const uint32_t* packed, const float* scales, const float* biases, int64_t n,
                    int bits, int group_size, float* w) {
  for (int64_t k = 0; k < n; ++k) {
    const int64_t g = k / group_size;
    w[k] = scales[g] * static_cast<float>(unpack_one(packed, bits, k)) + biases[g];
  }
}

bool infer_format(int64_t cols, int64_t words, int64_t groups, int* bits, int* group_size) {
  if (cols <= 0 || words <= 0 || groups <= 0 || (words * 32) % cols != 0 || cols % groups != 0)
    return false;
  *bits = static_cast<int>(words * 32 / cols);
  *group_size = static_cast<int>(cols / groups);
  return valid_bits(*bits) && valid_group_size(*group_size);
}

}  // namespace tessera::quant
