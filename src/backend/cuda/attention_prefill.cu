// Flash-attention prefill on the tensor cores (FlashAttention-2 layout, mma.sync m16n8k16 bf16
// with fp32 accumulation). A block takes 64 query rows of one sequence and one kv head, where the
// rows are (token, q head) pairs of the heads sharing that kv head, so GQA/MQA read each K/V tile
// once for all of them; 4 warps own 16 rows each. K/V tiles of 64 keys are gathered from the paged
// cache through the block table with cp.async; keys outside a row's [lo, hi] are masked, keys
// outside the block's range (or in released blocks) are loaded as zeros so that no garbage meets
// a zero weight. Scores and the softmax stay in fp32; P is rounded to bf16 for the PV product.
// ref: cpu/attention.cpp; Dao, FlashAttention-2 (2023) for the online softmax and the
// accumulator-to-operand register reuse.
#include <algorithm>

#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/mma.cuh"

namespace tessera::cuda {

namespace {

constexpr int kBR = 64, kBC = 64, kThreads = 128;

// One kernel of ~250 lines, FlashAttention-2's loop as one body: the Q tile's load, the K/V tiles'
// double-buffered gathers from the paged cache, the two mma stages and the online softmax share
// the registers holding the tile's accumulators, which a split into kernels would have to pass
// through global memory.
template <int HD>
__global__ void __launch_bounds__(kThreads)
    attn_prefill_kernel(AttnParams p, bool skip_single, int nsplit, int tps,
                        float* __restrict__ part) {
  constexpr int LD = HD + 8;  // padded smem rows: ldmatrix row addresses hit distinct banks
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* Qs = reinterpret_cast<bf16*>(smem_raw);
  bf16* Ks = Qs + kBR * LD;
  bf16* Vs = Ks + kBC * LD;
  __shared__ int row_lo[kBR], row_hi[kBR], row_tok[kBR], row_head[kBR];

  const int s = blockIdx.z, kvh = blockIdx.y, tid = threadIdx.x;
  const int qlen = p.seq_q_len[s];
  if (qlen <= 0 || (skip_single && qlen == 1)) return;
  const int rep = p.nh / p.nkv;
  const int rows_total = qlen * rep;
  // The last row tiles see the most keys: they go first, so the short ones fill the tail.
  const int row_tiles = gridDim.x / nsplit;
  const int rt = row_tiles - 1 - static_cast<int>(blockIdx.x) / nsplit;
  const int sp = static_cast<int>(blockIdx.x) % nsplit;
  const int r0 = rt * kBR;
  if (r0 >= rows_total) return;
  const int q_start = p.seq_q_start[s];
  const int kv_len = p.seq_kv_len[s];

  for (int r = tid; r < kBR; r += kThreads) {
    const int fr = r0 + r;
    if (fr < rows_total) {
      const int t = q_start + fr / rep;
      const int pos = p.positions[t];
      row_tok[r] = t;
      row_head[r] = kvh * rep + fr % rep;
      row_lo[r] = p.window > 0 ? max(0, pos - p.window + 1) : 0;
      row_hi[r] = key_hi(p, pos, kv_len);  // causal: min(pos, kv_len - 1)
    } else {
      row_tok[r] = -1;
      row_head[r] = 0;
      row_lo[r] = 1;
      row_hi[r] = 0;  // empty range: masked everywhere
    }
  }
  __syncthreads();

  // Keys the block needs: positions grow with the row index, so the first row has the lowest
  // bound and the last valid row the highest (causal or bidirectional).
  const int last_valid = min(kBR, rows_total - r0) - 1;
  const int kmin = row_lo[0], kmax = row_hi[last_valid];
  const int t_first = kmin / kBC;
  const int n_tiles = kmax >= kmin ? kmax / kBC - t_first + 1 : 0;
  const int active = max(1, (n_tiles + tps - 1) / tps);
  // Row metadata came from the batch upload; Q, K and V need the previous kernels done.
  pdl_wait();
  pdl_trigger();
  if (sp >= active) {
    if (nsplit > 1) {  // an empty split: weight 0 for every row in the merge
      const int64_t group = (static_cast<int64_t>(s) * p.nkv + kvh) * row_tiles + rt;
      // Zeros too, so that the merge can load every split unconditionally.
      float* pr = part + (group * nsplit + sp) * kBR * (HD + 2);
      for (int e = tid; e < kBR * (HD + 2); e += kThreads)
        pr[e] = e % (HD + 2) == HD ? -INFINITY : 0.f;
    }
    return;
  }
  const int kt_begin = n_tiles > 0 ? (t_first + sp * tps) * kBC : 0;
  const int kt_end = n_tiles > 0 ? min(kmax / kBC, t_first + (sp + 1) * tps - 1) * kBC : -1;

  // Q tile [kBR, HD]; rows past the sequence are zeros.
  const bf16* qkv = static_cast<const bf16*>(p.qkv);
  constexpr int CH = HD / 8;  // 16-byte chunks per row
  for (int c = tid; c < kBR * CH; c += kThreads) {
    const int r = c / CH, part = c % CH;
    bf16* dst = Qs + r * LD + part * 8;
    if (row_tok[r] >= 0) {
      cp_async16(dst, qkv + static_cast<int64_t>(row_tok[r]) * p.qkv_stride +
                          static_cast<int64_t>(row_head[r]) * HD + part * 8);
    } else {
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
    }
  }

  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, tq = lane & 3;
  const int wr0 = warp * 16;  // this warp's first row
  const int w_last = min(wr0 + 15, last_valid);
  const int w_lo = wr0 <= last_valid ? row_lo[wr0] : 1;
  const int w_hi = wr0 <= last_valid ? row_hi[w_last] : 0;
  const int ra = wr0 + g, rb = wr0 + g + 8;  // the two rows this thread holds
  const int lo_a = row_lo[ra], hi_a = row_hi[ra], lo_b = row_lo[rb], hi_b = row_hi[rb];

  float o[HD / 8][4];
#pragma unroll
  for (int i = 0; i < HD / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.f, l_b = 0.f;

  const bf16* K = static_cast<const bf16*>(p.k);
  const bf16* V = static_cast<const bf16*>(p.v);
  const int32_t* table = p.block_table + static_cast<int64_t>(s) * p.max_blocks;
  const float log2e = 1.4426950408889634f;

  for (int kt = kt_begin; kt <= kt_end; kt += kBC) {
    __syncthreads();  // the previous tile is no longer read
    for (int c = tid; c < kBC * CH; c += kThreads) {
      const int j = c / CH, part = c % CH;
      const int key = kt + j;
      int blk = -1;
      if (key <= kmax) blk = table[key / p.block_size];
      bf16* kd = Ks + j * LD + part * 8;
      bf16* vd = Vs + j * LD + part * 8;
      if (blk >= 0) {
        const int64_t off =
            ((static_cast<int64_t>(blk) * p.block_size + key % p.block_size) * p.nkv + kvh) * HD +
            part * 8;
        cp_async16(kd, K + off);
        cp_async16(vd, V + off);
      } else {
        *reinterpret_cast<uint4*>(kd) = make_uint4(0, 0, 0, 0);
        *reinterpret_cast<uint4*>(vd) = make_uint4(0, 0, 0, 0);
      }
    }
    cp_async_wait_all();
    __syncthreads();
    if (kt > w_hi || kt + kBC - 1 < w_lo) continue;  // nothing in this tile for this warp

    // S = Q K^T for 16 rows x 64 keys.
    float sacc[kBC / 8][4];
#pragma unroll
    for (int i = 0; i < kBC / 8; ++i) sacc[i][0] = sacc[i][1] = sacc[i][2] = sacc[i][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < HD; kk += 16) {
      uint32_t a[4];
      ldmatrix_x4(a, Qs + (wr0 + (lane & 15)) * LD + kk + (lane >> 4) * 8);
#pragma unroll
      for (int n2 = 0; n2 < kBC / 16; ++n2) {
        uint32_t b[4];
        ldmatrix_x4(
            b, Ks + (n2 * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD + kk + ((lane >> 3) & 1) * 8);
        mma_bf16(sacc[2 * n2], a, b[0], b[1]);
        mma_bf16(sacc[2 * n2 + 1], a, b[2], b[3]);
      }
    }

    // Scale, cap, mask; online softmax for rows a (elements 0, 1) and b (2, 3).
    float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < kBC / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = kt + nt * 8 + 2 * tq + (e & 1);
        float v = sacc[nt][e] * p.scale;
        if (p.softcap > 0.f) v = tanhf(v / p.softcap) * p.softcap;
        const bool ok = e < 2 ? (key >= lo_a && key <= hi_a) : (key >= lo_b && key <= hi_b);
        v = ok ? v : -INFINITY;
        sacc[nt][e] = v;
        if (e < 2) {
          mx_a = fmaxf(mx_a, v);
        } else {
          mx_b = fmaxf(mx_b, v);
        }
      }
    }
    mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 1));
    mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 2));
    mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 1));
    mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 2));
    const float mn_a = fmaxf(m_a, mx_a), mn_b = fmaxf(m_b, mx_b);
    const float base_a = mn_a == -INFINITY ? 0.f : mn_a;  // no key yet: every weight is 0
    const float base_b = mn_b == -INFINITY ? 0.f : mn_b;
    const float corr_a = exp2f((m_a - base_a) * log2e), corr_b = exp2f((m_b - base_b) * log2e);
    float sum_a = 0.f, sum_b = 0.f;
