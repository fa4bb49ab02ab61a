// A quantized weight as the CPU kernels hold it (ComputeBackend::upload_quantized), and the
// kernels that read it (quant_linear.cpp, quant_gemv_avx512.cpp, quant_gemv_avx2.cpp).
//
// Layout: [N, K] in panels of kPanel = 16 rows like CpuWeight, N padded with zero rows. Values
// are stored at 4 bits (MLX bits 2, 3, 4) or 8 bits (5, 6, 8): the stored word of a row holds
// 32 / sb consecutive k of that row, least significant first, which for 4- and 8-bit files is
// MLX's own word. Panel p, group g (group_size consecutive k) is one block:
//   words [group_size * sb / 32][16]   the group's words of the panel's 16 rows, interleaved
//   scales [16], biases [16]           bf16 or f16 when the file's are (exact), else f32
// Symmetric GGUF types (Q4_0, Q5_0, Q8_0, Q6_K) store no biases: bias = bias_per_scale * scale,
// so Q4_0 reads 4.5 bits per weight, as llama.cpp's own block_q4_0 (4 + 16 / 32).
// so a GEMV streams each panel once, front to back, and one 64-byte word row feeds 16 output
// lanes with 32 / sb k each (no transpose, no horizontal sum). 2-, 3-, 5- and 6-bit files are
// widened at load (exact; they take the memory of 4 or 8 bits).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "backend/cpu/cpu_kernels.h"

namespace tessera::cpu {

struct CpuQuantWeight : Weight {
  HostBuffer buffer;
  int64_t panels = 0, groups = 0;   // ceil(N / 16), K / group_size
  int sb = 4;                       // stored bits: 4 or 8
  DType scale_dtype = DType::bf16;  // bf16, f16 or f32
  bool has_biases = true;           // false: bias = bias_per_scale * scale
  float bias_per_scale = 0.f;
  int64_t words_per_group = 0;  // group_size * sb / 32 (per row)
  int64_t group_bytes = 0;      // words_per_group * 64 + (16 or 32) * scale size
  int64_t panel_bytes = 0;      // groups * group_bytes

  const uint8_t* block(int64_t p, int64_t g) const {
    return buffer.as<const uint8_t>() + p * panel_bytes + g * group_bytes;
  }
  int scale_size() const { return scale_dtype == DType::f32 ? 4 : 2; }
  float scale(int64_t n, int64_t g, bool bias) const {
    if (bias && !has_biases) return bias_per_scale * scale(n, g, false);
    const uint8_t* s = block(n / kPanel, g) + words_per_group * 64 +
                       ((bias ? kPanel : 0) + n % kPanel) * scale_size();
    if (scale_dtype != DType::f32) {
      uint16_t h;
      std::memcpy(&h, s, 2);
      return scale_dtype == DType::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
    float f;
    std::memcpy(&f, s, 4);
    return f;
  }
  uint32_t q(int64_t n, int64_t k) const {
    const int64_t g = k / quant.group_size, kk = k % quant.group_size, per = 32 / sb;
    uint32_t w;
    std::memcpy(&w, block(n / kPanel, g) + ((kk / per) * kPanel + n % kPanel) * 4, 4);
    return (w >> ((kk % per) * sb)) & ((1u << sb) - 1u);
  }
  // The dequantized element, exactly scale * q + bias in f32.
  float at(int64_t n, int64_t k) const {
    const int64_t g = k / quant.group_size;
    return scale(n, g, false) * static_cast<float>(q(n, k)) + scale(n, g, true);
  }
};

// Packs the parts (stacked along rows; one format and cols) into the layout above.
std::unique_ptr<CpuQuantWeight> pack_quantized(std::span<const HostQuantTensor* const> parts,
                                               DType dtype, const std::string& what);

// out[M, N] = x W^T (+ bias) and the gated form (linear_gated), as cpu::linear does for CpuWeight.
void linear_quant(Tensor x, const CpuQuantWeight& w, const Tensor* bias, Tensor out);
bool linear_gated_quant(Tensor x, const CpuQuantWeight& w, const Tensor* bias, Activation act,
                        Tensor out);
// linear.cpp's panel kernel on w dequantized into f32 panels a few at a time (prefill).
void linear_dequant_panels(Tensor x, const CpuQuantWeight& w, const Tensor* bias, Tensor out,
                           const Activation* gated);
// out[t] = dequantized table[ids[t]] * scale (only the gathered rows are dequantized).
void embed_quant(const CpuQuantWeight& table, const int32_t* ids, int n, float scale,
                 bool round_to_table_dtype, Tensor out);

// One GEMV call of the SIMD kernels: x [M, K] f32 rows (M <= kQuantGemvMaxRows), xsum [M,
// groups] the sums of x over each group, out f32 [M, out_stride]; covers panels [p0, p1).
constexpr int kQuantGemvMaxRows = 4;
struct QuantGemvArgs {
  const CpuQuantWeight* w = nullptr;
  const float* x = nullptr;
  int64_t x_stride = 0;
  const float* xsum = nullptr;
  int M = 0;
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t out_stride = 0;
};
// Dequantizes panels [p0, p0 + np) into f32 CpuWeight panels ([K][16] each) at dst.
namespace avx512 {
void quant_gemv(const QuantGemvArgs& a, int64_t p0, int64_t p1);
void quant_dequant_panels(const CpuQuantWeight& w, int64_t p0, int64_t np, float* dst);
}  // namespace avx512
namespace avx2 {
void quant_gemv(const QuantGemvArgs& a, int64_t p0, int64_t p1);
void quant_dequant_panels(const CpuQuantWeight& w, int64_t p0, int64_t np, float* dst);
}  // namespace avx2

}  // namespace tessera::cpu
