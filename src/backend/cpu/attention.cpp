// Paged KV store and attention over the paged cache, ragged batch (no padding: each token reads
// only its own sequence's blocks), causal or bidirectional (BatchView::causal; the key range of
// each token is attention_key_end's). ref: transformers eager_attention_forward (scores in fp32,
// optional tanh softcap, softmax, weighted sum of V).
//
// The SIMD path splits the batch into work items (attention_impl.h): per sequence and KV head,
// runs of up to kAttnMaxQ / (nh / nkv) consecutive tokens whose q heads share every K/V row the
// item reads. Items go to the threads dynamically, longest first (causal prefill items grow with
// the position). When there are fewer items than threads can use (decode of a few sequences),
// long key ranges are split and the partial softmax states merged afterwards (flash-decoding).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/simd_kernels.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

void attention_scalar(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                      const BatchView& b, int group, float scale, int window, float softcap,
                      Tensor out) {
  const auto& g = b.groups[group];
  const int bs = kv.block_size;
  const int rep = nh / nkv;
  const int64_t per_slot = static_cast<int64_t>(nkv) * hd;
  ThreadPool::global().parallel_for(static_cast<int64_t>(b.num_tokens) * nh, [&](int64_t i0,
                                                                                 int64_t i1, int) {
    std::vector<float> q(hd), acc(hd), scores;
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / nh;
      const int h = static_cast<int>(i % nh);
      const int kvh = h / rep;
      const int s = b.token_seq[t];
      const int p = b.positions[t];
      const int lo = window > 0 ? std::max(0, p - window + 1) : 0;
      const int hi = attention_key_end(p, window, b.causal, b.seq_kv_len[s]);  // one past the last
      const int32_t* table = g.block_table + static_cast<int64_t>(s) * g.max_blocks;
      for (int d = 0; d < hd; ++d)
        q[d] = load_elem(qkv.data, qkv.dtype, t * qkv.stride + static_cast<int64_t>(h) * hd + d);
      scores.resize(static_cast<size_t>(hi - lo));
      float mx = -INFINITY;
      for (int j = lo; j < hi; ++j) {
        const int64_t slot = static_cast<int64_t>(table[j / bs]) * bs + j % bs;
        const int64_t base = slot * per_slot + static_cast<int64_t>(kvh) * hd;
        float dot = 0.f;
        for (int d = 0; d < hd; ++d) dot += q[d] * load_elem(kv.k, kv.dtype, base + d);
        float sc = dot * scale;
        if (softcap > 0.f) sc = std::tanh(sc / softcap) * softcap;
        scores[j - lo] = sc;
        mx = std::max(mx, sc);
      }
      float sum = 0.f;
      for (float& sc : scores) {
        sc = std::exp(sc - mx);
        sum += sc;
      }
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int j = lo; j < hi; ++j) {
        const int64_t slot = static_cast<int64_t>(table[j / bs]) * bs + j % bs;
        const int64_t base = slot * per_slot + static_cast<int64_t>(kvh) * hd;
        const float pj = scores[j - lo];
        for (int d = 0; d < hd; ++d) acc[d] += pj * load_elem(kv.v, kv.dtype, base + d);
      }
      const float inv = 1.f / sum;
      for (int d = 0; d < hd; ++d)
        store_elem(out.data, out.dtype, t * out.stride + static_cast<int64_t>(h) * hd + d,
                   acc[d] * inv);
    }
  });
}

// Keys a split piece gets at least: shorter pieces cost more in merging than they save.
constexpr int kMinSplitKeys = 128;

struct Work {
  AttnItem item;
  int split_group = -1;  // index into the partial groups, or -1 (writes `out` directly)
  int split_index = 0;
};

}  // namespace

