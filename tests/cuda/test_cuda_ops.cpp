// The op harness: every CUDA op against the CPU op on fresh random inputs, at Gemma-3-1B shapes
// (hidden 1152, 4 q heads / 1 kv head of 256, intermediate 6912) and awkward ones (odd sizes,
// strided views, rows that miss the vector paths). Skips without a GPU.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "cuda_test_util.h"
#include "tessera/error.h"
#ifdef TESSERA_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace tessera::cudatest {

ComputeBackend& cpu() {
  static auto b = make_cpu_backend();
  return *b;
}
ComputeBackend* cuda() {
  static auto b = make_cuda_backend();
  return b.get();
}

namespace {

constexpr double kBf16Tol = 1e-2;

DeviceArray upload_i32(ComputeBackend& be, const std::vector<int32_t>& v) {
  DeviceArray a =
      be.alloc_array(1, static_cast<int64_t>(std::max<size_t>(v.size(), 1)), DType::i32, "ids");
  if (!v.empty()) be.copy_to_device(a.view.data, v.data(), v.size() * 4);
  return a;
}

TEST(CudaOps, RmsNorm) {
  TS_REQUIRE_CUDA();
  struct Case {
    int rows, cols;
    DType in, out;
  };
  for (Case c : {Case{1, 1152, DType::f32, DType::bf16}, Case{37, 1152, DType::f32, DType::bf16},
                 Case{5, 5000, DType::bf16, DType::f32}, Case{3, 100, DType::bf16, DType::bf16}}) {
    Pair x = random_pair(c.rows, c.cols, c.in, 3.f);
    Pair w = make_pair(1, c.cols, DType::f32, randn(c.cols, 0.3f, 1.f));
    Pair out = random_pair(c.rows, c.cols, c.out);
    poison(out);
    cpu().rms_norm(x.c.view, w.c.view, 1e-6f, out.c.view);
    cuda()->rms_norm(x.g.view, w.g.view, 1e-6f, out.g.view);
    EXPECT_LT(pair_err(out), c.out == DType::f32 ? 1e-5 : kBf16Tol) << c.rows << "x" << c.cols;
  }
}

TEST(CudaOps, AddRmsNorm) {
  TS_REQUIRE_CUDA();
  for (int variant = 0; variant < 4; ++variant) {
    const bool with_wy = variant & 1, with_out = variant & 2;
    for (int cols : {1152, 4500, 77}) {
      const int rows = 19;
      Pair res = random_pair(rows, cols, DType::f32, 2.f);
      Pair y = random_pair(rows, cols, DType::bf16, 1.f);
      Pair wy = make_pair(1, cols, DType::f32, randn(cols, 0.2f, 1.f));
      Pair wo = make_pair(1, cols, DType::f32, randn(cols, 0.2f, 1.f));
      Pair out = random_pair(rows, cols, DType::bf16);
      poison(out);
      cpu().add_rms_norm(res.c.view, y.c.view, with_wy ? &wy.c.view : nullptr,
                         with_out ? &wo.c.view : nullptr, 1e-6f, out.c.view);
      cuda()->add_rms_norm(res.g.view, y.g.view, with_wy ? &wy.g.view : nullptr,
                           with_out ? &wo.g.view : nullptr, 1e-6f, out.g.view);
      EXPECT_LT(pair_err(res), 1e-5) << "residual, variant " << variant << " cols " << cols;
      if (with_out) {
        EXPECT_LT(pair_err(out), kBf16Tol) << "out, variant " << variant;
      }
    }
  }
}

TEST(CudaOps, QkNormRope) {
  TS_REQUIRE_CUDA();
  struct Case {
    int T, nh, nkv, hd, extra_cols;
    bool qn, kn;
  };
  for (Case c : {Case{37, 4, 1, 256, 0, true, true}, Case{1, 4, 1, 256, 0, true, true},
                 Case{9, 4, 1, 32, 0, false, false}, Case{5, 8, 2, 128, 16, true, false}}) {
    const int cols = (c.nh + 2 * c.nkv) * c.hd;
    Pair qkv = random_pair(c.T, cols + c.extra_cols, DType::bf16, 2.f);
    std::vector<int32_t> pos(c.T);
    std::uniform_int_distribution<int> pd(0, 30000);
    for (auto& p : pos) p = pd(rng());
    DeviceArray pc = upload_i32(cpu(), pos), pg = upload_i32(*cuda(), pos);
    std::vector<float> inv(c.hd / 2);
    for (int i = 0; i < c.hd / 2; ++i) inv[i] = std::pow(10000.f, -2.f * i / c.hd);
    Pair invp = make_pair(1, c.hd / 2, DType::f32, inv);
    Pair qn = make_pair(1, c.hd, DType::f32, randn(c.hd, 0.2f, 1.f));
    Pair kn = make_pair(1, c.hd, DType::f32, randn(c.hd, 0.2f, 1.f));
    Tensor vc = qkv.c.view.cols_from(0, cols), vg = qkv.g.view.cols_from(0, cols);
    cpu().qk_norm_rope(vc, c.nh, c.nkv, c.hd, c.qn ? &qn.c.view : nullptr,
                       c.kn ? &kn.c.view : nullptr, 1e-6f, pc.view.ptr<int32_t>(), invp.c.view);
    cuda()->qk_norm_rope(vg, c.nh, c.nkv, c.hd, c.qn ? &qn.g.view : nullptr,
                         c.kn ? &kn.g.view : nullptr, 1e-6f, pg.view.ptr<int32_t>(), invp.g.view);
    EXPECT_LT(pair_err(qkv), kBf16Tol) << "T " << c.T << " hd " << c.hd;
  }
}

TEST(CudaOps, KvStoreWritesOnlyItsSlots) {
  TS_REQUIRE_CUDA();
  for (DType kdt : {DType::bf16, DType::f32}) {
    const int nh = 4, nkv = 1, hd = 256, bs = 16, nblocks = 8, T = 21;
    const int slot_elems = nkv * hd;
    Pair qkv = random_pair(T, (nh + 2 * nkv) * hd, DType::bf16);
    Pair k = random_pair(nblocks * bs, slot_elems, kdt),
         v = random_pair(nblocks * bs, slot_elems, kdt);
    poison(k);
    poison(v);
    std::vector<int32_t> slots(nblocks * bs);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng());
    slots.resize(T);
    slots[3] = -1;  // a padding row writes nothing
    DeviceArray sc = upload_i32(cpu(), slots), sg = upload_i32(*cuda(), slots);
    KvLayerView kc{k.c.view.data, v.c.view.data, kdt, nblocks, bs, nkv, hd};
    KvLayerView kg{k.g.view.data, v.g.view.data, kdt, nblocks, bs, nkv, hd};
    cpu().kv_store(qkv.c.view, nh, nkv, hd, kc, sc.view.ptr<int32_t>());
    cuda()->kv_store(qkv.g.view, nh, nkv, hd, kg, sg.view.ptr<int32_t>());
    for (Pair* p : {&k, &v}) {
      auto g = read(*cuda(), p->g, kdt), c = read(cpu(), p->c, kdt);
      std::vector<bool> written(nblocks * bs, false);
      for (int s : slots)
        if (s >= 0) written[s] = true;
      std::vector<float> gw, cw;
      int stray = 0;
      for (int s = 0; s < nblocks * bs; ++s) {
        for (int i = 0; i < slot_elems; ++i) {
          if (written[s]) {
            gw.push_back(g[s * slot_elems + i]);
            cw.push_back(c[s * slot_elems + i]);
          } else if (!std::isnan(g[s * slot_elems + i])) {
            ++stray;
          }
        }
      }
      EXPECT_EQ(rel_err(gw, cw), 0.0);
      EXPECT_EQ(stray, 0) << "values written outside the mapped slots";
    }
  }
}

