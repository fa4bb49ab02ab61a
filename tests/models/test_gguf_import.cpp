// A GGUF file opened as the checkpoint it was converted from (io/gguf_model.cpp): the metadata
// as config.json, the tensor names, the converter's changes undone (Q/K rows of llama, Gemma's
// 1 + w norms), llama.cpp's defaults, and a clear error naming the key, tensor or type for
// everything tessera does not read. (Exactness against llama.cpp's converter and transformers:
// test_gguf_parity.cpp.)
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>

#include "backend/backend.h"
#include "core/check.h"
#include "io/gguf_builder.h"
#include "models/model.h"
#include "process_temp.h"

namespace tessera {
namespace {

using test::GgufBuilder;
constexpr uint32_t kF32 = 0, kIq4nl = 20;
constexpr auto u32 = GgufValueType::u32;
constexpr auto f32 = GgufValueType::f32;

// f32 values v(i) as tensor bytes.
std::string floats(int64_t n, const std::function<float(int64_t)>& v) {
  std::string s(static_cast<size_t>(n) * 4, '\0');
  for (int64_t i = 0; i < n; ++i) {
    const float x = v(i);
    std::memcpy(&s[static_cast<size_t>(i) * 4], &x, 4);
  }
  return s;
}

// A one-layer model of `arch`: hidden 32, 2 heads of 16, 1 KV head, MLP 64, vocab 8. Matrix rows
// hold their row index (q/k: the row index as stored), norms 1.5.
GgufBuilder tiny(const std::string& arch) {
  GgufBuilder b;
  b.str("general.architecture", arch);
  auto k = [&](const char* s) { return arch + "." + s; };
  b.scalar<uint32_t>(k("block_count"), u32, 1)
      .scalar<uint32_t>(k("embedding_length"), u32, 32)
      .scalar<uint32_t>(k("feed_forward_length"), u32, 64)
      .scalar<uint32_t>(k("attention.head_count"), u32, 2)
      .scalar<uint32_t>(k("attention.head_count_kv"), u32, 1)
      .scalar<uint32_t>(k("context_length"), u32, 128)
      .scalar<float>(k("attention.layer_norm_rms_epsilon"), f32, 1e-6f)
      .scalar<uint32_t>("tokenizer.ggml.eos_token_id", u32, 1);
  auto matrix = [&](const std::string& n, int64_t r, int64_t c) {
    b.tensor(n, kF32, {c, r}, floats(r * c, [c](int64_t i) { return static_cast<float>(i / c); }));
  };
  auto norm = [&](const std::string& n, int64_t len) {
    b.tensor(n, kF32, {len}, floats(len, [](int64_t) { return 1.5f; }));
  };
  matrix("token_embd.weight", 8, 32);
  norm("output_norm.weight", 32);
  norm("blk.0.attn_norm.weight", 32);
  matrix("blk.0.attn_q.weight", 32, 32);
  matrix("blk.0.attn_k.weight", 16, 32);
  matrix("blk.0.attn_v.weight", 16, 32);
  matrix("blk.0.attn_output.weight", 32, 32);
  matrix("blk.0.ffn_gate.weight", 64, 32);
  matrix("blk.0.ffn_up.weight", 64, 32);
  matrix("blk.0.ffn_down.weight", 32, 64);
  norm("blk.0.ffn_norm.weight", 32);
  if (arch == "gemma3") {
    norm("blk.0.post_attention_norm.weight", 32);
    norm("blk.0.post_ffw_norm.weight", 32);
    norm("blk.0.attn_q_norm.weight", 16);
    norm("blk.0.attn_k_norm.weight", 16);
  }
  return b;
}

std::string temp_dir() {
  const std::string d = testing::process_temp_dir("tessera_gguf_import");
  std::filesystem::create_directories(d);
  return d;
}

std::string write(const GgufBuilder& b, const std::string& name) {
  const std::string p = temp_dir() + "/" + name + ".gguf";
  test::write_file(p, b.build());
  return p;
}

std::string load_error(const GgufBuilder& b, const std::string& name) {
  try {
    ModelDir d(write(b, name));
    auto backend = make_cpu_backend();
    load_model(d, *backend, LoadOptions{});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GgufImport, LlamaConfigNamesAndUnpermutedRows) {
  ModelDir d(write(tiny("llama"), "llama"));
  const auto& c = d.config();
  EXPECT_EQ(c["architectures"][0], "LlamaForCausalLM");
  EXPECT_EQ(c["hidden_size"], 32);
  EXPECT_EQ(c["num_key_value_heads"], 1);
  EXPECT_EQ(c["head_dim"], 16);  // llama.cpp's default: hidden / heads
  EXPECT_EQ(c["vocab_size"], 8);
  EXPECT_EQ(c["tie_word_embeddings"], true);                 // no output.weight
  EXPECT_DOUBLE_EQ(c["rope_theta"].get<double>(), 10000.0);  // llama.cpp's default
  EXPECT_EQ(d.generation_config()["eos_token_id"], nlohmann::json::array({1}));
  // Checkpoint row h*16 + s*8 + j was stored at h*16 + 2j + s (LlamaModel.permute).
  const TensorInfo& q = d.take("layers.0.self_attn.q_proj.weight");
  const float* v = static_cast<const float*>(q.data);
  for (int h = 0; h < 2; ++h)
    for (int s = 0; s < 2; ++s)
      for (int j = 0; j < 8; ++j)
        EXPECT_EQ(v[(h * 16 + s * 8 + j) * 32], static_cast<float>(h * 16 + 2 * j + s));
  const TensorInfo& k = d.take("layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(static_cast<const float*>(k.data)[1 * 32], 2.0f);  // row 1 <- stored row 2
  EXPECT_EQ(static_cast<const float*>(d.take("layers.0.mlp.up_proj.weight").data)[5 * 32], 5.0f);
  EXPECT_EQ(static_cast<const float*>(d.take("layers.0.post_attention_layernorm.weight").data)[0],
            1.5f);  // llama's ffn_norm, unshifted
  d.release(q);
  auto backend = make_cpu_backend();
  auto m = load_model(d, *backend, LoadOptions{});
  EXPECT_EQ(m->info().num_layers, 1);
}

TEST(GgufImport, GemmaNormsShiftedBackAndItsDefaults) {
  ModelDir d(write(tiny("gemma3"), "gemma3"));
  const auto& c = d.config();
  EXPECT_EQ(c["architectures"][0], "Gemma3ForCausalLM");
  EXPECT_EQ(c["layer_types"], nlohmann::json::array({"full_attention"}));  // no sliding_window
  EXPECT_EQ(c["query_pre_attn_scalar"], 16);
  for (const char* n :
       {"norm.weight", "layers.0.input_layernorm.weight",
        "layers.0.post_attention_layernorm.weight", "layers.0.pre_feedforward_layernorm.weight",
        "layers.0.post_feedforward_layernorm.weight", "layers.0.self_attn.q_norm.weight"})
    EXPECT_EQ(static_cast<const float*>(d.take(n).data)[3], 0.5f) << n;  // stored 1 + w
  auto backend = make_cpu_backend();
  EXPECT_NO_THROW(load_model(d, *backend, LoadOptions{}));
}

TEST(GgufImport, GemmaSlidingLayersEverySixthGlobal) {
  GgufBuilder b = tiny("gemma3");
  b.scalar<uint32_t>("gemma3.attention.sliding_window", u32, 64);
  ModelDir d(write(b, "gemma3_swa"));
  EXPECT_EQ(d.config()["layer_types"], nlohmann::json::array({"sliding_attention"}));
  EXPECT_EQ(d.config()["sliding_window"], 64);
  b.scalar<uint32_t>("gemma3.attention.sliding_window_pattern", u32, 1);
  ModelDir d1(write(b, "gemma3_swa1"));
  EXPECT_EQ(d1.config()["layer_types"], nlohmann::json::array({"full_attention"}));
}

TEST(GgufImport, ClearErrors) {
  EXPECT_NE(load_error(tiny("falcon"), "falcon").find("general.architecture 'falcon'"),
            std::string::npos);
  {
    GgufBuilder b = tiny("llama");
    b.kvs.erase(b.kvs.begin() + 2);  // llama.embedding_length
    EXPECT_NE(load_error(b, "nokey").find("llama.embedding_length"), std::string::npos);
  }
  {
    GgufBuilder b = tiny("llama");
    b.scalar<uint32_t>("llama.rope.dimension_count", u32, 8);
    EXPECT_NE(load_error(b, "partial").find("rotates part of each head"), std::string::npos);
  }
  {
    GgufBuilder b = tiny("llama");
    b.str("llama.rope.scaling.type", "yarn");
    EXPECT_NE(load_error(b, "yarn").find("'yarn' is not supported"), std::string::npos);
  }
  {
    GgufBuilder b = tiny("llama");
    // attn_output [32, 32] as IQ4_NL (blocks of 32 in 18 bytes): a type tessera does not read.
    b.tensors[6] = {"blk.0.attn_output.weight", kIq4nl, {32, 32}, std::string(32 * 18, '\0'), {}};
    const std::string e = load_error(b, "iq2");
    EXPECT_NE(e.find("is IQ4_NL, which tessera does not read"), std::string::npos) << e;
  }
  {
    GgufBuilder b = tiny("llama");
    b.tensor("blk.0.attn_extra.weight", kF32, {4});
    EXPECT_NE(load_error(b, "extra").find("'blk.0.attn_extra.weight'"), std::string::npos);
  }
  {
    GgufBuilder b = tiny("llama");
    b.tensor("blk.7.attn_q.weight", kF32, {4});  // beyond block_count
    EXPECT_NE(load_error(b, "layer7").find("'blk.7.attn_q.weight'"), std::string::npos);
  }
  {
    GgufBuilder b = tiny("llama");
    b.tensor("rope_freqs.weight", kF32, {3});
    EXPECT_NE(load_error(b, "freqs").find("rope_freqs.weight must be F32 [8]"), std::string::npos);
  }
  {
    GgufBuilder b;
    b.str("general.architecture", "llama");  // no tensors, no shape keys
    EXPECT_NE(load_error(b, "empty").find("llama.block_count"), std::string::npos);
  }
  const std::string not_gguf = temp_dir() + "/x.gguf";
  test::write_file(not_gguf, "this is not a model file at all, just text");
  try {
    ModelDir d(not_gguf);
    ADD_FAILURE() << "opened a text file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(not_gguf), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera
