// Quantized weights on the CPU (backend/cpu/quant_weight.h, quant/affine.h): MLX's bit packing
// for every width, the quantizer's rules, and linear / linear_gated / embed on packed weights,
// every ISA and both paths (GEMV, dequantize-to-panels), against the dense product of the
// dequantized weight in double precision.
#include <memory>

#include "backend/backend.h"
#include "backend/cpu/quant_weight.h"
#include "cpu_test_util.h"
#include "quant/affine.h"

namespace tessera::cpu::test {
namespace {

// A random MLX-layout tensor [rows, cols]: packed values, bf16 (or f32) scales, some negative,
// and biases; dense() is its dequantized matrix.
struct RandomQuant {
  int64_t rows, cols;
  QuantFormat f;
  DType sdt;
  std::vector<uint32_t> packed;
  std::vector<uint16_t> s16, b16;
  std::vector<float> s32, b32;

  float bias_per_scale = 0.f;
  bool implied = false;  // no bias array: bias = bias_per_scale * scale (GGUF's symmetric types)

  RandomQuant(int64_t r, int64_t c, QuantFormat fmt, uint64_t seed, DType scale_dtype = DType::bf16)
      : rows(r), cols(c), f(fmt), sdt(scale_dtype) {
    const int64_t words = quant::words_per_row(cols, f.bits), groups = cols / f.group_size;
    const auto qv = random_floats(static_cast<size_t>(rows * cols), seed, 0.f, 1.f);
    std::vector<uint8_t> q(static_cast<size_t>(cols));
    packed.resize(static_cast<size_t>(rows * words));
    for (int64_t n = 0; n < rows; ++n) {
      for (int64_t k = 0; k < cols; ++k)
        q[k] = static_cast<uint8_t>(qv[n * cols + k] * static_cast<float>(1 << f.bits));
      quant::pack_row(q.data(), cols, f.bits, packed.data() + n * words);
    }
    s32 = random_floats(static_cast<size_t>(rows * groups), seed + 1, -0.02f, 0.03f);
    b32 = random_floats(static_cast<size_t>(rows * groups), seed + 2, -0.2f, 0.2f);
    if (sdt == DType::bf16) {
      s16 = to_bf16(s32);
      b16 = to_bf16(b32);
      for (size_t i = 0; i < s32.size(); ++i)
        s32[i] = bf16_to_f32(s16[i]), b32[i] = bf16_to_f32(b16[i]);
    } else if (sdt == DType::f16) {
      for (size_t i = 0; i < s32.size(); ++i) {
        s16.push_back(f32_to_f16(s32[i]));
        b16.push_back(f32_to_f16(b32[i]));
        s32[i] = f16_to_f32(s16[i]), b32[i] = f16_to_f32(b16[i]);
      }
    }
  }
  // The same values with the biases implied: bias = bps * scale (bps a power of two: exact).
  RandomQuant& symmetric(float bps) {
    implied = true;
    bias_per_scale = bps;
    for (size_t i = 0; i < s32.size(); ++i) b32[i] = bps * s32[i];
    return *this;
  }
  HostQuantTensor host() const {
    const bool h = sdt != DType::f32;
    HostQuantTensor t{packed.data(),
                      h ? static_cast<const void*>(s16.data()) : s32.data(),
                      h ? static_cast<const void*>(b16.data()) : b32.data(),
                      sdt,
                      rows,
                      cols,
                      f,
                      "test"};
    if (implied) {
      t.biases = nullptr;
      t.bias_per_scale = bias_per_scale;
    }
    return t;
  }
  std::vector<float> dense() const {
    std::vector<float> w(static_cast<size_t>(rows * cols));
    const int64_t words = quant::words_per_row(cols, f.bits), groups = cols / f.group_size;
    for (int64_t n = 0; n < rows; ++n)
      quant::dequantize_row(packed.data() + n * words, s32.data() + n * groups,
                            b32.data() + n * groups, cols, f.bits, f.group_size,
                            w.data() + n * cols);
    return w;
  }
};

std::unique_ptr<Weight> upload(ComputeBackend& be, const RandomQuant& q) {
  const HostQuantTensor h = q.host();
  const HostQuantTensor* parts[] = {&h};
  return be.upload_quantized(parts, DType::f32, "test");
}

// x [M, K] (rows strided by K + 3) W^T into out strided by N + 5 (the padding stays NaN).
std::vector<float> run(ComputeBackend& be, const Weight& w, const std::vector<float>& x, int64_t M,
                       const std::vector<float>* bias) {
  const int64_t K = w.cols, N = w.rows, xs = K + 3, os = N + 5;
  std::vector<float> xbuf(static_cast<size_t>(M * xs), 0.f), out(static_cast<size_t>(M * os));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) xbuf[m * xs + k] = x[m * K + k];
  poison(out);
  Tensor bt{bias ? const_cast<float*>(bias->data()) : nullptr, DType::f32, 1, N, N};
  be.linear({xbuf.data(), DType::f32, M, K, xs}, w, bias ? &bt : nullptr,
            {out.data(), DType::f32, M, N, os});
  return out;
}

std::vector<float> reference(const std::vector<float>& w, const std::vector<float>& x, int64_t M,
                             int64_t N, int64_t K, const std::vector<float>* bias) {
  std::vector<float> ref(static_cast<size_t>(M * (N + 5)));
  poison(ref);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = bias ? (*bias)[n] : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += double{x[m * K + k]} * w[n * K + k];
      ref[m * (N + 5) + n] = static_cast<float>(acc);
    }
  return ref;
}

