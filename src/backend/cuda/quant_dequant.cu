// Dequantization of packed rows (quant.h): into a bf16 tile for the batched products
// (cuda_quant_ops.cpp: tile + cuBLASLt), and the quantized embedding gather, which dequantizes
// only the gathered rows.
// ref: cpu/quant_linear.cpp embed_quant, cpu/quant_weight.h CpuQuantWeight::at.
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/quant.h"

namespace tessera::cuda {

namespace {

// Value k of a chunk's four words (sb bits each).
__device__ __forceinline__ uint32_t chunk_q(const uint4& w, int sb, int k) {
  const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
  const int per = 32 / sb;
  return (ws[k / per] >> ((k % per) * sb)) & ((1u << sb) - 1u);
}

__device__ __forceinline__ void pair_at(const QuantView& w, int64_t row, int64_t g, float& s,
                                        float& b) {
  const int64_t i = row * (w.cols / w.group) + g;
  if (w.f32_scales) {
    const float2 p = static_cast<const float2*>(w.s)[i];
    s = p.x;
    b = p.y;
  } else {
    const uint32_t p = static_cast<const uint32_t*>(w.s)[i];
    s = __uint_as_float(p << 16);
    b = __uint_as_float(p & 0xffff0000u);
  }
}

// One thread per 16-byte chunk of a row (E = 128 / sb values); dst [n, cols] bf16 (the weight's
// dtype: rounded once) or f32 (exact).
template <class TO>
__global__ void dequant_rows_kernel(QuantView w, int64_t row0, int64_t n, TO* __restrict__ dst) {
  pdl_enter();
  const int E = 128 / w.sb;
  const int64_t C = w.cols / E;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * C) return;
  const int64_t r = i / C, c = i % C;
  const uint4 q = __ldcs(reinterpret_cast<const uint4*>(w.w) + (row0 + r) * C + c);
  float s, b;
  pair_at(w, row0 + r, c * E / w.group, s, b);
  TO* o = dst + r * w.cols + c * E;
  constexpr int V = 16 / sizeof(TO);  // values per 16-byte store
  for (int k0 = 0; k0 < E; k0 += V) {
    __align__(16) TO v[V];
#pragma unroll
    for (int k = 0; k < V; ++k)
      v[k] = from_f32<TO>(fmaf(s, static_cast<float>(chunk_q(q, w.sb, k0 + k)), b));
    *reinterpret_cast<uint4*>(o + k0) = *reinterpret_cast<const uint4*>(v);
  }
}

template <class TO>
__global__ void embed_quant_kernel(QuantView w, const int32_t* __restrict__ ids, float scale,
                                   bool round, TO* __restrict__ out, int64_t os) {
  pdl_enter();
  const int t = blockIdx.x;
  const int64_t id = ids[t];
  TO* o = out + t * os;
  const int64_t H = w.cols;
  if (id < 0 || id >= w.rows) {  // validated on the host; never read outside the table
    for (int64_t i = threadIdx.x; i < H; i += blockDim.x) o[i] = from_f32<TO>(0.f);
    return;
  }
  const int E = 128 / w.sb;
  for (int64_t c = threadIdx.x; c < H / E; c += blockDim.x) {
    const uint4 q = __ldg(reinterpret_cast<const uint4*>(w.w) + id * (H / E) + c);
    float s, b;
    pair_at(w, id, c * E / w.group, s, b);
    for (int k = 0; k < E; ++k) {
      float v = fmaf(s, static_cast<float>(chunk_q(q, w.sb, k)), b);
      if (round) v = __bfloat162float(__float2bfloat16_rn(v));
      v *= scale;
      if (round) v = __bfloat162float(__float2bfloat16_rn(v));
      o[c * E + k] = from_f32<TO>(v);
    }
  }
}

}  // namespace

void launch_dequant_rows(const QuantView& w, int64_t row0, int64_t n, Tensor dst, cudaStream_t st) {
  const int64_t chunks = n * (w.cols / (128 / w.sb));
  if (chunks == 0) return;
  dispatch_float(dst.dtype, [&](auto to) {
    using TO = decltype(to);
    launch(dequant_rows_kernel<TO>, ceil_div(chunks, 256), 256, 0, st, "dequantize", w, row0, n,
           dst.ptr<TO>());
  });
}

void embed_quant(const QuantView& w, const int32_t* ids, int n, float scale,
                 bool round_to_table_dtype, DType table_dt, Tensor out, cudaStream_t st) {
  if (n == 0) return;
  const bool round = round_to_table_dtype && table_dt == DType::bf16;
  const float s = round ? __bfloat162float(__float2bfloat16_rn(scale)) : scale;
  dispatch_float(out.dtype, [&](auto to) {
    using TO = decltype(to);
    launch(embed_quant_kernel<TO>, static_cast<unsigned>(n), 128, 0, st, "embed (quantized)", w,
           ids, s, round, out.ptr<TO>(), out.stride);
  });
}

}  // namespace tessera::cuda
