// What config.json says about a decoder-only transformer: the keys every architecture shares,
// read with the architecture's defaults, and the weight dtype and EOS ids of a load.
#pragma once

#include <string>
#include <vector>

#include "models/model.h"

namespace tessera {

// config.json keys every decoder shares, with the architecture's defaults for absent ones.
struct ConfigDefaults {
  int num_kv_heads = 0;  // 0: num_attention_heads
  int head_dim = 0;      // 0: hidden_size / num_attention_heads
  int vocab_size = 0;    // 0: required
  int max_position_embeddings = 4096;
  bool tie_word_embeddings = false;
  int bos_token_id = -1, pad_token_id = -1;
};
// Fills in's dimensions, special ids and EOS list; names the key at fault when a value is
// missing, not positive, or inconsistent (kv heads not dividing heads, odd head_dim).
void read_common_config(const ConfigReader& c, const ModelDir& dir, const ConfigDefaults& d,
                        ModelInfo& in);
// layer_types as listed (validated: one "sliding_attention" / "full_attention" per layer), or
// empty when the config has none.
std::vector<std::string> read_layer_types(const ConfigReader& c, int num_layers);

// The weight dtype for a load: "auto" keeps the checkpoint's (f16 becomes f32), or forces one.
DType choose_weight_dtype(const ModelDir& dir, const LoadOptions& opts, DType* checkpoint_dtype);

// EOS ids from config.json and generation_config.json (an int or a list in either), merged.
std::vector<int> read_eos_ids(const ModelDir& dir);

}  // namespace tessera
