// A Hugging Face model directory as it is on disk: config.json (top level or nested under
// text_config), generation_config.json, and the safetensors shards (through
// model.safetensors.index.json when present). Tensor names are canonicalised so that model files
// see "layers.3.self_attn.q_proj.weight", "embed_tokens.weight", "norm.weight", "lm_head.weight"
// whether the checkpoint stored them under "model.", "language_model.model." (older
// Gemma3ForConditionalGeneration) or "model.language_model." (transformers 5).
//
// A GGUF file (llama.cpp's format) opens as the same thing: io/gguf_model.cpp maps its metadata
// to the config.json its converter read and its tensors to those names, and undoes the
// converter's changes to the values (take() materializes those tensors), so that model files
// never see the format.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace tessera {

class GgufFile;

class ModelDir {
 public:
  // A directory: reads config.json and generation_config.json and maps every shard. A file: maps
  // it as GGUF. Throws Error naming the file on any problem.
  explicit ModelDir(const std::string& path);
  ~ModelDir();

  const std::string& path() const { return dir_; }
  // The GGUF file this model came from; null for a directory.
  const GgufFile* gguf() const { return gguf_.get(); }
  // The text model's config: config.json itself or its "text_config" object, with the
  // top-level "architectures" carried over when the nested one has none.
  const nlohmann::json& config() const { return config_; }
  const nlohmann::json& full_config() const { return full_config_; }
  const nlohmann::json& generation_config() const { return generation_config_; }  // {} if absent
  // Where config() came from, for messages: config.json, or the GGUF file's metadata.
  const std::string& config_path() const { return config_path_; }

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The tensor under its canonical name; marks it used. Throws naming the tensor if missing.
  // A GGUF tensor whose stored values differ from the checkpoint's is materialized here, held
  // until release().
  const TensorInfo& take(const std::string& name);
  // Once a taken tensor is uploaded: frees its materialized copy, or drops its file pages
  // (safetensors.h release_pages).
  void release(const TensorInfo& t);
  const TensorInfo* find(const std::string& name) const;
  // Throws naming the first text-model tensor that no take() asked for.
  void check_all_used() const;

  size_t total_bytes() const;
  // Every shard's SafetensorsFile::release_pages(): called once the model is loaded.
  void release_pages() const;
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }

 private:
  void add_shard(const std::string& file);
  void import_gguf();  // io/gguf_model.cpp

  // What take() does to a GGUF tensor before use (llama.cpp's converter changes undone).
  struct Transform {
    int64_t unpermute_heads = 0;  // rows back from llama.cpp's interleaved rotary order
    float add = 0.0f;             // added to every (f32) value: Gemma's norms stored as 1 + w
  };
  const TensorInfo& materialize(TensorInfo& t, const Transform& x);

  std::string dir_, config_path_;
  nlohmann::json full_config_, config_, generation_config_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, TensorInfo> tensors_;  // canonical name -> info
  std::set<std::string> used_;
  std::unique_ptr<GgufFile> gguf_;
  std::map<std::string, Transform> transforms_;              // canonical name -> change
  std::map<std::string, std::vector<unsigned char>> owned_;  // by stored name: the copies
};

// The name model files use for a checkpoint's tensor or module path: the wrappers of multimodal
// and causal-LM checkpoints stripped ("model.layers.0.mlp" -> "layers.0.mlp"); "" for other
// towers (vision, projector), which are ignored.
std::string canonical_tensor_name(const std::string& name);

// Reads a JSON file; throws Error(io / invalid_model) naming it.
nlohmann::json read_json_file(const std::string& path);

// Typed config access with errors naming the file and key. Integers are ints: a value outside
// the 32-bit range is an error, never truncated by a cast (2^32 + 6 layers would load as 6).
struct ConfigReader {
  const nlohmann::json& j;
  std::string file;

  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  int get_int(const char* key) const;
  int get_int(const char* key, int dflt) const;
  double get_float(const char* key) const;
  double get_float(const char* key, double dflt) const;
  // A float that must be finite and > 0 (a norm's eps, a scalar, a rotary base): zero or a
  // negative value loads and gives NaN logits, so it is refused naming the key.
  double get_positive(const char* key) const;
  double get_positive(const char* key, double dflt) const;
  bool get_bool(const char* key, bool dflt) const;
  std::string get_string(const char* key, const std::string& dflt) const;
  [[noreturn]] void bad(const char* key, const std::string& why) const;
};

}  // namespace tessera