TEST(CpuQuant, PackingRoundTripsEveryWidth) {
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    const int64_t n = 256;
    const auto r = random_floats(n, bits, 0.f, 1.f);
    std::vector<uint8_t> q(n), back(n);
    for (int64_t k = 0; k < n; ++k) q[k] = static_cast<uint8_t>(r[k] * (1 << bits));
    q[0] = static_cast<uint8_t>((1 << bits) - 1);  // the top value and 0 at word edges
    q[n - 1] = 0;
    std::vector<uint32_t> words(static_cast<size_t>(quant::words_per_row(n, bits)));
    quant::pack_row(q.data(), n, bits, words.data());
    quant::unpack_row(words.data(), n, bits, back.data());
    EXPECT_EQ(q, back) << bits << " bits";
    // The layout: element k at bits [k bits, (k + 1) bits) of the stream, LSB first.
    for (int64_t k = 0; k < n; ++k) {
      uint32_t v = 0;
      for (int b = 0; b < bits; ++b) {
        const int64_t bit = k * bits + b;
        v |= ((words[bit / 32] >> (bit % 32)) & 1u) << b;
      }
      ASSERT_EQ(v, q[k]) << bits << " bits, element " << k;
    }
  }
}

// The quantizer's rules (mlx/backend/cpu/quantized.cpp quantize): the edge of larger magnitude
// is exact (bias = edge, scale = edge / rint(edge / step)), and every element whose q is inside
// (0, 2^bits - 1) is within half a step of its value; the others are clamped to the end of the
// range, on the side of their value. (Making the edge exact can shrink the step, so the far end
// of a group may clamp.) Bit-identity with MLX is tests/models' fixture test.
TEST(CpuQuant, QuantizerKeepsTheEdgeExact) {
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int gs : {32, 64, 128}) {
      auto w = random_floats(256, bits * 131 + gs, -0.5f, 0.3f);
      for (int j = 0; j < gs; ++j) w[j] = 0.25f;  // a constant group
      const int64_t words = quant::words_per_row(256, bits);
      std::vector<uint32_t> p(static_cast<size_t>(words));
      std::vector<float> s(256 / gs), b(256 / gs), back(256);
      quant::quantize_row(w.data(), 256, bits, gs, p.data(), s.data(), b.data());
      quant::dequantize_row(p.data(), s.data(), b.data(), 256, bits, gs, back.data());
      const uint32_t top = (1u << bits) - 1;
      for (int g = 0; g < 256 / gs; ++g) {
        float mn = w[g * gs], mx = w[g * gs];
        for (int j = 0; j < gs; ++j) {
          mn = std::min(mn, w[g * gs + j]);
          mx = std::max(mx, w[g * gs + j]);
        }
        const float edge = std::fabs(mn) > std::fabs(mx) ? mn : mx;
        bool edge_exact = false;
        for (int j = 0; j < gs; ++j) {
          const int k = g * gs + j;
          const uint32_t q = quant::unpack_one(p.data(), bits, k);
          const std::string what = std::to_string(bits) + " bits, group " + std::to_string(gs) +
                                   ", element " + std::to_string(k);
          ASSERT_LE(q, top) << what;
          if (q > 0 && q < top) {
            EXPECT_LE(std::fabs(back[k] - w[k]), std::fabs(s[g]) * 0.5f * 1.0001f + 1e-7f) << what;
          } else if (std::fabs(back[k] - w[k]) > std::fabs(s[g]) * 0.5f * 1.0001f + 1e-7f) {
            // Clamped: the value lies beyond the end it was clamped to.
            const float step_out = (w[k] - back[k]) / s[g];
            EXPECT_TRUE(q == 0 ? step_out < 0 : step_out > 0) << what;
          }
          edge_exact = edge_exact || (w[k] == edge && back[k] == edge);
        }
        EXPECT_TRUE(edge_exact) << bits << " bits, group " << gs << ", group " << g;
      }
    }
}

struct Shape {
  int64_t N, K;
  QuantFormat f;
};

