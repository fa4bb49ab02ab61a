// The interface every compute backend (cpu/, cuda/) implements, and the only way model files
// touch a device. Ops are eager: each call does its work (or enqueues it on the backend's stream)
// and model files never branch on the device. Shapes in comments are [rows, cols].
//
// Conventions shared by all ops:
// - Activations are row-major Tensors whose rows may be strided; the residual stream is f32, other
//   activations use act_dtype() (f32 on the CPU, bf16 on CUDA).
// - Linear weights keep Hugging Face's layout [out_features, in_features] (y = x W^T).
// - Norm weights are f32 vectors with Gemma's (1 + w) already folded in, so rms_norm is x * w.
// - qkv rows hold the heads of q, then k, then v: [T, (nh + 2 nkv) * hd].
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/memory.h"

namespace tessera {

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  int64_t rows = 0, cols = 0;
  int64_t stride = 0;  // elements from one row's start to the next (>= cols)

  template <class T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
  size_t row_bytes() const { return static_cast<size_t>(stride) * dtype_size(dtype); }
  Tensor rows_from(int64_t r0, int64_t n) const {
    Tensor t = *this;
    t.data = static_cast<char*>(data) + r0 * row_bytes();
    t.rows = n;
    return t;
  }
  Tensor cols_from(int64_t c0, int64_t n) const {
    Tensor t = *this;
    t.data = static_cast<char*>(data) + c0 * static_cast<int64_t>(dtype_size(dtype));
    t.cols = n;
    return t;
  }
};

// A tensor in host memory as upload_weight() reads it: the interface knows no file format, so the
// model side turns a checkpoint's tensors (io's TensorInfo) into these, and tests build them.
struct HostTensor {
  const void* data = nullptr;  // row-major, `dtype` elements
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::string name;  // for messages: which tensor of which file

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// A device allocation counted by the device's MemoryTracker; freed when destroyed.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual void* data() const = 0;
  virtual size_t size() const = 0;
};

// A device array that owns its memory, with a Tensor view of it.
struct DeviceArray {
  std::unique_ptr<DeviceBuffer> buffer;
  Tensor view;
};

// MLX's affine quantization (ml-explore/mlx mlx/ops.cpp affine_quantize, mlx/backend/cpu/
// quantized.cpp): a row's input elements in groups of group_size consecutive ones, each element
// an unsigned q in [0, 2^bits) and w = scale * q + bias with one scale and bias per group (scales
// may be negative).
struct QuantFormat {
  int bits = 0;        // 2, 3, 4, 5, 6 or 8; 0: a dense weight
  int group_size = 0;  // 32, 64 or 128 (MLX); 16 too on the CPU (GGUF Q6_K)
  bool quantized() const { return bits != 0; }
  bool operator==(const QuantFormat&) const = default;
};

// One quantized matrix [rows, cols] in host memory, laid out as MLX stores it.
struct HostQuantTensor {
  // [rows, cols * bits / 32] words; each row one continuous bit stream, element k at bits
  // [k bits, (k + 1) bits) counted from the least significant bit of word 0 (so 3-, 5- and
  // 6-bit elements may straddle two words).
  const uint32_t* packed = nullptr;
  const void* scales = nullptr;     // [rows, cols / group_size] in scale_dtype
  const void* biases = nullptr;     // [rows, cols / group_size] in scale_dtype, or null:
  DType scale_dtype = DType::bf16;  // bf16, f16 or f32
  int64_t rows = 0, cols = 0;
  QuantFormat format;
  std::string name;  // for messages
  // With biases null, bias = bias_per_scale * scale for every group: GGUF's symmetric types
  // (Q4_0: w = d * (q - 8), so -8), which then need no bias array (quant/gguf_blocks.h).
  float bias_per_scale = 0.f;
};

