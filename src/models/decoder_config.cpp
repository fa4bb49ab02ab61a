#include "models/decoder_config.h"

#include <algorithm>
#include <map>

#include "core/check.h"

namespace tessera {

namespace {

// 1 + the highest N of the "layers.N." tensors (canonical names, model_dir.h).
int layers_in_weights(const ModelDir& dir) {
  int n = 0;
  for (const auto& [name, t] : dir.tensors()) {
    if (name.rfind("layers.", 0) != 0) continue;
    const size_t end = name.find('.', 7);
    if (end == std::string::npos || end == 7 || end - 7 > 9) continue;
    int layer = 0;
    for (size_t i = 7; i < end && layer >= 0; ++i)
      layer = name[i] >= '0' && name[i] <= '9' ? layer * 10 + (name[i] - '0') : -1;
    n = std::max(n, layer + 1);
  }
  return n;
}

}  // namespace

DecoderConfig decoder_dims(const ModelInfo& in) {
  return {.hidden = in.hidden_size,
          .heads = in.num_heads,
          .kv_heads = in.num_kv_heads,
          .head_dim = in.head_dim,
          .intermediate = in.intermediate_size,
          .vocab = in.vocab_size,
          .layers = in.num_layers};
}

void read_common_config(const ConfigReader& c, const ModelDir& dir, const ConfigDefaults& d,
                        ModelInfo& in) {
  for (const char* k :
       {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings"})
    if (c.has(k) && c.get_int(k) <= 0) c.bad(k, "must be positive");
  in.hidden_size = static_cast<int>(c.get_int("hidden_size"));
  in.intermediate_size = static_cast<int>(c.get_int("intermediate_size"));
  in.num_layers = static_cast<int>(c.get_int("num_hidden_layers"));
  in.num_heads = static_cast<int>(c.get_int("num_attention_heads"));
  in.num_kv_heads = static_cast<int>(
      c.get_int("num_key_value_heads", d.num_kv_heads ? d.num_kv_heads : in.num_heads));
  in.head_dim = static_cast<int>(
      c.get_int("head_dim", d.head_dim ? d.head_dim : in.hidden_size / in.num_heads));
  in.vocab_size = static_cast<int>(d.vocab_size ? c.get_int("vocab_size", d.vocab_size)
                                                : c.get_int("vocab_size"));
  in.max_position_embeddings =
      static_cast<int>(c.get_int("max_position_embeddings", d.max_position_embeddings));
  in.tied_embeddings = c.get_bool("tie_word_embeddings", d.tie_word_embeddings);
  auto optional_id = [&](const char* k, int dflt) {
    return c.has(k) && c.j[k].is_number_integer() ? static_cast<int>(c.get_int(k)) : dflt;
  };
  in.bos_token_id = optional_id("bos_token_id", d.bos_token_id);
  in.pad_token_id = optional_id("pad_token_id", d.pad_token_id);
  in.eos_token_ids = read_eos_ids(dir);
  if (!c.has("head_dim") && !d.head_dim && in.hidden_size % in.num_heads != 0)
    c.bad("num_attention_heads", "must divide hidden_size (" + std::to_string(in.hidden_size) +
                                     ") when head_dim is not given");
  if (in.num_heads % in.num_kv_heads != 0)
    c.bad("num_key_value_heads", "must divide num_attention_heads");
  if (in.head_dim <= 0 || in.head_dim % 2 != 0)
    c.bad("head_dim", "must be positive and even (rotary embedding)");
  // The per-layer arrays (layer types, windows, rotary parameters) are sized from
  // num_hidden_layers before any tensor is read: a count the weights cannot back (2^31 - 1)
  // allocated gigabytes and ended in a bare std::bad_alloc (issue #29). The other sizes meet
  // the tensors' shapes before anything is allocated from them.
  if (const int held = layers_in_weights(dir); in.num_layers > held)
    c.bad("num_hidden_layers", "is " + std::to_string(in.num_layers) + " but the weights hold " +
                                   std::to_string(held) + " layers");
}

std::vector<std::string> read_layer_types(const ConfigReader& c, int num_layers) {
  std::vector<std::string> types;
  if (!c.has("layer_types")) return types;
  const auto& lt = c.j["layer_types"];
  if (!lt.is_array() || lt.size() != static_cast<size_t>(num_layers))
    c.bad("layer_types", "must list one type per layer (" + std::to_string(num_layers) + ")");
  for (const auto& t : lt) {
    if (!t.is_string() || (t != "sliding_attention" && t != "full_attention"))
      c.bad("layer_types", "entries must be \"sliding_attention\" or \"full_attention\"");
    types.push_back(t.get<std::string>());
  }
  return types;
}

DType choose_weight_dtype(const ModelDir& dir, const LoadOptions& opts, DType* checkpoint_dtype) {
  std::map<DType, size_t> bytes;
  for (const auto& [name, t] : dir.tensors())
    if (t.dtype_known && t.dtype != DType::u32) bytes[t.dtype] += t.nbytes;  // not packed words
  DType ck = DType::f32;
  size_t best = 0;
  for (auto [dt, n] : bytes)
    if (n > best) best = n, ck = dt;
  if (checkpoint_dtype) *checkpoint_dtype = ck;
  if (opts.dtype == "auto" || opts.dtype.empty())
    return ck == DType::bf16 ? DType::bf16 : DType::f32;
  if (opts.dtype == "f32" || opts.dtype == "float32") return DType::f32;
  if (opts.dtype == "bf16" || opts.dtype == "bfloat16") return DType::bf16;
  fail_arg("unknown dtype '" + opts.dtype + "' (expected auto, f32 or bf16)");
}

std::vector<int> read_eos_ids(const ModelDir& dir) {
  // generation_config.json's list is what transformers' generate() stops on; config.json's is
  // the fallback when there is none.
  std::vector<int> ids;
  auto add = [&](const nlohmann::json& j, const std::string& file) {
    auto one = [&](const nlohmann::json& e) {  // an id past 32 bits would wrap to a valid one
      if (!e.is_number_integer()) return;
      if (e.is_number_unsigned() ? e.get<uint64_t>() > INT32_MAX
                                 : e.get<int64_t>() < INT32_MIN || e.get<int64_t>() > INT32_MAX)
        fail_model(file + ": key 'eos_token_id' holds " + e.dump() + ", outside the 32-bit range");
      ids.push_back(e.get<int>());
    };
    if (j.is_array()) {
      for (const auto& e : j) one(e);
    } else {
      one(j);
    }
  };
  if (dir.generation_config().contains("eos_token_id"))
    add(dir.generation_config()["eos_token_id"],
        dir.gguf() ? dir.config_path() : dir.path() + "/generation_config.json");
  if (ids.empty() && dir.config().contains("eos_token_id"))
    add(dir.config()["eos_token_id"], dir.config_path());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace tessera