TEST(CpuQuant, LinearMatchesDequantizedProduct) {
  auto be = make_cpu_backend();
  const Shape shapes[] = {
      {1536, 1152, {4, 64}},
      {1152, 1024, {8, 32}},
      {100, 256, {4, 128}},
      {4099, 128, {4, 64}},
      {40, 384, {2, 32}},
      {33, 192, {3, 64}},
      {48, 320, {5, 32}},
      {17, 384, {6, 128}},
      // Group 16: GGUF's Q6_K (quant/gguf_blocks.h), and a 4-bit one for the other stored width.
      {40, 256, {6, 16}},
      {33, 128, {4, 16}},
  };
  for (const Shape& sh : shapes) {
    const RandomQuant q(sh.N, sh.K, sh.f, sh.N * 3 + sh.f.bits);
    auto w = upload(*be, q);
    const auto dense = q.dense();
    const auto bias = random_floats(static_cast<size_t>(sh.N), 9);
    for (int64_t M : {1, 2, 3, 5, 8, 9, 130}) {
      if (M == 130 && sh.N * sh.K > 600000) continue;  // keep the double reference quick
      const auto x = random_floats(static_cast<size_t>(M * sh.K), M + 11);
      for (bool with_bias : {false, true}) {
        const std::vector<float>* b = with_bias ? &bias : nullptr;
        const auto ref = reference(dense, x, M, sh.N, sh.K, b);
        for (Isa isa : [] {
               auto v = simd_isas();
               v.push_back(Isa::scalar);
               return v;
             }()) {
          IsaScope s(isa);
          const std::string what = std::string(isa_name(isa)) + " " + std::to_string(sh.f.bits) +
                                   "-bit g" + std::to_string(sh.f.group_size) +
                                   " N=" + std::to_string(sh.N) + " K=" + std::to_string(sh.K) +
                                   " M=" + std::to_string(M) + (with_bias ? " bias" : "");
          expect_rows_near(ref, run(*be, *w, x, M, b), M, sh.N, sh.N + 5, 2e-5, what);
        }
      }
    }
  }
}

TEST(CpuQuant, F32ScalesAndStackedParts) {
  auto be = make_cpu_backend();
  // Two parts of one format stacked into one weight, f32 scales.
  const RandomQuant a(40, 256, {4, 64}, 21, DType::f32), b(24, 256, {4, 64}, 22, DType::f32);
  const HostQuantTensor ha = a.host(), hb = b.host();
  const HostQuantTensor* parts[] = {&ha, &hb};
  auto w = be->upload_quantized(parts, DType::f32, "stack");
  // The same two at different widths: a Weight::parts stack.
  const RandomQuant c(24, 256, {8, 32}, 23);
  std::vector<std::unique_ptr<Weight>> split;
  split.push_back(upload(*be, a));
  split.push_back(upload(*be, c));
  auto mixed = ComputeBackend::stack_parts(std::move(split));
  ASSERT_EQ(mixed->rows, 64);
  auto da = a.dense(), db = b.dense(), dc = c.dense();
  std::vector<float> dense_ab = da, dense_ac = da;
  dense_ab.insert(dense_ab.end(), db.begin(), db.end());
  dense_ac.insert(dense_ac.end(), dc.begin(), dc.end());
  const auto bias = random_floats(64, 31);
  for (int64_t M : {1, 4, 40}) {
    const auto x = random_floats(static_cast<size_t>(M * 256), M);
    for (Isa isa : simd_isas()) {
      IsaScope s(isa);
      expect_rows_near(reference(dense_ab, x, M, 64, 256, &bias), run(*be, *w, x, M, &bias), M, 64,
                       69, 2e-5, std::string("stack ") + isa_name(isa));
      expect_rows_near(reference(dense_ac, x, M, 64, 256, &bias), run(*be, *mixed, x, M, &bias), M,
                       64, 69, 2e-5, std::string("mixed parts ") + isa_name(isa));
    }
  }
}

