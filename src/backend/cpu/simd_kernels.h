// Entry points of the SIMD kernel families, compiled once per ISA: the templates in *_impl.h are
// instantiated with the AVX-512 traits in simd_avx512.cpp (namespace avx512) and with the AVX2
// traits in simd_avx2.cpp (namespace avx2). The dispatchers (linear.cpp, attention.cpp, ...) call
// them only when active_isa() says the CPU has that ISA.
#pragma once

#include <algorithm>
#include <cstdint>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"

namespace tessera::cpu {

// One linear() call on the panel layout (cpu_kernels.h, CpuWeight): out[m, n] = x[m, :] . W[n, :]
// (+ bias[n]) for every m < M and n < N; a kernel call covers panels [p0, p1) (outputs
// [16 p0, 16 p1) clipped to N). out is f32 (the CPU backend's activations).
struct LinArgs {
  const void* w = nullptr;
  DType w_dtype = DType::bf16;
  int64_t K = 0, N = 0, panel_elems = 0;
  const float* x = nullptr;  // f32 rows [M, x_stride]
  int64_t x_stride = 0;
  // x packed by pack_x (M above a few rows): tile t of the ISA's row tile holds rows
  // [t MR, t MR + mr) as [K2 / 2][mr][2] (K2 = K rounded up to even, padded with 0), so that a
  // block's broadcasts read one stream at constant offsets.
  const float* xp = nullptr;
  const uint32_t* x_pairs = nullptr;  // vdpbf16ps: x rounded to bf16, pairs [M, x_pairs_stride]
  int64_t x_pairs_stride = 0;
  int M = 0;
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t out_stride = 0;
  int64_t k_block_pairs = 0;  // pairs of k per K block (0: sized for L2; tests force small)
  // Gated MLP (linear_gated): W is [gate; up], N is I (the output columns), and a block pairs
  // gate panel p with up panel p + up_panels, writing act(gate) * up (one K block).
  int64_t up_panels = 0;
  Activation act = Activation::gelu_tanh;
};
// The first row tile's software prefetch: this far ahead in each panel's stream (2 KiB measured
// best on the LM head's decode stream, bench/NOTES-cpu.md step 9).
constexpr int kPrefetchBytes = 2048;

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
  const int32_t* seq_kv_len = nullptr;  // [S]: a bidirectional token's keys end there
  float scale = 1.f, softcap = 0.f;
  int window = 0;
  bool causal = true;  // BatchView::causal
};
// One past the last key the token at position p sees (ComputeBackend::attention): p + 1 when
// causal; bidirectional, the sequence's end kv_len, within |p - key| < window when window > 0
// (transformers' Gemma 3 with use_bidirectional_attention, _bidirectional_window_overlay).
inline int attention_key_end(int p, int window, bool causal, int kv_len) {
  if (causal) return p + 1;
  return window > 0 ? std::min(kv_len, p + window) : kv_len;
}
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
  void linear_panels(const LinArgs& a, int64_t p0, int64_t p1);                                  \
  int packed_x_min_rows();                                                                       \
  int packed_x_tile_rows();                                                                      \
  void pack_x(const float* x, int64_t stride, int M, int64_t K, int t0, int t1, float* dst);     \
  void widen_panels(const LinArgs& a, int64_t p0, int np, float* dst, int64_t ld);               \
  void attention_item(const AttnArgs& a, const AttnItem& it, AttnPartial* partial, float* out,   \
                      int64_t out_stride, float* scratch);                                       \
  void rms_norm_row(const float* x, const float* w, float eps, int64_t n, float* y);             \
  void add_rms_norm_row(float* res, const float* y, const float* w_y, const float* w_out,        \
                        float eps, int64_t n, float* out);                                       \
  void head_norm_rope(float* head, int hd, const float* w, float eps, const float* cosv,         \
                      const float* sinv);                                                        \
  void gated_act_row(const float* gate, const float* up, int64_t n, Activation act, float* out); \
  void softcap_row(float* x, int64_t n, float cap);                                              \
  int64_t argmax(const float* x, int64_t n);                                                     \
  void round_to_bf16(const float* src, int64_t n, uint16_t* dst);

namespace avx512 {
TS_SIMD_KERNEL_DECLS
// bf16 weights with vdpbf16ps on x_pairs (AVX512_BF16 only).
void linear_panels_dpbf16(const LinArgs& a, int64_t p0, int64_t p1);
}  // namespace avx512
namespace avx2 {
TS_SIMD_KERNEL_DECLS
}  // namespace avx2

}  // namespace tessera::cpu
