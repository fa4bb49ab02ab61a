#include "models/quant_config.h"

#include "core/check.h"
#include "quant/affine.h"

namespace tessera {

using json = nlohmann::json;

namespace {

// A {"group_size", "bits", "mode"?} object as a format; `what` names it in errors.
QuantFormat parse_format(const json& j, const std::string& what) {
  if (!j.is_object()) fail_model(what + ": expected an object with group_size and bits");
  const std::string mode =
      j.contains("mode") && j["mode"].is_string() ? j["mode"].get<std::string>() : "affine";
  if (mode != "affine")
    fail(ErrorKind::unsupported,
         what + ": quantization mode '" + mode + "' is not supported (tessera runs MLX's affine)");
  if (!j.contains("bits") || !j["bits"].is_number_integer() || !j.contains("group_size") ||
      !j["group_size"].is_number_integer())
    fail_model(what + ": bits and group_size must be integers");
  const ConfigReader r{j, what};  // 32-bit checked: 2^32 + 4 bits must not read as 4
  QuantFormat f{r.get_int("bits"), r.get_int("group_size")};
  if (!quant::valid_bits(f.bits))
    fail(ErrorKind::unsupported, what + ": " + std::to_string(f.bits) +
                                     "-bit weights are not supported (2, 3, 4, 5, 6 or 8)");
  if (!quant::valid_group_size(f.group_size))
    fail(ErrorKind::unsupported, what + ": group_size " + std::to_string(f.group_size) +
                                     " is not supported (32, 64 or 128)");
  return f;
}

// The block and where it was found: config.json's "quantization", else its
// "quantization_config", else the same two under text_config.
const json* find_block(const json& full, std::string* where) {
  const json* text = full.contains("text_config") && full["text_config"].is_object()
                         ? &full["text_config"]
                         : nullptr;
  struct Place {
    const json* obj;
    const char* key;
    const char* name;
  };
  const Place places[] = {{&full, "quantization", "quantization"},
                          {&full, "quantization_config", "quantization_config"},
                          {text, "quantization", "text_config.quantization"},
                          {text, "quantization_config", "text_config.quantization_config"}};
  for (const Place& p : places)
    if (p.obj && p.obj->contains(p.key) && (*p.obj)[p.key].is_object()) {
      *where = std::string("config.json ") + p.name;
      return &(*p.obj)[p.key];
    }
  return nullptr;
}

}  // namespace

QuantFormat QuantConfig::for_module(const std::string& path) const {
  auto it = overrides.find(path);
  if (it != overrides.end()) return it->second ? *it->second : QuantFormat{};
  return declared ? base : QuantFormat{};
}

QuantConfig read_quant_config(const ModelDir& dir) {
  QuantConfig q;
  const json* block = find_block(dir.full_config(), &q.where);
  if (!block) return q;
  const std::string where = dir.config_path() + " (" + q.where.substr(12) + ")";
  if (block->contains("quant_method")) {
    const json& m = (*block)["quant_method"];
    const std::string method = m.is_string() ? m.get<std::string>() : "?";
    if (method != "mlx" && method != "affine")
      fail(ErrorKind::unsupported, where + ": quant_method '" + method +
                                       "' is not supported (tessera reads MLX affine "
                                       "quantization; GGUF files are their own issue)");
  }
  q.declared = true;
  q.base = parse_format(*block, where);
  for (const auto& [key, v] : block->items()) {
    if (key == "group_size" || key == "bits" || key == "mode" || key == "quant_method") continue;
    const std::string path = canonical_tensor_name(key);
    if (path.empty()) continue;  // another tower's module (vision)
    if (v.is_boolean()) {
      if (!v.get<bool>()) q.overrides[path] = std::nullopt;
      continue;
    }
    if (v.is_object()) q.overrides[path] = parse_format(v, where + " entry '" + key + "'");
  }
  return q;
}

QuantFormat module_format(const ModelDir& dir, const QuantConfig& qc, const std::string& path,
                          int64_t rows, int64_t cols) {
  const TensorInfo* s = dir.find(path + ".scales");
  const TensorInfo* w = dir.find(path + ".weight");
  if (!s) {
    if (w && w->dtype_known && w->dtype == DType::u32)
      fail_model(w->file + ": tensor '" + w->name + "' is packed (U32) but its module has no '" +
                 path + ".scales'");
    return {};
  }
  const TensorInfo* b = dir.find(path + ".biases");
  if (!w || !b)
    fail_model(s->file + ": '" + s->name + "' has no " + (w ? "biases" : "packed weight") +
               " beside it");
  if (!w->dtype_known || w->dtype != DType::u32)
    fail_model(w->file + ": tensor '" + w->name + "' has dtype " + w->dtype_name +
               " but a quantized weight is packed in U32 words");
  auto two_d = [&](const TensorInfo& t) {
    if (t.shape.size() != 2 || t.shape[0] != rows)
      fail_model(t.file + ": tensor '" + t.name + "' has shape " + t.shape_str() + " but " +
                 dir.config_path() + " implies " + std::to_string(rows) + " rows");
  };
  two_d(*w);
  two_d(*s);
  two_d(*b);
  if (!s->dtype_known || s->dtype == DType::u32 || s->dtype == DType::i32 || b->dtype != s->dtype)
    fail_model(s->file + ": scales and biases of '" + path + "' must share a float dtype (" +
               s->dtype_name + ", " + b->dtype_name + ")");
  if (b->shape != s->shape)
    fail_model(b->file + ": tensor '" + b->name + "' has shape " + b->shape_str() +
               " but its scales have " + s->shape_str());
  QuantFormat f;
  if (!quant::infer_format(cols, w->shape[1], s->shape[1], &f.bits, &f.group_size))
    fail(ErrorKind::unsupported, w->file + ": tensor '" + w->name + "' " + w->shape_str() +
                                     " with scales " + s->shape_str() +
                                     " is not an MLX affine layout of " + std::to_string(cols) +
                                     " input features (bits 2-6 or 8, group size 32, 64 or 128)");
  const QuantFormat want = qc.for_module(path);
  if (qc.declared && !(want == f)) {
    const std::string says = want.quantized() ? std::to_string(want.bits) + "-bit, group " +
                                                    std::to_string(want.group_size)
                                              : "not quantized";
    fail_model(w->file + ": '" + path + "' is stored " + std::to_string(f.bits) + "-bit, group " +
               std::to_string(f.group_size) + " (from its shapes) but " + qc.where + " says " +
               says);
  }
  return f;
}

}  // namespace tessera
