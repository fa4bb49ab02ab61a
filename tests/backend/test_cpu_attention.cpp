// attention() and kv_store(): the SIMD path (work items, online softmax, split key ranges)
// against the scalar reference on ragged batches over a paged cache: decode of several
// sequences, chunked prefill, sliding windows with released blocks, softcapping, GQA ratios,
// f32 and bf16 KV, head dims the SIMD path takes and ones it hands back to the scalar loop; the
// bidirectional mode (and the causal one) against a dense reference of the mask.
#include <algorithm>
#include <numeric>

#include "cpu_test_util.h"

namespace tessera::cpu::test {
namespace {

struct Seq {
  int past;   // positions already cached
  int q_len;  // new tokens this step
};

struct Setup {
  int nh, nkv, hd, block_size = 16;
  DType kv_dtype;
  int window = 0;
  float softcap = 0.f;
  std::vector<Seq> seqs;
  bool causal = true;  // false: BatchView::causal off (bidirectional)
};

// Builds the cache (blocks assigned in a shuffled order, so neighbours in a sequence are not
// neighbours in memory), the batch, runs attention on the current ISA and returns out.
struct World {
  Setup s;
  int T = 0, max_blocks = 0, num_blocks = 0;
  std::vector<float> qkv;
  std::vector<float> kf, vf;
  std::vector<uint16_t> kh, vh;
  std::vector<int32_t> table, slots, positions, token_seq, q_start, q_len, kv_len;

  explicit World(const Setup& setup) : s(setup) {
    int max_ctx = 0;
    for (const Seq& q : s.seqs) {
      T += q.q_len;
      max_ctx = std::max(max_ctx, q.past + q.q_len);
    }
    max_blocks = (max_ctx + s.block_size - 1) / s.block_size;
    num_blocks = max_blocks * static_cast<int>(s.seqs.size());
    std::vector<int32_t> order(num_blocks);
    std::iota(order.begin(), order.end(), 0);
    std::reverse(order.begin(), order.end());
    for (int i = 0; i + 2 < num_blocks; i += 3) std::swap(order[i], order[i + 2]);
    table.assign(static_cast<size_t>(num_blocks), -1);
    const int per_slot = s.nkv * s.hd;
    const size_t cache = static_cast<size_t>(num_blocks) * s.block_size * per_slot;
    auto k0 = random_floats(cache, 31), v0 = random_floats(cache, 32);
    kf = k0;
    vf = v0;
    kh = to_bf16(k0);
    vh = to_bf16(v0);
    int t = 0;
    for (size_t si = 0; si < s.seqs.size(); ++si) {
      const Seq& q = s.seqs[si];
      const int ctx = q.past + q.q_len;
      for (int b = 0; b < (ctx + s.block_size - 1) / s.block_size; ++b) {
        // Blocks wholly before every new token's window are released (-1), as the KV pool does.
        const bool gone = s.window > 0 && (b + 1) * s.block_size <= q.past - s.window + 1;
        table[si * max_blocks + b] = gone ? -1 : order[si * max_blocks + b];
      }
      q_start.push_back(t);
      q_len.push_back(q.q_len);
      kv_len.push_back(ctx);
      for (int i = 0; i < q.q_len; ++i, ++t) {
        const int p = q.past + i;
        positions.push_back(p);
        token_seq.push_back(static_cast<int32_t>(si));
        slots.push_back(table[si * max_blocks + p / s.block_size] * s.block_size +
                        p % s.block_size);
      }
    }
    qkv = random_floats(static_cast<size_t>(T) * (s.nh + 2 * s.nkv) * s.hd, 33, -2.f, 2.f);
  }

  KvLayerView kv() {
    const bool bf = s.kv_dtype == DType::bf16;
    return KvLayerView{bf ? static_cast<void*>(kh.data()) : kf.data(),
                       bf ? static_cast<void*>(vh.data()) : vf.data(),
                       s.kv_dtype,
                       num_blocks,
                       s.block_size,
                       s.nkv,
                       s.hd};
  }

