// The prototype's kernel (quant_mma_gemv.cu): 4-bit affine GEMV, M = 1, on mma.m16n8k16 over the
// tile layout of repack(). Each warp streams (row tile, k slice) items through a ring of kD
// 16-byte loads per lane; a lane's 16 bytes are four k-steps of its A fragment (byte i of word
// ks: fragment register i), widened to bf16 pairs (128 + q) by one PRMT and one LOP3 per pair.
#pragma once

struct QArgs {
  const uint32_t* T;  // tiles
  const uint32_t* P;  // [N][K/group] (bf16 scale | bf16 bias << 16)
  const bf16* x;
  float* y;
  int N, K, group;
};
struct QPlan {
  int grid = 1, slices = 1, rpb = 1;
  size_t smem = 0;
};

inline QPlan qmma_plan(int N, int K, int sms) {
  QPlan p;
  const int RT = (N + 15) / 16, KT = K / 64;
  p.grid = std::min(2 * sms, RT);
  p.rpb = (RT + p.grid - 1) / p.grid;
  p.slices = std::max(1, std::min(KT, (8 + p.rpb - 1) / p.rpb));
  // x' (bf16 K) + per-group (C, X) f32 pairs + partials
  p.smem =
      (size_t)K * 2 + (size_t)(K / 32) * 8 + (p.slices > 1 ? (size_t)p.rpb * p.slices * 16 * 4 : 0);
  return p;
}

// GS: k-steps (16 inputs) per group: 2, 4, 8.
template <int GS, int kD, bool MATH>
__global__ void __launch_bounds__(256, 2) qmma_kernel(QArgs a, int slices) {
  extern __shared__ __align__(16) unsigned char sm[];
  const int K = a.K, KT = K / 64, N = a.N, G = K / (16 * GS);
  const int RT = (N + 15) / 16;
  const int rt0 = (int)((int64_t)RT * blockIdx.x / gridDim.x),
            rt1 = (int)((int64_t)RT * (blockIdx.x + 1) / gridDim.x);
  const int items = (rt1 - rt0) * slices;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  constexpr int TPG = GS >= 4 ? GS / 4 : 1;  // k-tiles per group (g128: 2)
  constexpr int PK = GS >= 4 ? 1 : 4 / GS;   // groups per k-tile (g32: 2)
  const int groups_t = KT / TPG;             // group-aligned k-tile blocks
  // cursor over this warp's units: item it (local), k-tile kt of [kb, ke)
  struct Cur {
    int it, kt, ke;
  };
  auto item_range = [&](int it, int& kb, int& ke) {
    const int s = it % slices;
    kb = (int)((int64_t)groups_t * s / slices) * TPG;
    ke = (int)((int64_t)groups_t * (s + 1) / slices) * TPG;
  };
  auto start = [&](Cur& c, int it) {
    c.it = it;
    while (c.it < items) {
      int kb, ke;
      item_range(c.it, kb, ke);
      if (kb < ke) {
        c.kt = kb;
        c.ke = ke;
        return;
      }
      c.it += 8;
    }
  };
  auto advance = [&](Cur& c) {
    if (++c.kt >= c.ke) start(c, c.it + 8);
  };
  const uint4* T4 = reinterpret_cast<const uint4*>(a.T);
  uint4 buf[kD];
  uint32_t pr[kD][2 * PK];
  auto load = [&](int d, const Cur& c) {
    const int rt = rt0 + c.it / slices;
#pragma unroll
    for (int dd = 0; dd < kD; ++dd)
      if (dd == d) {
        buf[dd] = __ldcs(T4 + ((size_t)rt * KT + c.kt) * 32 + lane);
        const int r0 = min(rt * 16 + g, N - 1), r1 = min(rt * 16 + g + 8, N - 1);
#pragma unroll
        for (int p = 0; p < PK; ++p) {
          const int gi = (c.kt * PK + p) / TPG;
          pr[dd][2 * p] = __ldg(a.P + (size_t)r0 * G + gi);
          pr[dd][2 * p + 1] = __ldg(a.P + (size_t)r1 * G + gi);
        }
      }
  };
  Cur lc, cc;
  start(lc, warp);
  cc = lc;
#pragma unroll
  for (int d = 0; d < kD; ++d)
    if (lc.it < items) {
      load(d, lc);
      advance(lc);
    }
  // x into shared memory (bf16): per k-step 16 values ordered [t][x(2t), x(2t+1), x(2t+8),
  // x(2t+9)] (the B fragment of lane t); per group 128 sum(x) and sum(x) in f32.
  bf16* xs = reinterpret_cast<bf16*>(sm);
  float2* gs = reinterpret_cast<float2*>(sm + (size_t)K * 2);
  float* red = reinterpret_cast<float*>(sm + (size_t)K * 2 + (size_t)(K / 32) * 8);
  constexpr int LPG = GS * 2;  // 8-input chunks per group
  for (int c0 = 0; c0 < K / 8; c0 += 256) {
    const int c = c0 + tid;
    float e = 0.f;
    if (c < K / 8) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(a.x) + c);
      const uint32_t vs[4] = {v.x, v.y, v.z, v.w};
      const int ks = c / 2, half = c & 1;  // inputs 8c..8c+7: k-step ks, half 0 (0-7) or 1 (8-15)
#pragma unroll
      for (int j = 0; j < 4; ++j) {  // inputs 2j, 2j+1 of the chunk: lane t = j's pair
        e += __uint_as_float(vs[j] << 16) + __uint_as_float(vs[j] & 0xffff0000u);
        *reinterpret_cast<uint32_t*>(xs + ks * 16 + j * 4 + half * 2) = vs[j];
      }
    }
