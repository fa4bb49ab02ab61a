// Gated MLP activations, the embedding gather and logit softcapping.
// ref: transformers GELUTanh (gelu_pytorch_tanh), SiLU; Gemma3TextScaledWordEmbedding.
// The scalar loops are the reference; the SIMD rows are in activation_impl.h.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/simd_kernels.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

void gated_act(Tensor gate_up, Activation act, Tensor out) {
  const int64_t I = out.cols;
  const Isa isa = active_isa();
  if (isa != Isa::scalar && gate_up.dtype == DType::f32 && out.dtype == DType::f32) {
    // Split columns too, so that decode's single row uses both threads.
    auto row = isa == Isa::avx512 ? avx512::gated_act_row : avx2::gated_act_row;
    const int64_t col_chunk = 512;
    const int64_t per_row = (I + col_chunk - 1) / col_chunk;
    ThreadPool::global().parallel_for(
        gate_up.rows * per_row,
        [&](int64_t i0, int64_t i1, int) {
          for (int64_t i = i0; i < i1; ++i) {
            const int64_t r = i / per_row, c0 = (i % per_row) * col_chunk;
            const float* g = gate_up.ptr<const float>() + r * gate_up.stride;
            row(g + c0, g + I + c0, std::min(col_chunk, I - c0), act,
                out.ptr<float>() + r * out.stride + c0);
          }
        },
        2);
    return;
  }
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

// The table is in the panel layout (cpu_kernels.h): row v's pairs of k sit 64 bytes apart.
void embed(const CpuWeight& table, const int32_t* ids, int n, float scale,
           bool round_to_table_dtype, Tensor out) {
  const int64_t H = table.cols;
  const bool bf16 = table.dtype == DType::bf16;
  const float s = (round_to_table_dtype && bf16) ? round_bf16(scale) : scale;
  ThreadPool::global().parallel_for(
      n,
      [&](int64_t t0, int64_t t1, int) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t base = table.offset(ids[t], 0);
          for (int64_t i = 0; i < H; ++i) {
            const int64_t o = bf16 ? base + (i / 2) * 2 * kPanel + (i % 2) : base + i * kPanel;
            float v = load_elem(table.data(), table.dtype, o) * s;
            if (round_to_table_dtype && bf16) v = round_bf16(v);
            store_elem(out.data, out.dtype, t * out.stride + i, v);
          }
        }
      },
      16);
}

void softcap(Tensor x, float cap) {
  const Isa isa = active_isa();
  if (isa != Isa::scalar) {
    auto row = isa == Isa::avx512 ? avx512::softcap_row : avx2::softcap_row;
    // Split columns: the LM head's logits are one or a few long rows.
    const int64_t col_chunk = 16384;
    const int64_t per_row = (x.cols + col_chunk - 1) / col_chunk;
    ThreadPool::global().parallel_for(x.rows * per_row, [&](int64_t i0, int64_t i1, int) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t r = i / per_row, c0 = (i % per_row) * col_chunk;
        row(x.ptr<float>() + r * x.stride + c0, std::min(col_chunk, x.cols - c0), cap);
      }
    });
    return;
  }
  ThreadPool::global().parallel_for(x.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      float* row = x.ptr<float>() + r * x.stride;
      for (int64_t i = 0; i < x.cols; ++i) row[i] = std::tanh(row[i] / cap) * cap;
    }
  });
}

}  // namespace tessera::cpu
