// What every decoder-only architecture shares around its own forward: the config, the weights,
// the KV layout they imply and the activations of one forward. An architecture file derives from
// DecoderModel, fills cfg_ from config.json, calls load(), and writes forward() over the blocks
// of blocks.h, reading like its paper (gemma3.cpp, llama.cpp).
#pragma once

#include <span>

#include "models/blocks.h"
#include "models/decoder_config.h"
#include "models/model.h"
#include "models/weight_loader.h"

namespace tessera {

class DecoderModel : public Model {
 public:
  size_t scratch_bytes(int tokens, int logit_rows) const override;

 protected:
  explicit DecoderModel(ComputeBackend& backend) : Model(backend) {}
  // Loads the weights cfg_ describes (load_decoder_weights) in the dtype opts ask for, then sets
  // info_'s dtypes, parameter count and weight bytes, and the KV layout from the layers' windows.
  void load(ModelDir& dir, const LoadOptions& opts);
  // Uploads the batch and takes this forward's activations (blocks.h).
  ForwardPass begin_forward(const HostBatch& hb, std::span<const KvLayerView> kv) {
    return tessera::begin_forward(*backend_, cfg_, hb, kv);
  }

  // The weights load() uploads: load_decoder_weights unless an architecture holds more (Gemma 4).
  virtual DecoderWeights load_weights(WeightLoader& w, ModelDir& dir) {
    return load_decoder_weights(w, dir, *backend_, cfg_, info_.tied_embeddings);
  }

  DecoderConfig cfg_;
  DecoderWeights w_;

 private:
  void set_kv_spec(DType kv_dtype);  // kv_spec_ and each layer's kv_group from the windows
};

}  // namespace tessera
