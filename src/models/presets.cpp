// Preset shapes and the random-weight writer behind `tessera make-model`.
// gemma3-1b is the real Gemma-3-1B text shape (999,885,952 parameters), as in
// shared bench/hf_peer.py; gemma3-tiny is a small model with the real Gemma 3 vocabulary and a
// short sliding window, for demos and CI; llama3-tiny, qwen2.5-tiny and qwen3-tiny are the same
// for the Llama family, to pair with the real Llama 3 and Qwen tokenizers; gemma2-tiny is a small
// Gemma 2 (alternating sliding/global layers, Gemma 2's default logit softcaps, no q/k norms).
#include "models/presets.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/thread_pool.h"
#include "io/model_dir.h"
#include "io/safetensors.h"

namespace tessera {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

enum class Family { gemma2, gemma3, llama, qwen2, qwen3 };

struct Preset {
  std::string name;
  Family family;
  json config;             // config.json (vocab_size replaced when a tokenizer sets it)
  json generation_config;  // generation_config.json
};

std::vector<Preset> presets() {
  json tiny = {
      {"architectures", {"Gemma3ForCausalLM"}},
      {"model_type", "gemma3_text"},
      {"vocab_size", 262144},
      {"hidden_size", 128},
      {"intermediate_size", 512},
      {"num_hidden_layers", 6},
      {"num_attention_heads", 4},
      {"num_key_value_heads", 1},
      {"head_dim", 32},
      {"max_position_embeddings", 32768},
      {"sliding_window", 64},
      {"layer_types",
       {"sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
        "sliding_attention", "full_attention"}},
      {"rope_theta", 1000000.0},
      {"rope_local_base_freq", 10000.0},
      {"query_pre_attn_scalar", 32},
      {"rms_norm_eps", 1e-6},
      {"hidden_activation", "gelu_pytorch_tanh"},
      {"final_logit_softcapping", nullptr},
      {"attn_logit_softcapping", nullptr},
      {"tie_word_embeddings", true},
      {"bos_token_id", 2},
      {"eos_token_id", 1},
      {"pad_token_id", 0},
  };
  json g1b = tiny;
  g1b["hidden_size"] = 1152;
  g1b["intermediate_size"] = 6912;
  g1b["num_hidden_layers"] = 26;
  g1b["num_attention_heads"] = 4;
  g1b["num_key_value_heads"] = 1;
  g1b["head_dim"] = 256;
  g1b["sliding_window"] = 512;
  g1b["query_pre_attn_scalar"] = 256;
  json types = json::array();
  for (int i = 0; i < 26; ++i)
    types.push_back((i + 1) % 6 ? "sliding_attention" : "full_attention");
  g1b["layer_types"] = types;
  json gen = {{"bos_token_id", 2}, {"eos_token_id", {1, 106}}, {"pad_token_id", 0}};
  // Gemma 2 in miniature: its real vocabulary, softcaps 50 / 30, every other layer sliding.
  json g2 = tiny;
  g2["architectures"] = {"Gemma2ForCausalLM"};
  g2["model_type"] = "gemma2";
  g2["vocab_size"] = 256000;
  g2["max_position_embeddings"] = 8192;
  g2["num_key_value_heads"] = 2;
  g2["layer_types"] = json::array();
  for (int i = 0; i < 6; ++i)
    g2["layer_types"].push_back(i % 2 ? "full_attention" : "sliding_attention");
  g2.erase("rope_local_base_freq");
  g2["rope_theta"] = 10000.0;
  g2["attn_logit_softcapping"] = 50.0;
  g2["final_logit_softcapping"] = 30.0;
  // Llama 3.2 style (llama3 rope scaling), Qwen 2.5 and Qwen 3 shapes in miniature, with their
  // real vocabularies and EOS lists (<|eot_id|>, <|im_end|>).
  json llama = {{"architectures", {"LlamaForCausalLM"}},
                {"model_type", "llama"},
                {"vocab_size", 128256},
                {"hidden_size", 128},
                {"intermediate_size", 512},
                {"num_hidden_layers", 4},
                {"num_attention_heads", 4},
                {"num_key_value_heads", 2},
                {"head_dim", 32},
                {"max_position_embeddings", 131072},
                {"rms_norm_eps", 1e-5},
                {"hidden_act", "silu"},
                {"rope_theta", 500000.0},
                {"rope_scaling",
                 {{"rope_type", "llama3"},
                  {"factor", 32.0},
                  {"low_freq_factor", 1.0},
                  {"high_freq_factor", 4.0},
                  {"original_max_position_embeddings", 8192}}},
                {"tie_word_embeddings", true},
                {"bos_token_id", 128000},
                {"eos_token_id", {128001, 128008, 128009}}};
  json llama_gen = {{"bos_token_id", 128000}, {"eos_token_id", {128001, 128008, 128009}}};
  json qwen2 = {{"architectures", {"Qwen2ForCausalLM"}},
                {"model_type", "qwen2"},
                {"vocab_size", 151936},
                {"hidden_size", 128},
                {"intermediate_size", 384},
                {"num_hidden_layers", 4},
                {"num_attention_heads", 4},
                {"num_key_value_heads", 2},
                {"max_position_embeddings", 32768},
                {"rms_norm_eps", 1e-6},
                {"hidden_act", "silu"},
                {"rope_theta", 1000000.0},
                {"use_sliding_window", false},
                {"tie_word_embeddings", true},
                {"bos_token_id", 151643},
                {"eos_token_id", 151645}};
  json qwen3 = qwen2;
  qwen3["architectures"] = {"Qwen3ForCausalLM"};
  qwen3["model_type"] = "qwen3";
  qwen3["head_dim"] = 64;
  qwen3["max_position_embeddings"] = 40960;
  json qwen_gen = {
      {"bos_token_id", 151643}, {"eos_token_id", {151645, 151643}}, {"pad_token_id", 151643}};
  return {{"gemma3-tiny", Family::gemma3, tiny, gen},
          {"gemma3-1b", Family::gemma3, g1b, gen},
          {"gemma2-tiny", Family::gemma2, g2, gen},
          {"llama3-tiny", Family::llama, llama, llama_gen},
          {"qwen2.5-tiny", Family::qwen2, qwen2, qwen_gen},
          {"qwen3-tiny", Family::qwen3, qwen3, qwen_gen}};
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t hash_name(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Normal(mean, std) values, deterministic per (seed, name) whatever the thread count.
void fill_normal(void* dst, DType dt, int64_t n, float mean, float stddev, uint64_t seed) {
  const int64_t chunk = 1 << 16;
  ThreadPool::global().parallel_for((n + chunk - 1) / chunk, [&](int64_t c0, int64_t c1, int) {
    for (int64_t c = c0; c < c1; ++c) {
      uint64_t s = seed ^ (0x632be59bd9b4e019ull * static_cast<uint64_t>(c + 1));
      for (int64_t i = c * chunk; i < std::min(n, (c + 1) * chunk); i += 2) {
        double u1 = (static_cast<double>(splitmix(s) >> 11) + 0.5) / 9007199254740992.0;
        double u2 = static_cast<double>(splitmix(s) >> 11) / 9007199254740992.0;
        double r = std::sqrt(-2.0 * std::log(u1));
        float v[2] = {static_cast<float>(mean + stddev * r * std::cos(2 * M_PI * u2)),
                      static_cast<float>(mean + stddev * r * std::sin(2 * M_PI * u2))};
        for (int k = 0; k < 2 && i + k < n; ++k) {
          if (dt == DType::f32) {
            static_cast<float*>(dst)[i + k] = v[k];
          } else {
            static_cast<uint16_t*>(dst)[i + k] = f32_to_bf16(v[k]);
          }
        }
      }
    }
  });
}

int tokenizer_vocab_size(const std::string& tokenizer_json) {
  json t = read_json_file(tokenizer_json);
  int64_t mx = -1;
  if (t.contains("model") && t["model"].contains("vocab")) {
    const auto& v = t["model"]["vocab"];
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it)
        mx = std::max<int64_t>(mx, it.value().get<int64_t>());
    } else if (v.is_array()) {
      mx = static_cast<int64_t>(v.size()) - 1;  // Unigram: [[piece, score], ...]
    }
  }
  if (t.contains("added_tokens"))
    for (const auto& a : t["added_tokens"]) mx = std::max<int64_t>(mx, a.value("id", int64_t{-1}));
  if (mx < 0) fail_model(tokenizer_json + ": no vocabulary found");
  return static_cast<int>(mx + 1);
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> n;
  for (const auto& p : presets()) n.push_back(p.name);
  return n;
}

int64_t make_model(const MakeModelOptions& opts) {
  const Preset* preset = nullptr;
  auto all = presets();
  for (const auto& p : all)
    if (p.name == opts.preset) preset = &p;
  if (!preset) {
    std::string names;
    for (const auto& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
    fail_arg("unknown preset '" + opts.preset + "' (known: " + names + ")");
  }
  if (opts.dtype != DType::f32 && opts.dtype != DType::bf16)
    fail_arg("make-model writes f32 or bf16");
  json cfg = preset->config;
  fs::create_directories(opts.out_dir);
  if (!opts.tokenizer_dir.empty()) {
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
      fs::path src = fs::path(opts.tokenizer_dir) / f;
      if (fs::exists(src)) {
        fs::copy_file(src, fs::path(opts.out_dir) / f, fs::copy_options::overwrite_existing);
      } else if (std::string(f) != "special_tokens_map.json") {
        fail(ErrorKind::io, src.string() + ": missing (needed by --tokenizer)");
      }
    }
    cfg["vocab_size"] =
        tokenizer_vocab_size((fs::path(opts.tokenizer_dir) / "tokenizer.json").string());
  }
  cfg["torch_dtype"] = opts.dtype == DType::f32 ? "float32" : "bfloat16";

  const int64_t V = cfg["vocab_size"], H = cfg["hidden_size"], I = cfg["intermediate_size"];
  const int64_t L = cfg["num_hidden_layers"], nh = cfg["num_attention_heads"];
  const int64_t nkv = cfg["num_key_value_heads"];
  const int64_t hd = cfg.contains("head_dim") ? cfg["head_dim"].get<int64_t>() : H / nh;
  const Family fam = preset->family;
  const bool gemma = fam == Family::gemma3 || fam == Family::gemma2;
  // Gemma norms are (1 + w) around 0; the Llama family's are w around 1.
  const float norm_mean = gemma ? 0.f : 1.f;
  struct Spec {
    std::string name;
    std::vector<int64_t> shape;
    float mean, std;
  };
  std::vector<Spec> specs;
  // Linear weights N(0, 0.02) as transformers initialises them; norm weights N(0, 0.1) rather
  // than zero so that Gemma's (1 + w) matters.
  specs.push_back({"model.embed_tokens.weight", {V, H}, 0.f, 0.02f});
  for (int64_t i = 0; i < L; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    specs.push_back({p + "input_layernorm.weight", {H}, norm_mean, 0.1f});
    specs.push_back({p + "post_attention_layernorm.weight", {H}, norm_mean, 0.1f});
    if (gemma) {
      specs.push_back({p + "pre_feedforward_layernorm.weight", {H}, 0.f, 0.1f});
      specs.push_back({p + "post_feedforward_layernorm.weight", {H}, 0.f, 0.1f});
    }
    if (fam == Family::gemma3 || fam == Family::qwen3) {
      specs.push_back({p + "self_attn.q_norm.weight", {hd}, norm_mean, 0.1f});
      specs.push_back({p + "self_attn.k_norm.weight", {hd}, norm_mean, 0.1f});
    }
    specs.push_back({p + "self_attn.q_proj.weight", {nh * hd, H}, 0.f, 0.02f});
    specs.push_back({p + "self_attn.k_proj.weight", {nkv * hd, H}, 0.f, 0.02f});
    specs.push_back({p + "self_attn.v_proj.weight", {nkv * hd, H}, 0.f, 0.02f});
    if (fam == Family::qwen2) {
      specs.push_back({p + "self_attn.q_proj.bias", {nh * hd}, 0.f, 0.1f});
      specs.push_back({p + "self_attn.k_proj.bias", {nkv * hd}, 0.f, 0.1f});
      specs.push_back({p + "self_attn.v_proj.bias", {nkv * hd}, 0.f, 0.1f});
    }
    specs.push_back({p + "self_attn.o_proj.weight", {H, nh * hd}, 0.f, 0.02f});
    specs.push_back({p + "mlp.gate_proj.weight", {I, H}, 0.f, 0.02f});
    specs.push_back({p + "mlp.up_proj.weight", {I, H}, 0.f, 0.02f});
    specs.push_back({p + "mlp.down_proj.weight", {H, I}, 0.f, 0.02f});
  }
  specs.push_back({"model.norm.weight", {H}, norm_mean, 0.1f});
  if (!cfg.value("tie_word_embeddings", true))
    specs.push_back({"lm_head.weight", {V, H}, 0.f, 0.02f});

  std::vector<std::vector<char>> data(specs.size());
  std::vector<TensorToWrite> tensors;
  int64_t params = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : specs[i].shape) n *= d;
    params += n;
    data[i].resize(static_cast<size_t>(n) * dtype_size(opts.dtype));
    fill_normal(data[i].data(), opts.dtype, n, specs[i].mean, specs[i].std,
                hash_name(specs[i].name, opts.seed));
    tensors.push_back({specs[i].name, opts.dtype, specs[i].shape, data[i].data()});
  }
  write_safetensors((fs::path(opts.out_dir) / "model.safetensors").string(), tensors,
                    {{"format", "pt"}});
  std::ofstream((fs::path(opts.out_dir) / "config.json").string()) << cfg.dump(2) << "\n";
  std::ofstream((fs::path(opts.out_dir) / "generation_config.json").string())
      << preset->generation_config.dump(2) << "\n";
  return params;
}

}  // namespace tessera
