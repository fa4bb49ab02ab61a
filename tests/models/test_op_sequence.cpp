// The backend ops a forward issues, in order, for each kind of batch. The CUDA backend captures a
// forward as a CUDA graph and its fused kernels are these ops, so an op added to or dropped from a
// block (models/blocks.h) changes what the GPU runs: this pins the list down. Per layer:
// norm_linear (norm + qkv), rope_store_attention, linear_prefetch (o_proj, prefetching gate_up),
// norm_linear_gated (norm + gate/up + act), linear (down_proj); then the LM head.
#include <gtest/gtest.h>

#include "backend/forwarding_backend.h"
#include "engine/batch_builder.h"
#include "engine/kv_pool.h"
#include "fixtures.h"
#include "models/model.h"

namespace tessera {
namespace {

// Records the name of every op (plain or fused) and scratch allocation the model calls.
class OpLog final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::vector<std::string> ops;

  Tensor scratch(int64_t r, int64_t c, DType dt) override {
    ops.push_back("scratch");
    return ForwardingBackend::scratch(r, c, dt);
  }
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
    ops.push_back("add_rms_norm");
    ForwardingBackend::add_rms_norm(res, y, wy, wo, eps, out);
  }
  void linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) override {
    ops.push_back("linear");
    ForwardingBackend::linear(x, w, bias, out);
  }
  void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) override {
    ops.push_back("gather_rows");
    ForwardingBackend::gather_rows(x, rows, n, out);
  }
  void norm_linear(const ResidualNorm& n, const Weight& w, const Tensor* bias,
                   Tensor out) override {
    ops.push_back("norm_linear");
    ForwardingBackend::norm_linear(n, w, bias, out);
  }
  void norm_linear_gated(const ResidualNorm& n, const Weight& w, Activation act, Tensor gu,
                         Tensor out) override {
    ops.push_back("norm_linear_gated");
    ForwardingBackend::norm_linear_gated(n, w, act, gu, out);
  }
  void norm_lm_head(const ResidualNorm& n, const Weight& w, float cap, Tensor logits,
                    int32_t* ids) override {
    ops.push_back(ids ? "norm_lm_head+greedy" : "norm_lm_head");
    ForwardingBackend::norm_lm_head(n, w, cap, logits, ids);
  }
  void rope_store_attention(Tensor qkv, const AttentionLayer& l, const KvLayerView& kv,
                            const BatchView& b, Tensor out) override {
    ops.push_back("rope_store_attention");
    ForwardingBackend::rope_store_attention(qkv, l, kv, b, out);
  }
  void linear_prefetch(Tensor x, const Weight& w, const Tensor* bias, Tensor out,
                       const Weight& next) override {
    ops.push_back("linear_prefetch");
    ForwardingBackend::linear_prefetch(x, w, bias, out, next);
  }
};

std::vector<std::string> expected(int layers, const std::vector<std::string>& head) {
  std::vector<std::string> e(11, "scratch");  // blocks.h's Activations
  e.push_back("embed");
  for (int l = 0; l < layers; ++l)
    for (const char* op :
         {"norm_linear", "rope_store_attention", "linear_prefetch", "norm_linear_gated", "linear"})
      e.push_back(op);
  e.insert(e.end(), head.begin(), head.end());
  return e;
}

class OpSequence : public ::testing::TestWithParam<std::string> {};

TEST_P(OpSequence, EachBatchKindIssuesTheBlocksOps) {
  auto backend = std::make_unique<OpLog>(make_cpu_backend());
  OpLog* log = backend.get();
  ModelDir dir(testing::fixtures_root() + "/" + GetParam());
  auto model = load_model(dir, *backend, {});
  const int layers = model->info().num_layers;
  KvPoolOptions po;
  po.max_context = 32;
  po.max_seqs = 2;
  po.max_step_tokens = 32;
  KvPool pool(*backend, model->kv_spec(), po);
  SequenceKv a(pool), b(pool);
  const std::vector<int32_t> prompt{3, 4, 5, 6}, next{7}, more{8, 9};
  struct Chunk {
    SequenceKv* kv;
    std::span<const int32_t> tokens;
    bool logits;  // for its last token
  };
  auto run = [&](const std::vector<Chunk>& chunks, bool greedy) {
    std::vector<BatchEntry> entries;
    for (const Chunk& c : chunks) {
      EXPECT_TRUE(c.kv->reserve(static_cast<int>(c.tokens.size())));
      entries.push_back({c.kv, c.tokens, false, c.logits});
    }
    HostBatch hb = build_batch(pool, entries);
    hb.greedy_ids = greedy;
    log->ops.clear();
    model->forward(hb, pool.layers());
    return log->ops;
  };
  // A prompt with its last row's logits: the rows are gathered before the head.
  EXPECT_EQ(run({{&a, prompt, true}, {&b, prompt, true}}, false),
            expected(layers, {"add_rms_norm", "gather_rows", "norm_lm_head"}));
  // A decode step, greedy: every row is a logits row, the head runs in place and picks the ids.
  EXPECT_EQ(run({{&a, next, true}, {&b, next, true}}, true),
            expected(layers, {"norm_lm_head+greedy"}));
  // A prefill chunk that asks for no logits: no head at all.
  EXPECT_EQ(run({{&a, more, false}}, false), expected(layers, {}));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OpSequence, ::testing::Values("gemma3_gqa", "llama3", "qwen3"));

}  // namespace
}  // namespace tessera