// A linear weight [rows = out_features, cols = in_features] in whatever layout the backend
// prefers (it may pre-pack); model files only pass it back to linear() and embed().
// A quantized weight (quant.quantized()) holds the packed values and is read by the same ops:
// each op's result is the one it gives on the dense weight scale * q + bias (exact in f32);
// `dtype` is then what a backend may round those values to inside a dense product (f32: never).
class Weight {
 public:
  virtual ~Weight() = default;
  int64_t rows = 0, cols = 0;
  DType dtype = DType::f32;
  QuantFormat quant;
  size_t bytes = 0;
  // Parts stacked along rows that could not share one layout (q, k, v quantized at different
  // bit widths, as mlx-lm's mixed recipes write them): each part is a weight of its own, and
  // linear() covers them one after another into column slices of its output (linear_parts()).
  // Only linear() and the compositions built on it take such a weight.
  std::vector<std::unique_ptr<Weight>> parts;
};

enum class Activation { gelu_tanh, silu };

// The norm that starts a sublayer, after the residual update that ends the previous one
// (ref: transformers Gemma3DecoderLayer / LlamaDecoderLayer):
//   with y:    residual += (w_y ? rms_norm(y, w_y) : y); h = rms_norm(residual, w_out)
//   without y: h = rms_norm(residual, w_out)
// residual [M, H] f32 (updated in place), y and h [M, H] in act_dtype(), w_y and w_out [H] f32.
struct ResidualNorm {
  Tensor residual;
  const Tensor* y = nullptr;
  const Tensor* w_y = nullptr;
  Tensor w_out;
  float eps = 1e-6f;
  Tensor h;
};

// One attention layer's constants for rope_store_attention (GQA: head h reads kv head
// h / (nh / nkv)).
struct AttentionLayer {
  int nh = 0, nkv = 0, hd = 0;
  const Tensor* q_norm = nullptr;  // per-head RMSNorm weights [hd] (Gemma 3, Qwen 3) or null
  const Tensor* k_norm = nullptr;
  float eps = 1e-6f;
  Tensor inv_freq;  // [hd / 2]
  float scale = 1.0f;
  int window = 0;  // 0: full attention
  float softcap = 0.0f;
  int group = 0;  // the layer's KV group (BatchView::groups)
};

// One layer's paged KV cache: K and V are each [num_blocks, block_size, num_kv_heads, head_dim]
// in `dtype`.
struct KvLayerView {
  void* k = nullptr;
  void* v = nullptr;
  DType dtype = DType::f32;
  int num_blocks = 0, block_size = 0, num_kv_heads = 0, head_dim = 0;
};

constexpr int kMaxKvGroups = 4;

// The ragged batch as the device sees it (host pointers on the CPU backend). T tokens of S
// sequences; a sequence's new tokens are consecutive rows and consecutive positions.
struct BatchView {
  int num_tokens = 0, num_seqs = 0;
  const int32_t* tokens = nullptr;       // [T]
  const int32_t* positions = nullptr;    // [T]
  const int32_t* token_seq = nullptr;    // [T] index of the token's sequence in [0, S)
  const int32_t* seq_q_start = nullptr;  // [S] first row of the sequence's new tokens
  const int32_t* seq_q_len = nullptr;    // [S] how many new tokens
  const int32_t* seq_kv_len = nullptr;   // [S] context length after this step (last position + 1)
  int max_q_len = 0, max_kv_len = 0;
  // Per KV group (layers that share a window): block tables and where each new token's K/V go.
  struct Group {
    const int32_t* block_table = nullptr;   // [S, max_blocks]; -1 where a block was released
    const int32_t* slot_mapping = nullptr;  // [T] block * block_size + offset
    int max_blocks = 0;
  };
  int num_groups = 0;
  Group groups[kMaxKvGroups];
  const int32_t* logit_rows = nullptr;  // [R] rows whose logits are wanted
  int num_logit_rows = 0;
  // Every token is a logits row, in order (logit_rows[i] == i for every real token: a decode
  // step), so a model may take the logits of its hidden rows without gathering them.
  bool logit_rows_all = false;
  // HostBatch::greedy_ids: the forward also picks each logits row's greedy id.
  bool greedy_ids = false;
  // HostBatch::hidden_states: the forward leaves every row's final norm for the caller.
  bool hidden_states = false;
  // HostBatch::causal: false, every new token also sees the later keys of its sequence
  // (ComputeBackend::attention).
  bool causal = true;
};

