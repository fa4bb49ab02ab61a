// The packed decode GEMV's host side (quant.h): which variant of gemv_quant.cuh's kernel takes a
// shape and fusion, its slices per row and its launch.
#include <algorithm>

#include "backend/cuda/gemv_quant.cuh"
#include "core/check.h"

namespace tessera::cuda {

namespace {

int rows_of(int M) {
  return M <= 1 ? 1 : M <= 2 ? 2 : M <= 4 ? 4 : M <= 8 ? 8 : 16;
}

// Slices per row: as few as keep an item's RR rows of chunks within the lanes' KU load slots,
// doubled while there are fewer items than half the warps; 0 when the shape does not fit.
int quant_wpr(int64_t units, int64_t C, int RR, int KU, int sms) {
  const int64_t G = static_cast<int64_t>(sms) * 2;
  int wpr = 1;
  while (wpr < 8 && RR * ((C + wpr - 1) / wpr) > 32LL * KU) wpr *= 2;
  if (RR * ((C + wpr - 1) / wpr) > 32LL * KU) return 0;
  while (wpr < 8 && units * wpr * 2 <= G * 8 && C / (wpr * 2) >= 8) wpr *= 2;
  if (wpr > 1 && ((units + G - 1) / G) * wpr > kQuantMaxItems) return 0;
  return wpr;
}

struct Shape {
  int MT = 1, RP = 1, RR = 1, KU = 1, E = 32;
  int64_t pairs = 0, units = 0, C = 0;
};

Shape shape_of(int M, const QuantView& w, bool gated) {
  Shape s;
  s.MT = rows_of(M);
  s.RP = quant_rp(s.MT, gated, w.sb);
  s.RR = s.RP * (gated ? 2 : 1);
  s.KU = quant_ku(s.MT);
  s.E = 128 / w.sb;
  s.pairs = gated ? w.rows / 2 : w.rows;
  s.units = (s.pairs + s.RP - 1) / s.RP;
  s.C = w.cols / s.E;
  return s;
}

// Shared memory of the variant: M = 1 x in f32 (after the deferred norm's with it), else the
// norm prologue's rows.
size_t smem_of(int M, const QuantView& w, bool norm) {
  const int E = 128 / w.sb;
  if (M == 1) return (norm ? gemv_defer_bytes(w.cols) : 0) + quant_xf_bytes(w.cols, E);
  return norm ? gemv_norm_bytes(M, w.cols) : 0;
}

}  // namespace

bool quant_gemv_fits(Tensor x, const QuantView& w, Tensor out, const GemvFusion* f, int sms) {
  const int64_t M = x.rows;
  const bool norm = f && f->norm, gated = f && f->gated;
  if (M < 1 || M > kQuantGemvMaxM || (norm && M > kQuantNormMaxM)) return false;
  if (x.dtype != DType::bf16 || x.cols != w.cols || w.cols / (128 / w.sb) > 0xffff ||
      x.stride % 8 != 0 || alignment_of(x.data) < 16 || w.rows > (1LL << 30))
    return false;
  if (w.sb != 4 && w.sb != 8) return false;
  if (gated && (w.rows % 2 != 0 || out.cols != w.rows / 2)) return false;
  if (!gated && out.cols != w.rows) return false;
  // f32 out: plain products, or an LM head (the norm at M = 1, not gated)
  if (out.dtype == DType::f32) {
    if (gated || (norm && M != 1) || (f && f->amax_id && !norm)) return false;
  } else if (out.dtype != DType::bf16) {
    return false;
  }
  if (smem_of(static_cast<int>(M), w, norm) > kQuantMaxSmem) return false;
  // M = 1 without the norm runs on x in f32 only (XF); its shared memory always fits here
  const Shape s = shape_of(static_cast<int>(M), w, gated);
  return quant_wpr(s.units, s.C, s.RR, s.KU, sms) > 0;
}

void launch_quant_gemv(Tensor x, const QuantView& w, const float* bias, Tensor out,
                       const GemvFusion* f, cudaStream_t st, int sms) {
  TS_ASSERT(quant_gemv_fits(x, w, out, f, sms));
  const int M = static_cast<int>(x.rows);
  const bool norm = f && f->norm, gated = f && f->gated;
  const Shape s = shape_of(M, w, gated);
  QuantGemvArgs a;
  a.g.N = static_cast<int>(s.pairs);
  a.g.up = gated ? s.pairs : 0;
  a.g.wpr = quant_wpr(s.units, s.C, s.RR, s.KU, sms);
  a.g.x = x.ptr<const bf16>();
  a.g.xs = x.stride;
  a.g.bias = bias;
  a.g.out = out.data;
  a.g.os = out.stride;
  if (f) a.g.f = *f;
  a.W = reinterpret_cast<const uint4*>(w.w);
  a.S = w.s;
  a.C = static_cast<int>(s.C);
  a.G = static_cast<int>(w.cols / w.group);
  a.cshift = 0;
  while ((s.E << a.cshift) < w.group) ++a.cshift;
  a.M = M;
  QuantLaunch l;
  l.M = M;
  l.norm = norm;
  l.gated = gated;
  l.f32_scales = w.f32_scales;
  l.out_dt = out.dtype;
  l.grid = static_cast<unsigned>(std::min<int64_t>(static_cast<int64_t>(sms) * 2, s.units));
  l.smem = smem_of(M, w, norm);
  if (w.sb == 4) {
    launch_quant_sb<4>(a, l, st);
  } else {
    launch_quant_sb<8>(a, l, st);
  }
}

}  // namespace tessera::cuda
