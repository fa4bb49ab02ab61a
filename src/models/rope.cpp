#include "models/rope.h"

#include <cmath>

#include "core/check.h"

namespace tessera {

namespace {

RopeParams parse_params(const nlohmann::json& j, const std::string& file, const std::string& where,
                        double default_theta) {
  RopeParams p;
  p.theta = default_theta;
  if (!j.is_object()) fail_model(file + ": " + where + " is not an object");
  ConfigReader r{j, file};
  p.type = r.get_string("rope_type", r.get_string("type", "default"));
  p.theta = r.get_positive("rope_theta", default_theta);
  if (p.type == "default") return p;
  if (p.type == "linear") {
    p.factor = r.get_positive("factor");
  } else if (p.type == "llama3") {
    p.factor = r.get_positive("factor");
    p.low_freq_factor = r.get_positive("low_freq_factor");
    p.high_freq_factor = r.get_positive("high_freq_factor");
    p.original_max_position_embeddings = r.get_positive("original_max_position_embeddings");
  } else if (p.type == "proportional") {
    p.factor = r.get_positive("factor", 1.0);
    p.partial_rotary_factor = r.get_float("partial_rotary_factor", 1.0);
    if (!(p.partial_rotary_factor >= 0 && p.partial_rotary_factor <= 1))
      fail_model(file + ": " + where + ": partial_rotary_factor must be in [0, 1]");
  } else if (p.type == "gguf_freq_factors") {
    if (!j.contains("factors") || !j["factors"].is_array())
      fail_model(file + ": " + where + ": factors must be an array");
    for (const auto& x : j["factors"]) {
      if (!x.is_number() || !(x.get<double>() > 0))
        fail_model(file + ": " + where + ": factors must be positive numbers");
      p.factors.push_back(x.get<float>());
    }
  } else {
    fail(ErrorKind::unsupported,
         file + ": " + where + ": rope_type '" + p.type +
             "' is not supported (tessera knows default, linear, llama3, proportional)");
  }
  if (p.factor <= 0) fail_model(file + ": " + where + ": factor must be positive");
  return p;
}

}  // namespace

RopeParams rope_params_for(const ConfigReader& cfg, const std::string& layer_type,
                           double default_theta, double legacy_local_theta) {
  double theta = cfg.get_positive("rope_theta", default_theta);
  if (cfg.has("rope_parameters")) {
    const auto& rp = cfg.j["rope_parameters"];
    if (rp.is_object() && rp.contains(layer_type) && rp[layer_type].is_object())
      return parse_params(rp[layer_type], cfg.file, "rope_parameters." + layer_type, theta);
    if (rp.is_object() && (rp.contains("rope_type") || rp.contains("rope_theta")))
      return parse_params(rp, cfg.file, "rope_parameters", theta);
    fail_model(cfg.file + ": rope_parameters has no entry for layer type '" + layer_type + "'");
  }
  if (legacy_local_theta > 0 && layer_type == "sliding_attention") {
    RopeParams p;
    p.theta = legacy_local_theta;
    return p;
  }
  if (cfg.has("rope_scaling"))
    return parse_params(cfg.j["rope_scaling"], cfg.file, "rope_scaling", theta);
  RopeParams p;
  p.theta = theta;
  return p;
}

std::vector<float> rope_inv_freq(const RopeParams& p, int head_dim) {
  // transformers: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)),
  // evaluated in fp32.
  std::vector<float> inv(static_cast<size_t>(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) {
    float expo = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    float base = static_cast<float>(p.theta);
    inv[i] = 1.0f / std::pow(base, expo);
  }
  if (p.type == "proportional") {
    // ref: transformers modeling_rope_utils._compute_proportional_rope_parameters:
    // rope_angles = int(partial_rotary_factor * head_dim // 2); the exponents over head_dim.
    const int angles = static_cast<int>(std::floor(p.partial_rotary_factor * head_dim / 2));
    for (int i = angles; i < head_dim / 2; ++i) inv[i] = 0.0f;
    for (float& f : inv) f = f / static_cast<float>(p.factor);
  } else if (p.type == "linear") {
    for (float& f : inv) f = f / static_cast<float>(p.factor);
  } else if (p.type == "gguf_freq_factors") {
    // ggml's rope (ggml-cpu ops.cpp rope_yarn with freq_factors): theta = pos * inv / factor.
    if (p.factors.size() != inv.size())
      fail_model("rope: " + std::to_string(p.factors.size()) + " frequency factors for head_dim " +
                 std::to_string(head_dim) + " (expected " + std::to_string(inv.size()) + ")");
    for (size_t i = 0; i < inv.size(); ++i) inv[i] = inv[i] / p.factors[i];
  } else if (p.type == "llama3") {
    const double lo_wavelen = p.original_max_position_embeddings / p.low_freq_factor;
    const double hi_wavelen = p.original_max_position_embeddings / p.high_freq_factor;
    for (float& f : inv) {
      const double wavelen = 2 * M_PI / f;
      if (wavelen > lo_wavelen) {
        f = static_cast<float>(f / p.factor);
      } else if (wavelen >= hi_wavelen) {
        const double smooth = (p.original_max_position_embeddings / wavelen - p.low_freq_factor) /
                              (p.high_freq_factor - p.low_freq_factor);
        f = static_cast<float>((1 - smooth) * f / p.factor + smooth * f);
      }
    }
  }
  return inv;
}

}  // namespace tessera