  BatchView batch() {
    BatchView b;
    b.num_tokens = T;
    b.num_seqs = static_cast<int>(s.seqs.size());
    b.tokens = positions.data();
    b.positions = positions.data();
    b.token_seq = token_seq.data();
    b.seq_q_start = q_start.data();
    b.seq_q_len = q_len.data();
    b.seq_kv_len = kv_len.data();
    for (int i = 0; i < b.num_seqs; ++i) {
      b.max_q_len = std::max(b.max_q_len, q_len[i]);
      b.max_kv_len = std::max(b.max_kv_len, kv_len[i]);
    }
    b.num_groups = 1;
    b.groups[0] = {table.data(), slots.data(), max_blocks};
    b.causal = s.causal;
    return b;
  }

  std::vector<float> run() {
    Tensor q{qkv.data(), DType::f32, T, (s.nh + 2 * s.nkv) * s.hd, (s.nh + 2 * s.nkv) * s.hd};
    // The new tokens' K/V go in first (as the model does), then attention reads them back.
    kv_store(q, s.nh, s.nkv, s.hd, kv(), slots.data());
    const int64_t stride = int64_t{s.nh} * s.hd + 8;
    std::vector<float> out(static_cast<size_t>(T * stride));
    poison(out);
    Tensor o{out.data(), DType::f32, T, int64_t{s.nh} * s.hd, stride};
    const float scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
    attention(q, s.nh, s.nkv, s.hd, kv(), batch(), 0, scale, s.window, s.softcap, o);
    return out;
  }
};

void check(const Setup& s, const std::string& name) {
  std::vector<float> ref;
  {
    IsaScope sc(Isa::scalar);
    World w(s);
    ref = w.run();
  }
  for (Isa isa : simd_isas()) {
    IsaScope sc(isa);
    World w(s);
    const auto got = w.run();
    expect_rows_near(ref, got, w.T, int64_t{s.nh} * s.hd, int64_t{s.nh} * s.hd + 8, 1e-5,
                     name + " on " + isa_name(isa));
  }
}

TEST(CpuAttention, DecodeSeveralSequences) {
  // Gemma-3-1B heads; one sequence long enough that its key range is split across threads.
  for (DType dt : {DType::f32, DType::bf16})
    check({4, 1, 256, 16, dt, 0, 0.f, {{0, 1}, {37, 1}, {1000, 1}, {15, 1}}},
          std::string("decode ") + (dt == DType::bf16 ? "bf16" : "f32"));
  check({4, 1, 256, 16, DType::bf16, 0, 0.f, {{2047, 1}}}, "decode, one long sequence");
}

TEST(CpuAttention, PrefillAndChunkedPrefill) {
  check({4, 1, 256, 16, DType::bf16, 0, 0.f, {{0, 130}}}, "prefill 130");
  check({4, 2, 64, 16, DType::f32, 0, 0.f, {{0, 17}, {40, 5}, {3, 1}}}, "ragged chunked prefill");
  check({8, 1, 32, 4, DType::bf16, 0, 0.f, {{0, 3}, {9, 17}}}, "8 q heads per KV head");
}

TEST(CpuAttention, SlidingWindowWithReleasedBlocks) {
  check({4, 1, 32, 16, DType::f32, 64, 0.f, {{0, 150}}}, "window 64, prefill 150");
  check({4, 1, 256, 16, DType::bf16, 64, 0.f, {{200, 1}, {130, 9}, {10, 1}}},
        "window 64, decode past released blocks");
  check({4, 1, 256, 16, DType::bf16, 512, 0.f, {{1500, 1}}}, "window 512, long decode");
}

TEST(CpuAttention, Softcap) {
  check({4, 1, 64, 16, DType::f32, 0, 5.f, {{0, 20}, {33, 1}}}, "softcap 5");
  check({4, 2, 32, 16, DType::bf16, 16, 3.f, {{50, 4}}}, "softcap 3, window 16");
}

TEST(CpuAttention, HeadDimsTheSimdPathHandsBack) {
  check({4, 1, 48, 16, DType::f32, 0, 0.f, {{5, 3}}}, "head_dim 48");
  check({2, 2, 8, 16, DType::bf16, 0, 0.f, {{0, 4}}}, "head_dim 8");
}

// The mask written out once more, as transformers builds it (masking_utils' causal and sliding
// masks; Gemma 3's bidirectional or_mask_functions), on dense rows of K/V read back from the
// cache: each token's output in double. The scalar path must match it as closely as the SIMD.
std::vector<float> dense_reference(World& w) {
  const Setup& s = w.s;
  const int rep = s.nh / s.nkv, cols = (s.nh + 2 * s.nkv) * s.hd;
  const int64_t stride = int64_t{s.nh} * s.hd + 8;
  std::vector<float> out(static_cast<size_t>(w.T * stride));
  poison(out);
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
  auto cached = [&](const std::vector<float>& f, const std::vector<uint16_t>& h, int64_t i) {
    return s.kv_dtype == DType::bf16 ? bf16_to_f32(h[i]) : f[i];
  };
  for (int t = 0; t < w.T; ++t) {
    const int sq = w.token_seq[t], p = w.positions[t], kv_len = w.kv_len[sq];
    for (int h = 0; h < s.nh; ++h) {
      std::vector<double> sc(kv_len, -INFINITY), acc(s.hd, 0.0);
      double mx = -INFINITY;
      for (int j = 0; j < kv_len; ++j) {
        const bool visible = s.causal ? j <= p && (s.window == 0 || j > p - s.window)
                                      : s.window == 0 || std::abs(p - j) < s.window;
        if (!visible) continue;
        const int64_t slot = int64_t{w.table[sq * w.max_blocks + j / s.block_size]} * s.block_size +
                             j % s.block_size;
        const int64_t base = slot * s.nkv * s.hd + int64_t{h / rep} * s.hd;
        double dot = 0;
        for (int d = 0; d < s.hd; ++d)
          dot += double{w.qkv[t * cols + h * s.hd + d]} * cached(w.kf, w.kh, base + d);
        sc[j] = dot * scale;
        if (s.softcap > 0) sc[j] = std::tanh(sc[j] / s.softcap) * s.softcap;
        mx = std::max(mx, sc[j]);
      }
      double sum = 0;
      for (int j = 0; j < kv_len; ++j) {
        if (sc[j] == -INFINITY) continue;
        const double e = std::exp(sc[j] - mx);
        sum += e;
        const int64_t slot = int64_t{w.table[sq * w.max_blocks + j / s.block_size]} * s.block_size +
                             j % s.block_size;
        const int64_t base = slot * s.nkv * s.hd + int64_t{h / rep} * s.hd;
        for (int d = 0; d < s.hd; ++d) acc[d] += e * cached(w.vf, w.vh, base + d);
      }
      for (int d = 0; d < s.hd; ++d)
        out[t * stride + h * s.hd + d] = static_cast<float>(acc[d] / sum);
    }
  }
  return out;
}

// The scalar path and every SIMD one against dense_reference.
void check_dense(const Setup& s, const std::string& name) {
  std::vector<Isa> isas = simd_isas();
  isas.insert(isas.begin(), Isa::scalar);
  for (Isa isa : isas) {
    IsaScope sc(isa);
    World w(s);
    const auto got = w.run();
    expect_rows_near(dense_reference(w), got, w.T, int64_t{s.nh} * s.hd, int64_t{s.nh} * s.hd + 8,
                     1e-5, name + " on " + isa_name(isa));
  }
}

// Bidirectional attention (BatchView::causal false): each token also sees its sequence's later
// keys, all of them on full layers and those with |p - key| < window on sliding ones. Whole
// prompts as EmbeddingGemma's run (and after a cached prefix, which the op allows too), ragged,
// GQA, bf16 and f32 caches, head dims the SIMD path takes and one it hands back; one sequence
// long enough for the split key ranges.
TEST(CpuAttention, BidirectionalMatchesDenseReference) {
  for (int window : {0, 5, 40}) {
    const std::string w = " window " + std::to_string(window);
    check_dense({4, 2, 32, 16, DType::f32, window, 0.f, {{0, 41}, {0, 1}, {0, 23}}, false},
                "ragged whole prompts" + w);
    check_dense({4, 1, 256, 16, DType::bf16, window, 0.f, {{0, 130}, {0, 5}}, false},
                "Gemma head dim, bf16" + w);
    check_dense({8, 1, 48, 4, DType::f32, window, 0.f, {{9, 17}, {0, 3}}, false},
                "head dim 48, after a cached prefix" + w);
    check_dense({4, 2, 64, 16, DType::f32, window, 3.f, {{0, 33}}, false}, "softcap 3" + w);
    // One work item over many keys: its key range is split across threads and merged.
    check_dense({4, 1, 64, 16, DType::bf16, window, 0.f, {{1200, 4}}, false}, "split keys" + w);
  }
  check_dense({4, 1, 64, 16, DType::bf16, 0, 0.f, {{0, 1500}}, false}, "one long prompt");
  // The causal mode against the same reference, so that the reference's mask is the one that
  // tells the two apart.
  check_dense({4, 2, 32, 16, DType::f32, 5, 0.f, {{0, 41}, {3, 20}}, true}, "causal window 5");
}

// A bidirectional token sees later keys: the first token's output changes with the last key.
TEST(CpuAttention, BidirectionalSeesLaterKeys) {
  struct Setup s {
    2, 1, 32, 16, DType::f32, 0, 0.f, {{0, 8}}, false
  };  // not gtest's Setup()
  World a(s), b(s);
  const int cols = (s.nh + 2 * s.nkv) * s.hd;
  for (int d = 0; d < s.hd; ++d) b.qkv[7 * cols + (s.nh + s.nkv) * s.hd + d] += 1.f;  // v of 7
  const auto oa = a.run(), ob = b.run();
  EXPECT_NE(oa[0], ob[0]) << "token 0 did not see token 7's value";
  s.causal = true;
  World c(s), d(s);
  for (int e = 0; e < s.hd; ++e) d.qkv[7 * cols + (s.nh + s.nkv) * s.hd + e] += 1.f;
  EXPECT_EQ(c.run()[0], d.run()[0]) << "causal token 0 saw token 7";
}

// kv_store into a bf16 cache rounds exactly as f32_to_bf16 (nearest even, NaN kept, ties), and
// leaves every slot it was not asked to write alone.
TEST(CpuAttention, KvStoreRoundsLikeScalar) {
  const int nh = 2, nkv = 1, hd = 40, T = 3;
  const int cols = (nh + 2 * nkv) * hd;
  auto qkv = random_floats(static_cast<size_t>(T * cols), 99, -3.f, 3.f);
  // Ties (exactly halfway between two bf16 values), infinities, NaN, subnormals.
  qkv[nh * hd + 0] = 1.0f + std::ldexp(1.0f, -8);
  qkv[nh * hd + 1] = 1.0f + 3 * std::ldexp(1.0f, -8);
  qkv[nh * hd + 2] = std::numeric_limits<float>::infinity();
  qkv[nh * hd + 3] = std::numeric_limits<float>::quiet_NaN();
  qkv[nh * hd + 4] = 1e-40f;
  const std::vector<int32_t> slots = {5, -1, 0};
  auto run = [&] {
    std::vector<uint16_t> k(8 * nkv * hd, 0xBEEF), v(k.size(), 0xBEEF);
    KvLayerView kv{k.data(), v.data(), DType::bf16, 1, 8, nkv, hd};
    kv_store(Tensor{qkv.data(), DType::f32, T, cols, cols}, nh, nkv, hd, kv, slots.data());
    k.insert(k.end(), v.begin(), v.end());
    return k;
  };
  std::vector<uint16_t> ref;
  {
    IsaScope s(Isa::scalar);
    ref = run();
  }
  EXPECT_EQ(ref[5 * hd + 0], f32_to_bf16(1.0f));
  EXPECT_EQ(ref[5 * hd + 1], f32_to_bf16(1.0f + std::ldexp(1.0f, -6)));
  EXPECT_EQ(ref[1 * hd], 0xBEEF);  // slot 1 not written
  for (Isa isa : simd_isas()) {
    IsaScope s(isa);
    EXPECT_EQ(run(), ref) << isa_name(isa);
  }
}

}  // namespace
}  // namespace tessera::cpu::test
