// CPU kernels, one op family per file. Each public entry point picks the fastest path the CPU
// supports at run time (AVX-512 / AVX2 / portable scalar) and splits work over the global thread
// pool. set_cpu_isa() forces a path so that the tests exercise every one.
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace tessera::cpu {

enum class Isa { scalar, avx2, avx512 };
Isa detected_isa();         // what this CPU supports
Isa active_isa();           // what the kernels use now (detected unless forced)
void set_cpu_isa(Isa isa);  // clamps to what the CPU supports
const char* isa_name(Isa isa);

// A weight as the CPU kernels hold it: [rows, cols] row-major in f32 or bf16.
struct CpuWeight : Weight {
  HostBuffer buffer;
  const void* data() const { return buffer.data(); }
};

void linear(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out);

// How linear() computes on the SIMD ISAs (the scalar ISA always runs the reference loop):
// automatic picks gemm from kGemmMinRows rows of x and the exact GEMV below that; the others
// force one path (tests, benchmarks; TESSERA_LINEAR=gemv|dpbf16|gemm does the same).
// gemv_dpbf16 applies to bf16 weights on AVX-512 only (others fall back to gemv).
enum class LinearPath { automatic, gemv, gemv_dpbf16, gemm };
constexpr int64_t kGemmMinRows = 16;
void set_linear_path(LinearPath p);
LinearPath linear_path_for(int64_t M, const CpuWeight& w);
// The oneDNN path (gemm_dnnl.cpp).
void gemm_dnnl(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out);
void embed(const CpuWeight& table, const int32_t* ids, int n, float scale, bool round_to_table_dtype,
           Tensor out);
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