// The decoder's rope then kv_store on the same qkv run as one fused kernel on CUDA: the cache and
// the rotated qkv must match the two CPU ops.
TEST(CudaOps, RopeThenKvStoreFused) {
  TS_REQUIRE_CUDA();
  const int T = 13, nh = 4, nkv = 1, hd = 256, bs = 16, nblocks = 4;
  Pair qkv = random_pair(T, (nh + 2 * nkv) * hd, DType::bf16, 2.f);
  Pair k = random_pair(nblocks * bs, nkv * hd, DType::bf16),
       v = random_pair(nblocks * bs, nkv * hd, DType::bf16);
  std::vector<int32_t> pos(T), slots(T);
  for (int t = 0; t < T; ++t) pos[t] = 40 + t, slots[t] = (t * 5) % (nblocks * bs);
  slots[4] = -1;
  DeviceArray pc = upload_i32(cpu(), pos), pg = upload_i32(*cuda(), pos);
  DeviceArray sc = upload_i32(cpu(), slots), sg = upload_i32(*cuda(), slots);
  std::vector<float> inv(hd / 2);
  for (int i = 0; i < hd / 2; ++i) inv[i] = std::pow(10000.f, -2.f * i / hd);
  Pair invp = make_pair(1, hd / 2, DType::f32, inv);
  Pair qn = make_pair(1, hd, DType::f32, randn(hd, 0.2f, 1.f));
  Pair kn = make_pair(1, hd, DType::f32, randn(hd, 0.2f, 1.f));
  KvLayerView kc{k.c.view.data, v.c.view.data, DType::bf16, nblocks, bs, nkv, hd};
  KvLayerView kg{k.g.view.data, v.g.view.data, DType::bf16, nblocks, bs, nkv, hd};
  cpu().qk_norm_rope(qkv.c.view, nh, nkv, hd, &qn.c.view, &kn.c.view, 1e-6f, pc.view.ptr<int32_t>(),
                     invp.c.view);
  cpu().kv_store(qkv.c.view, nh, nkv, hd, kc, sc.view.ptr<int32_t>());
  cuda()->qk_norm_rope(qkv.g.view, nh, nkv, hd, &qn.g.view, &kn.g.view, 1e-6f,
                       pg.view.ptr<int32_t>(), invp.g.view);
  cuda()->kv_store(qkv.g.view, nh, nkv, hd, kg, sg.view.ptr<int32_t>());
  EXPECT_LT(pair_err(qkv), kBf16Tol);
  EXPECT_LT(pair_err(k), kBf16Tol);
  EXPECT_EQ(pair_err(v), 0.0);
}

