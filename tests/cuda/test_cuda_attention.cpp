// Attention over the paged cache: ragged batches mixing prefill chunks and single-token decodes,
// full and sliding windows (chunks crossing the window, released blocks marked -1), softcap, GQA
// at Gemma-3-1B's shape (4 q heads on 1 kv head of 256) and others, against the CPU op. Cache
// slots a sequence may not read hold NaN, so reading one fails the comparison. Bidirectional
// batches too (every key of the sequence, or |p - key| < window).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "cuda_test_util.h"
#ifdef TESSERA_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace tessera::cudatest {
namespace {

struct SeqSpec {
  int q_len, kv_len;
};

struct AttnCase {
  int nh, nkv, hd, window;
  float softcap;
  DType kv_dt;
  std::vector<SeqSpec> seqs;
  bool causal = true;  // false: HostBatch::causal off (bidirectional)
};

// Builds the batch (one KV group), a cache holding random K/V at every position a sequence has
// written (NaN elsewhere, and in blocks the window released) and runs both backends. With `rope`,
// qk_norm_rope (q/k norms with random weights when `norms`) and kv_store of the new tokens come
// first, as the decoder issues them (one fused kernel on CUDA), and the stored k and v are
// compared too.
void run_case(const AttnCase& c, bool graphs_off = true, bool rope = false, bool norms = false) {
#ifdef TESSERA_HAVE_CUDA
  auto* ctl = cuda::tuning(*cuda());
  const bool old_graphs = ctl->graphs;
  ctl->graphs = !graphs_off;
#endif
  const int bs = 16;
  HostBatch hb;
  hb.causal = c.causal;
  hb.groups.resize(1);
  int max_blocks = 1, total_blocks = 0;
  for (const auto& s : c.seqs) {
    max_blocks = std::max(max_blocks, (s.kv_len + bs - 1) / bs);
    total_blocks += (s.kv_len + bs - 1) / bs;
  }
  std::vector<int> phys(total_blocks + 3);  // a few blocks no sequence owns
  std::iota(phys.begin(), phys.end(), 0);
  std::shuffle(phys.begin(), phys.end(), rng());
  const int nblocks = static_cast<int>(phys.size());
  const int slot_elems = c.nkv * c.hd;
  std::vector<float> kh(static_cast<size_t>(nblocks) * bs * slot_elems, NAN), vh = kh;
  std::normal_distribution<float> nd(0.f, 1.f);
  hb.groups[0].max_blocks = max_blocks;
  hb.groups[0].block_table.assign(c.seqs.size() * max_blocks, -1);
  int next = 0;
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    const SeqSpec& q = c.seqs[s];
    const int first_new = q.kv_len - q.q_len;
    const int first_needed = c.window > 0 ? std::max(0, first_new - c.window + 1) : 0;
    for (int b = 0; b < (q.kv_len + bs - 1) / bs; ++b) {
      const int pb = phys[next++];
      if ((b + 1) * bs <= first_needed) continue;  // released by the window
      hb.groups[0].block_table[s * max_blocks + b] = pb;
      for (int o = 0; o < bs && b * bs + o < q.kv_len; ++o)
        for (int i = 0; i < slot_elems; ++i) {
          kh[(static_cast<size_t>(pb) * bs + o) * slot_elems + i] = nd(rng());
          vh[(static_cast<size_t>(pb) * bs + o) * slot_elems + i] = nd(rng());
        }
    }
    hb.seq_q_start.push_back(hb.num_tokens());
    hb.seq_q_len.push_back(q.q_len);
    hb.seq_kv_len.push_back(q.kv_len);
    for (int i = 0; i < q.q_len; ++i) {
      const int pos = first_new + i;
      hb.tokens.push_back(1);
      hb.positions.push_back(pos);
      hb.token_seq.push_back(static_cast<int>(s));
      const int blk = hb.groups[0].block_table[s * max_blocks + pos / bs];
      hb.groups[0].slot_mapping.push_back(blk * bs + pos % bs);
      hb.logit_rows.push_back(hb.num_tokens() - 1);
    }
  }
  const int T = hb.num_tokens();
  const BatchView vc = cpu().upload(hb);
  const BatchView vg = cuda()->upload(hb);
  const int Tg = vg.num_tokens;  // padded when graphs are on
  ASSERT_GE(Tg, T);
  const int qkv_cols = (c.nh + 2 * c.nkv) * c.hd, out_cols = c.nh * c.hd;
  auto qh = randn(static_cast<size_t>(Tg) * qkv_cols, 1.5f);
  Pair qkv = make_pair(Tg, qkv_cols, DType::bf16, qh);
  Pair k = make_pair(nblocks * bs, slot_elems, c.kv_dt, kh);
  Pair v = make_pair(nblocks * bs, slot_elems, c.kv_dt, vh);
  Pair out = random_pair(Tg, out_cols, DType::bf16);
  poison(out);
  KvLayerView kc{k.c.view.data, v.c.view.data, c.kv_dt, nblocks, bs, c.nkv, c.hd};
  KvLayerView kg{k.g.view.data, v.g.view.data, c.kv_dt, nblocks, bs, c.nkv, c.hd};
  const float scale = 1.f / std::sqrt(static_cast<float>(c.hd));
  std::vector<float> invf(c.hd / 2);
  for (int j = 0; j < c.hd / 2; ++j)
    invf[j] = 1.f / std::pow(10000.f, 2.f * static_cast<float>(j) / static_cast<float>(c.hd));
  Pair inv = make_pair(1, c.hd / 2, DType::f32, invf);
  Pair qn = make_pair(1, c.hd, DType::f32, randn(c.hd, 0.3f, 1.f));
  Pair kn = make_pair(1, c.hd, DType::f32, randn(c.hd, 0.3f, 1.f));
  if (rope) {
    cpu().qk_norm_rope(qkv.c.view.rows_from(0, T), c.nh, c.nkv, c.hd, norms ? &qn.c.view : nullptr,
                       norms ? &kn.c.view : nullptr, 1e-6f, vc.positions, inv.c.view);
    cpu().kv_store(qkv.c.view.rows_from(0, T), c.nh, c.nkv, c.hd, kc, vc.groups[0].slot_mapping);
  }
  cpu().attention(qkv.c.view.rows_from(0, T), c.nh, c.nkv, c.hd, kc, vc, 0, scale, c.window,
                  c.softcap, out.c.view.rows_from(0, T));
  if (rope) {  // the fused op against the CPU's plain ops
    AttentionLayer l;
    l.nh = c.nh;
    l.nkv = c.nkv;
    l.hd = c.hd;
    l.q_norm = norms ? &qn.g.view : nullptr;
    l.k_norm = norms ? &kn.g.view : nullptr;
    l.eps = 1e-6f;
    l.inv_freq = inv.g.view;
    l.scale = scale;
    l.window = c.window;
    l.softcap = c.softcap;
    cuda()->rope_store_attention(qkv.g.view, l, kg, vg, out.g.view);
  } else {
    cuda()->attention(qkv.g.view, c.nh, c.nkv, c.hd, kg, vg, 0, scale, c.window, c.softcap,
                      out.g.view);
  }
  auto g = read(*cuda(), out.g, DType::bf16);
  auto r = read(cpu(), out.c, DType::bf16);
  std::vector<float> gr(g.begin(), g.begin() + static_cast<size_t>(T) * out_cols);
  std::vector<float> rr(r.begin(), r.begin() + static_cast<size_t>(T) * out_cols);
  EXPECT_LT(rel_err(gr, rr), 1e-2)
      << "nh " << c.nh << " nkv " << c.nkv << " hd " << c.hd << " window " << c.window
      << " softcap " << c.softcap << (c.causal ? "" : " bidirectional");
  // Per-sequence check, so that a wrong short sequence does not hide behind a long one.
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    const size_t a = static_cast<size_t>(hb.seq_q_start[s]) * out_cols;
    const size_t e = a + static_cast<size_t>(hb.seq_q_len[s]) * out_cols;
    EXPECT_LT(rel_err({gr.begin() + a, gr.begin() + e}, {rr.begin() + a, rr.begin() + e}), 1e-2)
        << "sequence " << s << " (q " << c.seqs[s].q_len << ", kv " << c.seqs[s].kv_len << ")";
  }
  if (rope) {  // the new tokens' k and v as stored
    const auto kgh = read(*cuda(), k.g, c.kv_dt), kch = read(cpu(), k.c, c.kv_dt);
    const auto vgh = read(*cuda(), v.g, c.kv_dt), vch = read(cpu(), v.c, c.kv_dt);
    std::vector<float> a, b, av, bv;
    for (int t = 0; t < T; ++t) {
      const size_t o = static_cast<size_t>(hb.groups[0].slot_mapping[t]) * slot_elems;
      a.insert(a.end(), kgh.begin() + o, kgh.begin() + o + slot_elems);
      b.insert(b.end(), kch.begin() + o, kch.begin() + o + slot_elems);
      av.insert(av.end(), vgh.begin() + o, vgh.begin() + o + slot_elems);
      bv.insert(bv.end(), vch.begin() + o, vch.begin() + o + slot_elems);
    }
    EXPECT_LT(rel_err(a, b), 1e-2) << "stored k";
    EXPECT_EQ(av, bv) << "stored v";
#ifdef TESSERA_HAVE_CUDA
    // One new token per sequence: the decode kernel did the rope and the store itself (qkv kept
    // its unrotated q and k); the plain ops' kernels give the same bits.
    const bool all_single =
        std::all_of(c.seqs.begin(), c.seqs.end(), [](const SeqSpec& q) { return q.q_len == 1; });
    if (all_single) {
      auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i)
          if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
        return true;
      };
      Pair out2 = random_pair(Tg, out_cols, DType::bf16);
      poison(out2);
      cuda()->qk_norm_rope(qkv.g.view, c.nh, c.nkv, c.hd, norms ? &qn.g.view : nullptr,
                           norms ? &kn.g.view : nullptr, 1e-6f, vg.positions, inv.g.view);
      cuda()->kv_store(qkv.g.view, c.nh, c.nkv, c.hd, kg, vg.groups[0].slot_mapping);
      cuda()->attention(qkv.g.view, c.nh, c.nkv, c.hd, kg, vg, 0, scale, c.window, c.softcap,
                        out2.g.view);
      EXPECT_TRUE(same(read(*cuda(), out2.g, DType::bf16), g)) << "attention, rope fused vs not";
      EXPECT_TRUE(same(read(*cuda(), k.g, c.kv_dt), kgh)) << "k cache, rope fused vs not";
      EXPECT_TRUE(same(read(*cuda(), v.g, c.kv_dt), vgh)) << "v cache, rope fused vs not";
    }
