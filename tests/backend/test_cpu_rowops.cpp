// The row ops (rms_norm, add_rms_norm, qk_norm_rope, gated_act, softcap, embed) on every SIMD
// ISA against the scalar reference, at Gemma-3-1B sizes and awkward ones, with strided rows.
#include <memory>

#include "backend/backend.h"
#include "cpu_test_util.h"

namespace tessera::cpu::test {
namespace {

struct Shape {
  int64_t rows, cols;
};
const Shape kShapes[] = {{1, 1152}, {3, 1000}, {17, 33}, {130, 7}, {2, 1}};

// Runs `op` on a copy of `init` (rows x stride) for the scalar ISA and each SIMD one and
// compares the buffers the op writes.
template <class Op>
void compare_isas(const std::string& name, int64_t rows, int64_t cols, int64_t stride, double tol,
                  Op op) {
  std::vector<float> ref_out, ref_res;
  {
    IsaScope s(Isa::scalar);
    op(ref_out, ref_res);
  }
  for (Isa isa : simd_isas()) {
    IsaScope s(isa);
    std::vector<float> out, res;
    op(out, res);
    expect_rows_near(ref_out, out, rows, cols, stride, tol, name + " out on " + isa_name(isa));
    if (!ref_res.empty())
      expect_rows_near(ref_res, res, rows, cols, stride, tol,
                       name + " residual on " + isa_name(isa));
  }
}

TEST(CpuRowOps, RmsNorm) {
  for (const Shape& sh : kShapes) {
    const int64_t stride = sh.cols + 4;
    auto x = random_floats(static_cast<size_t>(sh.rows * stride), 41, -3.f, 3.f);
    auto w = random_floats(static_cast<size_t>(sh.cols), 42, 0.f, 2.f);
    compare_isas("rms_norm " + std::to_string(sh.rows) + "x" + std::to_string(sh.cols), sh.rows,
                 sh.cols, stride, 1e-5, [&](std::vector<float>& out, std::vector<float>&) {
                   out.assign(x.size(), 0.f);
                   poison(out);
                   rms_norm(Tensor{x.data(), DType::f32, sh.rows, sh.cols, stride},
                            Tensor{w.data(), DType::f32, 1, sh.cols, sh.cols}, 1e-6f,
                            Tensor{out.data(), DType::f32, sh.rows, sh.cols, stride});
                 });
  }
}

TEST(CpuRowOps, AddRmsNorm) {
  for (const Shape& sh : kShapes) {
    const int64_t stride = sh.cols + 4;
    auto res0 = random_floats(static_cast<size_t>(sh.rows * stride), 43, -3.f, 3.f);
    auto y = random_floats(static_cast<size_t>(sh.rows * stride), 44, -3.f, 3.f);
    auto wy = random_floats(static_cast<size_t>(sh.cols), 45, 0.f, 2.f);
    auto wo = random_floats(static_cast<size_t>(sh.cols), 46, 0.f, 2.f);
    for (int variant = 0; variant < 3; ++variant) {
      const bool with_wy = variant != 1, with_wo = variant != 2;
      compare_isas("add_rms_norm v" + std::to_string(variant) + " " + std::to_string(sh.rows) +
                       "x" + std::to_string(sh.cols),
                   sh.rows, sh.cols, stride, 1e-5,
                   [&](std::vector<float>& out, std::vector<float>& res) {
                     res = res0;
                     // The residual's padding must stay as it was: poison it too.
                     for (int64_t r = 0; r < sh.rows; ++r)
                       for (int64_t c = sh.cols; c < stride; ++c)
                         res[r * stride + c] = std::numeric_limits<float>::quiet_NaN();
                     out.assign(res.size(), 0.f);
                     poison(out);
                     Tensor wyt{wy.data(), DType::f32, 1, sh.cols, sh.cols};
                     Tensor wot{wo.data(), DType::f32, 1, sh.cols, sh.cols};
                     add_rms_norm(Tensor{res.data(), DType::f32, sh.rows, sh.cols, stride},
                                  Tensor{y.data(), DType::f32, sh.rows, sh.cols, stride},
                                  with_wy ? &wyt : nullptr, with_wo ? &wot : nullptr, 1e-6f,
                                  Tensor{out.data(), DType::f32, sh.rows, sh.cols, stride});
                     if (!with_wo) out = res;  // nothing else to compare
                   });
    }
  }
}

TEST(CpuRowOps, QkNormRope) {
  struct Case {
    int T, nh, nkv, hd;
    bool norm;
  };
  for (const Case c : {Case{1, 4, 1, 256, true}, Case{3, 4, 1, 256, false},
                       Case{17, 4, 2, 32, true}, Case{5, 2, 1, 48, true}, Case{2, 1, 1, 2, true}}) {
    const int64_t cols = int64_t{c.nh + 2 * c.nkv} * c.hd, stride = cols + 6;
    auto qkv0 = random_floats(static_cast<size_t>(c.T * stride), 51, -4.f, 4.f);
    auto qn = random_floats(static_cast<size_t>(c.hd), 52, 0.5f, 1.5f);
    auto kn = random_floats(static_cast<size_t>(c.hd), 53, 0.5f, 1.5f);
    std::vector<float> inv(static_cast<size_t>(c.hd / 2));
    for (int i = 0; i < c.hd / 2; ++i) inv[i] = std::pow(10000.f, -2.f * i / c.hd);
    std::vector<int32_t> pos(static_cast<size_t>(c.T));
    for (int t = 0; t < c.T; ++t) pos[t] = t * 997 % 5000;
    compare_isas(
        "qk_norm_rope hd " + std::to_string(c.hd), c.T, cols, stride, 1e-5,
        [&](std::vector<float>& out, std::vector<float>&) {
          out = qkv0;
          for (int64_t t = 0; t < c.T; ++t)
            for (int64_t i = cols; i < stride; ++i)
              out[t * stride + i] = std::numeric_limits<float>::quiet_NaN();
          Tensor qt{qn.data(), DType::f32, 1, c.hd, c.hd}, kt{kn.data(), DType::f32, 1, c.hd, c.hd};
          qk_norm_rope(Tensor{out.data(), DType::f32, c.T, cols, stride}, c.nh, c.nkv, c.hd,
                       c.norm ? &qt : nullptr, c.norm ? &kt : nullptr, 1e-6f, pos.data(),
                       Tensor{inv.data(), DType::f32, 1, c.hd / 2, c.hd / 2});
        });
  }
}

// Layers alternate between inv_freq tables (local / global rope) over the same positions; the
// cos/sin kept between calls must follow the table, and the positions.
TEST(CpuRowOps, QkNormRopeAlternatingTables) {
  const int T = 3, nh = 4, nkv = 1, hd = 64;
  const int64_t cols = int64_t{nh + 2 * nkv} * hd;
  auto qkv0 = random_floats(static_cast<size_t>(T * cols), 54, -4.f, 4.f);
  std::vector<float> inv_a(hd / 2), inv_b(hd / 2);
  for (int i = 0; i < hd / 2; ++i) {
    inv_a[i] = std::pow(10000.f, -2.f * i / hd);
    inv_b[i] = std::pow(1000000.f, -2.f * i / hd);
  }
  std::vector<int32_t> pos_a = {7, 8, 9}, pos_b = {7, 8, 10};
  struct Call {
    std::vector<float>* inv;
    std::vector<int32_t>* pos;
  };
  const Call calls[] = {{&inv_a, &pos_a}, {&inv_b, &pos_a}, {&inv_a, &pos_a},
                        {&inv_a, &pos_b}, {&inv_b, &pos_b}, {&inv_a, &pos_a}};
  auto run_all = [&] {
    std::vector<float> all;
    for (const Call& c : calls) {
      std::vector<float> q = qkv0;
      qk_norm_rope(Tensor{q.data(), DType::f32, T, cols, cols}, nh, nkv, hd, nullptr, nullptr,
                   1e-6f, c.pos->data(), Tensor{c.inv->data(), DType::f32, 1, hd / 2, hd / 2});
      all.insert(all.end(), q.begin(), q.end());
    }
    return all;
  };
  std::vector<float> ref;
  {
    IsaScope s(Isa::scalar);
    ref = run_all();
  }
  for (Isa isa : simd_isas()) {
    IsaScope s(isa);
    expect_rows_near(ref, run_all(), T * 6, cols, cols, 1e-5,
                     std::string("alternating rope tables on ") + isa_name(isa));
  }
}

TEST(CpuRowOps, GatedActivations) {
  for (Activation act : {Activation::gelu_tanh, Activation::silu}) {
    for (const Shape& sh : {Shape{1, 6912}, Shape{3, 1000}, Shape{130, 33}, Shape{2, 5}}) {
      const int64_t gs = 2 * sh.cols + 3, os = sh.cols + 2;
      // Gates over the whole useful range, both tails included.
      auto gu = random_floats(static_cast<size_t>(sh.rows * gs), 61, -12.f, 12.f);
      compare_isas(std::string(act == Activation::silu ? "silu " : "gelu_tanh ") +
                       std::to_string(sh.rows) + "x" + std::to_string(sh.cols),
                   sh.rows, sh.cols, os, 1e-5, [&](std::vector<float>& out, std::vector<float>&) {
                     out.assign(static_cast<size_t>(sh.rows * os), 0.f);
                     poison(out);
                     gated_act(Tensor{gu.data(), DType::f32, sh.rows, 2 * sh.cols, gs}, act,
                               Tensor{out.data(), DType::f32, sh.rows, sh.cols, os});
                   });
    }
  }
}

TEST(CpuRowOps, GeluTailsAreAccurate) {
  // gelu_tanh(g) for large negative g is tiny but not zero; the SIMD form g / (1 + e^(-2z)) must
  // agree with a double-precision evaluation to float rounding, where 0.5 g (1 + tanh) cancels.
  std::vector<float> gu = {-0.001f, 0.f, 1e-6f};
  for (int i = -400; i <= 400; ++i) gu.push_back(i * 0.025f + 0.0037f);
  const int64_t n = static_cast<int64_t>(gu.size());
  gu.resize(2 * n, 1.f);  // up = 1
  for (Isa isa : simd_isas()) {
    IsaScope s(isa);
    std::vector<float> out(static_cast<size_t>(n));
    gated_act(Tensor{gu.data(), DType::f32, 1, 2 * n, 2 * n}, Activation::gelu_tanh,
              Tensor{out.data(), DType::f32, 1, n, n});
    for (int64_t i = 0; i < n; ++i) {
      const double g = gu[i];
      const double z = 0.7978845608028654 * (g + 0.044715 * g * g * g);
      const double want = g / (1.0 + std::exp(-2.0 * z));
      // Float rounding of the argument 2z (a few ulp of |2z|) is amplified by e^(2z).
      const double rel = 1e-6 + 2.5e-7 * std::fabs(2 * z);
      EXPECT_NEAR(out[i], want, std::fabs(want) * rel + 1e-37)
          << "g=" << g << " on " << isa_name(isa);
    }
  }
}

TEST(CpuRowOps, Softcap) {
  for (const Shape& sh : {Shape{1, 262144 / 16 + 3}, Shape{3, 1000}, Shape{2, 9}}) {
    const int64_t stride = sh.cols + 1;
    auto x0 = random_floats(static_cast<size_t>(sh.rows * stride), 71, -100.f, 100.f);
    // Small values too, where tanh(x) ~ x must keep its relative accuracy.
    for (int64_t i = 0; i < sh.cols; i += 5) x0[i] *= 1e-5f;
    compare_isas("softcap", sh.rows, sh.cols, stride, 1e-6,
                 [&](std::vector<float>& out, std::vector<float>&) {
                   out = x0;
                   for (int64_t r = 0; r < sh.rows; ++r)
                     out[r * stride + sh.cols] = std::numeric_limits<float>::quiet_NaN();
                   softcap(Tensor{out.data(), DType::f32, sh.rows, sh.cols, stride}, 30.f);
                 });
  }
}

TEST(CpuRowOps, EmbedIsExact) {
  auto be = make_cpu_backend();
  const int64_t V = 301, H = 1152 + 5;
  auto table = random_floats(static_cast<size_t>(V * H), 81, -0.1f, 0.1f);
  std::vector<uint16_t> h = to_bf16(table);
  const HostTensor t{h.data(), DType::bf16, {V, H}, "embed"};
  const HostTensor* parts[] = {&t};
  const std::vector<int32_t> ids = {0, 300, 17, 17, 150};
  const int n = static_cast<int>(ids.size());
  for (DType dt : {DType::bf16, DType::f32}) {
    auto w = be->upload_weight(parts, dt, "embed");
    for (bool round : {true, false}) {
      std::vector<float> ref(static_cast<size_t>(n * (H + 2)));
      poison(ref);
      {
        IsaScope s(Isa::scalar);
        embed(static_cast<const CpuWeight&>(*w), ids.data(), n, 33.941125f, round,
              Tensor{ref.data(), DType::f32, n, H, H + 2});
      }
      for (Isa isa : simd_isas()) {
        IsaScope s(isa);
        std::vector<float> got(ref.size());
        poison(got);
        embed(static_cast<const CpuWeight&>(*w), ids.data(), n, 33.941125f, round,
              Tensor{got.data(), DType::f32, n, H, H + 2});
        expect_rows_near(ref, got, n, H, H + 2, 0.0, std::string("embed on ") + isa_name(isa));
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cpu::test
