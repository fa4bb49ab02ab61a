// What the model file calls is what a backend runs: the ops of a Gemma 3 forward, recorded at the
// compute interface, are the explicit list the decoder writes (one fused op per decode stage, no
// backend-side deferral), for a prefill (logits of one gathered row) and a decode step (every row
// a logits row, the final norm on the last residual add, the greedy pick in the LM head).
// TESSERA_OP_LOG=1 prints the decode step's list (the closing note of the architecture issue
// quotes it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "backend/forwarding_backend.h"
#include "engine/batch_builder.h"
#include "engine/kv_pool.h"
#include "fixtures.h"
#include "models/model.h"

namespace tessera {
namespace {

// Records each op the model calls (fused ops as one entry: they are not decomposed here).
class OpLog final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::vector<std::string> ops;

  void embed(const Weight& t, const int32_t* ids, int n, float s, bool r, Tensor out) override {
    ops.push_back("embed");
    ForwardingBackend::embed(t, ids, n, s, r, out);
  }
  void rms_norm(Tensor x, Tensor w, float eps, Tensor out) override {
    ops.push_back("rms_norm");
    ForwardingBackend::rms_norm(x, w, eps, out);
  }
  void add_rms_norm(Tensor res, Tensor y, const Tensor* wy, const Tensor* wo, float eps,
                    Tensor out) override {
    ops.push_back(wo ? "add_rms_norm" : "add");
    ForwardingBackend::add_rms_norm(res, y, wy, wo, eps, out);
  }
  void linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) override {
    ops.push_back("linear " + shape(w));
    ForwardingBackend::linear(x, w, bias, out);
  }
  void linear_gated(Tensor x, const Weight& w, const Tensor* bias, Activation act, Tensor gu,
                    Tensor out) override {
    ops.push_back("linear_gated " + shape(w));
    ForwardingBackend::linear_gated(x, w, bias, act, gu, out);
  }
  void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* qn, const Tensor* kn,
                    float eps, const int32_t* pos, Tensor inv) override {
    ops.push_back("qk_norm_rope");
    ForwardingBackend::qk_norm_rope(qkv, nh, nkv, hd, qn, kn, eps, pos, inv);
  }
  void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                const int32_t* slots) override {
    ops.push_back("kv_store");
    ForwardingBackend::kv_store(qkv, nh, nkv, hd, kv, slots);
  }
  void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv, const BatchView& b,
                 int g, float scale, int window, float cap, Tensor out) override {
    ops.push_back("attention");
    ForwardingBackend::attention(qkv, nh, nkv, hd, kv, b, g, scale, window, cap, out);
  }
  void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) override {
    ops.push_back("gather_rows");
    ForwardingBackend::gather_rows(x, rows, n, out);
  }
  void softcap(Tensor x, float cap) override {
    ops.push_back("softcap");
    ForwardingBackend::softcap(x, cap);
  }
  void norm_linear(const ResidualNorm& n, const Weight& w, const Tensor* bias,
                   Tensor out) override {
    ops.push_back(std::string(n.y ? "add_norm_linear " : "norm_linear ") + shape(w));
    ForwardingBackend::norm_linear(n, w, bias, out);
  }
  void norm_linear_gated(const ResidualNorm& n, const Weight& w, Activation act, Tensor gu,
                         Tensor out) override {
    ops.push_back(std::string(n.y ? "add_norm_linear_gated " : "norm_linear_gated ") + shape(w));
    ForwardingBackend::norm_linear_gated(n, w, act, gu, out);
  }
  void norm_lm_head(const ResidualNorm& n, const Weight& w, float cap, Tensor logits,
                    int32_t* ids) override {
    ops.push_back(std::string(n.y ? "add_norm_lm_head " : "norm_lm_head ") + shape(w) +
                  (ids ? " +greedy" : ""));
    ForwardingBackend::norm_lm_head(n, w, cap, logits, ids);
  }
  void rope_store_attention(Tensor qkv, const AttentionLayer& l, const KvLayerView& kv,
                            const BatchView& b, Tensor out) override {
    ops.push_back(std::string("rope_store_attention") + (l.window > 0 ? " (sliding)" : ""));
    ForwardingBackend::rope_store_attention(qkv, l, kv, b, out);
  }
  void linear_prefetch(Tensor x, const Weight& w, const Tensor* bias, Tensor out,
                       const Weight& next) override {
    ops.push_back("linear_prefetch " + shape(w) + " next " + shape(next));
    ForwardingBackend::linear_prefetch(x, w, bias, out, next);
  }

 private:
  static std::string shape(const Weight& w) {
    return std::to_string(w.rows) + "x" + std::to_string(w.cols);
  }
};

TEST(OpSequence, GemmaForwardIsTheDecodersExplicitList) {
  testing::ModelFixture fx;
  for (auto& f : testing::load_model_fixtures())
    if (f.name == "gemma3_gqa") fx = std::move(f);
  ASSERT_FALSE(fx.name.empty());
  OpLog be(make_cpu_backend());
  ModelDir dir(fx.dir);
  LoadOptions o;
  o.dtype = "f32";
  auto model = load_model(dir, be, o);
  const ModelInfo& in = model->info();
  KvPoolOptions po;
  po.max_seqs = 1;
  po.max_context = 64;
  KvPool pool(be, model->kv_spec(), po);
  SequenceKv kv(pool);
  ASSERT_TRUE(kv.reserve(6));

  const int64_t H = in.hidden_size, I = in.intermediate_size, V = in.vocab_size;
  const int64_t qkv = static_cast<int64_t>(in.num_heads + 2 * in.num_kv_heads) * in.head_dim;
  const int64_t q = static_cast<int64_t>(in.num_heads) * in.head_dim;
  const auto s = [](int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); };
  auto expected = [&](bool decode) {
    std::vector<std::string> e = {"embed"};
    for (int l = 0; l < in.num_layers; ++l) {
      e.push_back((l ? "add_norm_linear " : "norm_linear ") + s(qkv, H));
      e.push_back(
          std::string("rope_store_attention") +
          (model->kv_spec().group_window[model->kv_spec().layer_group[l]] > 0 ? " (sliding)" : ""));
      e.push_back("linear_prefetch " + s(H, q) + " next " + s(2 * I, H));
      e.push_back("add_norm_linear_gated " + s(2 * I, H));
      e.push_back("linear " + s(H, I));
    }
    if (decode) {
      e.push_back("add_norm_lm_head " + s(V, H) + " +greedy");
    } else {
      e.insert(e.end(), {"add", "gather_rows", "norm_lm_head " + s(V, H)});
    }
    return e;
  };

  // A 5-token prefill with the last row's logits, then one greedy decode step.
  const std::vector<int32_t> prompt = {2, 7, 11, 3, 5}, next = {9};
  BatchEntry e;
  e.kv = &kv;
  e.tokens = prompt;
  e.logits_last = true;
  model->forward(build_batch(pool, std::span<const BatchEntry>(&e, 1)), pool.layers());
  EXPECT_EQ(be.ops, expected(false));
  be.ops.clear();
  e.tokens = next;
  HostBatch hb = build_batch(pool, std::span<const BatchEntry>(&e, 1));
  hb.greedy_ids = true;
  const ForwardOutput fo = model->forward(hb, pool.layers());
  EXPECT_EQ(be.ops, expected(true));
  ASSERT_NE(fo.greedy_ids, nullptr);
  if (std::getenv("TESSERA_OP_LOG"))
    for (const std::string& op : be.ops) std::cout << op << "\n";
}

}  // namespace
}  // namespace tessera
