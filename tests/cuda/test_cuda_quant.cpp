// The op harness for quantized weights (MLX affine, ComputeBackend::upload_quantized): every CUDA
// op on packed weights against the CPU op on the same packed weights, at Gemma-3-1B shapes
// (hidden 1152, qkv 1536, gate_up 13824, a 65544-row LM head): every bits value, the three
// group sizes, f32 scales, stacked and mixed-format parts; the packed GEMV (M <= 16) alone and
// with the decode graph's fusions (norm prologue, gated epilogue, the LM head's greedy pick); the
// dequantized batched products (M = 17, 64, 300); the quantized embedding gather.
#include <sstream>

#include "cuda_test_util.h"
#include "quant/affine.h"

namespace tessera::cudatest {

namespace {

constexpr double kBf16Tol = 1e-2;

// A random [rows, cols] matrix quantized by MLX's algorithm, scales and biases in scale_dt.
struct QuantHost {
  std::vector<uint32_t> packed;
  std::vector<char> scales, biases;
  HostQuantTensor t;
};

std::unique_ptr<QuantHost> make_quant(int64_t rows, int64_t cols, int bits, int gs,
                                      DType scale_dt = DType::bf16) {
  auto q = std::make_unique<QuantHost>();
  const int64_t wpr = quant::words_per_row(cols, bits), G = cols / gs;
  q->packed.resize(static_cast<size_t>(rows * wpr));
  std::vector<float> s(static_cast<size_t>(rows * G)), b(s.size());
  const auto w = randn(static_cast<size_t>(rows * cols), 0.05f);
  for (int64_t r = 0; r < rows; ++r)
    quant::quantize_row(w.data() + r * cols, cols, bits, gs, q->packed.data() + r * wpr,
                        s.data() + r * G, b.data() + r * G);
  q->scales = encode(s, scale_dt);
  q->biases = encode(b, scale_dt);
  q->t = {q->packed.data(), q->scales.data(), q->biases.data(), scale_dt, rows, cols,
          {bits, gs},       "test.quant"};
  return q;
}

struct QuantPair {
  std::vector<std::unique_ptr<QuantHost>> host;
  std::unique_ptr<Weight> c, g;
};

// The parts stacked along rows on both backends: one weight when they share a format (the CPU
// takes only that), else each part its own (Weight::parts), as the weight loader does.
QuantPair quant_pair(std::vector<std::unique_ptr<QuantHost>> host) {
  QuantPair p;
  p.host = std::move(host);
  bool same = true;
  std::vector<const HostQuantTensor*> parts;
  for (const auto& h : p.host) {
    parts.push_back(&h->t);
    same = same && h->t.format == p.host[0]->t.format;
  }
  if (same) {
    p.c = cpu().upload_quantized(parts, DType::bf16, "test");
  } else {
    std::vector<std::unique_ptr<Weight>> ws;
    for (const HostQuantTensor* t : parts)
      ws.push_back(cpu().upload_quantized({&t, 1}, DType::bf16, "test"));
    p.c = ComputeBackend::stack_parts(std::move(ws));
  }
  p.g = cuda()->upload_quantized(parts, DType::bf16, "test");
  return p;
}

QuantPair quant_pair(int64_t rows, int64_t cols, int bits, int gs, DType sdt = DType::bf16) {
  std::vector<std::unique_ptr<QuantHost>> h;
  h.push_back(make_quant(rows, cols, bits, gs, sdt));
  return quant_pair(std::move(h));
}

void check_linear(const QuantPair& w, int M, DType out_dt, bool bias, const std::string& what) {
  const int64_t N = w.c->rows, K = w.c->cols;
  Pair x = random_pair(M, K, DType::bf16);
  Pair b = make_pair(1, N, DType::f32, randn(N, 0.5f));
  Pair out = random_pair(M, N, out_dt);
  poison(out);
  cpu().linear(x.c.view, *w.c, bias ? &b.c.view : nullptr, out.c.view);
  cuda()->linear(x.g.view, *w.g, bias ? &b.g.view : nullptr, out.g.view);
  // f32 out from the packed GEMV is the f32 product; the batched path rounds W to bf16.
  const double tol = out_dt == DType::f32 && M <= 16 ? 1e-4 : kBf16Tol;
  EXPECT_LT(pair_err(out), tol) << what << " M " << M;
}

}  // namespace

#ifdef TESSERA_HAVE_CUDA
TEST(CudaQuant, LinearEveryFormat) {
  TS_REQUIRE_CUDA();
  struct Case {
    int N, K, bits, gs;
    DType sdt;
  };
  const Case cases[] = {{1536, 1152, 4, 64, DType::bf16},
                        {1536, 1152, 8, 64, DType::bf16},
                        {1152, 1024, 2, 32, DType::bf16},
                        {1152, 1024, 3, 64, DType::bf16},
                        {1152, 1024, 5, 128, DType::bf16},
                        {1152, 1024, 6, 32, DType::bf16},
                        {1152, 6912, 4, 128, DType::bf16},
                        {1152, 6912, 8, 32, DType::bf16},
                        {1536, 1152, 4, 32, DType::f32},
                        {1536, 1152, 8, 128, DType::f32},
                        {100, 256, 4, 64, DType::bf16},
                        {37, 384, 8, 64, DType::f32},
                        // GGUF's affine forms: Q6_K (6-bit g16), Q5_K (5-bit g32), f32 scales
                        {1152, 1024, 6, 16, DType::f32},
                        {1536, 1152, 5, 32, DType::f32},
                        {1152, 6912, 8, 16, DType::f32}};
  for (const Case& c : cases) {
    const QuantPair w = quant_pair(c.N, c.K, c.bits, c.gs, c.sdt);
    std::ostringstream what;
    what << "N " << c.N << " K " << c.K << " bits " << c.bits << " group " << c.gs
         << (c.sdt == DType::f32 ? " f32 scales" : "");
    for (int M : {1, 2, 5, 16, 17, 64, 300}) {
      check_linear(w, M, DType::bf16, M % 2 == 1, what.str());
      if (M == 1 || M == 16 || M == 64) check_linear(w, M, DType::f32, false, what.str());
    }
  }
}

TEST(CudaQuant, StackedAndMixedParts) {
  TS_REQUIRE_CUDA();
  for (bool mixed : {false, true}) {
    std::vector<std::unique_ptr<QuantHost>> h;
    h.push_back(make_quant(1024, 1152, 4, 64));
    h.push_back(make_quant(256, 1152, mixed ? 8 : 4, 64));
    h.push_back(make_quant(256, 1152, mixed ? 6 : 4, mixed ? 32 : 64));
    const QuantPair w = quant_pair(std::move(h));
    EXPECT_EQ(w.g->parts.size(), mixed ? 3u : 0u);
    for (int M : {1, 2, 17}) check_linear(w, M, DType::bf16, true, mixed ? "mixed" : "stacked");
  }
}

// The fused decode ops on packed weights: norm_linear, norm_linear_gated, linear_gated and the
// LM head (f32 logits, the greedy pick at M = 1) against the CPU's compositions.
TEST(CudaQuant, DecodeFusions) {
  TS_REQUIRE_CUDA();
  struct Case {
    int M, N, K, bits, gs;
    int op;  // 0 norm_linear, 1 norm_linear_gated, 2 linear_gated, 3 norm_lm_head
  };
  const Case cases[] = {
      {1, 1536, 1152, 4, 64, 0},  {2, 1536, 1152, 8, 64, 0},  {5, 1152, 1152, 4, 32, 0},
      {1, 13824, 1152, 4, 64, 1}, {2, 13824, 1152, 8, 64, 1}, {8, 2048, 1152, 4, 128, 1},
      {1, 13824, 1152, 4, 64, 2}, {3, 2048, 1152, 8, 32, 2},  {16, 2048, 1152, 4, 64, 2},
      {1, 65544, 1152, 4, 64, 3}, {1, 65544, 1152, 8, 64, 3}, {2, 65544, 1152, 4, 64, 3}};
  for (const Case& c : cases) {
    const QuantPair w = quant_pair(c.N, c.K, c.bits, c.gs);
    const bool gated = c.op == 1 || c.op == 2, head = c.op == 3;
    const int64_t oc = gated ? c.N / 2 : c.N;
    const auto res0 = randn(static_cast<size_t>(c.M) * c.K, 2.f);
    const auto y0 = randn(static_cast<size_t>(c.M) * c.K);
    const auto wy0 = randn(c.K, 0.2f, 1.f), wo0 = randn(c.K, 0.2f, 1.f);
    Pair res = make_pair(c.M, c.K, DType::f32, res0), y = make_pair(c.M, c.K, DType::bf16, y0);
    Pair wy = make_pair(1, c.K, DType::f32, wy0), wo = make_pair(1, c.K, DType::f32, wo0);
    Pair h = random_pair(c.M, c.K, DType::bf16), x = random_pair(c.M, c.K, DType::bf16);
    const DType odt = head ? DType::f32 : DType::bf16;
    Pair gu = random_pair(c.M, c.N, odt), out = random_pair(c.M, oc, DType::bf16);
    poison(h);
    poison(out);
    poison(gu);
    int32_t pick[2] = {-1, -1};
    for (int b = 0; b < 2; ++b) {
      ComputeBackend& be = b ? *cuda() : cpu();
      auto v = [&](Pair& p) { return b ? p.g.view : p.c.view; };
      const Weight& wt = b ? *w.g : *w.c;
      const Tensor yv = v(y), wyv = v(wy);
      const ResidualNorm n{v(res), &yv, &wyv, v(wo), 1e-6f, v(h)};
      DeviceArray ids = be.alloc_array(1, c.M, DType::i32, "ids");
      if (c.op == 0) be.norm_linear(n, wt, nullptr, v(gu));
      if (c.op == 1) be.norm_linear_gated(n, wt, Activation::gelu_tanh, v(gu), v(out));
      if (c.op == 2) be.linear_gated(v(x), wt, nullptr, Activation::silu, v(gu), v(out));
      if (head) {
        be.norm_lm_head(n, wt, 0.f, v(gu), c.M == 1 ? ids.view.ptr<int32_t>() : nullptr);
        be.synchronize();
        if (c.M == 1) be.copy_to_host(&pick[b], ids.view.data, 4);
      }
    }
    std::ostringstream what;
    what << "op " << c.op << " M " << c.M << " N " << c.N << " bits " << c.bits << " group "
         << c.gs;
    if (c.op != 2) {
      EXPECT_LT(pair_err(res), 1e-5) << what.str();
      EXPECT_LT(pair_err(h), kBf16Tol) << what.str();
    }
    EXPECT_LT(gated ? pair_err(out) : pair_err(gu), kBf16Tol) << what.str();
    if (head && c.M == 1) {
      const auto logits = read(*cuda(), gu.g, DType::f32);
      size_t best = 0;
      for (size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best]) best = i;
      EXPECT_EQ(pick[1], static_cast<int32_t>(best)) << what.str();
    }
  }
}

TEST(CudaQuant, EmbedGathersRows) {
  TS_REQUIRE_CUDA();
  for (int bits : {4, 8, 3, 6}) {
    const QuantPair w = quant_pair(5000, 1152, bits, bits == 6 ? 16 : 64);
    const std::vector<int32_t> ids = {0, 4999, 17, 17, 2500, 123};
    DeviceArray ic = cpu().alloc_array(1, 6, DType::i32, "ids"),
                ig = cuda()->alloc_array(1, 6, DType::i32, "ids");
    cpu().copy_to_device(ic.view.data, ids.data(), 24);
    cuda()->copy_to_device(ig.view.data, ids.data(), 24);
    Pair out = random_pair(6, 1152, DType::bf16);
    poison(out);
    cpu().embed(*w.c, ic.view.ptr<int32_t>(), 6, 33.94f, true, out.c.view);
    cuda()->embed(*w.g, ig.view.ptr<int32_t>(), 6, 33.94f, true, out.g.view);
    EXPECT_LT(pair_err(out), 1e-3) << "bits " << bits;
  }
}
#endif

}  // namespace tessera::cudatest
