// Paged KV store. Cache layout per layer: K and V each [num_blocks, block_size, nkv, hd], so a
// slot's nkv * hd values are contiguous. ref: cpu/attention.cpp kv_store.
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/kv_cache.h"

namespace tessera::cuda {

namespace {

// One block per token; threads copy (and convert) the token's k and v.
template <class TI, class TK>
__global__ void kv_store_kernel(const TI* __restrict__ qkv, int64_t stride, int k_off, int n,
                                TK* __restrict__ kc, TK* __restrict__ vc,
                                const int32_t* __restrict__ slots) {
  pdl_enter();
  const int t = blockIdx.x;
  const int64_t slot = slots[t];
  if (slot < 0) return;
  const TI* src = qkv + static_cast<int64_t>(t) * stride + k_off;
  TK* kd = kc + slot * n;
  TK* vd = vc + slot * n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    kd[i] = from_f32<TK>(to_f32(src[i]));
    vd[i] = from_f32<TK>(to_f32(src[n + i]));
  }
}

// bf16 -> bf16 with 16-byte copies (n % 8 == 0 and 16-byte aligned rows).
__global__ void kv_store_vec_kernel(const bf16* __restrict__ qkv, int64_t stride, int k_off, int n,
                                    bf16* __restrict__ kc, bf16* __restrict__ vc,
                                    const int32_t* __restrict__ slots) {
  pdl_enter();
  const int t = blockIdx.x;
  const int64_t slot = slots[t];
  if (slot < 0) return;
  const uint4* src = reinterpret_cast<const uint4*>(qkv + static_cast<int64_t>(t) * stride + k_off);
  uint4* kd = reinterpret_cast<uint4*>(kc + slot * n);
  uint4* vd = reinterpret_cast<uint4*>(vc + slot * n);
  const int n8 = n / 8;
  for (int i = threadIdx.x; i < n8; i += blockDim.x) {
    kd[i] = src[i];
    vd[i] = src[n8 + i];
  }
}

}  // namespace

void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
              const int32_t* slot_mapping, cudaStream_t st) {
  if (qkv.rows == 0) return;
  const int n = nkv * hd, k_off = nh * hd;
  const unsigned grid = static_cast<unsigned>(qkv.rows);
  const bool vec =
      qkv.dtype == DType::bf16 && kv.dtype == DType::bf16 && n % 8 == 0 && k_off % 8 == 0 &&
      qkv.stride % 8 == 0 && reinterpret_cast<uintptr_t>(qkv.data) % 16 == 0 &&
      reinterpret_cast<uintptr_t>(kv.k) % 16 == 0 && reinterpret_cast<uintptr_t>(kv.v) % 16 == 0;
  if (vec) {
    launch(kv_store_vec_kernel, grid, 64, 0, st, "kv_cache", qkv.ptr<const bf16>(), qkv.stride,
           k_off, n, static_cast<bf16*>(kv.k), static_cast<bf16*>(kv.v), slot_mapping);
    TS_CUDA_LAUNCH("kv_store");
    return;
  }
  dispatch_float(qkv.dtype, [&](auto ti) {
    using TI = decltype(ti);
    dispatch_float(kv.dtype, [&](auto tk) {
      using TK = decltype(tk);
      launch(kv_store_kernel<TI, TK>, grid, 128, 0, st, "kv_cache", qkv.ptr<const TI>(), qkv.stride,
             k_off, n, static_cast<TK*>(kv.k), static_cast<TK*>(kv.v), slot_mapping);
      TS_CUDA_LAUNCH("kv_store");
    });
  });
}

}  // namespace tessera::cuda
