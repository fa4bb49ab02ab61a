#!/usr/bin/env python3
"""Trains models/tessera-tiny-en on the GPU machine in one call, against a wall-clock deadline.

  python3 train.py --data data.tar.xz --out OUT [--deadline-s 520] [--resume MODEL_DIR]

Steps: unpack the corpus (scripts/train/data.py made it); train a byte-level BPE tokenizer with
Hugging Face `tokenizers` (or reuse the one in --resume); tokenize; build a Gemma3ForCausalLM;
run every post-training step once on the untrained model (so a bug there fails in seconds, not
after the training budget is spent); train with bf16 autocast, AdamW and a cosine schedule over
the *time* left (the deadline, not a step count, ends training); save in bf16 with
save_pretrained; then, from the saved bf16 files loaded in f32 (what tessera's CPU path computes):
held-out perplexity, and the fixtures the tests compare tessera against (strided perplexity of
the held-out excerpt with per-window NLL sums, greedy continuations, tokenizer encodings).

OUT receives: log (the caller tees it), model.tar.NN (the model directory, split under 15 MiB),
fixture.json, summary.json, loss.png.
"""
import argparse, io, json, math, os, shutil, sys, tarfile, time

T0 = time.time()
SEP = "\n\x1e\n"
SPECIALS = ["<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"]  # ids 0..4
PAD, EOS, BOS, SOT, EOT = range(5)

# Gemma 3's chat template without the image branch (bos, alternating turns, system folded into
# the first user turn, "model" for the assistant role).
CHAT_TEMPLATE = (
    "{{ bos_token }}\n{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
    "    {%- endif -%}\n    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {{- message['content'] | trim }}\n    {{- '<end_of_turn>\n' }}\n{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n    {{'<start_of_turn>model\n'}}\n{%- endif -%}\n")

# The tests' settings: strided perplexity of the excerpt, greedy continuations.
FIX_CONTEXT, FIX_STRIDE, FIX_NEW = 256, 128, 24
PROMPTS = ["In the beginning God created", "The meaning of the word", "Once upon a time, there was",
           "A wise man once said that", "And it came to pass, when the king"]
CHAT_QUESTIONS = ["What does honest mean?", "What does river mean?"]


def log(*a):
    print(f"[{time.time() - T0:7.1f}s]", *a, flush=True)


def args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="data.tar.xz from scripts/train/data.py")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/tessera-train")
    ap.add_argument("--deadline-s", type=float, default=520, help="wall seconds from start for everything")
    ap.add_argument("--reserve-s", type=float, default=70, help="kept after training for saving and fixtures")
    ap.add_argument("--resume", default="", help="a model directory this script saved: continue from it")
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--intermediate", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.05)
    ap.add_argument("--warmup-s", type=float, default=15)
    ap.add_argument("--chat-pairs", type=int, default=30000, help="Q/A pairs mixed into training")
    ap.add_argument("--name", default="tessera-tiny-en")
    return ap.parse_args()


def read_docs(path):
    return [d for d in open(path, encoding="utf-8").read().split(SEP) if d]


def train_tokenizer(docs, vocab):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    # GPT-2 / Llama-3 style byte-level BPE: every byte has a token, so nothing is unknown.
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(docs, trainer, length=len(docs))
    # Gemma's behaviour: BOS in front of every encoded text (add_special_tokens).
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A <bos> $B", special_tokens=[("<bos>", BOS)])
    for i, s in enumerate(SPECIALS):
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s))
    return tok


def write_tokenizer_files(tok, d, seq):
    os.makedirs(d, exist_ok=True)
    tok.save(os.path.join(d, "tokenizer.json"))
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<bos>", "eos_token": "<eos>",
           "pad_token": "<pad>", "add_bos_token": True, "add_eos_token": False,
           "model_max_length": seq, "clean_up_tokenization_spaces": False,
           "chat_template": CHAT_TEMPLATE}
    json.dump(cfg, open(os.path.join(d, "tokenizer_config.json"), "w"), indent=1)


def encode_stream(tok, docs):
    """[bos] doc [eos] for every document, concatenated (bos comes from the post-processor)."""
    out = []
    for i in range(0, len(docs), 20000):
        for e in tok.encode_batch(docs[i:i + 20000]):
            out.extend(e.ids)
            out.append(EOS)
    return out


