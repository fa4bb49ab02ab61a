// Embedding lookup with Gemma's scale (rounded to the table dtype with the product, as
// transformers' Gemma3TextScaledWordEmbedding computes it in bf16) and the logit-row gather.
// ref: cpu/activation.cpp embed, cpu_backend.cpp gather_rows.
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/embed.h"

namespace tessera::cuda {

namespace {

template <class TT, class TO>
__global__ void embed_kernel(const TT* __restrict__ table, int64_t V, int64_t H,
                             const int32_t* __restrict__ ids, float scale, bool round_prod,
                             TO* __restrict__ out, int64_t os) {
  pdl_enter();
  const int t = blockIdx.x;
  const int64_t id = ids[t];
  TO* o = out + t * os;
  if (id < 0 || id >= V) {  // validated on the host; never read outside the table
    for (int64_t i = threadIdx.x; i < H; i += blockDim.x) o[i] = from_f32<TO>(0.f);
    return;
  }
  const TT* row = table + id * H;
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
    float v = to_f32(row[i]) * scale;
    if (round_prod) v = __bfloat162float(__float2bfloat16_rn(v));
    o[i] = from_f32<TO>(v);
  }
}

template <class T>
__global__ void gather_rows_kernel(const T* __restrict__ x, int64_t xs,
                                   const int32_t* __restrict__ rows, T* __restrict__ out,
                                   int64_t os, int64_t cols) {
  pdl_enter();
  const int r = blockIdx.x;
  const T* src = x + static_cast<int64_t>(rows[r]) * xs;
  T* dst = out + r * os;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

void embed(const void* table, DType table_dt, int64_t V, int64_t H, const int32_t* ids, int n,
           float scale, bool round_to_table_dtype, Tensor out, cudaStream_t st) {
  if (n == 0) return;
  const bool round = round_to_table_dtype && table_dt == DType::bf16;
  // Gemma: the scale itself is rounded to bf16 first (a bf16 tensor times a bf16 scalar).
  const float s = round ? __bfloat162float(__float2bfloat16_rn(scale)) : scale;
  dispatch_float(table_dt, [&](auto tt) {
    using TT = decltype(tt);
    dispatch_float(out.dtype, [&](auto to) {
      using TO = decltype(to);
      launch(embed_kernel<TT, TO>, static_cast<unsigned>(n), 256, 0, st, "embed",
             static_cast<const TT*>(table), V, H, ids, s, round, out.ptr<TO>(), out.stride);
      TS_CUDA_LAUNCH("embed");
    });
  });
}

void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out, cudaStream_t st) {
  if (n == 0) return;
  dispatch_float(x.dtype, [&](auto tx) {
    using T = decltype(tx);
    launch(gather_rows_kernel<T>, static_cast<unsigned>(n), 256, 0, st, "embed", x.ptr<const T>(),
           x.stride, rows, out.ptr<T>(), out.stride, x.cols);
    TS_CUDA_LAUNCH("gather_rows");
  });
}

}  // namespace tessera::cuda
