// Rotary-embedding frequencies from a config, in both of transformers' forms: the legacy
// rope_theta / rope_scaling (and Gemma 3's rope_local_base_freq for sliding layers) and the
// transformers-5 rope_parameters (flat, or keyed by layer type). ref: transformers
// modeling_rope_utils (_compute_default / _compute_linear_scaling / _compute_llama3_parameters).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/model_dir.h"

namespace tessera {

struct RopeParams {
  // default, linear, llama3, proportional, or gguf_freq_factors: inv_freq[i] / factors[i],
  // llama.cpp's form of llama3 scaling (a GGUF's rope_freqs.weight; io/gguf_model.cpp writes this
  // rope_scaling).
  std::string type = "default";
  double theta = 10000.0;
  double factor = 1.0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;
  double original_max_position_embeddings = 8192;
  std::vector<float> factors;  // gguf_freq_factors: [head_dim / 2]
  // proportional (Gemma 4's global layers): the first partial_rotary_factor of the head's angle
  // pairs rotate at 1 / theta^(2i / head_dim), the rest not at all (inv_freq 0); all / factor.
  double partial_rotary_factor = 1.0;
};

// The parameters for a layer of `layer_type`; `legacy_local_theta` (> 0) is Gemma 3's
// rope_local_base_freq, used for sliding layers when the config has the legacy form.
RopeParams rope_params_for(const ConfigReader& cfg, const std::string& layer_type,
                           double default_theta, double legacy_local_theta);

// inv_freq [head_dim / 2] in fp32 as transformers computes it.
std::vector<float> rope_inv_freq(const RopeParams& p, int head_dim);

}  // namespace tessera
