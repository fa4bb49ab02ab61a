// What every architecture file provides: its description (ModelInfo), the KV layout it needs
// (KvSpec) and one forward over a ragged batch. Architecture files register themselves in
// registry.cpp (one line each).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "io/model_dir.h"
#include "tessera/model_info.h"

namespace tessera {

// The paged KV cache layout a model needs: layers with the same attention window share a group
// (and its block tables); window 0 means full attention.
struct KvSpec {
  int num_kv_heads = 0, head_dim = 0;
  DType dtype = DType::f32;
  std::vector<int> group_window;  // per group
  std::vector<int> layer_group;   // per layer
};

// What a forward returns: logits [R, vocab] f32 and, when the batch asked (HostBatch::greedy_ids),
// each row's greedy id [R]; with HostBatch::hidden_states every row's final hidden state (device
// memory, all valid until the next forward).
struct ForwardOutput {
  Tensor logits;
  const int32_t* greedy_ids = nullptr;
  // HostBatch::hidden_states: [T, hidden] every row's final norm (the model's last hidden state).
  Tensor hidden;
};

struct LoadOptions {
  std::string dtype = "auto";  // auto (the checkpoint's; f16 -> f32 on the CPU), f32, bf16
  // Quantize the checkpoint's dense matrices at load (MLX affine, `tessera quantize`'s
  // algorithm): bits 4 or 8, group size 64 unless set. Matrices already quantized stay as stored.
  int quantize_bits = 0;
  int quantize_group_size = 64;
  // Called after each weight is in place with bytes loaded so far and the total (progress bars).
  std::function<void(size_t done, size_t total)> progress;
};

class Model {
 public:
  virtual ~Model() = default;
  const ModelInfo& info() const { return info_; }
  const KvSpec& kv_spec() const { return kv_spec_; }
  ComputeBackend& backend() const { return *backend_; }
  void set_architecture(const std::string& a) { info_.architecture = a; }

  // Runs the batch: writes every new token's K/V into `kv` (one view per layer) and returns the
  // logits of b.logit_rows ([R, vocab] f32 in device memory, valid until the next forward;
  // rows == 0 when none were asked for), with their greedy ids when b.greedy_ids. The caller has
  // allocated the blocks that b's slot mappings name.
  virtual ForwardOutput forward(const HostBatch& b, std::span<const KvLayerView> kv) = 0;

  // Activation bytes one forward of `tokens` tokens and `logit_rows` logits rows takes (for the
  // memory budget at load time).
  virtual size_t scratch_bytes(int tokens, int logit_rows) const = 0;

 protected:
  explicit Model(ComputeBackend& backend) : backend_(&backend) {}
  ModelInfo info_;
  KvSpec kv_spec_;
  ComputeBackend* backend_;
};

using ModelFactory =
    std::function<std::unique_ptr<Model>(ModelDir&, ComputeBackend&, const LoadOptions&)>;

// Picks the architecture by config.json's "architectures" (then "model_type") and loads it.
// Throws Error naming the file, key or tensor on any problem.
std::unique_ptr<Model> load_model(ModelDir& dir, ComputeBackend& backend, const LoadOptions& opts);

// Names the registry knows (for messages and `tessera info`).
std::vector<std::string> known_architectures();

}  // namespace tessera