void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
              const int32_t* slot_mapping) {
  const int64_t per_slot = static_cast<int64_t>(nkv) * hd;
  for (int64_t t = 0; t < qkv.rows; ++t) {
    const int32_t slot = slot_mapping[t];
    if (slot < 0) continue;
    const int64_t kbase = t * qkv.stride + static_cast<int64_t>(nh) * hd;
    const int64_t vbase = kbase + per_slot;
    if (qkv.dtype == DType::f32 && kv.dtype == DType::bf16 && active_isa() != Isa::scalar) {
      auto round = active_isa() == Isa::avx512 ? avx512::round_to_bf16 : avx2::round_to_bf16;
      round(qkv.ptr<const float>() + kbase, per_slot,
            static_cast<uint16_t*>(kv.k) + slot * per_slot);
      round(qkv.ptr<const float>() + vbase, per_slot,
            static_cast<uint16_t*>(kv.v) + slot * per_slot);
      continue;
    }
    if (qkv.dtype == kv.dtype) {
      const size_t es = dtype_size(kv.dtype);
      std::memcpy(static_cast<char*>(kv.k) + slot * per_slot * es,
                  static_cast<const char*>(qkv.data) + kbase * es, per_slot * es);
      std::memcpy(static_cast<char*>(kv.v) + slot * per_slot * es,
                  static_cast<const char*>(qkv.data) + vbase * es, per_slot * es);
      continue;
    }
    for (int64_t i = 0; i < per_slot; ++i) {
      store_elem(kv.k, kv.dtype, slot * per_slot + i, load_elem(qkv.data, qkv.dtype, kbase + i));
      store_elem(kv.v, kv.dtype, slot * per_slot + i, load_elem(qkv.data, qkv.dtype, vbase + i));
    }
  }
}

