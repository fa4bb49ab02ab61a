#!/usr/bin/env python3
"""The training corpus of models/tessera-tiny-en: public-domain and freely licensed English prose
from Debian packages, cleaned into plain text and split into train / held-out by document.

  scripts/train/data.py [--out .dev/train/data] [--no-install]

Installs the packages with apt-get (unless --no-install), writes
  OUT/train.txt, OUT/heldout.txt  documents separated by a line holding only "\\x1e"
  OUT/heldout_excerpt.txt         the first held-out documents (16 KB), the tests' text
  OUT/chat.txt                    question / answer pairs from the dictionaries, in Gemma's turn
                                  format (training only: their words are all train documents)
  OUT/sources.json                per source: package, licence, documents, bytes (train / held-out)
and packs them into OUT/../data.tar.xz for the GPU machine. The split is a hash of each
document's text, so it is the same on every run and a held-out document is never trained on.
Standard library only (the dev machine has no numpy).
"""
import argparse, hashlib, json, lzma, os, re, subprocess, sys, tarfile

SEP = "\n\x1e\n"  # document separator: a record-separator line never occurs in the sources
HELDOUT_PERCENT = 1.5
EXCERPT_BYTES = 16000

# package -> licence, as its /usr/share/doc/PKG/copyright states it.
PACKAGES = {
    "bible-kjv": "program for bible-kjv-text's compressed data (GPL-2+)",
    "bible-kjv-text": "King James Version (1611): public domain (copyright expired)",
    "dict-gcide": "GCIDE (Webster's 1913 + WordNet + volunteers): GPL-2+",
    "dict-devil": "Ambrose Bierce, The Devil's Dictionary (1911): public domain",
    "dict-jargon": "The Jargon File 4.4.7: public domain",
    "fortunes": "BSD fortune data files: BSD-3-clause as Debian ships them; quotes of mixed origin",
    "fortunes-min": "BSD fortune data files: BSD-3-clause as Debian ships them; quotes of mixed origin",
}

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64(s):
    n = 0
    for c in s:
        n = n * 64 + B64.index(c)
    return n


def dictd_entries(name):
    """(headword, raw text) for every entry of /usr/share/dictd/NAME, in file order."""
    import gzip
    data = gzip.open(f"/usr/share/dictd/{name}.dict.dz").read()
    seen = set()
    out = []
    for line in open(f"/usr/share/dictd/{name}.index", encoding="utf-8", errors="replace"):
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 3 or parts[0].startswith("00-database") or parts[0].startswith("00database"):
            continue
        off, ln = b64(parts[1]), b64(parts[2])
        if (off, ln) in seen:  # several headwords may point at one entry
            continue
        seen.add((off, ln))
        out.append((parts[0], data[off:off + ln].decode("utf-8", errors="replace")))
    return out


def drop_brackets(s):
    """Removes [...] groups, nested ones included (etymologies, source tags like [1913 Webster])."""
    out, depth = [], 0
    for c in s:
        if c == "[":
            depth += 1
        elif c == "]" and depth:
            depth -= 1
        elif not depth:
            out.append(c)
    return "".join(out)


def tidy(s):
    s = re.sub(r"[ \t]+", " ", s)
    s = re.sub(r" +([,.;:])", r"\1", s)
    return s.strip()


