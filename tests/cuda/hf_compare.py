#!/usr/bin/env python3
"""Last-position logits of tessera's CUDA path against Hugging Face transformers, on the GPU machine.

Both engines load the same model directory (e.g. `tessera make-model --preset gemma3-1b --out DIR`,
bf16). transformers runs it twice: in bf16 (as a user would) and upcast to f32 (the reference).
tessera's error against the f32 reference passes when it is no worse than a bf16 engine should be:
at most max(2 x transformers-bf16's own error, 2e-2), with tessera's argmax among the reference's
top 5. Prints one JSON line with the figures; exit status 0 on PASS, 1 on FAIL.

  python3 hf_compare.py --model DIR --tessera build/tessera --tokens 600
"""
import argparse, json, subprocess, sys

import numpy as np
import torch
import transformers


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--tessera", required=True, help="path of the tessera CLI")
    ap.add_argument("--tokens", type=int, default=600)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()

    cfg = json.load(open(f"{a.model}/config.json"))
    rng = np.random.default_rng(a.seed)
    ids = rng.integers(3, cfg["vocab_size"], size=a.tokens).tolist()

    run = subprocess.run([a.tessera, "logits", "--model", a.model, "--device", "cuda", "--json",
                          "--tokens", ",".join(map(str, ids))], capture_output=True, text=True)
    if run.returncode != 0:
        print(json.dumps({"model": a.model, "error": run.stderr[-2000:]}))
        return 1
    t = np.array(json.loads(run.stdout)["logits"][-1], dtype=np.float64)

    model = transformers.AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16).cuda().eval()
    x = torch.tensor([ids], device="cuda")
    with torch.inference_mode():
        hb = model(input_ids=x).logits[0, -1].double().cpu().numpy()
        model = model.float()
        hf = model(input_ids=x).logits[0, -1].double().cpu().numpy()

    top5 = set(np.argsort(-hf)[:5].tolist())
    res = {
        "model": a.model, "tokens": a.tokens,
        "rel_err_tessera_vs_hf_f32": rel(t, hf),
        "rel_err_hf_bf16_vs_hf_f32": rel(hb, hf),
        "rel_err_tessera_vs_hf_bf16": rel(t, hb),
        "max_abs_err_tessera_vs_hf_f32": float(np.abs(t - hf).max()),
        "argmax": {"tessera": int(t.argmax()), "hf_bf16": int(hb.argmax()), "hf_f32": int(hf.argmax())},
        "top10_overlap_tessera_hf_f32": len(set(np.argsort(-t)[:10].tolist()) & set(np.argsort(-hf)[:10].tolist())),
    }
    ok = (not np.isnan(t).any() and res["rel_err_tessera_vs_hf_f32"] <= max(2 * res["rel_err_hf_bf16_vs_hf_f32"], 2e-2)
          and int(t.argmax()) in top5)
    res["pass"] = bool(ok)
    print(json.dumps(res))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
