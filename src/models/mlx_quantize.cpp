#include "models/mlx_quantize.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <vector>

#include "core/check.h"
#include "core/thread_pool.h"
#include "io/model_dir.h"
#include "io/safetensors.h"
#include "quant/affine.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The modules mlx-lm quantizes in the architectures tessera runs: its nn.Linear and nn.Embedding
// layers, by their last path component.
bool quantizable_module(const std::string& module) {
  static const std::set<std::string> kNames = {"q_proj",    "k_proj",    "v_proj",
                                               "o_proj",    "gate_proj", "up_proj",
                                               "down_proj", "lm_head",   "embed_tokens"};
  return kNames.count(module.substr(module.rfind('.') + 1)) != 0;
}

// The layer index in a module path ("model.layers.12.mlp.down_proj" -> 12), 0 when none (as
// mlx-lm's predicate reads paths without one).
int layer_index(const std::string& path) {
  const auto p = path.find("layers.");
  if (p == std::string::npos) return 0;
  return std::atoi(path.c_str() + p + 7);
}

// ref: mlx_lm/convert.py mixed_quant_predicate_builder.
QuantFormat mixed_format(const std::string& recipe, const std::string& path, int num_layers,
                         int group_size) {
  int low = 0, high = 6;
  if (recipe == "2_6") {
    low = 2;
  } else if (recipe == "3_4") {
    low = 3;
    high = 4;
  } else if (recipe == "3_6") {
    low = 3;
  } else if (recipe == "4_6") {
    low = 4;
  } else {
    fail_arg("--mixed: expected 2_6, 3_4, 3_6 or 4_6 (mlx-lm's recipes), got '" + recipe + "'");
  }
  const int i = layer_index(path), L = num_layers;
  const bool more = i < L / 8 || i >= 7 * L / 8 || (i - L / 8) % 3 == 2;
  auto contains = [&](const char* s) { return path.find(s) != std::string::npos; };
  if ((contains("v_proj") || contains("down_proj")) && more) return {high, group_size};
  if (contains("lm_head")) return {high, group_size};
  return {low, group_size};
}

json format_json(QuantFormat f) {
  return {{"group_size", f.group_size}, {"bits", f.bits}, {"mode", "affine"}};
}

}  // namespace

const void* QuantizedMatrix::scales() const {
  return dtype == DType::f32 ? static_cast<const void*>(s32.data()) : s16.data();
}
const void* QuantizedMatrix::biases() const {
  return dtype == DType::f32 ? static_cast<const void*>(b32.data()) : b16.data();
}

QuantizedMatrix quantize_matrix(const TensorInfo& t, QuantFormat f) {
  TS_ASSERT(t.shape.size() == 2 && t.shape[1] % f.group_size == 0);
  const int64_t rows = t.shape[0], cols = t.shape[1], groups = cols / f.group_size;
  const int64_t words = quant::words_per_row(cols, f.bits);
  QuantizedMatrix o;
  o.dtype = t.dtype;
  o.packed.resize(static_cast<size_t>(rows * words));
  std::vector<float> s(static_cast<size_t>(rows * groups)), b(s.size());
  ThreadPool::global().parallel_for(rows, [&](int64_t r0, int64_t r1, int) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t k = 0; k < cols; ++k) {
        const int64_t i = r * cols + k;
        row[k] = t.dtype == DType::f32    ? static_cast<const float*>(t.data)[i]
                 : t.dtype == DType::bf16 ? bf16_to_f32(static_cast<const uint16_t*>(t.data)[i])
                                          : f16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
      }
      quant::quantize_row(row.data(), cols, f.bits, f.group_size, o.packed.data() + r * words,
                          s.data() + r * groups, b.data() + r * groups);
    }
  });
  if (t.dtype == DType::f32) {
    o.s32 = std::move(s);
    o.b32 = std::move(b);
    return o;
  }
  o.s16.resize(s.size());
  o.b16.resize(b.size());
  for (size_t i = 0; i < s.size(); ++i) {
    o.s16[i] = t.dtype == DType::bf16 ? f32_to_bf16(s[i]) : f32_to_f16(s[i]);
    o.b16[i] = t.dtype == DType::bf16 ? f32_to_bf16(b[i]) : f32_to_f16(b[i]);
  }
  return o;
}

