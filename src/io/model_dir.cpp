#include "io/model_dir.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/check.h"
#include "core/json_limits.h"
#include "io/gguf.h"
#include "io/mapped_file.h"

namespace tessera {

namespace fs = std::filesystem;
using json = nlohmann::json;

json read_json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorKind::io, path + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_json(ss.str(), path, ErrorKind::invalid_model);
}

std::string canonical_tensor_name(const std::string& n) {
  static const char* kPrefixes[] = {"model.language_model.", "language_model.model.",
                                    "language_model.", "model."};
  static const char* kOther[] = {
      "vision_tower.", "model.vision_tower.", "multi_modal_projector.",
      "model.multi_modal_projector.", "vision_model.", "model.vision_model.",
      // Gemma 4's multimodal towers and their projections into text
      "model.embed_vision.", "model.embed_audio.", "model.audio_tower.", "audio_tower."};
  for (const char* o : kOther)
    if (n.rfind(o, 0) == 0) return "";
  for (const char* p : kPrefixes)
    if (n.rfind(p, 0) == 0) return n.substr(std::string(p).size());
  return n;
}

ModelDir::ModelDir(const std::string& dir) : dir_(dir), config_path_(dir + "/config.json") {
  if (fs::is_regular_file(dir)) {
    import_gguf();
    return;
  }
  if (!fs::is_directory(dir)) fail(ErrorKind::io, dir + ": no such model directory or GGUF file");
  const std::string& cfg_path = config_path_;
  if (!fs::exists(cfg_path))
    fail_model(dir + ": no config.json (is this a Hugging Face model directory?)");
  require_regular_file(cfg_path);
  full_config_ = read_json_file(cfg_path);
  if (!full_config_.is_object()) fail_model(cfg_path + ": not a JSON object");
  config_ = full_config_;
  if (full_config_.contains("text_config") && full_config_["text_config"].is_object()) {
    config_ = full_config_["text_config"];
    if (!config_.contains("architectures") && full_config_.contains("architectures"))
      config_["architectures"] = full_config_["architectures"];
    for (const char* k : {"eos_token_id", "bos_token_id", "pad_token_id"})
      if (!config_.contains(k) && full_config_.contains(k)) config_[k] = full_config_[k];
  }
  std::string gen_path = dir + "/generation_config.json";
  generation_config_ = json::object();
  if (fs::exists(gen_path)) {
    require_regular_file(gen_path);
    generation_config_ = read_json_file(gen_path);
  }

  std::string index_path = dir + "/model.safetensors.index.json";
  std::vector<std::string> files;
  if (fs::exists(index_path)) {
    require_regular_file(index_path);
    json index = read_json_file(index_path);
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      fail_model(index_path + ": no weight_map object");
    std::set<std::string> uniq;
    for (auto& [k, v] : index["weight_map"].items()) {
      if (!v.is_string()) fail_model(index_path + ": weight_map['" + k + "'] is not a file name");
      // Shards are files of this directory: no absolute path, no "..", so that an index cannot
      // make the load read a file elsewhere (a shard that is a symlink, as in the Hugging Face
      // cache, is the directory owner's choice and is followed).
      const fs::path shard(v.get<std::string>());
      bool inside = !shard.empty() && shard.is_relative();
      for (const auto& part : shard) inside = inside && part != "..";
      if (!inside)
        fail_model(index_path + ": weight_map['" + k + "'] names '" + shard.string() +
                   "', which is not a file inside the model directory");
      uniq.insert(shard.string());
    }
    for (const auto& f : uniq) {
      if (!fs::exists(dir + "/" + f))
        fail_model(index_path + ": names shard '" + f + "', which is missing");
      files.push_back(dir + "/" + f);
    }
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
  }
  if (files.empty()) fail_model(dir + ": no *.safetensors weights");
  for (const auto& f : files) add_shard(f);
}

void ModelDir::add_shard(const std::string& file) {
  shards_.push_back(std::make_unique<SafetensorsFile>(file));
  for (const auto& [name, info] : shards_.back()->tensors()) {
    std::string c = canonical_tensor_name(name);
    if (c.empty()) continue;
    if (tensors_.count(c))
      fail_model(file + ": tensor '" + name + "' also appears in " + tensors_.at(c).file);
    tensors_.emplace(c, info);
  }
}

const TensorInfo* ModelDir::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

ModelDir::~ModelDir() = default;

const TensorInfo& ModelDir::take(const std::string& name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail_model(dir_ + ": missing tensor '" + name + "'");
  if (!it->second.dtype_known && !it->second.ggml)
    fail_model(it->second.file + ": tensor '" + it->second.name + "' has dtype " +
               it->second.dtype_name + "; tessera reads F32, BF16, F16 and (quantized) U32");
  used_.insert(name);
  auto x = transforms_.find(name);
  if (x != transforms_.end() && !owned_.count(it->second.name))
    return materialize(it->second, x->second);
  return it->second;
}

