#!/usr/bin/env python3
"""A random-weight sentence-transformers directory of Qwen3-Embedding-0.6B's shape, for
scripts/bench/embed_vs_st.py on the GPU machine (no weights can be downloaded there).

Shape from Qwen/Qwen3-Embedding-0.6B's config.json: hidden 1024, 28 layers, 16 query / 8 KV heads
of 128, MLP 3072, vocab 151669, rope theta 1e6, tied embedding; sentence-transformers modules as
that model ships them: Transformer, Pooling (lasttoken), Normalize. Weights are transformers' own
initialisation, saved in bf16. The tokenizer is a byte-level stand-in (the benchmark feeds ids).

  python3 scripts/bench/make_st_bench_model.py --out /tmp/qwen3-emb-0.6b
"""
import argparse, os, shutil, sys

import torch
import transformers
from sentence_transformers import SentenceTransformer, models

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fixtures"))
from make_embedding_fixtures import byte_level_tokenizer  # noqa: E402

VOCAB = 151669


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    cfg = transformers.Qwen3Config(vocab_size=VOCAB, hidden_size=1024, intermediate_size=3072,
                                   num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                                   head_dim=128, max_position_embeddings=32768, rope_theta=1000000.0,
                                   rms_norm_eps=1e-6, tie_word_embeddings=True, bos_token_id=151643,
                                   eos_token_id=151643, pad_token_id=151643, use_sliding_window=False)
    base = transformers.Qwen3Model(cfg).to(torch.bfloat16).eval()
    tmp = a.out + ".transformer"
    shutil.rmtree(tmp, ignore_errors=True)
    base.save_pretrained(tmp)
    byte_level_tokenizer(tmp, VOCAB)
    mods = [models.Transformer(tmp), models.Pooling(1024, pooling_mode="lasttoken"), models.Normalize()]
    SentenceTransformer(modules=mods, device="cpu").save(a.out)
    shutil.rmtree(tmp)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