def make_config(a, vocab):
    import transformers
    n = a.layers
    # Sliding-window layers with a full-attention layer every third (Gemma 3 has 5:1; at six
    # layers 2:1 keeps two global layers).
    types = ["full_attention" if (i + 1) % 3 == 0 else "sliding_attention" for i in range(n)]
    return transformers.Gemma3TextConfig(
        vocab_size=vocab, hidden_size=a.hidden, intermediate_size=a.intermediate, num_hidden_layers=n,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, query_pre_attn_scalar=64,
        max_position_embeddings=a.seq, sliding_window=128, layer_types=types,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
        rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
        bos_token_id=BOS, eos_token_id=[EOS, EOT], pad_token_id=PAD, attention_dropout=0.0,
        final_logit_softcapping=None, attn_logit_softcapping=None)


def save_model(model, tok, a, d, state):
    import copy, torch, transformers
    shutil.rmtree(d, ignore_errors=True)
    m = copy.deepcopy(model).to(torch.bfloat16)  # a copy: the f32 master weights stay exact
    try:
        m.save_pretrained(d, safe_serialization=True)
    except TypeError:  # transformers versions that always write safetensors dropped the argument
        m.save_pretrained(d)
    del m
    gc = transformers.GenerationConfig(bos_token_id=BOS, eos_token_id=[EOS, EOT], pad_token_id=PAD,
                                       do_sample=True, temperature=0.8, top_k=40, top_p=0.95)
    gc.save_pretrained(d)
    write_tokenizer_files(tok, d, a.seq)
    json.dump(state, open(os.path.join(d, "train_state.json"), "w"), indent=1)


def strided_nll(model, ids, context, stride, device):
    """HF's strided perplexity recipe: windows of `context` tokens every `stride`; the first
    window scores all its tokens but the first, later ones only their last `stride` (or what is
    new). NLL from f32 logits, log-softmax in double. Returns (total_nll, scored, windows)."""
    import torch
    windows, prev_end = [], 0
    for begin in range(0, len(ids), stride):
        end = min(begin + context, len(ids))
        new = end - prev_end
        x = torch.tensor([ids[begin:end]], device=device)
        with torch.no_grad():
            lg = model(x).logits[0].double()
        lp = torch.log_softmax(lg, dim=-1)
        first = max(end - begin - new, 1)  # first scored position in the window
        tgt = x[0, first:]
        nll = -lp[first - 1:end - begin - 1].gather(1, tgt[:, None]).sum().item()
        windows.append({"begin": begin, "end": end, "scored": int(tgt.numel()), "nll": nll})
        prev_end = end
        if end == len(ids):
            break
    tot = sum(w["nll"] for w in windows)
    n = sum(w["scored"] for w in windows)
    return tot, n, windows


def block_ppl(model, stream, seq, device, max_tokens):
    """Perplexity over non-overlapping windows of `seq` tokens of the [bos] doc [eos] stream."""
    import torch
    tot, n = 0.0, 0
    for i in range(0, min(len(stream), max_tokens) - 1, seq):
        x = torch.tensor([stream[i:i + seq]], device=device)
        if x.shape[1] < 2:
            break
        with torch.no_grad():
            lp = torch.log_softmax(model(x).logits[0].double(), -1)
        tot -= lp[:-1].gather(1, x[0, 1:, None]).sum().item()
        n += x.shape[1] - 1
    return math.exp(tot / n), n


