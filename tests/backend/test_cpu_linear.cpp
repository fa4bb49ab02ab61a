// linear(): every SIMD ISA and path (exact GEMV, vdpbf16ps GEMV, oneDNN gemm) against the scalar
// reference, at Gemma-3-1B shapes and awkward ones, f32 and bf16 weights, strided x and out.
#include <memory>

#include "backend/backend.h"
#include "cpu_test_util.h"

namespace tessera::cpu::test {
namespace {

struct Case {
  int64_t M, N, K;
};

std::unique_ptr<Weight> upload(ComputeBackend& be, const std::vector<float>& w, int64_t N,
                               int64_t K, DType dt) {
  // The checkpoint's bf16 values, so that f32 and bf16 weights hold the same numbers.
  std::vector<uint16_t> h = to_bf16(w);
  const HostTensor t{h.data(), DType::bf16, {N, K}, "w"};
  const HostTensor* parts[] = {&t};
  return be.upload_weight(parts, dt, "test weight");
}

// Runs linear with x rows strided by K + 3 and out rows strided by N + 5 (padding stays NaN).
std::vector<float> run(const Case& c, const Weight& w, const std::vector<float>& x,
                       const std::vector<float>* bias) {
  const int64_t xs = c.K + 3, os = c.N + 5;
  std::vector<float> xbuf(static_cast<size_t>(c.M * xs), 0.f);
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t k = 0; k < c.K; ++k) xbuf[m * xs + k] = x[m * c.K + k];
  std::vector<float> out(static_cast<size_t>(c.M * os));
  poison(out);
  Tensor xt{xbuf.data(), DType::f32, c.M, c.K, xs};
  Tensor ot{out.data(), DType::f32, c.M, c.N, os};
  Tensor bt{bias ? const_cast<float*>(bias->data()) : nullptr, DType::f32, 1, c.N, c.N};
  linear(xt, static_cast<const CpuWeight&>(w), bias ? &bt : nullptr, ot);
  return out;
}

const Case kCases[] = {
    {1, 1536, 1152},  // qkv, decode
    {1, 1152, 6912},  // down, decode
    {3, 1152, 1024},  // o, a few decode rows
    {1, 4099, 1152},  // an LM-head slice, rows not a multiple of the block
    {17, 260, 1152},  // gemm from 16 rows
    {130, 100, 333},  // prefill, K not a multiple of 16 or 32
    {2, 33, 31},      // tiny, K < one vector pair
    {5, 7, 1},        // K = 1
    {16, 257, 2305},  // odd K, above one oneDNN tile
    {130, 40, 2305},  // K split in blocks (partial sums kept in out), odd K in the last block
};

TEST(CpuLinear, SimdPathsMatchScalar) {
  auto be = make_cpu_backend();
  for (DType wdt : {DType::f32, DType::bf16}) {
    for (const Case& c : kCases) {
      const auto w = random_floats(static_cast<size_t>(c.N * c.K), c.N * 7 + c.K);
      const auto x = random_floats(static_cast<size_t>(c.M * c.K), c.M * 3 + 1);
      const auto bias = random_floats(static_cast<size_t>(c.N), 5);
      auto weight = upload(*be, w, c.N, c.K, wdt);
      for (bool with_bias : {false, true}) {
        const std::vector<float>* b = with_bias ? &bias : nullptr;
        std::vector<float> ref;
        {
          IsaScope s(Isa::scalar);
          ref = run(c, *weight, x, b);
        }
        for (Isa isa : simd_isas()) {
          for (LinearPath p :
               {LinearPath::automatic, LinearPath::fma, LinearPath::dpbf16, LinearPath::onednn}) {
            IsaScope s(isa, p);
            const bool dp =
                linear_path_for(c.M, static_cast<const CpuWeight&>(*weight)) == LinearPath::dpbf16;
            // fp32 products and sums everywhere except vdpbf16ps, which rounds x to bf16.
            const double tol = dp ? 1e-2 : 1e-5;
            const std::string what =
                std::string(isa_name(isa)) + " path " + std::to_string(static_cast<int>(p)) +
                " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
                " K=" + std::to_string(c.K) + (wdt == DType::bf16 ? " bf16" : " f32") +
                (with_bias ? " bias" : "");
            expect_rows_near(ref, run(c, *weight, x, b), c.M, c.N, c.N + 5, tol, what);
          }
        }
      }
    }
  }
}

// K cut in many blocks (partial sums kept in out between blocks), for every row count.
TEST(CpuLinear, KBlocksMatchScalar) {
  auto be = make_cpu_backend();
  for (DType wdt : {DType::f32, DType::bf16}) {
    for (const Case& c : {Case{1, 40, 33}, Case{3, 40, 33}, Case{130, 40, 301}}) {
      const auto w = random_floats(static_cast<size_t>(c.N * c.K), 71);
      const auto x = random_floats(static_cast<size_t>(c.M * c.K), 72);
      const auto bias = random_floats(static_cast<size_t>(c.N), 73);
      auto weight = upload(*be, w, c.N, c.K, wdt);
      std::vector<float> ref;
      {
        IsaScope s(Isa::scalar);
        ref = run(c, *weight, x, &bias);
      }
      for (Isa isa : simd_isas()) {
        IsaScope s(isa, LinearPath::fma);
        set_linear_k_block(7);
        const auto got = run(c, *weight, x, &bias);
        set_linear_k_block(0);
        expect_rows_near(ref, got, c.M, c.N, c.N + 5, 1e-5,
                         std::string("k blocks of 7 pairs on ") + isa_name(isa) +
                             " M=" + std::to_string(c.M) + (wdt == DType::bf16 ? " bf16" : " f32"));
      }
    }
  }
}

// The scalar reference itself against double precision (so that "matches scalar" means right).
TEST(CpuLinear, ScalarMatchesDouble) {
  auto be = make_cpu_backend();
  const Case c{3, 70, 1152};
  const auto w = random_floats(static_cast<size_t>(c.N * c.K), 17);
  const auto x = random_floats(static_cast<size_t>(c.M * c.K), 18);
  auto weight = upload(*be, w, c.N, c.K, DType::bf16);
  IsaScope s(Isa::scalar);
  const auto got = run(c, *weight, x, nullptr);
  std::vector<float> ref(got.size());
  poison(ref);
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < c.K; ++k)
        acc += double{x[m * c.K + k]} * bf16_to_f32(f32_to_bf16(w[n * c.K + k]));
      ref[m * (c.N + 5) + n] = static_cast<float>(acc);
    }
  expect_rows_near(ref, got, c.M, c.N, c.N + 5, 1e-5, "scalar vs double");
}