#pragma unroll
    for (int off = 1; off < LPG; off <<= 1) e += __shfl_xor_sync(~0u, e, off);
    if (c < K / 8 && c % LPG == 0) gs[c / LPG] = make_float2(128.f * e, e);
  }
  __syncthreads();
  const uint32_t sel[4] = {0x0400u, 0x0501u, 0x0602u, 0x0703u};  // byte t of v, byte t of v >> 4
  float y0 = 0.f, y1 = 0.f;
  float c[4] = {0.f, 0.f, 0.f, 0.f};
  auto finish_item = [&](int it) {
    const int rt = rt0 + it / slices;
    if (t == 0) {
      if (slices == 1) {
        if (rt * 16 + g < N) a.y[rt * 16 + g] = y0;
        if (rt * 16 + g + 8 < N) a.y[rt * 16 + g + 8] = y1;
      } else {
        red[it * 16 + g] = y0;
        red[it * 16 + g + 8] = y1;
      }
    }
    y0 = y1 = 0.f;
  };
  while (cc.it < items) {
#pragma unroll
    for (int d = 0; d < kD; ++d) {
      if (cc.it < items) {
        const uint32_t ws[4] = {buf[d].x, buf[d].y, buf[d].z, buf[d].w};
        if (!MATH) y0 += __uint_as_float((ws[0] ^ ws[1] ^ ws[2] ^ ws[3] ^ pr[d][0]) & 0x3fffffffu);
#pragma unroll
        for (int ks = 0; ks < (MATH ? 4 : 0); ++ks) {
          uint32_t af[4];
          const uint32_t w4 = ws[ks] >> 4;
#pragma unroll
          for (int i = 0; i < 4; ++i) af[i] = nib_pair(ws[ks], w4, sel[i]);
          const uint2 xb = *reinterpret_cast<const uint2*>(xs + (cc.kt * 4 + ks) * 16 + t * 4);
          mma16816(c, af, xb.x, xb.y);
          const int kstep = cc.kt * 4 + ks;
          if ((kstep + 1) % GS == 0) {
            const int gi = kstep / GS;
            const int p = (ks * PK) / 4;  // which of this k-tile's pairs (g32: ks / 2)
            const uint32_t p0 = pr[d][2 * p], p1 = pr[d][2 * p + 1];
            const float2 cx = gs[gi];
            y0 = fmaf(__uint_as_float(p0 << 16), c[0] - cx.x,
                      fmaf(__uint_as_float(p0 & 0xffff0000u), cx.y, y0));
            y1 = fmaf(__uint_as_float(p1 << 16), c[2] - cx.x,
                      fmaf(__uint_as_float(p1 & 0xffff0000u), cx.y, y1));
            c[0] = c[1] = c[2] = c[3] = 0.f;
          }
        }
        const int it = cc.it;
        advance(cc);
        if (cc.it != it) finish_item(it);
        if (lc.it < items) {
          load(d, lc);
          advance(lc);
        }
      }
    }
  }
  if (slices > 1) {
    __syncthreads();
    const int nrows = (rt1 - rt0) * 16;
    for (int r = tid; r < nrows; r += 256) {
      const int rl = r / 16, j = r % 16, row = (rt0 + rl) * 16 + j;
      if (row >= N) continue;
      float s = 0.f;
      for (int q = 0; q < slices; ++q) s += red[(rl * slices + q) * 16 + j];
      a.y[row] = s;
    }
  }
}