// The host-side batch a scheduler builds; ComputeBackend::upload turns it into a BatchView.
struct HostBatch {
  std::vector<int32_t> tokens, positions, token_seq;
  std::vector<int32_t> seq_q_start, seq_q_len, seq_kv_len;
  struct Group {
    std::vector<int32_t> block_table;  // [S * max_blocks]
    std::vector<int32_t> slot_mapping;
    int max_blocks = 0;
  };
  std::vector<Group> groups;
  std::vector<int32_t> logit_rows;
  // Tokens whose id is still on the device: row `row` of the last ComputeBackend::sample_async
  // (a decode step's input, issued before the previous step's ids reach the host). tokens[token]
  // holds a placeholder; upload() puts the sampled id there on the device.
  struct Sampled {
    int32_t token = 0, row = 0;
  };
  std::vector<Sampled> sampled;
  // Every logits row will be sampled greedily with nothing else asked of the sampler (no
  // penalties, suppressed ids or logprobs), so the forward picks the ids itself
  // (ComputeBackend::norm_lm_head) and sample_async() only has to copy them.
  bool greedy_ids = false;
  // Some rows' final hidden states are wanted (embeddings): the forward returns the final norm
  // of every row (ForwardOutput::hidden). A backend does not capture such a forward.
  bool hidden_states = false;
  // Causal attention for every sequence of the batch; false: bidirectional (an embedding model's
  // prompt, whole in one step: EmbeddingGemma, transformers' Gemma 3 with
  // use_bidirectional_attention). One flag per batch: the scheduler never mixes the two.
  bool causal = true;

  int num_tokens() const { return static_cast<int>(tokens.size()); }
  int num_seqs() const { return static_cast<int>(seq_q_len.size()); }
  // Whether logit_rows is 0, 1, ..., num_tokens() - 1 (BatchView::logit_rows_all).
  bool logits_every_row() const {
    if (logit_rows.size() != tokens.size()) return false;
    for (size_t i = 0; i < logit_rows.size(); ++i)
      if (logit_rows[i] != static_cast<int32_t>(i)) return false;
    return true;
  }
};

// Sampling parameters of one logits row. The chain, in order: penalties (repetition as in
// transformers: divide positive logits, multiply negative ones; presence and frequency as
// OpenAI: subtract), suppression (-inf for the listed ids, e.g. EOS before min_tokens),
// temperature (0: argmax of the penalised logits, lowest id on ties), top-k, top-p, min-p, then
// the pick. The pick is deterministic given one uniform u = uniform(seed, step) in [0, 1): the
// kept tokens are walked in ascending id order and the first whose running probability sum
// exceeds u * (kept total) wins, so that every backend picks the same token from the same
// distribution. sample_uniform() is defined in core/rng.h.
// Logprobs are log_softmax of the raw logits (before penalties and temperature), as OpenAI and
// vLLM report them.
struct SampleParams {
  float temperature = 0.0f;
  int top_k = 0;       // 0: off
  float top_p = 1.0f;  // 1: off
  float min_p = 0.0f;  // 0: off
  uint64_t seed = 0, step = 0;
  float repetition_penalty = 1.0f, presence_penalty = 0.0f, frequency_penalty = 0.0f;
  // Repetition penalty over the distinct ids in [rep_begin, rep_begin + rep_count) of
  // SampleBatch::penalty_ids (prompt and output, as transformers and vLLM); presence and
  // frequency over [freq_begin, freq_begin + freq_count) with their counts (output only, as
  // OpenAI).
  int rep_begin = 0, rep_count = 0;
  int freq_begin = 0, freq_count = 0;
  int suppress_begin = 0, suppress_count = 0;  // range in SampleBatch::suppress_ids
  bool logprobs = false;
  int top_logprobs = 0;
};

