#include "engine/sentence_transformers.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/dtype.h"
#include "io/safetensors.h"

namespace tessera {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) fail(ErrorKind::io, p.string() + ": cannot be read");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    fail(ErrorKind::invalid_model, p.string() + ": not valid JSON (" + e.what() + ")");
  }
}

// ref: sentence_transformers' Pooling (sentence_transformer/modules/pooling.py): config.json's
// "pooling_mode" (a mode name, or a list of them to concatenate: what sentence-transformers 5+
// writes) or the older pooling_mode_* booleans, which it converts (none set: mean). tessera pools
// with exactly one of mean, cls and lasttoken.
Pooling read_pooling(const fs::path& p) {
  const json c = read_json(p);
  std::vector<std::string> on;  // the modes, as the file names them
  if (c.contains("pooling_mode")) {
    const json& m = c["pooling_mode"];
    for (const json& e : m.is_array() ? m : json::array({m}))
      on.push_back(e.is_string() ? e.get<std::string>() : e.dump());
  } else {
    for (auto it = c.begin(); it != c.end(); ++it)
      if (it.key().rfind("pooling_mode_", 0) == 0 && it->is_boolean() && it->get<bool>())
        on.push_back(it.key());
    if (on.empty()) on.push_back("mean");
  }
  if (on.size() != 1)
    fail(ErrorKind::unsupported, p.string() + ": " + std::to_string(on.size()) +
                                     " pooling modes are set; tessera pools with exactly one "
                                     "(mean, CLS or last token)");
  if (c.value("include_prompt", true) == false)
    fail(ErrorKind::unsupported, p.string() + ": include_prompt false is not supported");
  if (on[0] == "pooling_mode_mean_tokens" || on[0] == "mean") return Pooling::mean;
  if (on[0] == "pooling_mode_cls_token" || on[0] == "cls") return Pooling::cls;
  if (on[0] == "pooling_mode_lasttoken" || on[0] == "lasttoken") return Pooling::last;
  fail(ErrorKind::unsupported, p.string() + ": " + on[0] + " is not supported (mean, CLS or last)");
}

std::vector<float> floats_of(const TensorInfo& t, const std::string& where) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  if (!t.dtype_known) fail(ErrorKind::unsupported, where + ": dtype " + t.dtype_name);
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype == DType::f32)
      out[i] = static_cast<const float*>(t.data)[i];
    else if (t.dtype == DType::bf16)
      out[i] = bf16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    else if (t.dtype == DType::f16)
      out[i] = f16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    else
      fail(ErrorKind::unsupported, where + ": dtype " + t.dtype_name);
  }
  return out;
}

// ref: sentence_transformers/models/Dense.py: config.json {in_features, out_features, bias,
// activation_function}, weights linear.weight [out, in] and linear.bias.
StDense read_dense(const fs::path& d) {
  const json c = read_json(d / "config.json");
  StDense l;
  l.in = c.value("in_features", 0);
  l.out = c.value("out_features", 0);
  if (l.in <= 0 || l.out <= 0)
    fail(ErrorKind::invalid_model, (d / "config.json").string() + ": in_features / out_features");
  const std::string act = c.value("activation_function", "torch.nn.modules.activation.Tanh");
  if (act.find("Tanh") != std::string::npos)
    l.tanh = true;
  else if (act.find("Identity") == std::string::npos)
    fail(ErrorKind::unsupported,
         (d / "config.json").string() + ": activation_function " + act + " is not supported");
  if (!fs::exists(d / "model.safetensors"))
    fail(ErrorKind::unsupported, d.string() +
                                     ": Dense weights must be in model.safetensors (re-save the "
                                     "model with safe_serialization)");
  SafetensorsFile f((d / "model.safetensors").string());
  auto w = f.tensors().find("linear.weight");
  if (w == f.tensors().end() || w->second.shape != std::vector<int64_t>{l.out, l.in})
    fail(ErrorKind::invalid_model, f.path() + ": linear.weight must be [" + std::to_string(l.out) +
                                       ", " + std::to_string(l.in) + "]");
  l.w = floats_of(w->second, f.path() + " linear.weight");
  if (auto b = f.tensors().find("linear.bias"); b != f.tensors().end()) {
    if (b->second.numel() != l.out)
      fail(ErrorKind::invalid_model, f.path() + ": linear.bias must have out_features values");
    l.b = floats_of(b->second, f.path() + " linear.bias");
  }
  return l;
}

}  // namespace

StPipeline load_sentence_transformers(const std::string& dir, int hidden_size) {
  StPipeline p;
  const fs::path root(dir);
  if (!fs::is_directory(root) || !fs::exists(root / "modules.json")) return p;
  p.present = true;
  const fs::path mj = root / "modules.json";
  const json mods = read_json(mj);
  if (!mods.is_array()) fail(ErrorKind::invalid_model, mj.string() + ": not a list of modules");
  int dim = hidden_size;
  for (const json& m : mods) {
    const std::string type = m.value("type", "");
    const std::string path = m.value("path", "");
    const std::string kind = type.substr(type.rfind('.') + 1);
    if (kind == "Transformer") {
      if (!path.empty())
        fail(ErrorKind::unsupported, mj.string() + ": the Transformer module is in '" + path +
                                         "'; tessera loads it from the directory itself");
    } else if (kind == "Pooling") {
      p.pooling = read_pooling(root / path / "config.json");
    } else if (kind == "Dense") {
      StDense l = read_dense(root / path);
      if (l.in != dim)
        fail(ErrorKind::invalid_model, (root / path / "config.json").string() + ": in_features " +
                                           std::to_string(l.in) + " but the vector has " +
                                           std::to_string(dim));
      dim = l.out;
      p.dense.push_back(std::move(l));
    } else if (kind == "Normalize") {
      p.normalize = true;
    } else {
      fail(ErrorKind::unsupported, mj.string() + ": module " + type + " is not supported");
    }
  }
  if (fs::exists(root / "config_sentence_transformers.json")) {
    const json c = read_json(root / "config_sentence_transformers.json");
    if (c.contains("prompts") && c["prompts"].is_object())
      for (auto it = c["prompts"].begin(); it != c["prompts"].end(); ++it)
        if (it->is_string()) p.prompts[it.key()] = it->get<std::string>();
    if (c.contains("default_prompt_name") && c["default_prompt_name"].is_string())
      p.default_prompt_name = c["default_prompt_name"].get<std::string>();
  }
  return p;
}

void apply_dense(const std::vector<StDense>& layers, std::vector<float>& v) {
  for (const StDense& l : layers) {
    std::vector<float> out(static_cast<size_t>(l.out));
    for (int o = 0; o < l.out; ++o) {
      double s = l.b.empty() ? 0.0 : l.b[o];
      const float* row = l.w.data() + static_cast<size_t>(o) * l.in;
      for (int i = 0; i < l.in; ++i) s += static_cast<double>(row[i]) * v[i];
      out[o] = static_cast<float>(l.tanh ? std::tanh(s) : s);
    }
    v = std::move(out);
  }
}

}  // namespace tessera