#pragma unroll
    for (int nt = 0; nt < kBC / 8; ++nt) {
      sacc[nt][0] = exp2f((sacc[nt][0] - base_a) * log2e);
      sacc[nt][1] = exp2f((sacc[nt][1] - base_a) * log2e);
      sacc[nt][2] = exp2f((sacc[nt][2] - base_b) * log2e);
      sacc[nt][3] = exp2f((sacc[nt][3] - base_b) * log2e);
      sum_a += sacc[nt][0] + sacc[nt][1];
      sum_b += sacc[nt][2] + sacc[nt][3];
    }
    sum_a += __shfl_xor_sync(0xffffffffu, sum_a, 1);
    sum_a += __shfl_xor_sync(0xffffffffu, sum_a, 2);
    sum_b += __shfl_xor_sync(0xffffffffu, sum_b, 1);
    sum_b += __shfl_xor_sync(0xffffffffu, sum_b, 2);
    l_a = l_a * corr_a + sum_a;
    l_b = l_b * corr_b + sum_b;
    m_a = mn_a;
    m_b = mn_b;
#pragma unroll
    for (int i = 0; i < HD / 8; ++i) {
      o[i][0] *= corr_a;
      o[i][1] *= corr_a;
      o[i][2] *= corr_b;
      o[i][3] *= corr_b;
    }

    // O += P V: the S accumulators of two adjacent key tiles form one A operand.