// GGUF's storage (quant/gguf_blocks.h gguf_affine_storage): f16 scales (Q4_1: and biases), and
// the symmetric types' implied biases (Q4_0: -8 * scale, Q8_0: -128, Q6_K: -32 with f32 scales),
// alone, stacked with each other, and stacked with stored biases (then held as f32).
TEST(CpuQuant, F16ScalesAndImpliedBiases) {
  auto be = make_cpu_backend();
  RandomQuant q4_0(70, 256, {4, 32}, 61, DType::f16), q8_0(48, 256, {8, 32}, 62, DType::f16),
      q6_k(40, 256, {6, 16}, 63, DType::f32), q4_1(36, 256, {4, 32}, 64, DType::f16),
      q4_0b(20, 256, {4, 32}, 65, DType::f16), q4_f32(12, 256, {4, 32}, 66, DType::f32);
  q4_0.symmetric(-8.f);
  q8_0.symmetric(-128.f);
  q6_k.symmetric(-32.f);
  q4_0b.symmetric(-8.f);
  const auto bias = random_floats(128, 71);
  auto check = [&](const std::vector<const RandomQuant*>& qs, const std::string& name) {
    std::vector<HostQuantTensor> hs;
    std::vector<float> dense;
    for (const RandomQuant* q : qs) {
      hs.push_back(q->host());
      const auto d = q->dense();
      dense.insert(dense.end(), d.begin(), d.end());
    }
    std::vector<const HostQuantTensor*> parts;
    for (const auto& h : hs) parts.push_back(&h);
    auto w = be->upload_quantized(parts, DType::f32, name);
    const int64_t N = w->rows, K = w->cols;
    const std::vector<float> b(bias.begin(), bias.begin() + N);
    for (int64_t M : {1, 2, 3, 9}) {
      const auto x = random_floats(static_cast<size_t>(M * K), M + 3);
      const auto ref = reference(dense, x, M, N, K, &b);
      for (Isa isa : [] {
             auto v = simd_isas();
             v.push_back(Isa::scalar);
             return v;
           }()) {
        IsaScope s(isa);
        expect_rows_near(ref, run(*be, *w, x, M, &b), M, N, N + 5, 2e-5,
                         name + " " + isa_name(isa) + " M=" + std::to_string(M));
      }
    }
    const int32_t ids[] = {0, static_cast<int32_t>(N - 1), 5};
    std::vector<float> out(3 * K);
    be->embed(*w, ids, 3, 1.f, false, {out.data(), DType::f32, 3, K, K});
    for (int t = 0; t < 3; ++t)
      for (int64_t k = 0; k < K; ++k)
        ASSERT_FLOAT_EQ(out[t * K + k], dense[ids[t] * K + k])
            << name << " embed " << t << ", " << k;
  };
  check({&q4_0}, "Q4_0");
  check({&q8_0}, "Q8_0");
  check({&q6_k}, "Q6_K");
  check({&q4_1}, "Q4_1");
  check({&q4_0, &q4_0b}, "Q4_0 stacked");
  check({&q4_0, &q4_1}, "Q4_0 over Q4_1");
  check({&q4_f32, &q4_0b}, "f32 biases over Q4_0");
}

TEST(CpuQuant, GatedMatchesComposition) {
  auto be = make_cpu_backend();
  const int64_t I = 96, K = 256, M = 40;
  const RandomQuant q(2 * I, K, {4, 64}, 41);
  auto w = upload(*be, q);
  const auto dense = q.dense();
  const auto x = random_floats(static_cast<size_t>(M * K), 42);
  const auto gu = reference(dense, x, M, 2 * I, K, nullptr);  // [M, 2I + 5]
  std::vector<float> ref(static_cast<size_t>(M * I));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t i = 0; i < I; ++i) {
      const double g = gu[m * (2 * I + 5) + i], u = gu[m * (2 * I + 5) + I + i];
      ref[m * I + i] = static_cast<float>(g / (1 + std::exp(-g)) * u);  // silu(g) * u
    }
  for (Isa isa : simd_isas())
    for (int64_t rows : {int64_t{3}, M}) {
      IsaScope s(isa);
      std::vector<float> gate_up(static_cast<size_t>(rows * 2 * I)),
          out(static_cast<size_t>(rows * I));
      be->linear_gated({const_cast<float*>(x.data()), DType::f32, rows, K, K}, *w, nullptr,
                       Activation::silu, {gate_up.data(), DType::f32, rows, 2 * I, 2 * I},
                       {out.data(), DType::f32, rows, I, I});
      std::vector<float> want(ref.begin(), ref.begin() + rows * I);
      expect_rows_near(want, out, rows, I, I, 1e-4,
                       std::string("gated ") + isa_name(isa) + " M=" + std::to_string(rows));
    }
}

TEST(CpuQuant, EmbedDequantizesTheGatheredRows) {
  auto be = make_cpu_backend();
  const RandomQuant q(300, 128, {4, 32}, 51);
  auto w = upload(*be, q);
  const auto dense = q.dense();
  const int32_t ids[] = {0, 299, 17, 17};
  std::vector<float> out(4 * 128);
  be->embed(*w, ids, 4, 2.5f, false, {out.data(), DType::f32, 4, 128, 128});
  for (int t = 0; t < 4; ++t)
    for (int k = 0; k < 128; ++k)
      ASSERT_FLOAT_EQ(out[t * 128 + k], dense[ids[t] * 128 + k] * 2.5f) << t << ", " << k;
}

}  // namespace
}  // namespace tessera::cpu::test