#endif
  }
  // Padding rows (graph buckets) attend to nothing: zeros, not NaN.
  for (size_t i = static_cast<size_t>(T) * out_cols; i < g.size(); ++i)
    ASSERT_EQ(g[i], 0.f) << "padding row element " << i;
#ifdef TESSERA_HAVE_CUDA
  ctl->graphs = old_graphs;
#endif
}

const std::vector<SeqSpec> kMixed = {{600, 600}, {1, 1000}, {37, 700}, {1, 5},
                                     {1, 3000},  {2, 2},    {130, 130}};

TEST(CudaAttention, GemmaShapeMixedBatchFullAndSliding) {
  TS_REQUIRE_CUDA();
  for (int window : {0, 512})
    for (float cap : {0.f, 50.f}) run_case({4, 1, 256, window, cap, DType::bf16, kMixed});
}

// Few row tiles: the prefill kernel splits each row tile's keys and a merge kernel combines them.
TEST(CudaAttention, ShortBatchesSplitTheKeys) {
  TS_REQUIRE_CUDA();
  run_case({4, 1, 256, 0, 0.f, DType::bf16, {{300, 300}}});
  run_case({4, 1, 256, 512, 0.f, DType::bf16, {{600, 600}, {1, 1000}}});
  run_case({4, 1, 256, 512, 30.f, DType::bf16, {{37, 700}, {2, 2}}});
  run_case({8, 2, 128, 0, 0.f, DType::bf16, {{513, 1100}}});
}