TEST(CudaOps, GatedAct) {
  TS_REQUIRE_CUDA();
  for (Activation act : {Activation::gelu_tanh, Activation::silu}) {
    struct Case {
      int rows, I;
      DType out;
    };
    for (Case c : {Case{1, 6912, DType::bf16}, Case{33, 6912, DType::bf16},
                   Case{7, 100, DType::bf16}, Case{4, 64, DType::f32}}) {
      Pair gu = random_pair(c.rows, 2 * c.I, DType::bf16, 2.f);
      Pair out = random_pair(c.rows, c.I, c.out);
      poison(out);
      cpu().gated_act(gu.c.view, act, out.c.view);
      cuda()->gated_act(gu.g.view, act, out.g.view);
      EXPECT_LT(pair_err(out), c.out == DType::f32 ? 1e-5 : kBf16Tol) << c.rows << "x" << c.I;
    }
  }
}

TEST(CudaOps, Softcap) {
  TS_REQUIRE_CUDA();
  Pair x = random_pair(3, 1001, DType::f32, 40.f);
  cpu().softcap(x.c.view, 30.f);
  cuda()->softcap(x.g.view, 30.f);
  EXPECT_LT(pair_err(x), 1e-6);
}

TEST(CudaOps, EmbedMatchesGemmaRounding) {
  TS_REQUIRE_CUDA();
  for (DType dt : {DType::bf16, DType::f32}) {
    const int V = 1000, H = 1152, n = 13;
    WeightPair table = make_weight(V, H, dt, 0.02f);
    std::vector<int32_t> ids(n);
    std::uniform_int_distribution<int> d(0, V - 1);
    for (auto& i : ids) i = d(rng());
    DeviceArray ic = upload_i32(cpu(), ids), ig = upload_i32(*cuda(), ids);
    Pair out = random_pair(n, H, DType::f32);
    poison(out);
    const float scale = std::sqrt(1152.f);
    cpu().embed(*table.c, ic.view.ptr<int32_t>(), n, scale, true, out.c.view);
    cuda()->embed(*table.g, ig.view.ptr<int32_t>(), n, scale, true, out.g.view);
    EXPECT_EQ(pair_err(out), 0.0) << dtype_name(dt);
  }
}