#pragma unroll
    for (int k2 = 0; k2 < kBC / 16; ++k2) {
      uint32_t a[4];
      a[0] = pack_bf16(sacc[2 * k2][0], sacc[2 * k2][1]);
      a[1] = pack_bf16(sacc[2 * k2][2], sacc[2 * k2][3]);
      a[2] = pack_bf16(sacc[2 * k2 + 1][0], sacc[2 * k2 + 1][1]);
      a[3] = pack_bf16(sacc[2 * k2 + 1][2], sacc[2 * k2 + 1][3]);
#pragma unroll
      for (int d2 = 0; d2 < HD / 16; ++d2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, Vs + (k2 * 16 + (lane & 15)) * LD + d2 * 16 + (lane >> 4) * 8);
        mma_bf16(o[2 * d2], a, b[0], b[1]);
        mma_bf16(o[2 * d2 + 1], a, b[2], b[3]);
      }
    }
  }

  cp_async_wait_all();  // a block with no key tile still has its Q copies in flight
  if (nsplit > 1) {
    // Partial for this split: unnormalised rows, then (max, sum); attn_merge_kernel combines.
    const int64_t group = (static_cast<int64_t>(s) * p.nkv + kvh) * row_tiles + rt;
    float* pa = part + ((group * nsplit + sp) * kBR + ra) * (HD + 2);
    float* pb = part + ((group * nsplit + sp) * kBR + rb) * (HD + 2);
#pragma unroll
    for (int i = 0; i < HD / 8; ++i) {
      *reinterpret_cast<float2*>(pa + i * 8 + 2 * tq) = make_float2(o[i][0], o[i][1]);
      *reinterpret_cast<float2*>(pb + i * 8 + 2 * tq) = make_float2(o[i][2], o[i][3]);
    }
    if (tq == 0) {
      pa[HD] = m_a;
      pa[HD + 1] = l_a;
      pb[HD] = m_b;
      pb[HD + 1] = l_b;
    }
    return;
  }
  // One split: normalise and store rows a and b.
  const float inv_a = l_a > 0.f ? 1.f / l_a : 0.f, inv_b = l_b > 0.f ? 1.f / l_b : 0.f;
  bf16* out = static_cast<bf16*>(p.out);
  if (row_tok[ra] >= 0) {
    bf16* orow = out + static_cast<int64_t>(row_tok[ra]) * p.out_stride +
                 static_cast<int64_t>(row_head[ra]) * HD;
#pragma unroll
    for (int i = 0; i < HD / 8; ++i)
      *reinterpret_cast<__nv_bfloat162*>(orow + i * 8 + 2 * tq) =
          __floats2bfloat162_rn(o[i][0] * inv_a, o[i][1] * inv_a);
  }
  if (row_tok[rb] >= 0) {
    bf16* orow = out + static_cast<int64_t>(row_tok[rb]) * p.out_stride +
                 static_cast<int64_t>(row_head[rb]) * HD;
#pragma unroll
    for (int i = 0; i < HD / 8; ++i)
      *reinterpret_cast<__nv_bfloat162*>(orow + i * 8 + 2 * tq) =
          __floats2bfloat162_rn(o[i][2] * inv_b, o[i][3] * inv_b);
  }
}

