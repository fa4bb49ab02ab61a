// CPU kernels, one op family per file. Each public entry point picks the fastest path the CPU
// supports at run time (AVX-512 / AVX2 / portable scalar) and splits work over the global thread
// pool. set_cpu_isa() forces a path so that the tests exercise every one.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/cpu/cpu_tuning.h"

namespace tessera::cpu {

Isa detected_isa();         // what this CPU supports
Isa active_isa();           // what the kernels use now (detected, capped by CpuTuning::isa)
void set_cpu_isa(Isa isa);  // clamps to what the CPU supports
const char* isa_name(Isa isa);

// A weight as the CPU kernels hold it (weight_pack.cpp): [rows, cols] = [N, K] in panels of
// kPanel = 16 rows (output features), N padded to whole panels with zero rows.
//  - bf16: panel p is [K2 / 2][16][2] (K2 = K rounded up to even, padded with 0): for each pair
//    of k, the 16 rows' two values side by side. One 64-byte line widens to two f32 vectors (the
//    even and the odd k of 16 outputs) with one shift and one mask, and is exactly what
//    vdpbf16ps takes, so no kernel transposes or reduces horizontally.
//  - f32: panel p is [K][16].
// Every product streams whole panels, which are contiguous. bytes counts the padding too.
constexpr int64_t kPanel = 16;
struct CpuWeight : Weight {
  HostBuffer buffer;
  int64_t panels = 0;       // ceil(rows / 16)
  int64_t k2 = 0;           // K as stored: bf16 rounded up to even, f32 as is
  int64_t panel_elems = 0;  // 16 * k2
  const void* data() const { return buffer.data(); }
  // Element offset of (n, k) in the layout above.
  int64_t offset(int64_t n, int64_t k) const {
    const int64_t p = n / kPanel, j = n % kPanel;
    return dtype == DType::bf16 ? p * panel_elems + (k / 2) * 2 * kPanel + j * 2 + (k % 2)
                                : p * panel_elems + k * kPanel + j;
  }
  float at(int64_t n, int64_t k) const {
    return dtype == DType::bf16 ? bf16_to_f32(static_cast<const uint16_t*>(data())[offset(n, k)])
                                : static_cast<const float*>(data())[offset(n, k)];
  }
};
// Allocates w (rows, cols, dtype set) in the panel layout, zero filled.
void alloc_panels(CpuWeight& w, const char* what);
// Writes rows [n0, n0 + n) of the weight from row-major `src` ([n, cols] in src_dtype: f32, bf16
// or f16), converting to w.dtype.
void pack_rows(CpuWeight& w, int64_t n0, int64_t n, const void* src, DType src_dtype);

void linear(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out);
// out [M, I] = act(x gate^T + b[:I]) * (x up^T + b[I:]) for w = [gate; up] ([2 I, K]) in one pass
// (ComputeBackend::linear_gated), equal to linear() then gated_act(); false when this shape or
// path has no fused kernel (the caller then runs the two).
bool linear_gated(Tensor x, const CpuWeight& w, const Tensor* bias, Activation act, Tensor out);

// The path linear() takes (CpuTuning::linear, cpu_tuning.h): the tuning's unless forced.
void set_linear_path(LinearPath p);  // tests and benchmarks
// Pairs of k per K block of the panel kernel (0: sized for L2). Tests force small blocks.
void set_linear_k_block(int64_t pairs);
LinearPath linear_path_for(int64_t M, const CpuWeight& w);
void gemm_dnnl(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out);
void embed(const CpuWeight& table, const int32_t* ids, int n, float scale,
           bool round_to_table_dtype, Tensor out);
void rms_norm(Tensor x, Tensor w, float eps, Tensor out);
void add_rms_norm(Tensor residual, Tensor y, const Tensor* w_y, const Tensor* w_out, float eps,
                  Tensor out);
void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm, const Tensor* k_norm,
                  float eps, const int32_t* positions, Tensor inv_freq);
void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
              const int32_t* slot_mapping);
void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv, const BatchView& b,
               int group, float scale, int window, float softcap, Tensor out);
void gated_act(Tensor gate_up, Activation act, Tensor out);
void softcap(Tensor x, float cap);
void sample(Tensor logits, const SampleBatch& batch, SampleOutput& out);
// ids[r] = the sampler's temperature-0 pick of logits row r (its first maximum).
void argmax_rows(Tensor logits, int32_t* ids);

// Element access helpers for kernels that accept f32 or bf16 tensors.
inline float load_elem(const void* base, DType dt, int64_t i) {
  return dt == DType::f32 ? static_cast<const float*>(base)[i]
                          : bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
}
inline void store_elem(void* base, DType dt, int64_t i, float v) {
  if (dt == DType::f32) {
    static_cast<float*>(base)[i] = v;
  } else {
    static_cast<uint16_t*>(base)[i] = f32_to_bf16(v);
  }
}

}  // namespace tessera::cpu