void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv, const BatchView& b,
               int group, float scale, int window, float softcap, Tensor out) {
  const Isa isa = active_isa();
  const int rep = nh / nkv;
  const int vec2 = isa == Isa::avx512 ? 32 : 16;  // the kernel walks head_dim in 2 vectors
  if (isa == Isa::scalar || qkv.dtype != DType::f32 || out.dtype != DType::f32 || hd % vec2 != 0 ||
      rep > kAttnMaxQ || (kv.dtype != DType::f32 && kv.dtype != DType::bf16))
    return attention_scalar(qkv, nh, nkv, hd, kv, b, group, scale, window, softcap, out);

  AttnArgs a;
  a.qkv = qkv.data;
  a.qkv_stride = qkv.stride;
  a.nh = nh;
  a.nkv = nkv;
  a.hd = hd;
  a.k = kv.k;
  a.v = kv.v;
  a.kv_dtype = kv.dtype;
  a.block_size = kv.block_size;
  a.block_table = b.groups[group].block_table;
  a.max_blocks = b.groups[group].max_blocks;
  a.positions = b.positions;
  a.seq_kv_len = b.seq_kv_len;
  a.scale = scale;
  a.softcap = softcap;
  a.window = window;
  a.causal = b.causal;

  // Items: per sequence, per KV head, runs of tokens.
  const int per_item = std::max(1, kAttnMaxQ / rep);
  std::vector<AttnItem> items;
  for (int s = 0; s < b.num_seqs; ++s) {
    const int t0 = b.seq_q_start[s], n = b.seq_q_len[s];
    for (int tb = 0; tb < n; tb += per_item) {
      AttnItem it;
      it.seq = s;
      it.t_begin = t0 + tb;
      it.t_count = std::min(per_item, n - tb);
      int lo = std::numeric_limits<int>::max(), hi = 0;
      for (int t = it.t_begin; t < it.t_begin + it.t_count; ++t) {
        const int p = b.positions[t];
        lo = std::min(lo, window > 0 ? std::max(0, p - window + 1) : 0);
        hi = std::max(hi, attention_key_end(p, window, b.causal, b.seq_kv_len[s]));
      }
      it.k_begin = lo;
      it.k_end = hi;
      for (int g = 0; g < nkv; ++g) {
        it.kv_head = g;
        items.push_back(it);
      }
    }
  }
  // Split long key ranges when the items alone cannot keep the threads busy.
  ThreadPool& pool = ThreadPool::global();
  const int want = 2 * pool.size();
  std::vector<Work> work;
  int groups = 0;
  std::vector<int> group_first;  // first partial slot of each group
  std::vector<const AttnItem*> group_item;
  int partial_slots = 0;
  for (const AttnItem& it : items) {
    const int len = it.k_end - it.k_begin;
    int splits = 1;
    if (static_cast<int>(items.size()) < want)
      splits =
          std::clamp(len / kMinSplitKeys, 1,
                     (want + static_cast<int>(items.size()) - 1) / static_cast<int>(items.size()));
    if (splits == 1) {
      work.push_back({it, -1, 0});
      continue;
    }
    group_first.push_back(partial_slots);
    group_item.push_back(&it);
    for (int sp = 0; sp < splits; ++sp) {
      Work w{it, groups, sp};
      w.item.k_begin = it.k_begin + static_cast<int>(int64_t{len} * sp / splits);
      w.item.k_end = it.k_begin + static_cast<int>(int64_t{len} * (sp + 1) / splits);
      work.push_back(w);
    }
    partial_slots += splits;
    ++groups;
  }
  std::sort(work.begin(), work.end(), [](const Work& x, const Work& y) {
    return int64_t{x.item.k_end - x.item.k_begin} * x.item.t_count >
           int64_t{y.item.k_end - y.item.k_begin} * y.item.t_count;
  });
  // Partial states: per slot, kAttnMaxQ x (m, l, acc[hd]).
  const int64_t slot_floats = int64_t{kAttnMaxQ} * (2 + hd);
  thread_local std::vector<float> partials;
  partials.resize(static_cast<size_t>(partial_slots * slot_floats));
  auto kernel = isa == Isa::avx512 ? avx512::attention_item : avx2::attention_item;
  const int64_t scratch_floats = attention_scratch_floats(hd);
  float* part_base = partials.data();
  pool.parallel_dynamic(static_cast<int64_t>(work.size()), 1, [&](int64_t w0, int64_t w1, int) {
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(scratch_floats));
    for (int64_t i = w0; i < w1; ++i) {
      const Work& w = work[i];
      if (w.split_group < 0) {
        kernel(a, w.item, nullptr, out.ptr<float>(), out.stride, scratch.data());
      } else {
        float* slot = part_base + (group_first[w.split_group] + w.split_index) * slot_floats;
        AttnPartial p{slot, slot + kAttnMaxQ, slot + 2 * kAttnMaxQ};
        kernel(a, w.item, &p, nullptr, 0, scratch.data());
      }
    }
  });
  // Merge the split groups: out = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s.
  for (int gi = 0; gi < groups; ++gi) {
    const AttnItem& it = *group_item[gi];
    const int first = group_first[gi];
    const int splits = (gi + 1 < groups ? group_first[gi + 1] : partial_slots) - first;
    for (int q = 0; q < it.t_count * rep; ++q) {
      float M = -std::numeric_limits<float>::infinity();
      for (int sp = 0; sp < splits; ++sp)
        M = std::max(M, part_base[(first + sp) * slot_floats + q]);
      float L = 0.f;
      const int t = it.t_begin + q / rep;
      const int h = it.kv_head * rep + q % rep;
      float* o = out.ptr<float>() + t * out.stride + int64_t{h} * hd;
      std::fill(o, o + hd, 0.f);
      for (int sp = 0; sp < splits; ++sp) {
        const float* slot = part_base + (first + sp) * slot_floats;
        if (slot[q] == -std::numeric_limits<float>::infinity()) continue;
        const float c = std::exp(slot[q] - M);
        L += c * slot[kAttnMaxQ + q];
        const float* acc = slot + 2 * kAttnMaxQ + int64_t{q} * hd;
        for (int d = 0; d < hd; ++d) o[d] += c * acc[d];
      }
      const float inv = L > 0.f ? 1.f / L : 0.f;
      for (int d = 0; d < hd; ++d) o[d] *= inv;
    }
  }
}

}  // namespace tessera::cpu
