// Paged KV store and causal attention over the paged cache, ragged batch (no padding: each token
// reads only its own sequence's blocks). ref: transformers eager_attention_forward (scores in
// fp32, optional tanh softcap, softmax, weighted sum of V).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
              const int32_t* slot_mapping) {
  const int64_t per_slot = static_cast<int64_t>(nkv) * hd;
  for (int64_t t = 0; t < qkv.rows; ++t) {
    const int32_t slot = slot_mapping[t];
    if (slot < 0) continue;
    const int64_t kbase = t * qkv.stride + static_cast<int64_t>(nh) * hd;
    const int64_t vbase = kbase + per_slot;
    for (int64_t i = 0; i < per_slot; ++i) {
      store_elem(kv.k, kv.dtype, slot * per_slot + i, load_elem(qkv.data, qkv.dtype, kbase + i));
      store_elem(kv.v, kv.dtype, slot * per_slot + i, load_elem(qkv.data, qkv.dtype, vbase + i));
    }
  }
}

void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv, const BatchView& b,
               int group, float scale, int window, float softcap, Tensor out) {
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
      const int32_t* table = g.block_table + static_cast<int64_t>(s) * g.max_blocks;
      for (int d = 0; d < hd; ++d)
        q[d] = load_elem(qkv.data, qkv.dtype, t * qkv.stride + static_cast<int64_t>(h) * hd + d);
      scores.resize(static_cast<size_t>(p - lo + 1));
      float mx = -INFINITY;
      for (int j = lo; j <= p; ++j) {
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
      for (int j = lo; j <= p; ++j) {
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

}  // namespace tessera::cpu
