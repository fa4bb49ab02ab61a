// Per-head q/k RMSNorm followed by rotary embedding, in place on the fused qkv rows.
// ref: transformers apply_rotary_pos_emb with rotate_half (the two halves of each head rotate
// together); angles are position * inv_freq in fp32 as transformers computes them.
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/simd_kernels.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

// cos and sin of positions[t] * inv_freq for one batch, [T, half] each. Every layer of a forward
// sees the same positions with one of a few inv_freq tables (Gemma 3: local and global), so the
// tables are kept for the last few (inv_freq, positions) pairs, compared by content, and the
// libm calls happen once per forward instead of once per layer.
struct RopeTable {
  std::vector<float> inv;
  std::vector<int32_t> pos;
  std::vector<float> cos, sin;
  uint64_t last_use = 0;
};

const RopeTable& rope_table(const float* inv, int half, const int32_t* positions, int64_t T) {
  thread_local std::vector<RopeTable> tables(4);
  thread_local uint64_t clock = 0;
  ++clock;
  RopeTable* victim = &tables[0];
  for (RopeTable& t : tables) {
    if (static_cast<int64_t>(t.inv.size()) == half && static_cast<int64_t>(t.pos.size()) == T &&
        std::memcmp(t.inv.data(), inv, sizeof(float) * half) == 0 &&
        std::memcmp(t.pos.data(), positions, sizeof(int32_t) * T) == 0) {
      t.last_use = clock;
      return t;
    }
    if (t.last_use < victim->last_use) victim = &t;
  }
  RopeTable& t = *victim;
  t.inv.assign(inv, inv + half);
  t.pos.assign(positions, positions + T);
  t.cos.resize(static_cast<size_t>(T * half));
  t.sin.resize(static_cast<size_t>(T * half));
  t.last_use = clock;
  ThreadPool::global().parallel_for(
      T,
      [&](int64_t t0, int64_t t1, int) {
        for (int64_t i = t0; i < t1; ++i) {
          const float pos = static_cast<float>(positions[i]);
          for (int j = 0; j < half; ++j) {
            const float ang = pos * inv[j];  // fp32, as transformers computes the angles
            t.cos[i * half + j] = std::cos(ang);
            t.sin[i * half + j] = std::sin(ang);
          }
        }
      },
      8);
  return t;
}

}  // namespace

void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm, const Tensor* k_norm,
                  float eps, const int32_t* positions, Tensor inv_freq) {
  const int half = hd / 2;
  const float* inv = inv_freq.ptr<const float>();
  const Isa isa = active_isa();
  if (isa != Isa::scalar && qkv.dtype == DType::f32) {
    auto head_fn = isa == Isa::avx512 ? avx512::head_norm_rope : avx2::head_norm_rope;
    const RopeTable& tab = rope_table(inv, half, positions, qkv.rows);
    ThreadPool::global().parallel_for(
        qkv.rows,
        [&](int64_t t0, int64_t t1, int) {
          for (int64_t t = t0; t < t1; ++t) {
            for (int h = 0; h < nh + nkv; ++h) {
              const Tensor* nw = h < nh ? q_norm : k_norm;
              head_fn(qkv.ptr<float>() + t * qkv.stride + int64_t{h} * hd, hd,
                      nw ? nw->ptr<const float>() : nullptr, eps, tab.cos.data() + t * half,
                      tab.sin.data() + t * half);
            }
          }
        },
        4);
    return;
  }
  ThreadPool::global().parallel_for(qkv.rows, [&](int64_t t0, int64_t t1, int) {
    std::vector<float> cosv(half), sinv(half), head(hd);
    for (int64_t t = t0; t < t1; ++t) {
      const float pos = static_cast<float>(positions[t]);
      for (int i = 0; i < half; ++i) {
        float ang = pos * inv[i];
        cosv[i] = std::cos(ang);
        sinv[i] = std::sin(ang);
      }
      for (int h = 0; h < nh + nkv; ++h) {
        const int64_t base = t * qkv.stride + static_cast<int64_t>(h) * hd;
        for (int i = 0; i < hd; ++i) head[i] = load_elem(qkv.data, qkv.dtype, base + i);
        const Tensor* nw = h < nh ? q_norm : k_norm;
        if (nw) {
          double ss = 0;
          for (int i = 0; i < hd; ++i) ss += static_cast<double>(head[i]) * head[i];
          float r = 1.0f / std::sqrt(static_cast<float>(ss / hd) + eps);
          const float* w = nw->ptr<const float>();
          for (int i = 0; i < hd; ++i) head[i] = head[i] * r * w[i];
        }
        for (int i = 0; i < half; ++i) {
          float a = head[i], b = head[i + half];
          store_elem(qkv.data, qkv.dtype, base + i, a * cosv[i] - b * sinv[i]);
          store_elem(qkv.data, qkv.dtype, base + i + half, b * cosv[i] + a * sinv[i]);
        }
      }
    }
  });
}

}  // namespace tessera::cpu