TEST(CudaOps, GatherRows) {
  TS_REQUIRE_CUDA();
  Pair x = random_pair(50, 1152, DType::f32);
  std::vector<int32_t> rows = {49, 0, 7, 7, 31};
  DeviceArray rc = upload_i32(cpu(), rows), rg = upload_i32(*cuda(), rows);
  Pair out = random_pair(5, 1152, DType::f32);
  poison(out);
  cpu().gather_rows(x.c.view, rc.view.ptr<int32_t>(), 5, out.c.view);
  cuda()->gather_rows(x.g.view, rg.view.ptr<int32_t>(), 5, out.g.view);
  EXPECT_EQ(pair_err(out), 0.0);
}

#ifdef TESSERA_HAVE_CUDA
// Every GEMM path (auto, GEMV, cuBLASLt, tiled) at decode, prefill and LM-head shapes.
TEST(CudaOps, LinearAllPaths) {
  TS_REQUIRE_CUDA();
  auto* ctl = cuda::tuning(*cuda());
  ASSERT_NE(ctl, nullptr);
  struct Case {
    int M, N, K;
    DType out;
    bool bias;
  };
  const Case cases[] = {{1, 1536, 1152, DType::bf16, false},
                        {3, 1152, 1024, DType::bf16, false},
                        {8, 13824, 1152, DType::bf16, false},
                        {5, 1152, 6912, DType::bf16, true},
                        {9, 2048, 1152, DType::bf16, false},
                        {64, 2048, 1152, DType::bf16, true},
                        {300, 1536, 1152, DType::bf16, false},
                        {7, 100, 72, DType::bf16, false},
                        {3, 50, 30, DType::bf16, false},
                        {2, 32768, 1152, DType::f32, false},
                        {128, 4096, 1152, DType::f32, false},
                        // M = 1 at the down projection's shape (the streaming kernel's K split
                        // in 4 slices), and uneven slices (862 = 215 + 216 + 215 + 216 columns)
                        {1, 1152, 6912, DType::bf16, true},
                        {1, 1152, 6896, DType::f32, false}};
  for (const Case& c : cases) {
    WeightPair w = make_weight(c.N, c.K, DType::bf16);
    Pair x = random_pair(c.M, c.K, DType::bf16);
    Pair bias = make_pair(1, c.N, DType::f32, randn(c.N, 0.5f));
    Pair ref = random_pair(c.M, c.N, c.out);
    cpu().linear(x.c.view, *w.c, c.bias ? &bias.c.view : nullptr, ref.c.view);
    const auto want = read(cpu(), ref.c, c.out);
    // The GEMV path with each GEMV kernel: one row per warp, streaming, tensor cores, auto.
    using cuda::GemvKernel;
    using cuda::LinearPath;
    const std::pair<LinearPath, GemvKernel> runs[] = {
        {LinearPath::automatic, GemvKernel::automatic}, {LinearPath::gemv, GemvKernel::rows},
        {LinearPath::gemv, GemvKernel::stream},         {LinearPath::gemv, GemvKernel::mma},
        {LinearPath::gemv, GemvKernel::automatic},      {LinearPath::gemv, GemvKernel::cores},
        {LinearPath::cublaslt, GemvKernel::automatic},  {LinearPath::tiled, GemvKernel::automatic}};
    for (const auto& [path, kind] : runs) {
      Pair out = random_pair(c.M, c.N, c.out);
      poison(out);
      ctl->linear = path;
      ctl->gemv = kind;
      cuda()->linear(x.g.view, *w.g, c.bias ? &bias.g.view : nullptr, out.g.view);
      *ctl = cuda::CudaTuning{};
      EXPECT_LT(rel_err(read(*cuda(), out.g, c.out), want), c.out == DType::f32 ? 1e-4 : kBf16Tol)
          << "M " << c.M << " N " << c.N << " K " << c.K << " path " << static_cast<int>(path)
          << " kind " << static_cast<int>(kind);
    }
  }
}
#endif

