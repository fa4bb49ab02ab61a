// One attention work item on SIMD vectors (templates over simd_avx512.h / simd_avx2.h traits):
// the q heads of one KV head for a run of consecutive tokens of one sequence, against keys
// [k_begin, k_end) of the paged cache, with an online softmax over chunks of kChunk keys
// (flash-attention style: each K/V row is widened to f32 once per chunk and used by every q
// vector of the item). ref: transformers eager_attention_forward (fp32 scores, optional tanh
// softcap, softmax, weighted sum of V); the scalar reference is attention.cpp. Each q vector's
// keys run from its window start to attention_key_end (causal or bidirectional).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "backend/cpu/simd_kernels.h"
#include "backend/cpu/simd_math.h"

namespace tessera::cpu::simd {

constexpr int kChunk = kAttnChunk;

template <class S>
float dot(const float* a, const float* b, int n) {
  using V = typename S::V;
  constexpr int W = S::W;
  V s0 = S::zero(), s1 = S::zero();
  int i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    s0 = S::fmadd(S::load(a + i), S::load(b + i), s0);
    s1 = S::fmadd(S::load(a + i + W), S::load(b + i + W), s1);
  }
  for (; i < n; i += W) {
    const int r = n - i < W ? n - i : W;
    s0 = S::fmadd(S::load_partial(a + i, r), S::load_partial(b + i, r), s0);
  }
  return S::reduce_add(S::add(s0, s1));
}

// Copies (f32) or widens (bf16) one cached row into dst [hd].
template <class S>
void load_kv_row(const void* base, DType dt, int64_t elem, int hd, float* dst) {
  constexpr int W = S::W;
  if (dt == DType::f32) {
    const float* p = static_cast<const float*>(base) + elem;
    int i = 0;
    for (; i + W <= hd; i += W) S::store(dst + i, S::load(p + i));
    if (i < hd) S::store_partial(dst + i, S::load_partial(p + i, hd - i), hd - i);
  } else {
    const uint16_t* p = static_cast<const uint16_t*>(base) + elem;
    int i = 0;
    for (; i + W <= hd; i += W) S::store(dst + i, S::load_bf16(p + i));
    if (i < hd) S::store_partial(dst + i, S::load_bf16_partial(p + i, hd - i), hd - i);
  }
}