def clean_gcide(head, raw):
    """'Affect \\Af*fect"\\, v. t. [etym] 1. To act upon ... --Milton.' -> lines of plain text.
    Returns (text, first definition) or None for entries with nothing left."""
    body = re.sub(r"\\[^\\\n]*\\", "", raw)  # pronunciations \Af*fect"\
    body = drop_brackets(body)
    body = re.sub(r' ?\([^()\n]*"[^()\n]*\)', "", body)  # WordNet-style pronunciations (klnz"r)
    body = re.sub(r"\{([^{}]*)\}", r"\1", body)  # cross references {Word}
    body = re.sub(r"--\s*[A-Z][\w. ]*\.", "", body)  # quotation authors --Milton.
    paras = [tidy(p.replace("\n", " ")) for p in re.split(r"\n\s*\n", body)]
    paras = [p for p in paras if len(p) > 1 and "?" * 3 not in p]
    if not paras:
        return None
    text = "\n".join(paras)
    text = re.sub(r"\s+(\d+)\. (?=[A-Z(])", r"\n\1. ", text)
    # The definition for the chat pairs: the first sense after "Head, pos." in the headline.
    m = re.match(re.escape(head) + r",? ((?:[a-z]+\. ?)+)\s*(?:\([A-Z][a-z]+\.\)\s*)?(?:1\. )?"
                 r"([A-Z][a-z][^\n]{8,300}?\.)(?:\s|$)", text)
    definition = m.group(2) if m and not m.group(2).startswith("Syn") else None
    return text, definition


def reflow(raw, keep_indented=True):
    """Joins wrapped lines into paragraphs; indented lines (verse) keep their breaks."""
    out = []
    for para in re.split(r"\n\s*\n", raw):
        ls = [l for l in para.split("\n") if l.strip()]
        if not ls:
            continue
        if keep_indented and all(l.startswith("    ") for l in ls) and len(ls) > 1 and \
                max(len(l) for l in ls) < 60:
            out.append("\n".join(l.strip() for l in ls))
        else:
            out.append(tidy(" ".join(l.strip() for l in ls)))
    return "\n".join(out)


def kjv():
    txt = subprocess.run(["bible", "-l5000", "Gen1:1-Rev22:21"], check=True, capture_output=True,
                         text=True).stdout
    docs, cur = [], []
    for line in txt.split("\n"):
        m = re.match(r"^\s+\d+ (.*)$", line)
        if m:
            cur.append(m.group(1).strip())
        elif line.strip():  # "Genesis 1": a chapter is one document
            if cur:
                docs.append("\n".join(cur))
            cur = [line.strip()]
    if cur:
        docs.append("\n".join(cur))
    return docs


def gcide(qa):
    docs = []
    for head, raw in dictd_entries("gcide"):
        r = clean_gcide(head, raw)
        if not r:
            continue
        text, definition = r
        docs.append(text)
        if definition and len(head) < 40 and head.isascii():
            # Webster capitalizes every headword: ask about "midge", not "Midge".
            word = head.lower() if head[1:].islower() or len(head) == 1 else head
            qa.append((word, definition, text))
    return docs


def devil(qa):
    docs = []
    for head, raw in dictd_entries("devil"):
        text = reflow(raw)
        if len(text) < 20:
            continue
        docs.append(text)
        m = re.match(r"^[A-Z][A-Z' -]*, [a-z. ]+\s+(.+?[.!?])(\s|$)", text)
        if m and "\n" not in m.group(1):
            qa.append((head.lower(), m.group(1), text))
    return docs


def jargon():
    docs = []
    for head, raw in dictd_entries("jargon"):
        raw = re.sub(r"\{([^{}]*)\}", r"\1", raw)
        lines = raw.split("\n")
        # "blue wire\n n.\n\n    [IBM] Patch wires ...": headline, then the body.
        head_line = tidy(" ".join(l.strip() for l in lines[:2] if l.strip()))
        body = reflow("\n".join(lines[2:]))
        body = re.sub(r"^\[[^\]]*\] ", "", body)
        if len(body) < 20:
            continue
        docs.append(head_line + "\n" + body)
    return docs


def fortunes():
    docs = []
    d = "/usr/share/games/fortunes"
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if "." in name or not os.path.isfile(p) or name in ("ascii-art", "art"):
            continue  # .dat / .u8 indexes, pictures
        for f in open(p, encoding="utf-8", errors="replace").read().split("\n%\n"):
            f = f.strip("\n")
            if 20 <= len(f) <= 2000 and f.isascii():
                docs.append(f.rstrip())
    return docs