// Decode-sized batches: add_rms_norm followed by a GEMV on its output runs as one kernel (the
// GEMV computes the norm), and a gate_up GEMV followed by gated_act as another (the GEMV's
// epilogue). Both must match the CPU ops, and match the CUDA backend's own unfused kernels (with
// the same GEMV kernel) bit for bit: the fused code runs their arithmetic -- except the streaming
// GEMV at M = 1, which applies the norm's scales after its dot products (DEFER in gemv_stream.cu:
// its input is not rounded to bf16), so there it must agree within bf16 rounding. With and without
// the norm on y, with a bias, for M = 1, 2 and 5; and an LM head (f32 logits, N >= 65536: fused,
// the streaming GEMV with the norm as its prologue, whose greedy pick a greedy sample() then
// takes; unfused, the norm kernel, cuBLASLt and the greedy kernel).
namespace {
// Outside the #ifdef: LmHeadGreedyPickTies below uses it too (and skips without CUDA).
// The greedy sampler's pick: the first of the largest (NaN as -inf), 0 when none.
int32_t host_argmax(const std::vector<float>& v) {
  int32_t best = -1;
  float bv = -INFINITY;
  for (size_t i = 0; i < v.size(); ++i) {
    const float x = std::isnan(v[i]) ? -INFINITY : v[i];
    if (best < 0 || x > bv) best = static_cast<int32_t>(i), bv = x;
  }
  return best < 0 ? 0 : best;
}

}  // namespace

#ifdef TESSERA_HAVE_CUDA
namespace {

struct FusedCase {
  int M, N, K;
  bool gated, w_y, bias;
  bool f32_out = false;  // an LM head: f32 logits (its fused path is the streaming GEMV at M = 1)
};

struct FusedRun {
  std::vector<float> res, h, out;
  int32_t pick = -1;  // f32_out: the greedy sample of row 0
};

// The fused op of the case on `be` (norm_linear, norm_linear_gated or, with f32 logits,
// norm_lm_head with its greedy pick at M = 1; a gated case with a bias: the norm, then
// linear_gated with its epilogue alone); returns res, h and the layer's result.
FusedRun run_fused_case(ComputeBackend& be, const FusedCase& c, const WeightPair& w,
                        const std::vector<float>& res0, const std::vector<float>& y0,
                        const std::vector<float>& wy0, const std::vector<float>& wo0,
                        const std::vector<float>& bias0, Activation act) {
  auto arr = [&](int64_t r, int64_t cols, DType dt, const std::vector<float>& v) {
    DeviceArray a = be.alloc_array(r, cols, dt, "test");
    const auto bytes = encode(v, dt);
    be.copy_to_device(a.view.data, bytes.data(), bytes.size());
    return a;
  };
  const int64_t outc = c.gated ? c.N / 2 : c.N;
  DeviceArray res = arr(c.M, c.K, DType::f32, res0), y = arr(c.M, c.K, DType::bf16, y0);
  DeviceArray wy = arr(1, c.K, DType::f32, wy0), wo = arr(1, c.K, DType::f32, wo0);
  DeviceArray bias = arr(1, c.N, DType::f32, bias0);
  DeviceArray h = arr(c.M, c.K, DType::bf16, std::vector<float>(c.M * c.K, NAN));
  const DType out_dt = c.f32_out ? DType::f32 : DType::bf16;
  DeviceArray gu = arr(c.M, c.N, out_dt, std::vector<float>(static_cast<size_t>(c.M) * c.N, NAN));
  DeviceArray a = arr(c.M, outc, DType::bf16, std::vector<float>(c.M * outc, NAN));
  const Weight& wt = &be == &cpu() ? *w.c : *w.g;
  const ResidualNorm n{res.view, &y.view, c.w_y ? &wy.view : nullptr, wo.view, 1e-6f, h.view};
  const Tensor* b = c.bias ? &bias.view : nullptr;
  DeviceArray ids = be.alloc_array(1, c.M, DType::i32, "test ids");
  FusedRun r;
  if (c.f32_out) {
    be.norm_lm_head(n, wt, 0.f, gu.view, c.M == 1 ? ids.view.ptr<int32_t>() : nullptr);
    if (c.M == 1) be.copy_to_host(&r.pick, ids.view.data, 4);
  } else if (c.gated && c.bias) {
    be.residual_norm(n);
    be.linear_gated(h.view, wt, b, act, gu.view, a.view);
  } else if (c.gated) {
    be.norm_linear_gated(n, wt, act, gu.view, a.view);
  } else {
    be.norm_linear(n, wt, b, gu.view);
  }
  r.res = read(be, res, DType::f32);
  r.h = read(be, h, DType::bf16);
  r.out = c.gated ? read(be, a, DType::bf16) : read(be, gu, out_dt);
  return r;
}

}  // namespace

