// The blocks every decoder forward is written in: the embedding, the norm that opens a sublayer,
// the attention block, the gated MLP and the LM head, each a few backend ops (the fused ones
// where the decode step wants one kernel: DESIGN.md, "Eager ops, captured; fusions by name").
//
// The residual stream: transformers adds each sublayer's output to the residual as soon as it is
// computed (x = residual + h); tessera adds it in the norm that opens the next sublayer, one op
// (ResidualNorm): add_norm(f, attn_out, ...) reads "x += attn_out; h = norm(x)". A block's output
// is therefore left pending for the next add_norm or for lm_head, which take it as `y`.
#pragma once

#include <span>

#include "models/decoder_config.h"
#include "models/weight_loader.h"

namespace tessera {

// One forward's activations. T: the batch's tokens, R: its logits rows (both as the backend
// padded them). Taken from the backend's scratch in this order and with these shapes on every
// forward: a backend that captures a forward (CUDA graphs) replays it at the same addresses.
struct Activations {
  Tensor x;        // [T, hidden] f32: the residual stream
  Tensor h;        // [T, hidden]: a sublayer's normed input
  Tensor qkv;      // [T, (nh + 2 nkv) hd]
  Tensor attn;     // [T, nh hd]: attention before o_proj
  Tensor out;      // [T, hidden]: a sublayer's output (attention's, then the MLP's)
  Tensor gate_up;  // [T, 2 intermediate]
  Tensor gated;    // [T, intermediate]: act(gate) * up
  Tensor x_rows;   // [max(R, 1), hidden] f32: the residual stream at the logits rows
  Tensor h_rows;   // [max(R, 1), hidden]: their final norm
  Tensor logits;   // [max(R, 1), vocab] f32
  Tensor ids;      // [max(R, 1), 1] i32: their greedy ids
};

// A forward in progress: what every block reads.
struct ForwardPass {
  ComputeBackend& be;
  const DecoderConfig& c;
  BatchView b;  // the uploaded batch
  Activations a;
  int32_t* greedy_ids = nullptr;  // a.ids when b asks for greedy ids (and has logits rows)

  ForwardOutput output() const {
    return {a.logits.rows_from(0, b.num_logit_rows), greedy_ids,
            b.hidden_states ? a.h.rows_from(0, b.num_tokens) : Tensor{}};
  }
};

// Uploads hb and takes the activations (after a scratch reset); kv holds one view per layer.
ForwardPass begin_forward(ComputeBackend& be, const DecoderConfig& c, const HostBatch& hb,
                          std::span<const KvLayerView> kv);
// The scratch bytes begin_forward takes for `tokens` tokens and `logit_rows` logits rows.
size_t activation_bytes(const DecoderConfig& c, DType act_dtype, int tokens, int logit_rows);

// x = embed_tokens[ids] * scale [T, hidden]; with round_to_table_dtype, the scale and the product
// are rounded to the table's dtype (Gemma). ref: transformers LlamaModel.embed_tokens,
// Gemma3TextScaledWordEmbedding
void embed(ForwardPass& f, const Weight& embed_tokens, float scale, bool round_to_table_dtype);

// The norm that opens a sublayer: x += (w_y ? rms_norm(y, w_y) : y), then h = rms_norm(x, w).
// y: the previous sublayer's output, null before the first (nothing to add).
ResidualNorm add_norm(const ForwardPass& f, const Tensor* y, const DeviceArray* w_y,
                      const DeviceArray& w);

// Self-attention over attn_in.h [T, hidden]: qkv = q/k/v_proj(h) [T, (nh + 2 nkv) hd]; q/k norm,
// rope and the K/V store into the layer's cache; attention [T, nh hd] over the sequence (within
// L.window); attn_out = o_proj(attention) [T, hidden], during which the backend may start reading
// L's gate_up for the MLP. Returns attn_out (in f.a.out). ref: transformers LlamaAttention.forward,
// Gemma3Attention.forward
const Tensor& attention_block(ForwardPass& f, const ResidualNorm& attn_in, const LayerWeights& L,
                              const KvLayerView& kv);

// The gated MLP over mlp_in.h [T, hidden]: act(gate_proj(h)) * up_proj(h) [T, intermediate];
// mlp_out = down_proj(...) [T, hidden]. Returns mlp_out (in f.a.out). ref: transformers
// LlamaMLP.forward, Gemma3MLP.forward
const Tensor& gated_mlp(ForwardPass& f, const ResidualNorm& mlp_in, const LayerWeights& L,
                        Activation act);

// The end of the model: x += (w_y ? rms_norm(y, w_y) : y) with the last layer's output y; then at
// the logits rows logits = lm_head(rms_norm(x, norm)) [R, vocab], tanh-softcapped at `softcap`
// when > 0, with their greedy ids when the batch asks. A decode step (every row a logits row)
// runs in place; otherwise the rows are gathered first. Nothing when the batch wants no logits.
// With BatchView::hidden_states, h = rms_norm(x, norm) of every row stays in f.a.h (embeddings).
void lm_head(ForwardPass& f, const Tensor& y, const DeviceArray* w_y, const DeviceArray& norm,
             const Weight& head, float softcap);
// The same with nothing pending (y null): x is the last layer's output as it stands (Gemma 4,
// whose layers end by scaling the residual).
void lm_head(ForwardPass& f, const Tensor* y, const DeviceArray* w_y, const DeviceArray& norm,
             const Weight& head, float softcap);

}  // namespace tessera
