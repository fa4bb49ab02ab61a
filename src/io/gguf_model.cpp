// A GGUF file opened as the Hugging Face checkpoint its converter read (ModelDir's file form).
//
// llama.cpp's convert_hf_to_gguf.py writes config.json's keys as "{arch}.*" metadata
// (conversion/base.py TextModel.set_gguf_parameters and the architecture classes of
// conversion/llama.py, qwen.py, gemma.py), renames the tensors (gguf-py tensor_mapping.py) and
// changes some values; llama.cpp's loaders read the metadata back with their own defaults
// (src/llama-model.cpp load_hparams, src/models/{llama,qwen2,qwen3,gemma3}.cpp). This file undoes
// all three: config() is the config.json the model had, with llama.cpp's defaults where the file
// is silent (so that tessera runs what llama.cpp runs); tensors carry transformers' names; and
// take() gives back the checkpoint's values (ModelDir::Transform):
//   - llama (and Mistral, which converts to llama): q_proj / k_proj rows were permuted into
//     the interleaved rotary order (LlamaModel.permute), undone row by row;
//   - gemma3: every norm weight was stored as 1 + w (Gemma3Model.norm_shift), w given back in
//     f32, so the model's own (1 + w) gives the stored value again exactly;
//   - llama 3 rope scaling became a tensor of per-frequency divisors (rope_freqs.weight,
//     LlamaModel.generate_extra_tensors), kept as such (rope.h "gguf_freq_factors").
#include <cstring>

#include "core/check.h"
#include "io/gguf.h"
#include "io/model_dir.h"