TEST(CudaOps, DecodeGemvFusions) {
  TS_REQUIRE_CUDA();
  auto* ctl = cuda::tuning(*cuda());
  ASSERT_NE(ctl, nullptr);
  const FusedCase cases[] = {
      {1, 1536, 1152, false, true, false}, {2, 1536, 1152, false, false, true},
      {5, 1152, 1152, false, true, false}, {1, 13824, 1152, true, true, false},
      {2, 13824, 1152, true, true, true},  {5, 1024, 576, true, false, false},
      {1, 2304, 6912, false, true, false}, {1, 1536, 1152, false, false, true},
      {1, 13824, 1152, true, false, true}, {1, 65544, 1152, false, true, false, true}};
  for (const FusedCase& c : cases) {
    for (Activation act : {Activation::gelu_tanh, Activation::silu}) {
      if (!c.gated && act == Activation::silu) continue;
      WeightPair w = make_weight(c.N, c.K, DType::bf16);
      const auto res0 = randn(static_cast<size_t>(c.M) * c.K, 2.f);
      const auto y0 = randn(static_cast<size_t>(c.M) * c.K);
      const auto wy0 = randn(c.K, 0.2f, 1.f), wo0 = randn(c.K, 0.2f, 1.f), b0 = randn(c.N, 0.5f);
      const FusedRun ref = run_fused_case(cpu(), c, w, res0, y0, wy0, wo0, b0, act);
      // The streaming GEMV and the tensor-core one, each fused and unfused: the same sums.
      for (cuda::GemvKernel kind : {cuda::GemvKernel::stream, cuda::GemvKernel::mma}) {
        ctl->gemv = kind;
        ctl->fusions = false;
        const FusedRun plain = run_fused_case(*cuda(), c, w, res0, y0, wy0, wo0, b0, act);
        ctl->fusions = true;
        const FusedRun fused = run_fused_case(*cuda(), c, w, res0, y0, wy0, wo0, b0, act);
        ctl->gemv = cuda::GemvKernel::automatic;
        std::ostringstream what;
        what << "kind " << static_cast<int>(kind) << " M " << c.M << " N " << c.N << " K " << c.K
             << (c.gated ? " gated" : "") << (c.w_y ? " w_y" : "") << (c.bias ? " bias" : "")
             << (act == Activation::silu ? " silu" : "") << (c.f32_out ? " f32 out" : "");
        EXPECT_LT(rel_err(fused.res, ref.res), 1e-5) << what.str();
        EXPECT_LT(rel_err(fused.h, ref.h), kBf16Tol) << what.str();
        EXPECT_LT(rel_err(fused.out, ref.out), kBf16Tol) << what.str();
        if (c.f32_out && c.M == 1) {  // each pick is the argmax of its own logits
          EXPECT_EQ(fused.pick, host_argmax(fused.out)) << what.str();
          EXPECT_EQ(plain.pick, host_argmax(plain.out)) << what.str();
        }
        if ((kind == cuda::GemvKernel::stream || c.f32_out) &&
            c.M == 1) {  // the deferred norm: v to an ulp, h, out to bf16
          EXPECT_LT(rel_err(fused.res, plain.res), 1e-6) << what.str();
          EXPECT_LT(rel_err(fused.h, plain.h), 6e-3) << what.str();
          EXPECT_LT(rel_err(fused.out, plain.out), 6e-3) << what.str();
        } else {
          EXPECT_EQ(fused.res, plain.res) << what.str();
          EXPECT_EQ(fused.h, plain.h) << what.str();
          EXPECT_EQ(fused.out, plain.out) << what.str();
        }
      }
    }
  }
}
#endif

