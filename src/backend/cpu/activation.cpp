// Gated MLP activations, the embedding gather and logit softcapping.
// ref: transformers GELUTanh (gelu_pytorch_tanh), SiLU; Gemma3TextScaledWordEmbedding.
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

void gated_act(Tensor gate_up, Activation act, Tensor out) {
  const int64_t I = out.cols;
  ThreadPool::global().parallel_for(gate_up.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t i = 0; i < I; ++i) {
        float g = load_elem(gate_up.data, gate_up.dtype, r * gate_up.stride + i);
        float u = load_elem(gate_up.data, gate_up.dtype, r * gate_up.stride + I + i);
        float a;
        if (act == Activation::gelu_tanh) {
          const float k0 = 0.7978845608028654f;  // sqrt(2 / pi)
          a = 0.5f * g * (1.f + std::tanh(k0 * (g + 0.044715f * g * g * g)));
        } else {
          a = g / (1.f + std::exp(-g));
        }
        store_elem(out.data, out.dtype, r * out.stride + i, a * u);
      }
    }
  });
}

void embed(const CpuWeight& table, const int32_t* ids, int n, float scale, bool round_to_table_dtype,
           Tensor out) {
  const int64_t H = table.cols;
  const bool bf16 = table.dtype == DType::bf16;
  const float s = (round_to_table_dtype && bf16) ? round_bf16(scale) : scale;
  for (int t = 0; t < n; ++t) {
    const int64_t base = static_cast<int64_t>(ids[t]) * H;
    for (int64_t i = 0; i < H; ++i) {
      float v = load_elem(table.data(), table.dtype, base + i) * s;
      if (round_to_table_dtype && bf16) v = round_bf16(v);
      store_elem(out.data, out.dtype, t * out.stride + i, v);
    }
  }
}

void softcap(Tensor x, float cap) {
  ThreadPool::global().parallel_for(x.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      float* row = x.ptr<float>() + r * x.stride;
      for (int64_t i = 0; i < x.cols; ++i) row[i] = std::tanh(row[i] / cap) * cap;
    }
  });
}

}  // namespace tessera::cpu
