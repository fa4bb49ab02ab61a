// Per-head RMSNorm and rotary embedding of one q or k head, in place, on SIMD vectors.
// ref: transformers Gemma3Attention (q_norm / k_norm) and apply_rotary_pos_emb with rotate_half:
// out[i] = a cos - b sin, out[i + hd/2] = b cos + a sin for a = x[i], b = x[i + hd/2].
#pragma once

#include <cstdint>

#include "backend/cpu/norm_impl.h"

namespace tessera::cpu::simd {

// head [hd] f32; w [hd] or null (no norm); cosv, sinv [hd / 2].
template <class S>
void head_norm_rope(float* head, int hd, const float* w, float eps, const float* cosv,
                    const float* sinv) {
  using V = typename S::V;
  constexpr int W = S::W;
  if (w) rms_norm_row<S>(head, w, eps, hd, head);
  const int half = hd / 2;
  float* lo = head;
  float* hi = head + half;
  for (int i = 0; i < half; i += W) {
    const int r = half - i < W ? half - i : W;
    const bool full = r == W;
    const V a = full ? S::load(lo + i) : S::load_partial(lo + i, r);
    const V b = full ? S::load(hi + i) : S::load_partial(hi + i, r);
    const V c = full ? S::load(cosv + i) : S::load_partial(cosv + i, r);
    const V s = full ? S::load(sinv + i) : S::load_partial(sinv + i, r);
    const V out_lo = S::sub(S::mul(a, c), S::mul(b, s));
    const V out_hi = S::add(S::mul(b, c), S::mul(a, s));
    if (full) {
      S::store(lo + i, out_lo);
      S::store(hi + i, out_hi);
    } else {
      S::store_partial(lo + i, out_lo, r);
      S::store_partial(hi + i, out_hi, r);
    }
  }
}

}  // namespace tessera::cpu::simd