// linear_prefetch's L2 prefetch of the next weight is only a hint: the o projection's GEMV with it
// (M = 1, the one-row kernel issuing the prefetch of gate_up's rows) gives linear()'s bits, and so
// do the shapes and dtypes where it is not issued (M = 2, an f32 weight to prefetch).
TEST(CudaOps, LinearPrefetchChangesNothing) {
  TS_REQUIRE_CUDA();
  WeightPair o = make_weight(1152, 1024, DType::bf16),
             gate_up = make_weight(13824, 1152, DType::bf16);
  WeightPair gate_up_f32 = make_weight(256, 1152, DType::f32);
  for (int M : {1, 2}) {
    for (const WeightPair* next : {&gate_up, &gate_up_f32}) {
      Pair x = random_pair(M, 1024, DType::bf16);
      Pair a = random_pair(M, 1152, DType::bf16), b = random_pair(M, 1152, DType::bf16);
      poison(a);
      poison(b);
      cuda()->linear(x.g.view, *o.g, nullptr, a.g.view);
      cuda()->linear_prefetch(x.g.view, *o.g, nullptr, b.g.view, *next->g);
      EXPECT_EQ(read(*cuda(), b.g, DType::bf16), read(*cuda(), a.g, DType::bf16))
          << "M " << M << (next == &gate_up ? "" : ", f32 next");
    }
  }
}