def finish(model_dir, tok, a, heldout_stream, excerpt, out, quick):
    """Everything after training, from the saved files: perplexities, fixtures, samples."""
    import torch, transformers
    torch.set_num_threads(min(16, os.cpu_count() or 1))
    ref = transformers.AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch.float32, attn_implementation="eager").eval()
    res = {}
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    ref_gpu = ref.to(dev)
    ppl, n = block_ppl(ref_gpu, heldout_stream, a.seq, dev, 2000 if quick else 10**9)
    res["heldout"] = {"perplexity": ppl, "tokens": n, "context": a.seq, "stride": a.seq,
                      "what": "held-out split as [bos] doc [eos] stream, non-overlapping windows, f32"}
    log(f"held-out perplexity {ppl:.3f} over {n} tokens")
    ref = ref_gpu.to("cpu")
    # The fixture on the CPU in f32, as the existing model fixtures (scripts/fixtures/).
    ex = excerpt[:2000] if quick else excerpt
    ids = tok.encode(ex).ids
    tot, cnt, wins = strided_nll(ref, ids, FIX_CONTEXT, FIX_STRIDE, "cpu")
    res["excerpt"] = {"perplexity": math.exp(tot / cnt), "nll": tot, "scored": cnt,
                      "windows": wins, "context": FIX_CONTEXT, "stride": FIX_STRIDE,
                      "tokens": len(ids), "ids": ids, "bytes": len(ex.encode())}
    log(f"excerpt perplexity {res['excerpt']['perplexity']:.4f} ({cnt} scored, {len(wins)} windows)")
    greedy = []
    for p in PROMPTS[:1] if quick else PROMPTS:
        pid = tok.encode(p).ids
        x = torch.tensor([pid])
        g = ref.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=FIX_NEW,
                         do_sample=False, pad_token_id=PAD)[0, len(pid):].tolist()
        greedy.append({"prompt": p, "prompt_ids": pid, "ids": g, "text": tok.decode(g)})
        log("greedy", repr(p), "->", repr(tok.decode(g)))
    res["greedy"] = greedy
    chats = []
    for q in CHAT_QUESTIONS[:1] if quick else CHAT_QUESTIONS:
        s = f"<bos><start_of_turn>user\n{q}<end_of_turn>\n<start_of_turn>model\n"
        pid = tok.encode(s, add_special_tokens=False).ids
        x = torch.tensor([pid])
        g = ref.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=40, do_sample=False,
                         pad_token_id=PAD)[0, len(pid):].tolist()
        chats.append({"question": q, "ids": g, "text": tok.decode(g, skip_special_tokens=False)})
        log("chat", repr(q), "->", repr(chats[-1]["text"]))
    res["chat_greedy"] = chats
    torch.manual_seed(0)
    samples = []
    for p in PROMPTS[:1] if quick else PROMPTS:
        x = torch.tensor([tok.encode(p).ids])
        g = ref.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=48, do_sample=True,
                         temperature=0.8, top_k=40, top_p=0.95, pad_token_id=PAD)[0, x.shape[1]:]
        samples.append({"prompt": p, "text": tok.decode(g.tolist())})
        log("sample", repr(p), "->", repr(samples[-1]["text"]))
    res["samples"] = samples
    # Tokenizer parity strings: tessera must encode these exactly as `tokenizers` does.
    strs = [l for l in excerpt.split("\n") if l][:40] + [
        "Hello, world! It's 3.14159 -- isn't it?", "  leading spaces\tand tabs\n\nnewlines  ",
        "naïve café — “quotes” 日本語 😀", "<start_of_turn>user\nhi<end_of_turn>\n", "<bos>x<eos>", ""]
    res["tokenizer"] = [{"text": s, "ids": tok.encode(s).ids, "ids_no_special":
                         tok.encode(s, add_special_tokens=False).ids} for s in strs]
    try:  # the chat template as transformers renders it
        at = transformers.AutoTokenizer.from_pretrained(model_dir)
        msgs = [{"role": "user", "content": CHAT_QUESTIONS[0]}]
        res["chat_template_render"] = at.apply_chat_template(msgs, tokenize=False,
                                                             add_generation_prompt=True)
        res["autotokenizer_ids"] = at(excerpt[:300])["input_ids"]
        res["autotokenizer_matches"] = res["autotokenizer_ids"] == tok.encode(excerpt[:300]).ids
    except Exception as e:  # informational only
        res["autotokenizer_error"] = repr(e)[:300]
    res["transformers"], res["torch"] = transformers.__version__, torch.__version__
    json.dump(res, open(os.path.join(out, "fixture.json"), "w"))
    return res


def plot(curve, evals, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:
        log("no plot:", e)
        return False
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot([c["tokens"] / 1e6 for c in curve], [c["loss"] for c in curve], lw=0.8, label="train")
    if evals:
        ax.plot([e["tokens"] / 1e6 for e in evals], [e["loss"] for e in evals], "o-", ms=3,
                label="validation")
    ax.set_xlabel("training tokens (millions)")
    ax.set_ylabel("cross-entropy (nats / token)")
    ax.set_ylim(bottom=max(0.0, min(c["loss"] for c in curve) - 0.5), top=min(8.5, max(c["loss"] for c in curve)))
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("tessera-tiny-en")
    fig.tight_layout()
    fig.savefig(path)
    return True


def pack(model_dir, out, name):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        t.add(model_dir, arcname=name)
    data, part = buf.getvalue(), 15 << 20
    for i in range(0, len(data), part):
        open(os.path.join(out, f"model.tar.{i // part:02d}"), "wb").write(data[i:i + part])
    return len(data)


def lr_at(a, t_frac, t_train):
    """Linear warm-up over warmup_s, then cosine to min_lr_ratio, over the wall-clock budget."""
    if t_train <= 0:
        return a.lr
    w = min(a.warmup_s / t_train, 0.2)
    if t_frac < w:
        return a.lr * max(t_frac / w, 0.01)
    p = min((t_frac - w) / (1 - w), 1.0)
    return a.lr * (a.min_lr_ratio + (1 - a.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p)))