const TensorInfo& ModelDir::materialize(TensorInfo& t, const Transform& x) {
  std::vector<unsigned char>& out = owned_[t.name];
  out.resize(t.nbytes);
  const auto* src = static_cast<const unsigned char*>(t.data);
  if (x.unpermute_heads > 0) {
    // llama.cpp's convert (conversion/llama.py LlamaModel.permute) stores q/k_proj rows per head
    // as [2, head_dim / 2] -> [head_dim / 2, 2]: checkpoint row h*hd + s*(hd/2) + j is stored at
    // h*hd + 2j + s. Rows are whole (blocks never span rows), so any type moves by rows.
    const int64_t rows = t.shape.empty() ? 1 : t.shape[0];
    const int64_t hd = rows / x.unpermute_heads;
    if (hd * x.unpermute_heads != rows || hd % 2 != 0)
      fail_model(t.file + ": tensor '" + t.name + "' has " + std::to_string(rows) +
                 " rows, not an even head_dim times " + std::to_string(x.unpermute_heads) +
                 " heads");
    const size_t row_bytes = t.nbytes / static_cast<size_t>(rows);
    for (int64_t h = 0; h < x.unpermute_heads; ++h)
      for (int64_t s = 0; s < 2; ++s)
        for (int64_t j = 0; j < hd / 2; ++j)
          std::copy_n(src + static_cast<size_t>(h * hd + 2 * j + s) * row_bytes, row_bytes,
                      out.data() + static_cast<size_t>(h * hd + s * (hd / 2) + j) * row_bytes);
  } else {
    std::copy_n(src, t.nbytes, out.data());
  }
  if (x.add != 0.0f) {
    if (!t.dtype_known || t.dtype != DType::f32)
      fail_model(t.file + ": tensor '" + t.name + "' is " + t.dtype_name +
                 "; a GGUF norm weight must be F32");
    auto* f = reinterpret_cast<float*>(out.data());
    for (size_t i = 0; i < t.nbytes / sizeof(float); ++i) f[i] += x.add;
  }
  t.data = out.data();
  t.mapped = false;
  return t;
}

void ModelDir::release(const TensorInfo& t) {
  if (t.mapped) {
    tessera::release_pages(t);
    return;
  }
  auto o = owned_.find(t.name);  // emptied, not erased: take() does not redo it
  if (o != owned_.end()) std::vector<unsigned char>().swap(o->second);
}

void ModelDir::check_all_used() const {
  for (const auto& [name, info] : tensors_)
    if (!used_.count(name))
      fail_model(info.file + ": unexpected tensor '" + info.name +
                 "' (not part of this architecture as configured)");
}

size_t ModelDir::total_bytes() const {
  size_t n = 0;
  for (const auto& [name, info] : tensors_) n += info.nbytes;
  return n;
}

void ConfigReader::bad(const char* key, const std::string& why) const {
  fail_model(file + ": key '" + key + "' " + why);
}

int ConfigReader::get_int(const char* key) const {
  if (!has(key)) bad(key, "is missing");
  const json& v = j[key];
  if (!v.is_number_integer()) bad(key, "is not an integer");
  const bool fits = v.is_number_unsigned()
                        ? v.get<uint64_t>() <= INT32_MAX
                        : v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX;
  if (!fits) bad(key, "is " + v.dump() + ", outside the 32-bit range");
  return static_cast<int>(v.get<int64_t>());
}

int ConfigReader::get_int(const char* key, int dflt) const {
  return has(key) ? get_int(key) : dflt;
}

double ConfigReader::get_positive(const char* key) const {
  const double v = get_float(key);
  // Read into floats by the models: a value past FLT_MAX would become inf there, one below the
  // smallest float (1e-300) 0.
  if (!(static_cast<float>(v) > 0) || !(v <= std::numeric_limits<float>::max()))
    bad(key, "must be a finite number > 0 (got " + j[key].dump() + ")");
  return v;
}

double ConfigReader::get_positive(const char* key, double dflt) const {
  return has(key) ? get_positive(key) : dflt;
}

double ConfigReader::get_float(const char* key) const {
  if (!has(key)) bad(key, "is missing");
  if (!j[key].is_number()) bad(key, "is not a number");
  return j[key].get<double>();
}

double ConfigReader::get_float(const char* key, double dflt) const {
  return has(key) ? get_float(key) : dflt;
}

bool ConfigReader::get_bool(const char* key, bool dflt) const {
  if (!has(key)) return dflt;
  if (!j[key].is_boolean()) bad(key, "is not a boolean");
  return j[key].get<bool>();
}

std::string ConfigReader::get_string(const char* key, const std::string& dflt) const {
  if (!has(key)) return dflt;
  if (!j[key].is_string()) bad(key, "is not a string");
  return j[key].get<std::string>();
}

void ModelDir::release_pages() const {
  for (const auto& s : shards_) s->release_pages();
  if (gguf_) gguf_->release_pages();
}

}  // namespace tessera