// The LM head's fused greedy pick breaks ties as the greedy kernel does (the lowest id), across
// the GEMV's blocks and within one: the winning row is copied to a row a third of the vocabulary
// away (another block) and to one 7 rows away (most likely the same block), one of them before it.
TEST(CudaOps, LmHeadGreedyPickTies) {
  TS_REQUIRE_CUDA();
  const int N = 65544, K = 1152;
  WeightPair w = make_weight(N, K, DType::bf16);
  auto dev = [&](const std::vector<float>& v, DType dt) {
    DeviceArray a = cuda()->alloc_array(1, static_cast<int64_t>(v.size()), dt, "test");
    const auto bytes = encode(v, dt);
    cuda()->copy_to_device(a.view.data, bytes.data(), bytes.size());
    return a;
  };
  const auto res0 = encode(randn(K, 2.f), DType::f32);
  DeviceArray res = dev(std::vector<float>(K, 0.f), DType::f32), y = dev(randn(K), DType::bf16);
  DeviceArray wo = dev(randn(K, 0.2f, 1.f), DType::f32);
  DeviceArray h = dev(std::vector<float>(K, 0.f), DType::bf16);
  DeviceArray lg = dev(std::vector<float>(N, NAN), DType::f32);
  DeviceArray ids = cuda()->alloc_array(1, 1, DType::i32, "test ids");
  // The decoder's last step: the final norm on the residual add, the LM head and its pick (fused).
  auto pick = [&](const Weight& wt, std::vector<float>* logits) {
    cuda()->copy_to_device(res.view.data, res0.data(), res0.size());
    cuda()->norm_lm_head({res.view, &y.view, nullptr, wo.view, 1e-6f, h.view}, wt, 0.f, lg.view,
                         ids.view.ptr<int32_t>());
    int32_t id = -1;
    cuda()->copy_to_host(&id, ids.view.data, 4);
    if (logits) *logits = read(*cuda(), lg, DType::f32);
    return id;
  };
  std::vector<float> logits;
  const int32_t a = pick(*w.g, &logits);
  ASSERT_EQ(a, host_argmax(logits));
  const size_t row = static_cast<size_t>(K) * 2;  // bytes of a bf16 row
  for (const int32_t b : {a >= N / 2 ? a - N / 3 : a + N / 3, a >= N / 2 ? a + 7 : a - 7}) {
    if (b < 0 || b >= N) continue;
    std::vector<char> bytes = w.bytes;
    std::copy_n(bytes.begin() + a * row, row, bytes.begin() + b * row);
    auto tied = upload_bytes(*cuda(), bytes, N, K, DType::bf16);
    const int32_t p = pick(*tied, &logits);
    ASSERT_EQ(logits[a], logits[b]) << "rows " << a << " and " << b << " should give equal logits";
    EXPECT_EQ(p, std::min(a, b)) << "tie between " << a << " and " << b;
    EXPECT_EQ(p, host_argmax(logits));
  }
}

TEST(CudaOps, LinearF32WeightsAndStridedInput) {
  TS_REQUIRE_CUDA();
  WeightPair w = make_weight(300, 200, DType::f32);
  Pair x = random_pair(4, 216, DType::bf16);  // a [4, 200] view with row stride 216
  Tensor xc = x.c.view.cols_from(0, 200), xg = x.g.view.cols_from(0, 200);
  Pair out = random_pair(4, 300, DType::bf16);
  poison(out);
  cpu().linear(xc, *w.c, nullptr, out.c.view);
  cuda()->linear(xg, *w.g, nullptr, out.g.view);
  EXPECT_LT(pair_err(out), kBf16Tol);
}

// The engine sizes its default KV cache from device_free_bytes(): it must be the GPU's free
// memory, moving with tessera's own allocations.
TEST(CudaOps, DeviceFreeBytesFollowsAllocations) {
  TS_REQUIRE_CUDA();
  const size_t before = cuda()->device_free_bytes();
  ASSERT_GT(before, size_t{1} << 30);
  size_t during = 0;
  {
    auto b = cuda()->alloc(size_t{1} << 30, "a 1 GiB test allocation");
    during = cuda()->device_free_bytes();
  }
  const size_t after = cuda()->device_free_bytes();
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(static_cast<double>(before - during) / gib, 1.0, 0.05);
  EXPECT_NEAR(static_cast<double>(after) / gib, static_cast<double>(before) / gib, 0.05);
  EXPECT_EQ(cpu().device_free_bytes(), 0u);  // the CPU backend does not claim to know
}

TEST(CudaOps, MemoryLimitFailsCleanly) {
  TS_REQUIRE_CUDA();
  MemoryTracker& t = memory_tracker(Device::cuda);
  const size_t before = t.active();
  t.set_limit(before + (64u << 20));
  try {
    auto b = cuda()->alloc(1u << 30, "a test allocation over the limit");
    t.set_limit(0);
    FAIL() << "allocation over the limit succeeded";
  } catch (const Error& e) {
    t.set_limit(0);
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("a test allocation"), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.active(), before);
  {
    auto b = cuda()->alloc(32u << 20, "tracked");
    EXPECT_EQ(t.active(), before + (32u << 20));
  }
  EXPECT_EQ(t.active(), before);
}

}  // namespace
}  // namespace tessera::cudatest