template <class S>
void attention_item(const AttnArgs& a, const AttnItem& it, AttnPartial* partial, float* out,
                    int64_t out_stride, float* scratch) {
  using V = typename S::V;
  constexpr int W = S::W;
  const int hd = a.hd, rep = a.nh / a.nkv;
  const int nq = it.t_count * rep;
  const float ninf = -std::numeric_limits<float>::infinity();
  float* sc = scratch;                       // [kAttnMaxQ, kChunk]
  float* kr = sc + kAttnMaxQ * kChunk;       // [kChunk, hd]
  float* vr = kr + int64_t{kChunk} * hd;     // [kChunk, hd]
  float* acc = vr + int64_t{kChunk} * hd;    // [kAttnMaxQ, hd]
  float* m = acc + int64_t{kAttnMaxQ} * hd;  // [kAttnMaxQ]
  float* l = m + kAttnMaxQ;                  // [kAttnMaxQ]
  const float* q[kAttnMaxQ];
  int lo[kAttnMaxQ], hi[kAttnMaxQ];  // each q vector's valid keys [lo, hi)
  for (int i = 0; i < nq; ++i) {
    const int t = it.t_begin + i / rep;
    const int h = it.kv_head * rep + i % rep;
    q[i] = static_cast<const float*>(a.qkv) + t * a.qkv_stride + int64_t{h} * hd;
    const int p = a.positions[t];
    lo[i] = a.window > 0 ? std::max(it.k_begin, p - a.window + 1) : it.k_begin;
    hi[i] = std::min(it.k_end, attention_key_end(p, a.window, a.causal, a.seq_kv_len[it.seq]));
    m[i] = ninf;
    l[i] = 0.f;
    for (int d = 0; d < hd; d += W) S::store(acc + int64_t{i} * hd + d, S::zero());
  }
  const int32_t* table = a.block_table + int64_t{it.seq} * a.max_blocks;
  const int64_t per_slot = int64_t{a.nkv} * hd;
  for (int j0 = it.k_begin; j0 < it.k_end; j0 += kChunk) {
    const int nc = std::min(kChunk, it.k_end - j0);
    // Skip chunks no q vector sees (sliding windows of later tokens in a prefill block).
    bool any = false;
    for (int i = 0; i < nq; ++i) any |= lo[i] < j0 + nc && hi[i] > j0;
    if (!any) continue;
    for (int c = 0; c < nc; ++c) {
      const int j = j0 + c;
      const int64_t slot = int64_t{table[j / a.block_size]} * a.block_size + j % a.block_size;
      const int64_t elem = slot * per_slot + int64_t{it.kv_head} * hd;
      load_kv_row<S>(a.k, a.kv_dtype, elem, hd, kr + int64_t{c} * hd);
      load_kv_row<S>(a.v, a.kv_dtype, elem, hd, vr + int64_t{c} * hd);
    }
    for (int i = 0; i < nq; ++i) {
      float* s = sc + i * kChunk;
      const int c0 = std::max(lo[i], j0) - j0, c1 = std::min(hi[i], j0 + nc) - j0;
      if (c0 >= c1) continue;
      for (int c = 0; c < kChunk; ++c)
        s[c] = c >= c0 && c < c1 ? dot<S>(q[i], kr + int64_t{c} * hd, hd) * a.scale : ninf;
      if (a.softcap > 0.f) {
        // Only the valid scores: masked ones stay -inf.
        const V cap = S::set1(a.softcap);
        for (int c = 0; c < kChunk; c += W) {
          const V v = S::load(s + c);
          const V t = S::mul(tanh<S>(S::div(v, cap)), cap);
          S::store(s + c, t);
        }
        for (int c = 0; c < kChunk; ++c)
          if (c < c0 || c >= c1) s[c] = ninf;
      }
      float cmax = ninf;
      for (int c = c0; c < c1; ++c) cmax = std::max(cmax, s[c]);
      const float m_new = std::max(m[i], cmax);
      const float corr = m[i] == ninf ? 0.f : std::exp(m[i] - m_new);
      m[i] = m_new;
      // p = exp(s - m) for the chunk (masked: 0).
      const V mv = S::set1(m_new);
      for (int c = 0; c < kChunk; c += W) S::store(s + c, exp<S>(S::sub(S::load(s + c), mv)));
      for (int c = 0; c < kChunk; ++c)
        if (c < c0 || c >= c1) s[c] = 0.f;
      float psum = 0.f;
      for (int c = c0; c < c1; ++c) psum += s[c];
      l[i] = l[i] * corr + psum;
      // acc = acc * corr + sum_c p_c v_c, one hd segment at a time (acc stays in registers).
      float* ai = acc + int64_t{i} * hd;
      const V cv = S::set1(corr);
      for (int d = 0; d < hd; d += 2 * W) {
        V a0 = S::mul(S::load(ai + d), cv), a1 = S::mul(S::load(ai + d + W), cv);
        for (int c = c0; c < c1; ++c) {
          const V p = S::set1(s[c]);
          a0 = S::fmadd(p, S::load(vr + int64_t{c} * hd + d), a0);
          a1 = S::fmadd(p, S::load(vr + int64_t{c} * hd + d + W), a1);
        }
        S::store(ai + d, a0);
        S::store(ai + d + W, a1);
      }
    }
  }
  for (int i = 0; i < nq; ++i) {
    const float* ai = acc + int64_t{i} * hd;
    if (partial) {
      partial->m[i] = m[i];
      partial->l[i] = l[i];
      for (int d = 0; d < hd; d += W) S::store(partial->acc + int64_t{i} * hd + d, S::load(ai + d));
    } else {
      const int t = it.t_begin + i / rep;
      const int h = it.kv_head * rep + i % rep;
      float* o = out + t * out_stride + int64_t{h} * hd;
      const V inv = S::set1(l[i] > 0.f ? 1.f / l[i] : 0.f);
      for (int d = 0; d < hd; d += W) S::store(o + d, S::mul(S::load(ai + d), inv));
    }
  }
}

}  // namespace tessera::cpu::simd
