// A micro Gemma 3 model written on the fly (random f32 weights) for loader and error tests, with
// hooks to corrupt its config or tensors.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "process_temp.h"

namespace tessera::testing {

struct MicroTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

inline nlohmann::json micro_gemma_config() {
  return {{"architectures", {"Gemma3ForCausalLM"}},
          {"model_type", "gemma3_text"},
          {"vocab_size", 64},
          {"hidden_size", 16},
          {"intermediate_size", 32},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 2},
          {"num_key_value_heads", 1},
          {"head_dim", 8},
          {"sliding_window", 4},
          {"layer_types", {"sliding_attention", "full_attention"}},
          {"query_pre_attn_scalar", 8},
          {"max_position_embeddings", 128},
          {"rms_norm_eps", 1e-6},
          {"tie_word_embeddings", true}};
}

inline std::vector<MicroTensor> micro_gemma_tensors(const nlohmann::json& c, uint32_t seed = 1) {
  const int64_t V = c["vocab_size"], H = c["hidden_size"], I = c["intermediate_size"];
  const int64_t L = c["num_hidden_layers"], nh = c["num_attention_heads"];
  const int64_t nkv = c["num_key_value_heads"], hd = c["head_dim"];
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 0.1f);
  std::vector<MicroTensor> t;
  auto add = [&](const std::string& n, std::vector<int64_t> shape) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    MicroTensor m{n, shape, std::vector<float>(static_cast<size_t>(numel))};
    for (float& v : m.data) v = nd(rng);
    t.push_back(std::move(m));
  };
  add("model.embed_tokens.weight", {V, H});
  for (int64_t i = 0; i < L; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm",
                          "pre_feedforward_layernorm", "post_feedforward_layernorm"})
      add(p + n + ".weight", {H});
    add(p + "self_attn.q_norm.weight", {hd});
    add(p + "self_attn.k_norm.weight", {hd});
    add(p + "self_attn.q_proj.weight", {nh * hd, H});
    add(p + "self_attn.k_proj.weight", {nkv * hd, H});
    add(p + "self_attn.v_proj.weight", {nkv * hd, H});
    add(p + "self_attn.o_proj.weight", {H, nh * hd});
    add(p + "mlp.gate_proj.weight", {I, H});
    add(p + "mlp.up_proj.weight", {I, H});
    add(p + "mlp.down_proj.weight", {H, I});
  }
  add("model.norm.weight", {H});
  return t;
}

// Writes config.json and model.safetensors into a fresh directory under the system temp dir.
inline std::string write_micro_model(const std::string& name, const nlohmann::json& config,
                                     const std::vector<MicroTensor>& tensors) {
  namespace fs = std::filesystem;
  fs::path dir = process_temp_dir("tessera_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2);
  std::vector<TensorToWrite> w;
  for (const auto& m : tensors) w.push_back({m.name, DType::f32, m.shape, m.data.data()});
  write_safetensors((dir / "model.safetensors").string(), w);
  return dir.string();
}

}  // namespace tessera::testing
