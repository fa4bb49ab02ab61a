// Entry points of the SIMD kernel families, compiled once per ISA: the templates in *_impl.h are
// instantiated with the AVX-512 traits in simd_avx512.cpp (namespace avx512) and with the AVX2
// traits in simd_avx2.cpp (namespace avx2). The dispatchers (linear.cpp, attention.cpp, ...) call
// them only when active_isa() says the CPU has that ISA.
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace tessera::cpu {

// One GEMV call over rows [n0, n1) of W [N, K]: out[m, n] = x[m, :] . W[n, :] (+ bias[n]) for
// every m < M. x arrives prepared in the layout the weight path wants (see linear.cpp):
//  - f32 weights: f32 rows [M, x_stride];
//  - bf16 weights, exact: per row the even elements then the odd ones, each padded with zeros to
//    `half` floats (x_stride = 2 * half), so that bf16 pairs of W widen to f32 with one shift or
//    one mask and meet their x without shuffles;
//  - bf16 weights, vdpbf16ps: bf16 rows [M, x_stride] (x rounded to bf16, zero padded).
struct GemvArgs {
  const void* w = nullptr;
  int64_t K = 0;
  const void* x = nullptr;
  int64_t x_stride = 0, half = 0;
  int M = 0;
  const float* bias = nullptr;
  void* out = nullptr;
  DType out_dtype = DType::f32;
  int64_t out_stride = 0;
};

// Attention over the paged KV cache for one work item: the q heads of one KV head, for a run of
// consecutive tokens of one sequence, over keys [k_begin, k_end) of that sequence. Produces
// unnormalised partial results (running max, sum of exp and the weighted V sum per q vector) so
// that key ranges split across threads merge exactly like one pass (flash-decoding).
struct AttnItem {
  int seq = 0, kv_head = 0;
  int t_begin = 0, t_count = 0;  // token rows in the batch
  int k_begin = 0, k_end = 0;    // key positions
};
struct AttnArgs {
  const void* qkv = nullptr;  // f32 [T, qkv_stride]
  int64_t qkv_stride = 0;
  int nh = 0, nkv = 0, hd = 0;
  const void* k = nullptr;  // [blocks, block_size, nkv, hd]
  const void* v = nullptr;
  DType kv_dtype = DType::f32;
  int block_size = 0;
  const int32_t* block_table = nullptr;  // [S, max_blocks]
  int max_blocks = 0;
  const int32_t* positions = nullptr;
  float scale = 1.f, softcap = 0.f;
  int window = 0;
};
// Max q vectors one item holds (tokens x heads per KV head), and keys per online-softmax chunk.
constexpr int kAttnMaxQ = 16;
constexpr int kAttnChunk = 16;
// Floats of scratch one attention_item call needs: scores [kAttnMaxQ, kAttnChunk], widened K
// and V rows [2, kAttnChunk, hd], acc [kAttnMaxQ, hd], m and l [2, kAttnMaxQ].
inline int64_t attention_scratch_floats(int hd) {
  return int64_t{kAttnMaxQ} * kAttnChunk + 2LL * kAttnChunk * hd + int64_t{kAttnMaxQ} * hd +
         2 * kAttnMaxQ;
}
// Per q vector of an item: m (running max of the scores), l (sum of exp(score - m)) and
// acc[hd] (sum of exp(score - m) v); for a q vector with no key in range m = -inf, l = 0.
struct AttnPartial {
  float* m;
  float* l;
  float* acc;  // [q, hd]
};

#define TS_SIMD_KERNEL_DECLS                                                                     \
  void gemv_f32(const GemvArgs& a, int64_t n0, int64_t n1);                                      \
  void gemv_bf16(const GemvArgs& a, int64_t n0, int64_t n1);                                     \
  void attention_item(const AttnArgs& a, const AttnItem& it, AttnPartial* partial, float* out,    \
                      int64_t out_stride, float* scratch);                                      \
  void rms_norm_row(const float* x, const float* w, float eps, int64_t n, float* y);             \
  void add_rms_norm_row(float* res, const float* y, const float* w_y, const float* w_out,        \
                        float eps, int64_t n, float* out);                                       \
  void head_norm_rope(float* head, int hd, const float* w, float eps, const float* cosv,         \
                      const float* sinv);                                                        \
  void gated_act_row(const float* gate, const float* up, int64_t n, Activation act, float* out); \
  void softcap_row(float* x, int64_t n, float cap);                                              \
  void scale_row(const void* src, DType src_dtype, int64_t n, float scale, bool round_bf16,      \
                 float* out);                                                                    \
  int64_t argmax(const float* x, int64_t n);                                                     \
  void widen_bf16(const uint16_t* src, int64_t n, float* dst);

namespace avx512 {
TS_SIMD_KERNEL_DECLS
// bf16 weights with vdpbf16ps: x rounded to bf16 (AVX512_BF16 only).
void gemv_dpbf16(const GemvArgs& a, int64_t n0, int64_t n1);
}  // namespace avx512
namespace avx2 {
TS_SIMD_KERNEL_DECLS
}  // namespace avx2

}  // namespace tessera::cpu
