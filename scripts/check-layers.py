#!/usr/bin/env python3
"""Fails when a file includes a header its layer may not use (docs/ARCHITECTURE.md, "Layers").

Every file includes through the same roots (src/ and include/: "core/check.h",
"tessera/engine.h"), so the compiler cannot stop backend/ from including engine/; this check
does. It reads every #include under src/, include/ and tools/, resolves it to a file of the tree
(as the compiler would: the including file's directory first, then src/, then include/), and
reports each one that the table below does not allow, naming the file, the line and the header.
Headers outside the tree (the standard library, nlohmann, CLI11) are not its concern.

Usage: scripts/check-layers.py [--root DIR]   (CTest runs it as the test `layers`)
       scripts/check-layers.py --self-test    (checks the checker on a made-up tree)
"""

import argparse
import os
import re
import sys
import tempfile

# Where each layer lives, relative to the repository root. A file belongs to the layer of the
# longest matching directory, so src/backend/cpu/ is not src/backend/ (the compute interface).
LAYERS = {
    "include/tessera": "public",
    "src/core": "core",
    "src/io": "io",
    "src/quant": "quant",
    "src/tokenizer": "tokenizer",
    "src/chat": "chat",
    "src/grammar": "grammar",
    "src/backend": "backend",
    "src/backend/cpu": "backend/cpu",
    "src/backend/cuda": "backend/cuda",
    "src/models": "models",
    "src/engine": "engine",
    "src/server": "server",
    "src/capi": "capi",
    "tools/tessera": "cli",
}

# What each layer may include besides its own files: layers, or single headers (a path under
# src/) where a layer may use one named entry point of another and nothing else of it. The
# libraries (cmake/sources.cmake) link in the same order.
ALLOWED = {
    "public": [],
    "core": ["public"],
    "io": ["core", "public"],
    "quant": ["core", "public"],
    # The tokenizer reads a GGUF file's tokenizer.ggml.* metadata (tokenizer/gguf_tokenizer.cpp).
    "tokenizer": ["core", "public", "src/io/gguf.h"],
    "chat": ["core", "public"],
    "grammar": ["core", "public"],
    "backend": ["core", "public"],
    "backend/cpu": ["backend", "quant", "core", "public"],
    "backend/cuda": ["backend", "quant", "core", "public"],
    "models": ["backend", "io", "quant", "core", "public"],
    "engine": ["models", "backend", "io", "quant", "tokenizer", "chat", "grammar", "core",
               "public"],
    "server": ["core", "public"],
    "capi": ["public"],
    # The CLI: the public API, the developer API of its developer commands, and the server.
    "cli": ["public", "src/engine/dev_api.h", "src/server/server.h"],
}

SOURCE_SUFFIXES = (".h", ".hpp", ".cuh", ".c", ".cc", ".cpp", ".cu", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(rel):
    best = None
    for d, name in LAYERS.items():
        if rel == d or rel.startswith(d + "/"):
            if best is None or len(d) > len(best[0]):
                best = (d, name)
    return best[1] if best else None


def resolve(root, including, header, quoted):
    """The included file as a path relative to root, or None when it is not in the tree."""
    dirs = [os.path.dirname(including)] if quoted else []
    for d in dirs + ["src", "include"]:
        rel = os.path.normpath(os.path.join(d, header))
        if not rel.startswith("..") and os.path.isfile(os.path.join(root, rel)):
            return rel.replace(os.sep, "/")
    return None


def sources(root):
    for top in ("src", "include", "tools"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")


def check(root):
    """Returns the violations as 'file:line: message' strings."""
    problems = []
    for rel in sources(root):
        layer = layer_of(rel)
        if layer is None:
            problems.append(f"{rel}:1: in no layer (add its directory to scripts/check-layers.py)")
            continue
        allowed = ALLOWED[layer]
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                target = resolve(root, rel, m.group(2), m.group(1) == '"')
                if target is None:
                    continue
                to = layer_of(target)
                if to == layer or to in allowed or target in allowed:
                    continue
                problems.append(
                    f'{rel}:{n}: includes "{m.group(2)}" ({target}): layer {layer} may not '
                    f"include layer {to or '(none)'} (allowed: {', '.join(allowed) or 'nothing'})"
                )
    return problems


def self_test():
    """The checker on a made-up tree with allowed and forbidden includes: it must report exactly
    the forbidden ones (a checker that passes everything would otherwise go unnoticed)."""
    files = {
        "include/tessera/engine.h": "",
        "src/core/check.h": '#include "tessera/engine.h"\n',
        "src/engine/dev_api.h": '#include "core/check.h"\n',
        "src/engine/kv_pool.h": "",
        "src/backend/backend.h": '#include <vector>\n  #  include "engine/kv_pool.h"\n',
        "tools/tessera/cli.h": '#include "engine/dev_api.h"\n#include "engine/kv_pool.h"\n'
        "#include <core/check.h>\n",
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        got = [p.split(":")[0] + ":" + p.split(":")[1] for p in check(root)]
    want = ["src/backend/backend.h:2", "tools/tessera/cli.h:2", "tools/tessera/cli.h:3"]
    if got != want:
        print(f"check-layers self-test: reported {got}, expected {want}", file=sys.stderr)
        return 1
    print("check-layers self-test: ok")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.abspath(args.root)
    problems = check(root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"layers: {len(problems)} problem(s); the table is in {__file__}", file=sys.stderr)
        return 1
    print(f"layers: {sum(1 for _ in sources(root))} files, every include allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
