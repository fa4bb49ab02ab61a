// The per-ISA entry points of simd_kernels.h, forwarding to the kernel templates with this
// translation unit's traits. Included (once) by simd_avx512.cpp and simd_avx2.cpp after they
// define TS_SIMD_NS and include their traits header; nothing else includes it.
#include "backend/cpu/activation_impl.h"
#include "backend/cpu/attention_impl.h"
#include "backend/cpu/norm_impl.h"
#include "backend/cpu/panel_impl.h"
#include "backend/cpu/rope_impl.h"

namespace tessera::cpu::TS_SIMD_NS {

void linear_panels(const LinArgs& a, int64_t p0, int64_t p1) {
  simd::linear_panels<Simd>(a, p0, p1);
}
int packed_x_min_rows() {
  return simd::PanelTile<Simd>::kSmallRows + 1;
}
int packed_x_tile_rows() {
  return simd::PanelTile<Simd>::kMaxRows;
}
void pack_x(const float* x, int64_t stride, int M, int64_t K, int t0, int t1, float* dst) {
  simd::pack_x<Simd>(x, stride, M, K, t0, t1, dst);
}
void widen_panels(const LinArgs& a, int64_t p0, int np, float* dst, int64_t ld) {
  simd::widen_panels<Simd>(a, p0, np, dst, ld);
}
void attention_item(const AttnArgs& a, const AttnItem& it, AttnPartial* partial, float* out,
                    int64_t out_stride, float* scratch) {
  simd::attention_item<Simd>(a, it, partial, out, out_stride, scratch);
}
void rms_norm_row(const float* x, const float* w, float eps, int64_t n, float* y) {
  simd::rms_norm_row<Simd>(x, w, eps, n, y);
}
void add_rms_norm_row(float* res, const float* y, const float* w_y, const float* w_out, float eps,
                      int64_t n, float* out) {
  simd::add_rms_norm_row<Simd>(res, y, w_y, w_out, eps, n, out);
}
void head_norm_rope(float* head, int hd, const float* w, float eps, const float* cosv,
                    const float* sinv) {
  simd::head_norm_rope<Simd>(head, hd, w, eps, cosv, sinv);
}
void gated_act_row(const float* gate, const float* up, int64_t n, Activation act, float* out) {
  simd::gated_act_row<Simd>(gate, up, n, act, out);
}
void softcap_row(float* x, int64_t n, float cap) {
  simd::softcap_row<Simd>(x, n, cap);
}
int64_t argmax(const float* x, int64_t n) {
  return simd::argmax<Simd>(x, n);
}
void round_to_bf16(const float* src, int64_t n, uint16_t* dst) {
  simd::round_to_bf16<Simd>(src, n, dst);
}

}  // namespace tessera::cpu::TS_SIMD_NS