// Second form: a warp takes items it, it + 8, ... of at most MK k-tiles each, all of item
// it + 8's loads in flight while item it is reduced (the bf16 streaming GEMV's order), its row tile
// and k range computed once per item: no division per tile. 4-bit, group 64.
constexpr int kMK = 6;
inline QPlan qmma2_plan(int N, int K, int sms) {
  QPlan p;
  const int RT = (N + 15) / 16, KT = K / 64;
  p.grid = std::min(2 * sms, RT);
  p.rpb = (RT + p.grid - 1) / p.grid;
  p.slices = std::max((KT + kMK - 1) / kMK, std::min(KT, (8 + p.rpb - 1) / p.rpb));
  p.smem = (size_t)K * 2 + (size_t)(K / 32) * 8 + (size_t)p.rpb * p.slices * 16 * 4;
  return p;
}

__global__ void __launch_bounds__(256, 2) qmma2_kernel(QArgs a, int slices) {
  extern __shared__ __align__(16) unsigned char sm[];
  const int K = a.K, KT = K / 64, N = a.N, G = K / 64;
  const int RT = (N + 15) / 16;
  const int rt0 = (int)((int64_t)RT * blockIdx.x / gridDim.x),
            rt1 = (int)((int64_t)RT * (blockIdx.x + 1) / gridDim.x);
  const int items = (rt1 - rt0) * slices;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const uint4* T4 = reinterpret_cast<const uint4*>(a.T);
  struct Item {
    int rt, kb, n;
  };
  auto item_of = [&](int it) {
    const int s = it % slices;
    Item i;
    i.rt = rt0 + it / slices;
    i.kb = KT * s / slices;
    i.n = KT * (s + 1) / slices - i.kb;
    return i;
  };
  uint4 cur[kMK], nxt[kMK];
  uint32_t pc[kMK][2], pn[kMK][2];
  auto load = [&](const Item& i, uint4(&b)[kMK], uint32_t(&p)[kMK][2]) {
    const uint4* src = T4 + ((size_t)i.rt * KT + i.kb) * 32 + lane;
    const uint32_t* p0 = a.P + (size_t)min(i.rt * 16 + g, N - 1) * G + i.kb;
    const uint32_t* p1 = a.P + (size_t)min(i.rt * 16 + g + 8, N - 1) * G + i.kb;
#pragma unroll
    for (int j = 0; j < kMK; ++j)
      if (j < i.n) {
        b[j] = __ldcs(src + j * 32);
        p[j][0] = __ldg(p0 + j);
        p[j][1] = __ldg(p1 + j);
      }
  };
  int it = warp;
  Item ci = item_of(it);
  if (it < items) load(ci, cur, pc);
  bf16* xs = reinterpret_cast<bf16*>(sm);
  float2* gs = reinterpret_cast<float2*>(sm + (size_t)K * 2);
  float* red = reinterpret_cast<float*>(sm + (size_t)K * 2 + (size_t)(K / 32) * 8);
  for (int c0 = 0; c0 < K / 8; c0 += 256) {
    const int c = c0 + tid;
    float e = 0.f;
    if (c < K / 8) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(a.x) + c);
      const uint32_t vs[4] = {v.x, v.y, v.z, v.w};
      const int ks = c / 2, half = c & 1;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        e += __uint_as_float(vs[j] << 16) + __uint_as_float(vs[j] & 0xffff0000u);
        *reinterpret_cast<uint32_t*>(xs + ks * 16 + j * 4 + half * 2) = vs[j];
      }
    }