// The panel layout: every (n, k) where offset() says, padding zero, whatever the parts.
TEST(CpuLinear, UploadPacksPanels) {
  auto be = make_cpu_backend();
  const int64_t K = 7;
  const auto a = random_floats(5 * K, 91), b = random_floats(14 * K, 92);
  std::vector<uint16_t> ah = to_bf16(a);
  const HostTensor ia{ah.data(), DType::bf16, {5, K}, "a"};
  const HostTensor ib{b.data(), DType::f32, {14, K}, "b"};
  const HostTensor* parts[] = {&ia, &ib};
  for (DType dt : {DType::bf16, DType::f32}) {
    auto w = be->upload_weight(parts, dt, "packed");
    const auto& cw = static_cast<const CpuWeight&>(*w);
    ASSERT_EQ(cw.rows, 19);
    ASSERT_EQ(cw.panels, 2);
    for (int64_t n = 0; n < 19; ++n)
      for (int64_t k = 0; k < K; ++k) {
        const float src = n < 5 ? bf16_to_f32(ah[n * K + k]) : b[(n - 5) * K + k];
        EXPECT_EQ(cw.at(n, k), dt == DType::bf16 ? round_bf16(src) : src) << n << "," << k;
      }
    // Rows 19..31 and (bf16) the odd k = 7 are zero padding.
    for (int64_t n = 19; n < 32; ++n)
      for (int64_t k = 0; k < cw.k2; ++k) EXPECT_EQ(cw.at(n, k), 0.f);
    if (dt == DType::bf16) {
      for (int64_t n = 0; n < 19; ++n) EXPECT_EQ(cw.at(n, 7), 0.f);
    }
  }
}

}  // namespace
}  // namespace tessera::cpu::test

