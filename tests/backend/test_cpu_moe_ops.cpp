// The ops Gemma 4 added to the compute interface (issue #31) on the CPU backend, against values
// computed here in double from their definitions in backend.h (ref: transformers
// Gemma4TextRouter / Gemma4TextExperts): scale, act_mul on strided views, moe_route (softmax,
// top-k with the lower expert first on ties, renormalised, per-expert scale) and moe_experts
// (each token's selected experts' gated MLPs, weighted and summed).
#include <gtest/gtest.h>

#include <cmath>

#include "backend/backend.h"

namespace tessera {
namespace {

double gelu(double g) {
  return 0.5 * g * (1 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
}

std::unique_ptr<Weight> weight(ComputeBackend& be, const std::vector<float>& v, int64_t rows,
                               int64_t cols) {
  HostTensor h{v.data(), DType::f32, {rows, cols}, "test weight"};
  const HostTensor* parts[] = {&h};
  return be.upload_weight(parts, DType::f32, "test weight");
}

float val(int64_t i, int salt) {  // deterministic values in [-1, 1)
  return static_cast<float>(((i * 7919 + salt * 104729) % 2001) - 1000) / 1000.0f;
}

TEST(CpuMoeOps, ScaleAndActMulOnStridedViews) {
  auto be = make_cpu_backend();
  std::vector<float> buf(3 * 10);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = val(i, 1) * 3;
  const std::vector<float> orig = buf;
  Tensor all{buf.data(), DType::f32, 3, 10, 10};
  Tensor gate = all.cols_from(0, 4), up = all.cols_from(4, 4), out = all.cols_from(0, 4);
  be->act_mul(gate, up, Activation::gelu_tanh, out);  // in place over gate
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c)
      EXPECT_NEAR(buf[r * 10 + c], gelu(orig[r * 10 + c]) * orig[r * 10 + 4 + c], 1e-6);
  EXPECT_EQ(buf[8], orig[8]);  // outside the views: untouched
  be->scale(all.cols_from(8, 2), -0.5f);
  EXPECT_FLOAT_EQ(buf[18], orig[18] * -0.5f);
  EXPECT_EQ(buf[17], orig[17]);
}

TEST(CpuMoeOps, RouteTopKRenormalisesAndScales) {
  auto be = make_cpu_backend();
  // Row 0: distinct scores; row 1: a tie between experts 1 and 3 for second place (the interface
  // takes the lower: exact ties do not arise from real scores, and transformers' torch.topk
  // leaves their order unspecified).
  std::vector<float> scores = {0.5f, 2.0f, -1.0f, 1.0f, 0.25f, 3.0f, 1.5f, 0.0f, 1.5f, -2.0f};
  std::vector<float> pes = {1.0f, 2.0f, 0.5f, 4.0f, 1.5f};
  std::vector<float> w(4, -1);
  std::vector<int32_t> ids(4, -1);
  const Tensor pes_t{pes.data(), DType::f32, 1, 5, 5};
  be->moe_route(Tensor{scores.data(), DType::f32, 2, 5, 5}, 2, &pes_t,
                Tensor{w.data(), DType::f32, 2, 2, 2}, Tensor{ids.data(), DType::i32, 2, 2, 2});
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 3);
  EXPECT_EQ(ids[2], 0);  // row 1: expert 0 (3.0) first, then 1 and 3 tie at 1.5: the lower
  EXPECT_EQ(ids[3], 1);
  // Renormalised over the top k: softmax's denominator cancels.
  const double a = std::exp(2.0), b = std::exp(1.0);
  EXPECT_NEAR(w[0], a / (a + b) * 2.0, 1e-6);
  EXPECT_NEAR(w[1], b / (a + b) * 4.0, 1e-6);
  const double c = std::exp(3.0), d = std::exp(1.5);
  EXPECT_NEAR(w[2], c / (c + d) * 1.0, 1e-6);
  EXPECT_NEAR(w[3], d / (c + d) * 2.0, 1e-6);
}

TEST(CpuMoeOps, ExpertsSumTheSelectedGatedMlps) {
  auto be = make_cpu_backend();
  const int64_t T = 5, H = 6, I = 3, E = 4, k = 2;
  std::vector<std::vector<float>> gu(E), dn(E);
  std::vector<std::unique_ptr<Weight>> gu_w, dn_w;
  std::vector<const Weight*> gu_p, dn_p;
  for (int e = 0; e < E; ++e) {
    gu[e].resize(2 * I * H);
    dn[e].resize(H * I);
    for (size_t i = 0; i < gu[e].size(); ++i) gu[e][i] = val(i, 10 + e);
    for (size_t i = 0; i < dn[e].size(); ++i) dn[e][i] = val(i, 20 + e);
    gu_w.push_back(weight(*be, gu[e], 2 * I, H));
    dn_w.push_back(weight(*be, dn[e], H, I));
    gu_p.push_back(gu_w.back().get());
    dn_p.push_back(dn_w.back().get());
  }
  std::vector<float> x(T * H), out(T * H, 99.f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = val(i, 3);
  // Expert 2 is never selected; negative and > 1 weights as per_expert_scale can make them.
  std::vector<int32_t> ids = {0, 1, 1, 0, 3, 0, 1, 3, 3, 1};
  std::vector<float> w = {0.7f, 0.3f, 0.5f, 0.5f, 1.2f, -0.2f, 0.1f, 0.9f, 2.0f, 0.25f};
  be->moe_experts(Tensor{x.data(), DType::f32, T, H, H}, gu_p, dn_p, Activation::gelu_tanh,
                  Tensor{w.data(), DType::f32, T, k, k}, Tensor{ids.data(), DType::i32, T, k, k},
                  Tensor{out.data(), DType::f32, T, H, H});
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> want(H, 0.0);
    for (int64_t j = 0; j < k; ++j) {
      const int e = ids[t * k + j];
      std::vector<double> g(I);
      for (int64_t i = 0; i < I; ++i) {
        double gate = 0, upv = 0;
        for (int64_t h = 0; h < H; ++h) {
          gate += gu[e][i * H + h] * x[t * H + h];
          upv += gu[e][(I + i) * H + h] * x[t * H + h];
        }
        g[i] = gelu(gate) * upv;
      }
      for (int64_t h = 0; h < H; ++h) {
        double y = 0;
        for (int64_t i = 0; i < I; ++i) y += dn[e][h * I + i] * g[i];
        want[h] += w[t * k + j] * y;
      }
    }
    for (int64_t h = 0; h < H; ++h)
      EXPECT_NEAR(out[t * H + h], want[h], 1e-5) << "token " << t << " column " << h;
  }
}

}  // namespace
}  // namespace tessera