TEST(CudaAttention, OtherHeadShapes) {
  TS_REQUIRE_CUDA();
  run_case({8, 2, 128, 0, 0.f, DType::bf16, kMixed});
  run_case({4, 4, 64, 100, 0.f, DType::bf16, {{300, 300}, {1, 450}, {17, 260}}});
  run_case({14, 2, 64, 0, 0.f, DType::bf16, {{77, 77}, {1, 33}}});  // 7 q heads per kv head
}

TEST(CudaAttention, GenericPathF32CacheAndSmallHeads) {
  TS_REQUIRE_CUDA();
  run_case({4, 1, 256, 512, 0.f, DType::f32, {{40, 600}, {1, 700}}});
  run_case({4, 1, 32, 64, 0.f, DType::bf16, {{100, 100}, {1, 90}, {3, 70}}});  // gemma3-tiny
}

TEST(CudaAttention, DecodeOnlyBatchesLongContexts) {
  TS_REQUIRE_CUDA();
  run_case({4, 1, 256, 0, 0.f, DType::bf16, {{1, 4100}, {1, 1}, {1, 129}, {1, 128}, {1, 257}}});
  run_case({4, 1, 256, 512, 0.f, DType::bf16, {{1, 4100}, {1, 513}, {1, 640}}});
}