namespace tessera::cpu::test {
namespace {

// linear_gated (one kernel: gate and up panels paired, act in the store) equals linear() then
// gated_act() bit for bit on every SIMD ISA: decode and prefill row counts, a row tile's tail,
// gelu and SiLU, with and without a bias; and declines what it has no kernel for.
TEST(CpuLinear, GatedEqualsLinearThenGatedAct) {
  auto be = make_cpu_backend();
  struct GCase {
    int64_t M, I, K;
  };
  for (const GCase& c : {GCase{1, 64, 1152}, GCase{2, 48, 96}, GCase{13, 32, 72},
                         GCase{128, 6912 / 8, 1152}, GCase{25, 16, 2048}}) {
    const int64_t N = 2 * c.I;
    const auto w = random_floats(static_cast<size_t>(N * c.K), 17 + c.K);
    const auto xv = random_floats(static_cast<size_t>(c.M * c.K), 3 + c.M);
    auto bias = random_floats(static_cast<size_t>(N), 9);
    auto weight = upload(*be, w, N, c.K, DType::bf16);
    const auto& cw = static_cast<const CpuWeight&>(*weight);
    for (Isa isa : simd_isas()) {
      IsaScope s(isa, LinearPath::automatic);
      for (Activation act : {Activation::gelu_tanh, Activation::silu}) {
        for (bool with_bias : {false, true}) {
          Tensor xt{const_cast<float*>(xv.data()), DType::f32, c.M, c.K, c.K};
          Tensor bt{bias.data(), DType::f32, 1, N, N};
          std::vector<float> gu(static_cast<size_t>(c.M * N)), want(c.M * c.I), got(c.M * c.I);
          poison(got);
          Tensor gut{gu.data(), DType::f32, c.M, N, N};
          Tensor wt{want.data(), DType::f32, c.M, c.I, c.I};
          Tensor ot{got.data(), DType::f32, c.M, c.I, c.I};
          linear(xt, cw, with_bias ? &bt : nullptr, gut);
          gated_act(gut, act, wt);
          ASSERT_TRUE(linear_gated(xt, cw, with_bias ? &bt : nullptr, act, ot));
          EXPECT_EQ(got, want) << isa_name(isa) << " M=" << c.M << " I=" << c.I << " K=" << c.K
                               << (act == Activation::silu ? " silu" : " gelu")
                               << (with_bias ? " bias" : "");
        }
      }
    }
  }
  // No fused kernel: K beyond one block, f32 weights, halves not whole panels, the scalar ISA.
  const auto w = random_floats(static_cast<size_t>(64 * 2050), 1);
  auto big_k = upload(*be, w, 32, 2050, DType::bf16);
  auto f32w = upload(*be, w, 32, 64, DType::f32);
  auto odd = upload(*be, w, 40, 64, DType::bf16);
  std::vector<float> x(2 * 2050, 1.f), o(2 * 20);
  Tensor ot{o.data(), DType::f32, 2, 16, 16};
  EXPECT_FALSE(linear_gated(Tensor{x.data(), DType::f32, 2, 2050, 2050},
                            static_cast<const CpuWeight&>(*big_k), nullptr, Activation::silu, ot));
  EXPECT_FALSE(linear_gated(Tensor{x.data(), DType::f32, 2, 64, 64},
                            static_cast<const CpuWeight&>(*f32w), nullptr, Activation::silu, ot));
  Tensor ot20{o.data(), DType::f32, 2, 20, 20};
  EXPECT_FALSE(linear_gated(Tensor{x.data(), DType::f32, 2, 64, 64},
                            static_cast<const CpuWeight&>(*odd), nullptr, Activation::silu, ot20));
  IsaScope s(Isa::scalar);
  EXPECT_FALSE(linear_gated(Tensor{x.data(), DType::f32, 2, 64, 64},
                            static_cast<const CpuWeight&>(*f32w), nullptr, Activation::silu, ot));
}

}  // namespace
}  // namespace tessera::cpu::test
