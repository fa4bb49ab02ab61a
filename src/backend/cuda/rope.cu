// q/k norm + RoPE: one warp per (token, head) of q and k (the per-warp math in rope.cuh).
// ref: transformers apply_rotary_pos_emb / rotate_half; cpu/rope.cpp.
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/rope.cuh"
#include "backend/cuda/rope.h"

namespace tessera::cuda {

namespace {

// kStore: also write each token's k (after the rotation) and v into the paged cache at
// slots[t] (the kv_store that follows, fused: one launch and no re-read of k and v); the extra
// nkv warps per token copy the v heads.
template <class T, bool kStore>
__global__ void qk_norm_rope_kernel(T* __restrict__ qkv, int64_t stride, int T_rows, int nh,
                                    int nkv, int hd, const float* __restrict__ q_norm,
                                    const float* __restrict__ k_norm, float eps,
                                    const int32_t* __restrict__ positions,
                                    const float* __restrict__ inv_freq, T* __restrict__ kc,
                                    T* __restrict__ vc, const int32_t* __restrict__ slots) {
  const int warp = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  const int heads = nh + nkv + (kStore ? nkv : 0);
  if (warp >= T_rows * heads) return;
  const int t = warp / heads, h = warp % heads;
  const int half = hd / 2;
  if (kStore && h >= nh + nkv) {  // a v head: copy it into the cache
    pdl_wait();
    pdl_trigger();
    const int64_t slot = slots[t];
    if (slot < 0) return;
    const int kvh = h - nh - nkv;
    const T* src = qkv + static_cast<int64_t>(t) * stride + static_cast<int64_t>(h) * hd;
    T* dst = vc + (slot * nkv + kvh) * hd;
    for (int j = lane; j < hd; j += 32) dst[j] = src[j];
    return;
  }
  // Weights and frequencies first (nothing writes them), then wait for the previous kernel.
  const float* nw = h < nh ? q_norm : k_norm;
  RopeLane rl;
  rl.load_weights(nw, inv_freq, half);
  pdl_wait();
  pdl_trigger();
  const float pos = static_cast<float>(positions[t]);
  T* x = qkv + static_cast<int64_t>(t) * stride + static_cast<int64_t>(h) * hd;
  float a[kMaxPairsPerLane], b[kMaxPairsPerLane];
  rope_load(x, hd, a, b);
  rl.apply(a, b, nw != nullptr, eps, hd, pos);
  rope_store(x, hd, a, b);
  if (kStore && h >= nh) {
    const int64_t slot = slots[t];
    if (slot >= 0) rope_store(kc + (slot * nkv + (h - nh)) * hd, hd, a, b);
  }
}

}  // namespace

void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm, const Tensor* k_norm,
                  float eps, const int32_t* positions, Tensor inv_freq, cudaStream_t st) {
  if (qkv.rows == 0) return;
  if (hd % 2 != 0 || hd > 2 * 32 * kMaxPairsPerLane)
    throw Error(ErrorKind::unsupported, "CUDA qk_norm_rope: head_dim " + std::to_string(hd) +
                                            " is not supported (even, at most 512)");
  const long long warps = qkv.rows * (nh + nkv);
  dispatch_float(qkv.dtype, [&](auto tv) {
    using T = decltype(tv);
    launch(qk_norm_rope_kernel<T, false>, ceil_div(warps, 4), 128, 0, st, "rope", qkv.ptr<T>(),
           qkv.stride, static_cast<int>(qkv.rows), nh, nkv, hd,
           q_norm ? q_norm->ptr<const float>() : nullptr,
           k_norm ? k_norm->ptr<const float>() : nullptr, eps, positions,
           inv_freq.ptr<const float>(), static_cast<T*>(nullptr), static_cast<T*>(nullptr),
           static_cast<const int32_t*>(nullptr));
  });
}

bool qk_norm_rope_store_supported(Tensor qkv, const KvLayerView& kv) {
  return qkv.dtype == kv.dtype && (qkv.dtype == DType::bf16 || qkv.dtype == DType::f32);
}

void qk_norm_rope_store(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm,
                        const Tensor* k_norm, float eps, const int32_t* positions, Tensor inv_freq,
                        const KvLayerView& kv, const int32_t* slot_mapping, cudaStream_t st) {
  if (qkv.rows == 0) return;
  if (hd % 2 != 0 || hd > 2 * 32 * kMaxPairsPerLane)
    throw Error(ErrorKind::unsupported, "CUDA qk_norm_rope: head_dim " + std::to_string(hd) +
                                            " is not supported (even, at most 512)");
  const long long warps = qkv.rows * (nh + 2 * nkv);
  dispatch_float(qkv.dtype, [&](auto tv) {
    using T = decltype(tv);
    launch(qk_norm_rope_kernel<T, true>, ceil_div(warps, 4), 128, 0, st, "rope + kv store",
           qkv.ptr<T>(), qkv.stride, static_cast<int>(qkv.rows), nh, nkv, hd,
           q_norm ? q_norm->ptr<const float>() : nullptr,
           k_norm ? k_norm->ptr<const float>() : nullptr, eps, positions,
           inv_freq.ptr<const float>(), static_cast<T*>(kv.k), static_cast<T*>(kv.v), slot_mapping);
  });
}

}  // namespace tessera::cuda