TEST(CudaAttention, PaddedDecodeBucketAttendsToNothing) {
  TS_REQUIRE_CUDA();
  // Three sequences pad to a bucket of four: the padding row must come out as zeros.
  run_case({4, 1, 256, 512, 0.f, DType::bf16, {{1, 700}, {1, 20}, {1, 513}}}, false);
  run_case({4,
            1,
            256,
            0,
            0.f,
            DType::bf16,
            {{1, 9}, {1, 20}, {1, 33}, {1, 44}, {1, 55}, {1, 66}, {1, 77}, {1, 88}, {1, 99}}},
           false);
}

// Bidirectional attention (BatchView::causal off: EmbeddingGemma's whole prompts), against the
// CPU op (itself checked against a dense reference of the mask, tests/backend): full layers and
// sliding ones (257 = EmbeddingGemma's 512 // 2 + 1; 5, as in the embedding fixture), the
// prefill kernel with and without split keys, GQA, after a cached prefix (the op allows it),
// single-token sequences (the decode kernel: the same keys in both modes), the generic kernel
// (f32 cache, head_dim 16 as the fixture's) and the fused rope + store path.
TEST(CudaAttention, BidirectionalPrefill) {
  TS_REQUIRE_CUDA();
  const std::vector<SeqSpec> whole = {{600, 600}, {1, 1}, {37, 37}, {130, 130}, {2, 2}, {1, 700}};
  for (int window : {0, 257, 5}) {
    run_case({4, 1, 256, window, 0.f, DType::bf16, whole, false});
    run_case({4, 1, 256, window, 0.f, DType::bf16, {{300, 300}}, false});  // split keys
  }
  run_case({4, 1, 256, 257, 30.f, DType::bf16, {{41, 41}, {23, 23}}, false});
  run_case({8, 2, 128, 0, 0.f, DType::bf16, {{513, 513}}, false});
  run_case({8, 2, 128, 257, 0.f, DType::bf16, {{300, 300}, {77, 77}}, false});
  run_case({4, 4, 64, 100, 0.f, DType::bf16, {{300, 300}, {17, 260}}, false});
  run_case({14, 2, 64, 5, 0.f, DType::bf16, {{77, 77}, {1, 33}}, false});
  run_case({4, 1, 256, 257, 0.f, DType::f32, {{40, 600}, {1, 1}}, false});
  run_case({4, 2, 16, 5, 0.f, DType::bf16, {{41, 41}, {23, 23}, {5, 5}}, false});
  run_case({4, 1, 256, 257, 0.f, DType::bf16, {{300, 300}, {1, 1}}, false}, true, true, true);
}

// Decode steps as the decoder runs them: rope + kv store, then the decode attention reading the
// new key (in the first, a middle or the last split, or alone in a split of its own).
TEST(CudaAttention, DecodeAfterRopeAndKvStore) {
  TS_REQUIRE_CUDA();
  const std::vector<SeqSpec> seqs = {{1, 1}, {1, 60}, {1, 64}, {1, 65}, {1, 133}, {1, 700}};
  run_case({4, 1, 256, 0, 0.f, DType::bf16, seqs}, true, true, true);
  run_case({4, 1, 256, 512, 0.f, DType::bf16, seqs}, true, true, true);
  run_case({4, 1, 256, 512, 0.f, DType::bf16, {{1, 4100}, {1, 513}}}, false, true, true);
  run_case({8, 2, 128, 0, 0.f, DType::bf16, seqs}, true, true, false);
  run_case({14, 2, 64, 0, 0.f, DType::bf16, {{1, 77}, {1, 33}}}, true, true, true);
}

}  // namespace
}  // namespace tessera::cudatest