#pragma unroll
    for (int off = 1; off < 8; off <<= 1) e += __shfl_xor_sync(~0u, e, off);
    if (c < K / 8 && c % 8 == 0) gs[c / 8] = make_float2(128.f * e, e);
  }
  __syncthreads();
  const uint32_t sel[4] = {0x0400u, 0x0501u, 0x0602u, 0x0703u};
  for (; it < items; it += 8) {
    const Item ni = item_of(it + 8);
    if (it + 8 < items) load(ni, nxt, pn);
    float y0 = 0.f, y1 = 0.f;
#pragma unroll
    for (int j = 0; j < kMK; ++j) {
      if (j < ci.n) {
        const uint32_t ws[4] = {cur[j].x, cur[j].y, cur[j].z, cur[j].w};
        const bf16* xk = xs + (ci.kb + j) * 64 + t * 4;
        float c[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
          uint32_t af[4];
          const uint32_t w4 = ws[ks] >> 4;
#pragma unroll
          for (int i = 0; i < 4; ++i) af[i] = nib_pair(ws[ks], w4, sel[i]);
          const uint2 xb = *reinterpret_cast<const uint2*>(xk + ks * 16);
          mma16816(c, af, xb.x, xb.y);
        }
        const float2 cx = gs[ci.kb + j];
        const uint32_t p0 = pc[j][0], p1 = pc[j][1];
        y0 = fmaf(__uint_as_float(p0 << 16), c[0] - cx.x,
                  fmaf(__uint_as_float(p0 & 0xffff0000u), cx.y, y0));
        y1 = fmaf(__uint_as_float(p1 << 16), c[2] - cx.x,
                  fmaf(__uint_as_float(p1 & 0xffff0000u), cx.y, y1));
      }
    }
    if (t == 0) {
      const int il = it;
      if (slices == 1) {
        if (ci.rt * 16 + g < N) a.y[ci.rt * 16 + g] = y0;
        if (ci.rt * 16 + g + 8 < N) a.y[ci.rt * 16 + g + 8] = y1;
      } else {
        red[il * 16 + g] = y0;
        red[il * 16 + g + 8] = y1;
      }
    }
#pragma unroll
    for (int j = 0; j < kMK; ++j) {
      cur[j] = nxt[j];
      pc[j][0] = pn[j][0];
      pc[j][1] = pn[j][1];
    }
    ci = ni;
  }
  if (slices > 1) {
    __syncthreads();
    const int nrows = (rt1 - rt0) * 16;
    for (int r = tid; r < nrows; r += 256) {
      const int rl = r / 16, j = r % 16, row = (rt0 + rl) * 16 + j;
      if (row >= N) continue;
      float s = 0.f;
      for (int q = 0; q < slices; ++q) s += red[(rl * slices + q) * 16 + j];
      a.y[row] = s;
    }
  }
}

inline void qmma2_launch(const QArgs& a, const QPlan& p, cudaStream_t st) {
  static const bool done = [] {
    CK(cudaFuncSetAttribute(qmma2_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 << 10));
    return true;
  }();
  (void)done;
  qmma2_kernel<<<p.grid, 256, p.smem, st>>>(a, p.slices);
  CK(cudaPeekAtLastError());
}

template <int GS, int D, bool MATH>
inline void qmma_go(const QArgs& a, const QPlan& p, cudaStream_t st) {
  static const bool done = [] {
    CK(cudaFuncSetAttribute(qmma_kernel<GS, D, MATH>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            96 << 10));
    return true;
  }();
  (void)done;
  qmma_kernel<GS, D, MATH><<<p.grid, 256, p.smem, st>>>(a, p.slices);
  CK(cudaPeekAtLastError());
}

// variant 0: mma, 8 in flight; 1: loads only, 8 in flight; 2: mma, 4 in flight
inline void qmma_launch(const QArgs& a, const QPlan& p, cudaStream_t st, int variant = 0) {
  if (variant == 1) return qmma_go<4, 8, false>(a, p, st);
  if (variant == 2) return qmma_go<4, 4, true>(a, p, st);
  if (a.group == 32)
    qmma_go<2, 8, true>(a, p, st);
  else if (a.group == 64)
    qmma_go<4, 8, true>(a, p, st);
  else
    qmma_go<8, 8, true>(a, p, st);
}