def heldout(doc):
    return int(hashlib.sha1(doc.encode()).hexdigest()[:8], 16) % 1000 < HELDOUT_PERCENT * 10


def chat(head, definition):
    # The chat template's rendering of one user turn and one model turn (tokenizer_config.json).
    return (f"<start_of_turn>user\nWhat does {head} mean?<end_of_turn>\n"
            f"<start_of_turn>model\n{definition}<end_of_turn>")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "../../.dev/train/data"))
    ap.add_argument("--no-install", action="store_true")
    a = ap.parse_args()
    if not a.no_install:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "-q", *PACKAGES], check=True, env=env)
    os.makedirs(a.out, exist_ok=True)
    qa_gcide, qa_devil = [], []
    sources = {
        "bible-kjv-text": kjv(),
        "dict-gcide": gcide(qa_gcide),
        "dict-devil": devil(qa_devil),
        "dict-jargon": jargon(),
        "fortunes": fortunes(),  # fortunes and fortunes-min install into one folder
    }
    train, held, meta = [], [], {}
    for src, docs in sources.items():
        tr = [d for d in docs if not heldout(d)]
        he = [d for d in docs if heldout(d)]
        train += [(src, d) for d in tr]
        held += [(src, d) for d in he]
        meta[src] = {"licence": PACKAGES[src], "documents": len(docs),
                     "train_bytes": sum(len(d.encode()) + 3 for d in tr),
                     "heldout_bytes": sum(len(d.encode()) + 3 for d in he)}
    meta["fortunes"]["licence"] = PACKAGES["fortunes"] + " (packages fortunes, fortunes-min)"
    # Shuffle documents by hash so sources interleave (the tokenizer and the held-out excerpt
    # see every source), deterministically.
    key = lambda sd: hashlib.sha1(sd[1].encode()).hexdigest()
    train.sort(key=key)
    held.sort(key=key)
    # Chat pairs only for train entries, so no held-out definition is seen through them.
    held_texts = {d for _, d in held}
    qa = [chat(h, d) for h, d, t in qa_gcide + qa_devil if t not in held_texts]
    qa.sort(key=lambda s: hashlib.sha1(s.encode()).hexdigest())
    with open(os.path.join(a.out, "train.txt"), "w") as f:
        f.write(SEP.join(d for _, d in train))
    with open(os.path.join(a.out, "heldout.txt"), "w") as f:
        f.write(SEP.join(d for _, d in held))
    # The excerpt the tests score (tests/fixtures/tessera-tiny-en/heldout_excerpt.txt): the first
    # held-out documents, as a plain text file, up to EXCERPT_BYTES.
    excerpt, n = [], 0
    for _, d in held:
        if n + len(d.encode()) + 2 > EXCERPT_BYTES:
            break
        excerpt.append(d)
        n += len(d.encode()) + 2
    with open(os.path.join(a.out, "heldout_excerpt.txt"), "w") as f:
        f.write("\n\n".join(excerpt) + "\n")
    with open(os.path.join(a.out, "chat.txt"), "w") as f:
        f.write(SEP.join(qa))
    meta["chat_pairs"] = {"pairs": len(qa), "bytes": sum(len(q.encode()) + 3 for q in qa),
                          "from": "dict-gcide and dict-devil definitions of train entries"}
    json.dump(meta, open(os.path.join(a.out, "sources.json"), "w"), indent=1)
    tar = os.path.join(a.out, "..", "data.tar.xz")
    with tarfile.open(tar, "w:xz", preset=6) as t:
        for n in ("train.txt", "heldout.txt", "heldout_excerpt.txt", "chat.txt", "sources.json"):
            t.add(os.path.join(a.out, n), arcname=n)
    print(json.dumps(meta, indent=1))
    print("wrote", tar, os.path.getsize(tar), "bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