// Whether the sampler's pick for p is the argmax of the raw row and nothing else is asked of it
// (HostBatch::greedy_ids).
inline bool plain_greedy(const SampleParams& p) {
  return p.temperature <= 0.0f && p.rep_count == 0 && p.freq_count == 0 && p.suppress_count == 0 &&
         !p.logprobs && p.top_logprobs <= 0;
}

struct SampleBatch {
  std::vector<SampleParams> rows;
  std::vector<int32_t> penalty_ids, penalty_counts;  // distinct tokens seen so far and how often
  std::vector<int32_t> suppress_ids;
};

// A logits row's allowed tokens (structured output, docs/GRAMMAR.md): bit c of `allow` (64 ids
// per word) set, or c listed in `also` (EOS once the grammar is complete).
struct LogitMask {
  int row = 0;
  const uint64_t* allow = nullptr;
  std::span<const int32_t> also;
};

// One row (cols f32 logits) masked in host memory: what every backend's mask_logits computes.
inline void apply_logit_mask(float* row, int64_t cols, const LogitMask& m) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // The `also` ids' logits survive the mask (EOS: a handful of ids, user stop ids maybe more).
  float small[16];
  std::vector<float> large;
  float* kept = small;
  if (m.also.size() > 16) large.resize(m.also.size()), kept = large.data();
  for (size_t i = 0; i < m.also.size(); ++i)
    kept[i] = m.also[i] >= 0 && m.also[i] < cols ? row[m.also[i]] : kNegInf;
  const int64_t full = cols / 64;
  for (int64_t w = 0; w < full; ++w) {
    const uint64_t bits = m.allow[w];
    if (bits == ~uint64_t{0}) continue;  // all allowed: most words inside a JSON string
    float* x = row + w * 64;
    if (bits == 0) {  // none: most words elsewhere
      std::fill(x, x + 64, kNegInf);
      continue;
    }
    for (int b = 0; b < 64; ++b) x[b] = (bits >> b) & 1 ? x[b] : kNegInf;  // branchless: a blend
  }
  for (int64_t c = full * 64; c < cols; ++c)
    if (!((m.allow[full] >> (c - full * 64)) & 1)) row[c] = kNegInf;
  for (size_t i = 0; i < m.also.size(); ++i)
    if (m.also[i] >= 0 && m.also[i] < cols) row[m.also[i]] = kept[i];
}

struct SampleOutput {
  std::vector<int32_t> ids;         // [R]
  std::vector<float> logprobs;      // [R] the chosen token's (when any row asks)
  int top_n = 0;                    // max top_logprobs over rows
  std::vector<int32_t> top_ids;     // [R, top_n], most likely first
  std::vector<float> top_logprobs;  // [R, top_n]
};

