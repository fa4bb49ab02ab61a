// Packing of MLX quantized tensors into the CPU layout (quant_weight.h), once at load time.
#include <cstring>
#include <vector>

#include "backend/cpu/quant_weight.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "quant/affine.h"

namespace tessera::cpu {

namespace {
float to_f32(const HostQuantTensor& t, const void* p, int64_t i) {
  switch (t.scale_dtype) {
    case DType::f32:
      return static_cast<const float*>(p)[i];
    case DType::bf16:
      return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default:
      return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
  }
}
}  // namespace

std::unique_ptr<CpuQuantWeight> pack_quantized(std::span<const HostQuantTensor* const> parts,
                                               DType dtype, const std::string& what) {
  TS_ASSERT(!parts.empty());
  auto w = std::make_unique<CpuQuantWeight>();
  const HostQuantTensor& first = *parts[0];
  w->cols = first.cols;
  w->quant = first.format;
  w->dtype = dtype;
  // The parts' own scale dtype and bias form when they agree (exact), else f32 scales and biases.
  w->scale_dtype = first.scale_dtype;
  w->has_biases = first.biases != nullptr;
  w->bias_per_scale = first.bias_per_scale;
  bool computed = false;  // some part's biases are bias_per_scale * scale
  for (const HostQuantTensor* p : parts) {
    TS_ASSERT(p->cols == w->cols && p->format == w->quant);
    w->rows += p->rows;
    if (p->scale_dtype != w->scale_dtype) w->scale_dtype = DType::f32;
    if (p->biases || p->bias_per_scale != first.bias_per_scale) w->has_biases = true;
    computed = computed || !p->biases;
  }
  if (w->has_biases && computed) w->scale_dtype = DType::f32;  // biases computed in f32
  const int bits = w->quant.bits, gs = w->quant.group_size;
  TS_ASSERT(quant::valid_bits(bits) && quant::valid_kernel_group_size(gs) && w->cols % gs == 0);
  w->sb = bits <= 4 ? 4 : 8;
  w->panels = (w->rows + kPanel - 1) / kPanel;
  w->groups = w->cols / gs;
  w->words_per_group = gs * w->sb / 32;
  w->group_bytes = w->words_per_group * 64 + (w->has_biases ? 2 : 1) * kPanel * w->scale_size();
  w->panel_bytes = w->groups * w->group_bytes;
  w->bytes = static_cast<size_t>(w->panels * w->panel_bytes);
  w->buffer = HostBuffer(w->bytes, what.c_str());
  std::memset(w->buffer.data(), 0, w->bytes);  // padding rows: q = 0, scale = bias = 0

  // Row n of the stack: its part and its row there.
  std::vector<std::pair<const HostQuantTensor*, int64_t>> starts;
  int64_t row0 = 0;
  for (const HostQuantTensor* p : parts) {
    starts.emplace_back(p, row0);
    row0 += p->rows;
  }
  const int64_t K = w->cols, src_words = quant::words_per_row(K, bits), per = 32 / w->sb;
  ThreadPool::global().parallel_for(
      w->rows,
      [&](int64_t n0, int64_t n1, int) {
        std::vector<uint8_t> q(static_cast<size_t>(K));
        for (int64_t n = n0; n < n1; ++n) {
          size_t i = starts.size() - 1;
          while (starts[i].second > n) --i;
          const HostQuantTensor& t = *starts[i].first;
          const int64_t r = n - starts[i].second;
          const uint32_t* src = t.packed + r * src_words;
          quant::unpack_row(src, K, bits, q.data());
          uint8_t* base = w->buffer.as<uint8_t>() + (n / kPanel) * w->panel_bytes;
          const int64_t j = n % kPanel;
          for (int64_t g = 0; g < w->groups; ++g) {
            uint8_t* blk = base + g * w->group_bytes;
            for (int64_t c = 0; c < w->words_per_group; ++c) {
              uint32_t word = 0;
              for (int64_t e = 0; e < per; ++e)
                word |= static_cast<uint32_t>(q[g * gs + c * per + e]) << (e * w->sb);
              std::memcpy(blk + (c * kPanel + j) * 4, &word, 4);
            }
            const int64_t gi = r * w->groups + g;
            uint8_t* sc = blk + w->words_per_group * 64;
            for (int b = 0; b < (w->has_biases ? 2 : 1); ++b) {
              uint8_t* dst = sc + (b * kPanel + j) * w->scale_size();
              if (w->scale_dtype != DType::f32) {  // the part's own 16-bit values
                std::memcpy(dst, static_cast<const uint16_t*>(b ? t.biases : t.scales) + gi, 2);
              } else {
                const float s = to_f32(t, t.scales, gi);
                const float f = !b ? s : t.biases ? to_f32(t, t.biases, gi) : t.bias_per_scale * s;
                std::memcpy(dst, &f, 4);
              }
            }
          }
        }
      },
      kPanel);
  return w;
}

}  // namespace tessera::cpu
