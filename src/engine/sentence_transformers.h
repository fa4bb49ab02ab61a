// A sentence-transformers directory's modules around its Transformer (models/Pooling.py,
// Dense.py, Normalize.py; the files SentenceTransformer.save writes): modules.json, the pooling
// config (1_Pooling/config.json), Dense layers (N_Dense/config.json and model.safetensors),
// Normalize, and config_sentence_transformers.json's prompts. The Transformer module must be
// the directory itself (path ""), which loads as the decoder it holds.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tessera/engine.h"

namespace tessera {

struct StDense {
  int in = 0, out = 0;
  std::vector<float> w;  // [out, in]
  std::vector<float> b;  // [out], empty without a bias
  bool tanh = false;     // activation_function Tanh (Dense's default); else Identity
};

struct StPipeline {
  bool present = false;  // modules.json was there
  Pooling pooling = Pooling::automatic;
  std::vector<StDense> dense;  // in order
  // A Normalize module is there. Recorded only: EmbedOptions::normalize decides (default true,
  // as Normalize and OpenAI's vectors are).
  bool normalize = false;
  std::map<std::string, std::string> prompts;  // prompt name -> text
  std::string default_prompt_name;             // empty: none
};

// Reads dir's modules (present = false and nothing else when there is no modules.json). Throws
// Error(invalid_model / unsupported) naming the file and key: a pooling mode other than mean,
// CLS or last token (or several at once), include_prompt false, a Transformer module elsewhere
// than the root, Dense weights not in safetensors, an activation other than Identity or Tanh.
StPipeline load_sentence_transformers(const std::string& dir, int hidden_size);

// The Dense layers on a pooled vector, in order.
void apply_dense(const std::vector<StDense>& layers, std::vector<float>& v);

}  // namespace tessera