class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;
  virtual DType act_dtype() const = 0;

  // --- memory ---
  virtual std::unique_ptr<DeviceBuffer> alloc(size_t bytes, const char* what) = 0;
  virtual void copy_to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void synchronize() = 0;
  // Bytes the device could still allocate now (the GPU's free memory), 0 when the backend does not
  // know (the CPU: its memory is the host's).
  virtual size_t device_free_bytes() { return 0; }
  DeviceArray alloc_array(int64_t rows, int64_t cols, DType dt, const char* what);
  DeviceArray upload_f32(const std::vector<float>& v, const char* what);

  // A linear weight made of `parts` stacked along dim 0 (e.g. q, k, v into one matrix), each
  // [rows_i, cols] in its file's dtype, stored as `dtype`.
  virtual std::unique_ptr<Weight> upload_weight(std::span<const HostTensor* const> parts,
                                                DType dtype, const std::string& what) = 0;

  // A weight made of quantized `parts` stacked along dim 0, all of one format and width, stored
  // in the backend's layout for packed products; `dtype` as Weight::dtype says.
  virtual std::unique_ptr<Weight> upload_quantized(std::span<const HostQuantTensor* const> parts,
                                                   DType dtype, const std::string& what) = 0;
  // The weight of `parts` already uploaded (stacked along dim 0, one cols): Weight::parts.
  static std::unique_ptr<Weight> stack_parts(std::vector<std::unique_ptr<Weight>> parts);

  // Scratch for one forward: reset() then take(); valid until the next reset().
  virtual void scratch_reset() = 0;
  virtual Tensor scratch(int64_t rows, int64_t cols, DType dt) = 0;

  // Copies a HostBatch's arrays to the device; the view stays valid until the next upload().
  // A backend may pad the batch (more tokens, sequences or logit rows than `b` has: padding rows
  // come after the real ones and write no KV a real sequence reads), so model files size
  // everything from the returned view.
  virtual BatchView upload(const HostBatch& b) = 0;

  // Runs `ops`, which issue this backend's ops for one forward of batch `b`. A backend may
  // capture them once per batch shape and replay the capture later instead of calling `ops`
  // (CUDA graphs); everything the ops touch must then sit at the same device addresses on every
  // forward of that shape (scratch taken in the same order, uploaded batches, weights, KV).
  virtual void run_forward(const BatchView& b, const std::function<void()>& ops) { ops(); }

  // --- ops ---
  // out[t] = table[ids[t]] * scale. With round_to_table_dtype (Gemma's embed_scale), the scale
  // and the product are rounded to the table's dtype, as transformers computes it.
  virtual void embed(const Weight& table, const int32_t* ids, int n, float scale,
                     bool round_to_table_dtype, Tensor out) = 0;
  // out = x / sqrt(mean(x^2) + eps) * w
  virtual void rms_norm(Tensor x, Tensor w, float eps, Tensor out) = 0;
  // residual += (w_y ? rms_norm(y, w_y) : y); then, if w_out, out = rms_norm(residual, w_out).
  virtual void add_rms_norm(Tensor residual, Tensor y, const Tensor* w_y, const Tensor* w_out,
                            float eps, Tensor out) = 0;
  // out[M, N] = x[M, K] W[N, K]^T (+ bias[N]), fp32 accumulation.
  virtual void linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) = 0;
  // In place on qkv [T, (nh + 2 nkv) hd]: optional per-head RMSNorm of q and k, then rotary
  // embedding (half-split, as transformers' rotate_half) of q and k at positions[t] with
  // inv_freq [hd / 2].
  virtual void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm,
                            const Tensor* k_norm, float eps, const int32_t* positions,
                            Tensor inv_freq) = 0;
  // Writes each token's k and v (from qkv) into the paged cache at slot_mapping[t].
  virtual void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                        const int32_t* slot_mapping) = 0;
  // Attention of each token's q heads over its own sequence's cached K/V (GQA: head h reads kv
  // head h / (nh / nkv)). With b.causal, the token at position p sees keys at positions <= p
  // and, when window > 0, > p - window. Without (bidirectional), every key of its sequence
  // (positions < seq_kv_len) and, when window > 0, only those with |p - key| < window: the mask
  // of transformers' Gemma 3 with use_bidirectional_attention (modeling_gemma3.py,
  // _bidirectional_window_overlay; the model passes its halved window). A sequence's last new
  // token is at seq_kv_len - 1, where both modes see the same keys.
  // scores = softcap(q.k * scale) when softcap > 0. out [T, nh hd].
  virtual void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                         const BatchView& b, int group, float scale, int window, float softcap,
                         Tensor out) = 0;
  // out[T, I] = act(gate_up[:, :I]) * gate_up[:, I:]
  virtual void gated_act(Tensor gate_up, Activation act, Tensor out) = 0;
  // The gated MLP's first half: linear(x, w_gate_up, bias) into gate_up [M, 2 I], then gated_act
  // into out [M, I]. A backend may run both as one kernel and leave gate_up unwritten (scratch).
  virtual void linear_gated(Tensor x, const Weight& w_gate_up, const Tensor* bias, Activation act,
                            Tensor gate_up, Tensor out) {
    linear(x, w_gate_up, bias, gate_up);
    gated_act(gate_up, act, out);
  }
  // out[r] = x[rows[r]]
  virtual void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) = 0;
  // x = tanh(x / cap) * cap, in place (f32).
  virtual void softcap(Tensor x, float cap) = 0;
  // x *= s, in place (f32 or act_dtype()). ref: transformers Gemma4TextDecoderLayer's
  // layer_scalar and Gemma4TextModel's per-layer-input scales.
  virtual void scale(Tensor x, float s);
  // out[M, N] = act(gate[M, N]) * up[M, N] (f32 math; gate, up and out strided views in f32 or
  // act_dtype()): gated_act with its halves in separate tensors (Gemma 4's per-layer input gate).
  virtual void act_mul(Tensor gate, Tensor up, Activation act, Tensor out);
  // Mixture-of-experts routing, ref: transformers Gemma4TextRouter.forward: per row of
  // scores [T, E], p = softmax(scores) in f32; the k largest p (the lower expert first on ties)
  // into ids [T, k] i32, their p renormalised to sum 1 and times per_expert_scale[id] [E] f32
  // (null: 1) into weights [T, k] f32.
  virtual void moe_route(Tensor scores, int k, const Tensor* per_expert_scale, Tensor weights,
                         Tensor ids);
  // The experts of a mixture-of-experts layer, ref: transformers Gemma4TextExperts.forward:
  // out[t] = sum over j of weights[t, j] * down[e](act_gated(gate_up[e] x[t])), e = ids[t, j],
  // the terms added in ascending expert order. x [T, H], gate_up[e] [2 I, H], down[e] [H, I],
  // out [T, H]. The default (the CPU's) groups the tokens by expert on the host and runs each
  // expert's rows through gather_rows / linear_gated / linear; a fast kernel would sort the
  // tokens by expert on the device and run grouped GEMMs (prefill, batched decode) or one GEMV
  // per selected expert (batch 1).
  virtual void moe_experts(Tensor x, std::span<const Weight* const> gate_up,
                           std::span<const Weight* const> down, Activation act, Tensor weights,
                           Tensor ids, Tensor out);
  // ids[r] = what sample() picks from logits row r (f32) at temperature 0 with nothing else asked:
  // its first maximum (lowest id on ties). ids in device memory.
  virtual void argmax_rows(Tensor logits, int32_t* ids) = 0;

  // --- fused ops ---
  // The model calls these by name where it wants one kernel for several steps. Each is defined
  // as the composition written in its default implementation (plain ops above), which the CPU
  // backend runs as it is: the CPU stays the oracle, and the op harness compares a backend's
  // fused kernel with the composition. A backend runs its fused kernel where the shapes allow and
  // the composition elsewhere; it keeps no state between calls.

  // linear(n.h, w, bias) after the norm: residual_norm(n); out = n.h W^T (+ bias).
  virtual void norm_linear(const ResidualNorm& n, const Weight& w, const Tensor* bias, Tensor out) {
    residual_norm(n);
    linear(n.h, w, bias, out);
  }
  // The gated MLP's first half after the norm: residual_norm(n); linear_gated(n.h, ...).
  virtual void norm_linear_gated(const ResidualNorm& n, const Weight& w_gate_up, Activation act,
                                 Tensor gate_up, Tensor out) {
    residual_norm(n);
    linear_gated(n.h, w_gate_up, nullptr, act, gate_up, out);
  }
  // The LM head: residual_norm(n); logits [R, V] = n.h W^T, then softcap(logits) when cap > 0;
  // with greedy_ids, argmax_rows(logits, greedy_ids) too.
  virtual void norm_lm_head(const ResidualNorm& n, const Weight& w, float cap, Tensor logits,
                            int32_t* greedy_ids) {
    residual_norm(n);
    linear(n.h, w, nullptr, logits);
    if (cap > 0) softcap(logits, cap);
    if (greedy_ids) argmax_rows(logits, greedy_ids);
  }
  // The attention block between its two projections: qk_norm_rope of qkv at b.positions,
  // kv_store into the layer's cache at its group's slots, then attention into out [T, nh hd].
  // qkv's q and k rows are left rotated or not (a fused kernel may rotate in registers only).
  virtual void rope_store_attention(Tensor qkv, const AttentionLayer& l, const KvLayerView& kv,
                                    const BatchView& b, Tensor out) {
    qk_norm_rope(qkv, l.nh, l.nkv, l.hd, l.q_norm, l.k_norm, l.eps, b.positions, l.inv_freq);
    kv_store(qkv, l.nh, l.nkv, l.hd, kv, b.groups[l.group].slot_mapping);
    attention(qkv, l.nh, l.nkv, l.hd, kv, b, l.group, l.scale, l.window, l.softcap, out);
  }
  // linear(x, w, bias, out), and a hint that `next` (a [gate; up] weight) is read by a later op
  // of this forward: a backend may bring part of it closer while this one runs (the CUDA
  // backend's o projection prefetches into the L2 during the attention's tail). Results never
  // depend on the hint.
  virtual void linear_prefetch(Tensor x, const Weight& w, const Tensor* bias, Tensor out,
                               const Weight& next) {
    linear(x, w, bias, out);
  }
  // linear() of a weight with Weight::parts: each part into its column slice of out (and its
  // slice of bias). Returns false (and does nothing) for a weight without parts. Backends call it
  // first in linear().
  bool linear_parts(Tensor x, const Weight& w, const Tensor* bias, Tensor out);
  // The composition's first step: residual_norm(n) as add_rms_norm / rms_norm.
  void residual_norm(const ResidualNorm& n) {
    if (n.y) {
      add_rms_norm(n.residual, *n.y, n.w_y, &n.w_out, n.eps, n.h);
    } else {
      rms_norm(n.residual, n.w_out, n.eps, n.h);
    }
  }

  // Picks one token per logits row (the sampler chain, see SampleParams) and fills `out` in
  // host memory; only ids and the requested logprobs leave the device.
  virtual void sample(Tensor logits, const SampleBatch& batch, SampleOutput& out) = 0;
  // Sets every disallowed logit of the listed rows (f32) to -inf, in place, before sampling; the
  // rows not listed are not touched. The default brings each row to the host and back.
  virtual void mask_logits(Tensor logits, std::span<const LogitMask> masks);

  // The same sampler, split for a pipelined scheduler (vLLM's async scheduling): sample_async()
  // issues it and may return before it has run; its ids stay on the device, where the next
  // upload() takes those a HostBatch lists in `sampled`, so the next forward can be issued before
  // the host has seen them; sample_wait() then brings the ids and requested logprobs to the host.
  // At most one sample is outstanding: sample_wait() comes before the next sample_async() or
  // sample(). The default (backends that compute eagerly) samples at once.
  // greedy_ids (device memory, [R]): the forward's picks for a HostBatch with greedy_ids, which
  // the sampler then copies instead of picking again; null otherwise.
  virtual void sample_async(Tensor logits, const SampleBatch& batch,
                            const int32_t* greedy_ids = nullptr);
  virtual void sample_wait(SampleOutput& out);

 protected:
  // The default sample_async()'s result, kept until sample_wait(); its ids also serve the next
  // upload()'s HostBatch::sampled.
  SampleOutput async_out_;
  bool async_pending_ = false;
  // For upload(): throws Error(invalid_argument) when an entry of b.sampled names a token outside
  // the batch or a row outside the last sample's `rows`.
  static void check_sampled(const HostBatch& b, size_t rows);
};

// The CPU backend (always available) and, when built with CUDA and a GPU is present, the CUDA one.
std::unique_ptr<ComputeBackend> make_cpu_backend();
std::unique_ptr<ComputeBackend> make_cuda_backend();  // nullptr when unavailable
bool cuda_available();

}  // namespace tessera