namespace tessera {

namespace {

using json = nlohmann::json;

struct Arch {
  const char* gguf;        // general.architecture
  const char* hf;          // config.json "architectures"
  const char* model_type;  // config.json "model_type"
  bool permuted_qk;        // LlamaModel.undo_permute: q/k rows stored in interleaved order
  bool gemma;              // Gemma 3: sandwich norms stored as 1 + w, its own keys
};
constexpr Arch kArchs[] = {
    {"llama", "LlamaForCausalLM", "llama", true, false},
    {"qwen2", "Qwen2ForCausalLM", "qwen2", false, false},
    {"qwen3", "Qwen3ForCausalLM", "qwen3", false, false},
    {"gemma3", "Gemma3ForCausalLM", "gemma3_text", false, true},
};

struct Name {
  const char* gguf;
  const char* hf;
};
// blk.N.<gguf> -> layers.N.<hf> (gguf-py constants.py MODEL_TENSOR names).
constexpr Name kLayerNames[] = {
    {"attn_q", "self_attn.q_proj"},      {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},      {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"}, {"attn_k_norm", "self_attn.k_norm"},
    {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},       {"attn_norm", "input_layernorm"},
};
// The norms around the MLP are named by position: Llama's post_attention_layernorm is the MLP's
// input norm (ffn_norm); Gemma's normalizes the attention output (post_attention_norm).
constexpr Name kLlamaNorms[] = {{"ffn_norm", "post_attention_layernorm"}};
constexpr Name kGemmaNorms[] = {{"post_attention_norm", "post_attention_layernorm"},
                                {"ffn_norm", "pre_feedforward_layernorm"},
                                {"post_ffw_norm", "post_feedforward_layernorm"}};

// The transformers name of GGUF tensor `n`, "" for one this file does not know (kept under its
// own name, so that ModelDir::check_all_used names it).
std::string hf_name(const std::string& n, const Arch& a, int64_t layers) {
  if (n == "token_embd.weight") return "embed_tokens.weight";
  if (n == "output_norm.weight") return "norm.weight";
  if (n == "output.weight") return "lm_head.weight";
  if (n.rfind("blk.", 0) != 0) return "";
  const size_t dot = n.find('.', 4);
  if (dot == std::string::npos || dot == 4) return "";
  int64_t layer = 0;
  for (size_t i = 4; i < dot; ++i) {
    if (n[i] < '0' || n[i] > '9' || layer > layers) return "";
    layer = layer * 10 + (n[i] - '0');
  }
  if (layer >= layers) return "";
  const size_t last = n.rfind('.');
  const std::string base = n.substr(dot + 1, last - dot - 1), suffix = n.substr(last);
  if (suffix != ".weight" && suffix != ".bias") return "";
  auto find = [&](const auto& table) -> const char* {
    for (const Name& e : table)
      if (base == e.gguf) return e.hf;
    return nullptr;
  };
  const char* hf = find(kLayerNames);
  if (!hf) hf = a.gemma ? find(kGemmaNorms) : find(kLlamaNorms);
  if (!hf) return "";
  return "layers." + std::to_string(layer) + "." + hf + suffix;
}

// An integer key that llama.cpp reads with get_key_or_arr (a scalar, or one value per layer):
// tessera takes the scalar, or an array whose entries are all equal.
int64_t uniform_int(const GgufFile& f, const std::string& key) {
  if (f.get(key).type != GgufValueType::array) return f.get_int(key);
  const std::vector<int64_t> v = f.get_int_array(key);
  if (v.empty()) f.bad_key(key, "is an empty array");
  for (int64_t x : v)
    if (x != v[0])
      fail(ErrorKind::unsupported,
           f.path() + ": key '" + key + "' differs between layers, which tessera does not support");
  return v[0];
}

int64_t positive(const GgufFile& f, const std::string& key, int64_t v) {
  if (v <= 0 || v > (int64_t{1} << 31)) f.bad_key(key, "must be a positive 32-bit count");
  return v;
}

}  // namespace

void ModelDir::import_gguf() {
  gguf_ = std::make_unique<GgufFile>(dir_);
  const GgufFile& f = *gguf_;
  config_path_ = dir_ + " (metadata)";
  const std::string arch_name = f.get_string("general.architecture");
  const Arch* a = nullptr;
  for (const Arch& e : kArchs)
    if (arch_name == e.gguf) a = &e;
  if (!a) {
    std::string known;
    for (const Arch& e : kArchs) known += std::string(known.empty() ? "" : ", ") + e.gguf;
    fail(ErrorKind::unsupported, dir_ + ": general.architecture '" + arch_name +
                                     "' is not supported (tessera reads " + known + ")");
  }
  auto key = [&](const char* k) { return arch_name + "." + k; };

  // --- the shape (load_hparams' required keys, and its defaults for the optional ones) -------
  json c;
  c["architectures"] = json::array({a->hf});
  c["model_type"] = a->model_type;
  const int64_t layers = positive(f, key("block_count"), f.get_int(key("block_count")));
  const int64_t hidden = positive(f, key("embedding_length"), f.get_int(key("embedding_length")));
  const int64_t heads =
      positive(f, key("attention.head_count"), uniform_int(f, key("attention.head_count")));
  const int64_t kv_heads = f.has(key("attention.head_count_kv"))
                               ? positive(f, key("attention.head_count_kv"),
                                          uniform_int(f, key("attention.head_count_kv")))
                               : heads;
  const int64_t head_dim = f.get_int(key("attention.key_length"), hidden / heads);
  if (f.get_int(key("attention.value_length"), head_dim) != head_dim)
    fail(ErrorKind::unsupported, dir_ + ": " + key("attention.value_length") +
                                     " differs from key_length, which tessera does not support");
  if (f.get_int(key("rope.dimension_count"), head_dim) != head_dim)
    fail(ErrorKind::unsupported,
         dir_ + ": " + key("rope.dimension_count") + " = " +
             std::to_string(f.get_int(key("rope.dimension_count"))) +
             " rotates part of each head, which tessera does not support (head_dim " +
             std::to_string(head_dim) + ")");
  c["num_hidden_layers"] = layers;
  c["hidden_size"] = hidden;
  c["intermediate_size"] =
      positive(f, key("feed_forward_length"), uniform_int(f, key("feed_forward_length")));
  c["num_attention_heads"] = heads;
  c["num_key_value_heads"] = kv_heads;
  c["head_dim"] = positive(f, key("attention.key_length"), head_dim);
  c["max_position_embeddings"] =
      positive(f, key("context_length"), f.get_int(key("context_length")));
  c["rms_norm_eps"] = f.get_float(key("attention.layer_norm_rms_epsilon"));

  // --- tensors -------------------------------------------------------------------------------
  const GgufTensor* rope_freqs = nullptr;
  for (const GgufTensor& t : f.tensors()) {
    if (t.name == "rope_freqs.weight") {
      rope_freqs = &t;
      continue;
    }
    std::string n = hf_name(t.name, *a, layers);
    TensorInfo i;
    i.name = t.name;
    i.dtype_name = t.type_name();
    i.shape = t.shape();
    i.data = t.data;
    i.nbytes = t.nbytes;
    i.mapped = true;
    i.file = dir_;
    switch (static_cast<GgmlType>(t.type_id)) {
      case GgmlType::f32:
        i.dtype_known = true, i.dtype = DType::f32;
        break;
      case GgmlType::f16:
        i.dtype_known = true, i.dtype = DType::f16;
        break;
      case GgmlType::bf16:
        i.dtype_known = true, i.dtype = DType::bf16;
        break;
      default:
        i.ggml = t.type, i.ggml_type = t.type_id;
    }
    if (n.empty()) n = t.name;  // unknown: check_all_used() names it
    Transform x;
    if (a->permuted_qk) {
      if (n.find("self_attn.q_proj.") != std::string::npos) x.unpermute_heads = heads;
      if (n.find("self_attn.k_proj.") != std::string::npos) x.unpermute_heads = kv_heads;
    }
    if (a->gemma && n.size() >= 11 && n.compare(n.size() - 11, 11, "norm.weight") == 0)
      x.add = -1.0f;
    if (x.unpermute_heads || x.add != 0.0f) transforms_[n] = x;
    if (!tensors_.emplace(n, std::move(i)).second)
      fail_model(dir_ + ": tensor '" + t.name + "' appears twice");
  }
  const TensorInfo* embed = find("embed_tokens.weight");
  if (!embed || embed->shape.size() != 2) fail_model(dir_ + ": no 2-D tensor 'token_embd.weight'");
  c["vocab_size"] = embed->shape[0];
  c["tie_word_embeddings"] = !has("lm_head.weight");

  // --- rotary embedding --------------------------------------------------------------------
  c["rope_theta"] = f.get_float(key("rope.freq_base"), 10000.0);
  const std::string scaling = f.get_string(key("rope.scaling.type"), "linear");
  const double factor = f.has(key("rope.scaling.factor"))
                            ? f.get_float(key("rope.scaling.factor"))
                            : f.get_float(key("rope.scale_linear"), 0);
  if (scaling != "linear" && scaling != "none")
    fail(ErrorKind::unsupported, dir_ + ": " + key("rope.scaling.type") + " '" + scaling +
                                     "' is not supported (tessera reads none and linear)");
  if (scaling == "linear" && factor != 0.0 && factor != 1.0)
    c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", factor}};
  if (rope_freqs) {
    if (c.contains("rope_scaling"))
      fail(ErrorKind::unsupported, dir_ + ": rope_freqs.weight and linear rope scaling together");
    if (rope_freqs->type_id != static_cast<uint32_t>(GgmlType::f32) ||
        rope_freqs->numel() != head_dim / 2)
      fail_model(dir_ + ": rope_freqs.weight must be F32 [" + std::to_string(head_dim / 2) +
                 "], not " + rope_freqs->type_name() + " " + rope_freqs->shape_str());
    std::vector<float> v(static_cast<size_t>(head_dim / 2));
    std::memcpy(v.data(), rope_freqs->data, v.size() * sizeof(float));
    for (float x : v)
      if (!(x > 0.0f)) fail_model(dir_ + ": rope_freqs.weight holds a value that is not positive");
    c["rope_scaling"] = {{"rope_type", "gguf_freq_factors"}, {"factors", v}};
  }

  // --- per architecture ----------------------------------------------------------------------
  if (a->gemma) {
    // gemma3.cpp load_arch_hparams: sliding layers when a window is given, every sixth layer
    // global unless the file says; the attention scale of the 27B (62 layers) is
    // 1/sqrt(hidden / heads), of every other size 1/sqrt(head_dim).
    const int64_t window = f.get_int(key("attention.sliding_window"), 0);
    const int64_t period = f.get_int(key("attention.sliding_window_pattern"), 6);
    if (period < 0) f.bad_key(key("attention.sliding_window_pattern"), "must not be negative");
    json types = json::array();
    for (int64_t i = 0; i < layers; ++i)
      types.push_back(window > 0 && (period == 0 || i % period < period - 1) ? "sliding_attention"
                                                                             : "full_attention");
    c["layer_types"] = types;
    c["sliding_window"] = window > 0 ? window : 4096;
    c["rope_local_base_freq"] = f.get_float(key("rope.freq_base_swa"), 10000.0);
    c["query_pre_attn_scalar"] = layers == 62 ? hidden / heads : head_dim;
    if (f.has(key("final_logit_softcapping")))
      c["final_logit_softcapping"] = f.get_float(key("final_logit_softcapping"));
  } else {
    c["attention_bias"] = has("layers.0.self_attn.q_proj.bias");
  }

  // --- special tokens ----------------------------------------------------------------------
  json gen = json::object();
  std::vector<int64_t> eos;
  for (const char* k : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                        "tokenizer.ggml.eom_token_id"})
    if (f.has(k)) eos.push_back(f.get_int(k));
  if (!eos.empty()) {
    c["eos_token_id"] = eos.front();
    gen["eos_token_id"] = eos;
  }
  if (f.has("tokenizer.ggml.bos_token_id"))
    c["bos_token_id"] = f.get_int("tokenizer.ggml.bos_token_id");
  if (f.has("tokenizer.ggml.padding_token_id"))
    c["pad_token_id"] = f.get_int("tokenizer.ggml.padding_token_id");
  full_config_ = config_ = std::move(c);
  generation_config_ = std::move(gen);
}

}  // namespace tessera