// Merges the splits of the prefill kernel: one warp per (token, head) row, the splits' weights
// exp(m_i - M) held one per lane, each lane summing its HD / 32 output dims over the splits.
template <int HD>
__global__ void __launch_bounds__(256)
    attn_merge_kernel(AttnParams p, bool skip_single, int nsplit, const float* __restrict__ part) {
  pdl_wait();
  pdl_trigger();
  constexpr int DPL = HD / 32;  // dims per lane
  const int s = blockIdx.z, kvh = blockIdx.y, rt = blockIdx.x;
  const int row_tiles = gridDim.x;
  const int qlen = p.seq_q_len[s];
  if (qlen <= 0 || (skip_single && qlen == 1)) return;
  const int rep = p.nh / p.nkv;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t group = (static_cast<int64_t>(s) * p.nkv + kvh) * row_tiles + rt;
  for (int r = warp; r < kBR; r += 8) {
    const int fr = rt * kBR + r;
    if (fr >= qlen * rep) break;
    const int t = p.seq_q_start[s] + fr / rep, h = kvh * rep + fr % rep;
    const float mi =
        lane < nsplit ? part[((group * nsplit + lane) * kBR + r) * (HD + 2) + HD] : -INFINITY;
    const float M = warp_max(mi);
    float w = 0.f, L = 0.f;
    if (lane < nsplit && M != -INFINITY && mi != -INFINITY) {
      w = expf(mi - M);
      L = w * part[((group * nsplit + lane) * kBR + r) * (HD + 2) + HD + 1];
    }
    L = warp_sum(L);
    float acc[DPL];
#pragma unroll
    for (int k = 0; k < DPL; ++k) acc[k] = 0.f;
    // Every split's row is written (empty ones with zeros), so the loads need no branch and
    // four splits' worth are in flight at once.
    for (int i0 = 0; i0 < nsplit; i0 += 4) {
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = i0 + u;
        if (i < nsplit) {
          const float wi = __shfl_sync(0xffffffffu, w, i);
          const float* row = part + ((group * nsplit + i) * kBR + r) * (HD + 2) + lane * DPL;
#pragma unroll
          for (int k = 0; k < DPL; ++k) acc[k] += wi * row[k];
        }
      }
    }
    bf16* o = static_cast<bf16*>(p.out) + static_cast<int64_t>(t) * p.out_stride +
              static_cast<int64_t>(h) * HD + lane * DPL;
#pragma unroll
    for (int k = 0; k < DPL; ++k) o[k] = __float2bfloat16_rn(L > 0.f ? acc[k] / L : 0.f);
  }
}