QuantizeReport quantize_model_dir(const QuantizeOptions& o) {
  if (o.mixed.empty() && o.bits != 4 && o.bits != 8 && !quant::valid_bits(o.bits))
    fail_arg("--bits: expected 2, 3, 4, 5, 6 or 8, got " + std::to_string(o.bits));
  if (!quant::valid_group_size(o.group_size))
    fail_arg("--group-size: expected 32, 64 or 128, got " + std::to_string(o.group_size));
  if (o.out_dir.empty()) fail_arg("--out: an output directory is required");
  std::error_code ec;
  if (fs::exists(o.out_dir) && fs::equivalent(o.model_dir, o.out_dir, ec))
    fail_arg("--out is the model directory itself; write the quantized copy elsewhere");
  ModelDir src(o.model_dir);
  for (const auto& [name, t] : src.tensors())
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".scales") == 0)
      fail_model(t.file + ": '" + t.name + "': the model is already quantized");
  const int num_layers = static_cast<int>(
      ConfigReader{src.config(), src.config_path()}.get_int("num_hidden_layers", 0));

  QuantizeReport rep;
  std::vector<TensorToWrite> out;
  std::vector<std::unique_ptr<QuantizedMatrix>> keep;
  json overrides = json::object();
  // In the checkpoint's own order of names (sorted, as safetensors headers list them).
  std::map<std::string, const TensorInfo*> by_name;
  for (const auto& [name, t] : src.tensors()) by_name[t.name] = &t;
  for (const auto& [name, tp] : by_name) {
    const TensorInfo& t = *tp;
    rep.bytes_in += t.nbytes;
    if (!t.dtype_known) fail_model(t.file + ": tensor '" + t.name + "' has dtype " + t.dtype_name);
    const std::string suffix = ".weight";
    const bool is_weight = name.size() > suffix.size() &&
                           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    const std::string module = is_weight ? name.substr(0, name.size() - suffix.size()) : "";
    QuantFormat f;
    if (is_weight && t.shape.size() == 2 && quantizable_module(module) && t.dtype != DType::u32 &&
        t.dtype != DType::i32) {
      auto ov = o.overrides.find(module);
      if (ov != o.overrides.end()) {
        if (ov->second) f = *ov->second;
      } else if (!o.mixed.empty()) {
        f = mixed_format(o.mixed, module, num_layers, o.group_size);
      } else {
        f = {o.bits, o.group_size};
      }
      if (f.quantized() && t.shape[1] % f.group_size != 0) f = {};  // mlx-lm leaves it dense
    }
    if (!f.quantized()) {
      out.push_back({t.name, t.dtype, t.shape, t.data});
      rep.bytes_out += t.nbytes;
      ++rep.copied;
      continue;
    }
    keep.push_back(std::make_unique<QuantizedMatrix>(quantize_matrix(t, f)));
    const QuantizedMatrix& q = *keep.back();
    const int64_t rows = t.shape[0], groups = t.shape[1] / f.group_size;
    out.push_back(
        {t.name, DType::u32, {rows, quant::words_per_row(t.shape[1], f.bits)}, q.packed.data()});
    out.push_back({module + ".scales", t.dtype, {rows, groups}, q.scales()});
    out.push_back({module + ".biases", t.dtype, {rows, groups}, q.biases()});
    rep.bytes_out +=
        q.packed.size() * 4 + 2 * static_cast<size_t>(rows * groups) * dtype_size(t.dtype);
    ++rep.quantized;
    // mlx-lm writes an entry for each module its predicate gave a format (every module of a
    // mixed recipe) and for the overrides.
    if (!o.mixed.empty() || o.overrides.count(module)) overrides[module] = format_json(f);
  }
  for (const auto& [module, f] : o.overrides)
    if (!f) overrides[module] = false;

  if (fs::is_directory(o.out_dir))
    for (const auto& e : fs::directory_iterator(o.out_dir))
      if (e.path().extension() == ".safetensors" && e.path().filename() != "model.safetensors")
        fail_arg("--out " + o.out_dir + " already holds " + e.path().filename().string() +
                 ", which would load beside the quantized weights; use an empty directory");
  fs::create_directories(o.out_dir);
  write_safetensors(o.out_dir + "/model.safetensors", out, {{"format", "mlx"}});
  json cfg = src.full_config();
  json block = format_json({o.mixed.empty() ? o.bits : 0, o.group_size});
  if (!o.mixed.empty()) block["bits"] = mixed_format(o.mixed, "", num_layers, o.group_size).bits;
  for (auto& [k, v] : overrides.items()) block[k] = v;
  cfg["quantization"] = block;
  cfg["quantization_config"] = block;
  {
    std::ofstream f(o.out_dir + "/config.json");
    f << cfg.dump(4) << "\n";
    if (!f) fail(ErrorKind::io, o.out_dir + "/config.json: cannot write");
  }
  // Everything else the directory holds: tokenizer, chat template, generation config, README.
  for (const auto& e : fs::directory_iterator(o.model_dir)) {
    const std::string n = e.path().filename().string();
    if (!e.is_regular_file() || n == "config.json" || e.path().extension() == ".safetensors" ||
        n == "model.safetensors.index.json")
      continue;
    fs::copy_file(e.path(), fs::path(o.out_dir) / n, fs::copy_options::overwrite_existing);
  }
  return rep;
}

}  // namespace tessera