def main(a):
    import torch, transformers
    os.makedirs(a.out, exist_ok=True)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    log("torch", torch.__version__, "transformers", transformers.__version__,
        "gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
    with tarfile.open(a.data) as t:
        t.extractall(a.work)
    train_docs = read_docs(os.path.join(a.work, "train.txt"))
    held_docs = read_docs(os.path.join(a.work, "heldout.txt"))
    chat_docs = read_docs(os.path.join(a.work, "chat.txt"))[:a.chat_pairs]
    excerpt = open(os.path.join(a.work, "heldout_excerpt.txt"), encoding="utf-8").read()
    # Validation for model selection comes out of the train split (its last 1%, hash-ordered),
    # so the held-out split stays untouched until the end.
    nval = max(len(train_docs) // 100, 1)
    val_docs, train_docs = train_docs[-nval:], train_docs[:-nval]
    log(f"docs: train {len(train_docs)} + chat {len(chat_docs)}, validation {nval}, held-out {len(held_docs)}")

    state = {"steps": 0, "tokens": 0, "train_seconds": 0.0, "runs": []}
    if a.resume:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(a.resume, "tokenizer.json"))
        p = os.path.join(a.resume, "train_state.json")
        if os.path.exists(p):
            state = json.load(open(p))
        log("resuming from", a.resume, "at step", state["steps"])
    else:
        # The chat pairs' turn markers are special tokens: BPE should not learn merges of their
        # spelled-out bytes, so the tokenizer sees the prose only.
        tok = train_tokenizer(train_docs, a.vocab)
        log("tokenizer trained:", tok.get_vocab_size(), "tokens")
    vocab = tok.get_vocab_size()
    train_stream = encode_stream(tok, train_docs + chat_docs)
    val_stream = encode_stream(tok, val_docs)
    held_stream = encode_stream(tok, held_docs)
    train_bytes = sum(len(d.encode()) for d in train_docs + chat_docs)
    log(f"tokens: train {len(train_stream)} ({train_bytes / len(train_stream):.2f} bytes/token), "
        f"validation {len(val_stream)}, held-out {len(held_stream)}")

    dev = "cuda"
    torch.manual_seed(1234)
    if a.resume:
        model = transformers.Gemma3ForCausalLM.from_pretrained(a.resume, dtype=torch.float32)
    else:
        model = transformers.Gemma3ForCausalLM(make_config(a, vocab))
    model = model.float().to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    log(f"model: {nparams / 1e6:.2f}M parameters (tied embeddings counted once)")

    # Every post-training step once, on the untrained model, before the budget is spent.
    t = time.time()
    dry = os.path.join(a.work, "dry")
    save_model(model, tok, a, os.path.join(dry, "model"), state)
    finish(os.path.join(dry, "model"), tok, a, held_stream, excerpt, dry, quick=True)
    plot([{"tokens": 0, "loss": 8.0}, {"tokens": 1, "loss": 7.0}], [], os.path.join(dry, "p.png"))
    pack(os.path.join(dry, "model"), dry, a.name)
    dry_s = time.time() - t
    log(f"dry run of the finishing steps: {dry_s:.1f}s")

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    other = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
    if a.resume and os.path.exists(os.path.join(a.resume, "optimizer.pt")):
        opt.load_state_dict(torch.load(os.path.join(a.resume, "optimizer.pt")))
    torch.backends.cuda.matmul.allow_tf32 = True
    data = torch.tensor(train_stream, dtype=torch.long, device=dev)
    val = torch.tensor(val_stream[: (len(val_stream) // a.seq) * a.seq], dtype=torch.long,
                       device=dev).view(-1, a.seq)[:64]
    ar = torch.arange(a.seq, device=dev)
    gen = torch.Generator(device=dev).manual_seed(state["steps"] + 1)

    def val_loss():
        model.eval()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            l = sum(model(input_ids=val[i:i + 32], labels=val[i:i + 32]).loss.item()
                    for i in range(0, val.shape[0], 32)) / math.ceil(val.shape[0] / 32)
        model.train()
        return l

    t_start = time.time()
    t_end = T0 + a.deadline_s - max(a.reserve_s, 3 * dry_s)
    budget = t_end - t_start
    log(f"training for {budget:.0f}s: batch {a.batch} x {a.seq}, peak lr {a.lr}")
    curve, evals, best = [], [], (float("inf"), None, 0)
    step, tokens0, next_eval = 0, state["tokens"], t_start + 20
    model.train()
    try:
        while True:
            now = time.time()
            if now >= t_end:
                break
            lr = lr_at(a, (now - t_start) / budget, budget)
            for g in opt.param_groups:
                g["lr"] = lr
            idx = torch.randint(0, data.numel() - a.seq, (a.batch,), device=dev, generator=gen)
            x = data[idx[:, None] + ar]
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=x, labels=x).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            if step % 25 == 0 or step == 1:
                l = loss.item()
                el = time.time() - t_start
                tok_s = step * a.batch * a.seq / el
                curve.append({"step": state["steps"] + step, "tokens": tokens0 + step * a.batch * a.seq,
                              "loss": l, "lr": lr, "seconds": el})
                if step % 200 == 0 or step == 1:
                    log(f"step {step} loss {l:.4f} lr {lr:.2e} {tok_s / 1e3:.0f}k tok/s")
                if not math.isfinite(l):
                    raise RuntimeError("loss is not finite")
            if time.time() >= next_eval:
                vl = val_loss()
                evals.append({"step": state["steps"] + step, "tokens": tokens0 + step * a.batch * a.seq,
                              "loss": vl, "seconds": time.time() - t_start})
                log(f"validation loss {vl:.4f} (perplexity {math.exp(vl):.2f}) at step {step}")
                if vl < best[0]:
                    best = (vl, {k: v.detach().clone() for k, v in model.state_dict().items()}, step)
                next_eval = time.time() + 30
    except Exception as e:  # keep what was learned; the log says why it stopped
        import traceback
        traceback.print_exc()
        log("training stopped early:", repr(e))
    train_s = time.time() - t_start
    vl = val_loss()
    evals.append({"step": state["steps"] + step, "tokens": tokens0 + step * a.batch * a.seq,
                  "loss": vl, "seconds": train_s})
    log(f"final validation loss {vl:.4f}; best {best[0]:.4f} at step {best[2]}")
    kept = step  # the step whose weights are saved: the last, or the best on validation
    if best[1] is not None and best[0] < vl:
        model.load_state_dict(best[1])
        kept = best[2]
        log("kept the best validation checkpoint, step", kept)
    ntok = step * a.batch * a.seq
    state["runs"].append({"steps_run": step, "kept_step": kept, "tokens_run": ntok,
                          "seconds": train_s, "peak_lr": a.lr,
                          "batch": a.batch, "seq": a.seq, "tokens_per_s": ntok / max(train_s, 1e-9),
                          "final_train_loss": curve[-1]["loss"] if curve else None,
                          "final_validation_loss": vl, "best_validation_loss": best[0],
                          "gpu": torch.cuda.get_device_name(0),
                          "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())})
    # The lineage of the saved weights (what a resume continues from), not the steps run.
    state["steps"] += kept
    state["tokens"] += kept * a.batch * a.seq
    state["train_seconds"] += train_s
    log(f"trained {step} steps, {ntok / 1e6:.1f}M tokens in {train_s:.0f}s ({ntok / train_s / 1e3:.0f}k tok/s)")

    md = os.path.join(a.work, a.name)
    save_model(model, tok, a, md, state)
    torch.save(opt.state_dict(), os.path.join(a.work, "optimizer.pt"))  # for a resume here
    json.dump({"train": curve, "validation": evals}, open(os.path.join(md, "loss_curve.json"), "w"))
    if curve and plot(curve, evals, os.path.join(md, "loss.png")):
        shutil.copy(os.path.join(md, "loss.png"), os.path.join(a.out, "loss.png"))
    del data
    res = finish(md, tok, a, held_stream, excerpt, a.out, quick=False)
    size = pack(md, a.out, a.name)
    summary = {"parameters": nparams, "vocab": vocab, "state": state,
               "heldout": res["heldout"], "excerpt_perplexity": res["excerpt"]["perplexity"],
               "tokens": {"train": len(train_stream), "validation": len(val_stream),
                          "heldout": len(held_stream), "train_bytes": train_bytes},
               "sources": json.load(open(os.path.join(a.work, "sources.json"))),
               "chat_pairs_used": len(chat_docs), "tar_bytes": size,
               "config": json.load(open(os.path.join(md, "config.json"))),
               "files": {f: os.path.getsize(os.path.join(md, f)) for f in os.listdir(md)},
               "wall_s": time.time() - T0}
    json.dump(summary, open(os.path.join(a.out, "summary.json"), "w"), indent=1)
    log("done:", json.dumps({k: summary[k] for k in ("heldout", "excerpt_perplexity", "files")}))


if __name__ == "__main__":
    main(args())