template <int HD>
void launch_prefill(const AttnParams& p, const PrefillPlan& plan, bool skip_single, float* part,
                    cudaStream_t st) {
  constexpr size_t smem = static_cast<size_t>(3) * kBR * (HD + 8) * sizeof(bf16);
  static bool configured = false;  // the attribute is per kernel, set once per process
  if (!configured) {
    TS_CUDA(cudaFuncSetAttribute(attn_prefill_kernel<HD>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(smem)));
    configured = true;
  }
  const dim3 grid(plan.row_tiles * plan.nsplit, p.nkv, p.num_seqs);
  set_carveout(reinterpret_cast<const void*>(attn_prefill_kernel<HD>), true);  // several per SM
  launch(attn_prefill_kernel<HD>, grid, kThreads, smem, st, "attention (prefill)", p, skip_single,
         plan.nsplit, plan.tiles_per_split, part);
  if (plan.nsplit > 1)
    launch(attn_merge_kernel<HD>, dim3(plan.row_tiles, p.nkv, p.num_seqs), 256, 0, st,
           "attention (prefill merge)", p, skip_single, plan.nsplit,
           static_cast<const float*>(part));
}

}  // namespace

PrefillPlan attention_prefill_plan(const AttnParams& p, int max_q_len, int max_kv_len) {
  PrefillPlan plan;
  const int rep = p.nh / p.nkv;
  plan.row_tiles = static_cast<int>(ceil_div(static_cast<long long>(max_q_len) * rep, kBR));
  // Key tiles a row tile can span: its keys run from the first token's window start to the
  // last token's position (causal) or to its window's end (bidirectional: window - 1 further).
  int max_tiles = (max_kv_len + kBC - 1) / kBC + 1;
  if (p.window > 0) {
    const int span = (p.causal ? p.window : 2 * p.window - 1) + (kBR + rep - 1) / rep;
    max_tiles = std::min(max_tiles, (span + kBC - 1) / kBC + 1);
  }
  const long long blocks = static_cast<long long>(plan.row_tiles) * p.nkv * p.num_seqs;
  const long long target = 2 * 132;            // two blocks per SM on an H100/H200
  if (blocks < target / 2 && max_tiles > 1) {  // split only when less than a block per SM
    int n = static_cast<int>(std::min<long long>({max_tiles, (target + blocks - 1) / blocks, 32}));
    plan.tiles_per_split = (max_tiles + n - 1) / n;
    plan.nsplit = (max_tiles + plan.tiles_per_split - 1) / plan.tiles_per_split;
  } else {
    plan.tiles_per_split = max_tiles;
    plan.nsplit = 1;
  }
  if (plan.nsplit > 1) {
    plan.partial_floats = static_cast<size_t>(blocks) * plan.nsplit * kBR * (p.hd + 2);
  }
  return plan;
}

void attention_prefill(const AttnParams& p, const PrefillPlan& plan, bool skip_single,
                       float* partials, cudaStream_t st) {
  if (p.num_seqs == 0 || plan.row_tiles == 0) return;
  switch (p.hd) {
    case 64:
      launch_prefill<64>(p, plan, skip_single, partials, st);
      break;
    case 128:
      launch_prefill<128>(p, plan, skip_single, partials, st);
      break;
    case 256:
      launch_prefill<256>(p, plan, skip_single, partials, st);
      break;
    default:
      throw Error(ErrorKind::internal, "attention_prefill: unsupported head_dim");
  }
}

}  // namespace tessera::cuda
