// The generic attention kernel: one warp per (token, q head), online softmax over the token's
// keys, any head_dim up to 512 and f32 or bf16 q/cache/out. Slow (a warp reduction per key) but
// simple: it serves f32 models and shapes the fast kernels do not take.
// ref: cpu/attention.cpp (scores in fp32, optional tanh softcap, softmax, weighted sum of V).
#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_common.h"

namespace tessera::cuda {

namespace {

constexpr int kMaxPerLane = 16;  // hd <= 512

template <class TQ, class TK, class TO>
__global__ void attn_generic_kernel(AttnParams p) {
  pdl_enter();
  const int warp = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (warp >= p.num_tokens * p.nh) return;
  const int t = warp / p.nh, h = warp % p.nh;
  const int rep = p.nh / p.nkv, kvh = h / rep, hd = p.hd;
  const int s = p.token_seq[t];
  const int pos = p.positions[t];
  const int hi = key_hi(p, pos, p.seq_kv_len[s]);
  const int lo = p.window > 0 ? max(0, pos - p.window + 1) : 0;
  const TQ* q = static_cast<const TQ*>(p.qkv) + static_cast<int64_t>(t) * p.qkv_stride +
                static_cast<int64_t>(h) * hd;
  float qv[kMaxPerLane], acc[kMaxPerLane];
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    const int d = lane + 32 * i;
    qv[i] = d < hd ? to_f32(q[d]) : 0.f;
    acc[i] = 0.f;
  }
  const int32_t* table = p.block_table + static_cast<int64_t>(s) * p.max_blocks;
  const TK* K = static_cast<const TK*>(p.k);
  const TK* V = static_cast<const TK*>(p.v);
  float m = -INFINITY, l = 0.f;
  for (int j = lo; j <= hi; ++j) {
    const int blk = table[j / p.block_size];
    if (blk < 0) continue;
    const int64_t base =
        ((static_cast<int64_t>(blk) * p.block_size + j % p.block_size) * p.nkv + kvh) * hd;
    float dot = 0.f;
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < hd) dot += qv[i] * to_f32(K[base + d]);
    }
    dot = warp_sum(dot);
    float sc = dot * p.scale;
    if (p.softcap > 0.f) sc = tanhf(sc / p.softcap) * p.softcap;
    const float mn = fmaxf(m, sc);
    const float corr = expf(m - mn);
    const float pj = expf(sc - mn);
    l = l * corr + pj;
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < hd) acc[i] = acc[i] * corr + pj * to_f32(V[base + d]);
    }
    m = mn;
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  TO* o = static_cast<TO*>(p.out) + static_cast<int64_t>(t) * p.out_stride +
          static_cast<int64_t>(h) * hd;
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < hd) o[d] = from_f32<TO>(acc[i] * inv);
  }
}

}  // namespace

void attention_generic(const AttnParams& p, cudaStream_t st) {
  if (p.num_tokens == 0) return;
  if (p.hd > 32 * kMaxPerLane)
    throw Error(ErrorKind::unsupported,
                "CUDA attention: head_dim " + std::to_string(p.hd) + " is above 512");
  const long long warps = static_cast<long long>(p.num_tokens) * p.nh;
  dispatch_float(p.qkv_dt, [&](auto tq) {
    using TQ = decltype(tq);
    dispatch_float(p.kv_dt, [&](auto tk) {
      using TK = decltype(tk);
      dispatch_float(p.out_dt, [&](auto to) {
        using TO = decltype(to);
        launch(attn_generic_kernel<TQ, TK, TO>, ceil_div(warps, 4), 128, 0, st, "attention_generic",
               p);
        TS_CUDA_LAUNCH("attention (generic)");
      });
    });
  });
}

bool attention_fast_supported(const AttnParams& p) {
  const bool hd_ok = p.hd == 64 || p.hd == 128 || p.hd == 256;
  const auto al16 = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  return hd_ok && p.qkv_dt == DType::bf16 && p.kv_dt == DType::bf16 && p.out_dt == DType::bf16 &&
         p.nh % p.nkv == 0 && p.nh / p.nkv <= kDecodeMaxRep && p.qkv_stride % 8 == 0 &&
         p.out_stride % 8 == 0 && al16(p.qkv) && al16(p.k) && al16(p.v) && al16(p.out);
}

}  // namespace tessera::cuda
