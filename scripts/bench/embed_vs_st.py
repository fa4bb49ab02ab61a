#!/usr/bin/env python3
"""Embedding throughput: tessera vs sentence-transformers on the same inputs (issue #30's target:
256 inputs of 64 tokens on the H200, tessera >= 1.5x sentence-transformers in the same call).
Run on the GPU machine with a sentence-transformers directory tessera loads (causal pooling;
Qwen3-Embedding-0.6B's layout, or a random-weight one from make_embedding_fixtures.py):

  python3 scripts/bench/embed_vs_st.py --model DIR [--bench build/tessera_embed_bench] [--n 256 --len 64]

Both get the same token ids (so tokenizers do not enter), ST through SentenceTransformer.forward
in one batch of n (bf16, no padding: every input has the same length), tessera through
tessera_embed_bench (Engine::embed in one process: a warm-up call, then the best of --repeat). Prints both times,
the ratio, and the worst cosine between the two sets of vectors.
"""
import argparse, json, os, re, subprocess, sys, tempfile, time

import torch
from sentence_transformers import SentenceTransformer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--bench", default="build/tessera_embed_bench")
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--len", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    st = SentenceTransformer(a.model, device="cuda", model_kwargs={"torch_dtype": torch.bfloat16}).eval()
    vocab = st[0].auto_model.config.vocab_size
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(10, min(vocab, 30000), (a.n, a.len), generator=g)
    feats = {"input_ids": ids.cuda(), "attention_mask": torch.ones_like(ids).cuda()}
    with torch.no_grad():
        st(feats)  # warm-up
        torch.cuda.synchronize()
        best = 1e9
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            ref = st(feats)["sentence_embedding"].float()
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t0)
    st_ms = best * 1e3

    with tempfile.TemporaryDirectory() as d:
        path, emb = os.path.join(d, "in.jsonl"), os.path.join(d, "out.jsonl")
        with open(path, "w") as f:
            for row in ids.tolist():
                f.write(json.dumps({"tokens": row}) + "\n")
        # In one process after a warm-up call, as ST above (tessera_embed_bench).
        r = subprocess.run([a.bench, "--model", a.model, "--input", path, "--device", "cuda",
                            "--dtype", "bf16", "--context", str(a.len + 16), "--repeat", str(a.repeat),
                            "--out", emb], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("tessera_embed_bench failed: " + r.stderr)
        print(r.stdout.strip())
        tess_ms = float(re.search(r"best ([\d.]+) ms", r.stdout).group(1))
        out = open(emb).read()
    got = torch.tensor([json.loads(l)["embedding"] for l in out.splitlines()]).cuda()
    cos = torch.nn.functional.cosine_similarity(got, ref, dim=1)
    print(f"sentence-transformers {st_ms:.1f} ms, tessera {tess_ms:.1f} ms: {st_ms / tess_ms:.2f}x; "
          f"worst cosine {cos.min().item():.6f}")


if __name__ == "__main__":
    sys.exit(main())
