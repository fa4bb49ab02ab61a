#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora, fuzz/corpus/<target>/ (committed; run again after changing).

Real fixture files where they are small (config.json files, chat templates, tokenizer corpus
lines), hand-made minimal files where the fixtures are large (safetensors shards, GGUF files,
tokenizer.json): each seed is a valid input of its kind, a few KB at most, so that libFuzzer's
mutations start inside the parser's accepting paths. Standard library only.
"""
import json
import os
import shutil
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fuzz" / "corpus"


def put(target, name, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def copy(target, name, src):
    put(target, name, (ROOT / src).read_bytes())


# --- safetensors: u64 header length, JSON header, data ----------------------------------------
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


put("safetensors", "f32", safetensors([("a", "F32", [2, 2], f32(1, 2, 3, 4)), ("b", "F32", [3], f32(5, 6, 7))]))
put("safetensors", "bf16_meta", safetensors([("model.norm.weight", "BF16", [4], b"\x80\x3f" * 4),
                                             ("e", "I8", [0, 3], b"")], {"format": "pt"}))
put("safetensors", "u8_i64", safetensors([("x.scales", "U8", [2, 3], bytes(6)), ("y", "I64", [1], bytes(8)),
                                          ("z", "F16", [], b"\x00\x3c")]))

# --- model.safetensors.index.json (shards as fuzz/model_index_fuzz.cpp writes them) ----------
s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
put("model_index", "two_shards", json.dumps({"metadata": {"total_size": 80}, "weight_map": {
    "model.embed_tokens.weight": s1, "model.norm.weight": s1, "lm_head.weight": s2}}, indent=1))
put("model_index", "one_shard", json.dumps({"weight_map": {"model.embed_tokens.weight": s1, "model.norm.weight": s1}}))
put("model_index", "outside", json.dumps({"weight_map": {"a": "../" + s1, "b": "sub/./" + s2}}))

# --- config.json: the fixtures' (every architecture), and MLX quantization blocks ------------
for d in sorted((ROOT / "tests/fixtures/models").iterdir()):
    if (d / "config.json").exists():
        copy("model_config", d.name, d / "config.json")
copy("model_config", "tessera_tiny_en", "models/tessera-tiny-en/config.json")
for d in sorted((ROOT / "tests/fixtures/quant").iterdir()):
    if (d / "config.json").exists():
        copy("quant_config", d.name, d / "config.json")

# --- chat templates: the fixtures', and small ones for the statements they do not use --------
for f in sorted((ROOT / "tests/fixtures/chat/templates").glob("*.jinja")):
    copy("jinja", f.stem, f)
put("jinja", "macros", "{% macro m(x, y=2) %}{{ x ~ y | string }}{% endmacro %}{% set ns = namespace(n=0) %}"
    "{% for msg in messages if msg.role != 'tool' %}{% set ns.n = ns.n + 1 %}{{ m(loop.index, y=msg.role|upper) }}"
    "{{ msg.content if msg.content is string else msg.content|tojson }}{% endfor %}{{ ns.n }}"
    "{% if add_generation_prompt %}{{ '<start>' * 3 }}{% endif %}")
put("jinja", "filters", "{{ messages|length }}{{ (messages|map(attribute='role')|list)[1:3]|join(',') }}"
    "{% for k, v in tools[0].function.parameters.properties|dictsort %}{{ k }}={{ v.type|default('?') }}{% endfor %}"
    "{{ 'a,b'.split(',')|reverse|first }}{{ range(3)|sum }}{{ '%d-%s'|format(1, 'x') }}{{ bos_token|trim|replace('<','[') }}"
    "{%- raw %}{{ x }}{% endraw -%}{{ none is none and 3 is odd or 'x' in 'xy' }}")
put("jinja", "calls", "{%- for m in messages %}{%- if m.tool_calls is defined %}{%- for c in m.tool_calls %}"
    "{{ c.function.name }}({{ c.function.arguments|tojson(indent=2) }}){% endfor %}{% elif m.role == 'tool' %}"
    "<{{ m.tool_call_id }}>{% else %}{{ raise_exception('x') if m.role == 'bad' }}{{ m.role }}{% endif %}{% endfor %}")

# --- OpenAI request bodies: the first byte picks the parser (fuzz/openai_request_fuzz.cpp) ----
bodies = [
    {"model": "m", "prompt": ["Hello", [1, 2, 3]], "max_tokens": 8, "temperature": 0.7, "top_p": 0.9,
     "stop": ["\n"], "logprobs": 2, "seed": 5, "n": 2, "echo": False, "stream": True, "logit_bias": {"5": -100}},
    {"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
     "max_completion_tokens": 16, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema":
     {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}, "stream_options": {"include_usage": True},
     "top_logprobs": 3, "logprobs": True, "frequency_penalty": 0.5, "presence_penalty": -0.5},
    {"model": "m", "input": ["good", "bad"], "return_logits": True},
    {"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}], "instructions": "be brief",
     "max_output_tokens": 20, "text": {"format": {"type": "json_object"}}, "metadata": {"k": "v"}, "stream": True},
    {"model": "m", "input": ["a", "b"], "encoding_format": "base64", "dimensions": 8},
]
for i, b in enumerate(bodies):
    put("openai_request", "body%d" % i, bytes([i]) + json.dumps(b).encode())
put("openai_request", "body5", b"\x01" + json.dumps({"messages": [{"role": "user", "content": "x"}],
    "structured_outputs": {"regex": "[a-z]+", "choice": ["a", "b"]}, "stop": "x", "max_tokens": 1}).encode())

# --- grammars --------------------------------------------------------------------------------
put("gbnf", "arith", 'root ::= expr\nexpr ::= term ([-+*/] term)*\nterm ::= [0-9]+ | "(" expr ")"\n')
put("gbnf", "json", 'root ::= object\nvalue ::= object | array | string | number | ("true" | "false" | "null") ws\n'
    'object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws\n'
    'array ::= "[" ws ( value ("," ws value)* )? "]" ws\nstring ::= "\\"" ( [^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\\"" ws\n'
    'number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws\nws ::= [ \\t\\n]{0,20}\n')
put("regex", "date", r"\d{4}-\d{2}-\d{2}(T[0-9:]{8})?")
put("regex", "alt", r"(?:yes|no|maybe)[.!]?\s*[A-Za-z_][\w-]{0,10}|\u00e9+|[^\n]{2,5}")
put("json_schema", "object", json.dumps({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 8}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1, "maxItems": 3},
    "kind": {"anyOf": [{"const": 1}, {"type": "null"}, {"type": "number"}]}}, "required": ["name"],
    "additionalProperties": False}))
put("json_schema", "refs", json.dumps({"$defs": {"node": {"type": "object", "properties": {
    "v": {"type": "boolean"}, "next": {"$ref": "#/$defs/node"}}}}, "$ref": "#/$defs/node"}))
put("json_schema", "string_formats", json.dumps({"type": "array", "items": [{"type": "string", "pattern": "^[a-z]+$"},
    {"type": "string", "format": "date"}], "oneOf": [{"minItems": 1}]}))

# --- tokenizer.json: small hand-made ones covering each component kind -----------------------
bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
vocab = {t: i for i, t in enumerate(["H", "e", "l", "o", "Ġ", "w", "r", "d", "He", "ll", "Ġw", "or", "Hell", "Ġwor", "Hello", "Ġworld", "ld", "!"])}
put("tokenizer_json", "byte_level_bpe", json.dumps({
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [{"id": 18, "content": "<|bos|>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True},
                     {"id": 19, "content": "<tool>", "single_word": False, "lstrip": True, "rstrip": True, "normalized": True, "special": False}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Replace", "pattern": {"String": "\r"}, "content": ""}]},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+|\\s+"}, "behavior": "Isolated", "invert": False},
        dict(bl, use_regex=False)]},
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|bos|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                       "special_tokens": {"<|bos|>": {"id": "<|bos|>", "ids": [18], "tokens": ["<|bos|>"]}}},
    "decoder": bl,
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
              "fuse_unk": False, "byte_fallback": False, "ignore_merges": False, "vocab": vocab,
              "merges": ["H e", "l l", "Ġ w", "o r", "He ll", "Ġw or", "Hell o", "l d", "Ġwor ld"]}}))
bytes_vocab = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ["▁", "a", "b", "▁a", "ab", "▁ab"]
put("tokenizer_json", "byte_fallback_bpe", json.dumps({
    "version": "1.0", "added_tokens": [{"id": 1, "content": "<s>", "special": True, "normalized": False, "lstrip": False, "rstrip": False, "single_word": False},
                                       {"id": 2, "content": "</s>", "special": True, "normalized": False, "lstrip": False, "rstrip": False, "single_word": False}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": None,
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
                                                 {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True,
              "vocab": {t: i for i, t in enumerate(bytes_vocab)}, "merges": [["▁", "a"], ["a", "b"], ["▁a", "b"]]}}))
put("tokenizer_json", "metaspace", json.dumps({
    "added_tokens": [], "normalizer": {"type": "NFKC"},
    "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True},
    "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True},
    "model": {"type": "BPE", "unk_token": "<unk>", "vocab": {"<unk>": 0, "▁": 1, "a": 2, "▁a": 3}, "merges": ["▁ a"]}}))

# --- text for the real tokenizers: the first byte picks one (fuzz/tokenizer_text_fuzz.cpp) ---
lines = [json.loads(l)["text"] for l in (ROOT / "tests/fixtures/tokenizer/corpus.jsonl").read_text(encoding="utf-8").split("\n") if l.strip()]
longest = sorted(lines, key=len)[-8:]
for i, t in enumerate(longest):
    put("tokenizer_text", "line%d" % i, bytes([i % 6]) + t.encode()[:2000])
put("tokenizer_text", "specials", b"\x03<|begin_of_text|>hi<|eot_id|><|im_start|>user\n<|im_end|><start_of_turn>")

# --- GGUF -------------------------------------------------------------------------------------
U32, I32, F32T, BOOL, STR, ARR, U64 = 4, 5, 6, 7, 8, 9, 10


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(kvs, tensors=(), align=32):
    """kvs: (key, type, value); tensors: (name, ggml type, ne, raw bytes)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, t, v in kvs:
        out += gstr(key) + struct.pack("<I", t)
        if t == STR:
            out += gstr(v)
        elif t == ARR:
            et, items = v
            out += struct.pack("<IQ", et, len(items))
            for x in items:
                out += gstr(x) if et == STR else struct.pack({U32: "<I", I32: "<i", F32T: "<f"}[et], x)
        else:
            out += struct.pack({U32: "<I", I32: "<i", F32T: "<f", BOOL: "<?", U64: "<Q"}[t], v)
    offsets, off = [], 0
    for _, _, _, raw in tensors:
        offsets.append(off)
        off = (off + len(raw) + align - 1) // align * align
    for (name, gt, ne, raw), o in zip(tensors, offsets):
        out += gstr(name) + struct.pack("<I", len(ne)) + struct.pack("<%dq" % len(ne), *ne) + struct.pack("<IQ", gt, o)
    if tensors:
        out += bytes((align - len(out) % align) % align)
        data = b""
        for (_, _, _, raw), o in zip(tensors, offsets):
            data += bytes(o - len(data)) + raw
        out += data
    return out


bpe_tokens = ["H", "e", "l", "o", "Ġ", "w", "r", "d", "He", "ll", "Hello", "Ġw", "<|bos|>", "<|eot|>"]
gpt2_vocab = [("tokenizer.ggml.model", STR, "gpt2"), ("tokenizer.ggml.pre", STR, "llama3"),
              ("tokenizer.ggml.tokens", ARR, (STR, bpe_tokens)),
              ("tokenizer.ggml.token_type", ARR, (I32, [1] * 12 + [3, 3])),
              ("tokenizer.ggml.merges", ARR, (STR, ["H e", "l l", "He ll", "Hell o", "Ġ w"])),
              ("tokenizer.ggml.bos_token_id", U32, 12), ("tokenizer.ggml.eos_token_id", U32, 13),
              ("tokenizer.ggml.add_bos_token", BOOL, True)]
spm_tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ["▁", "a", "b", "▁a", "ab"]
spm_vocab = [("tokenizer.ggml.model", STR, "llama"), ("tokenizer.ggml.pre", STR, "default"),
             ("tokenizer.ggml.tokens", ARR, (STR, spm_tokens)),
             ("tokenizer.ggml.scores", ARR, (F32T, [0.0] * 259 + [-1.0, -2.0, -3.0, -1.5, -2.5])),
             ("tokenizer.ggml.token_type", ARR, (I32, [2, 3, 3] + [6] * 256 + [1] * 5)),
             ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2),
             ("tokenizer.ggml.unknown_token_id", U32, 0), ("tokenizer.ggml.add_space_prefix", BOOL, True)]
put("gguf_tokenizer", "gpt2_llama3", gguf([("general.architecture", STR, "llama")] + gpt2_vocab))
put("gguf_tokenizer", "spm", gguf([("general.architecture", STR, "gemma3")] + spm_vocab))
put("gguf_tokenizer", "gpt2_qwen2", gguf([("general.architecture", STR, "qwen2")] +
                                         [kv if kv[0] != "tokenizer.ggml.pre" else (kv[0], STR, "qwen2") for kv in gpt2_vocab]))


def tiny_model(arch, vocab):
    """A one-layer model with hidden 8, 2 heads of 4, one KV head, FFN 16 (f32; one F16 norm)."""
    k = lambda s: arch + "." + s
    kvs = [("general.architecture", STR, arch), (k("block_count"), U32, 1), (k("embedding_length"), U32, 8),
           (k("feed_forward_length"), U32, 16), (k("attention.head_count"), U32, 2),
           (k("attention.head_count_kv"), U32, 1), (k("context_length"), U32, 64),
           (k("attention.layer_norm_rms_epsilon"), F32T, 1e-6), (k("rope.freq_base"), F32T, 10000.0)] + vocab
    n_vocab = len({key: v for key, _, v in vocab}["tokenizer.ggml.tokens"][1])
    mat = lambda name, r, c: (name, 0, [c, r], f32(*[(i % 7) / 7.0 for i in range(r * c)]))
    norm = lambda name, n: (name, 0, [n], f32(*[1.0] * n))
    ts = [mat("token_embd.weight", n_vocab, 8), norm("output_norm.weight", 8), norm("blk.0.attn_norm.weight", 8),
          mat("blk.0.attn_q.weight", 8, 8), mat("blk.0.attn_k.weight", 4, 8), mat("blk.0.attn_v.weight", 4, 8),
          mat("blk.0.attn_output.weight", 8, 8), mat("blk.0.ffn_gate.weight", 16, 8), mat("blk.0.ffn_up.weight", 16, 8),
          mat("blk.0.ffn_down.weight", 8, 16), ("blk.0.ffn_norm.weight", 1, [8], struct.pack("<8e", *[1.0] * 8))]
    if arch == "gemma3":
        ts += [norm("blk.0.post_attention_norm.weight", 8), norm("blk.0.post_ffw_norm.weight", 8),
               norm("blk.0.attn_q_norm.weight", 4), norm("blk.0.attn_k_norm.weight", 4)]
    return gguf(kvs, ts)


put("gguf", "llama_bpe", tiny_model("llama", gpt2_vocab))
put("gguf", "qwen2_bpe", tiny_model("qwen2", gpt2_vocab))
put("gguf", "gemma3_tiny_vocab", tiny_model("gemma3", [("tokenizer.ggml.model", STR, "llama"),
    ("tokenizer.ggml.tokens", ARR, (STR, ["<unk>", "<s>", "</s>", "▁a", "b"])), ("tokenizer.ggml.eos_token_id", U32, 2)]))

total = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file())
print("fuzz/corpus: %d files, %d bytes" % (sum(1 for f in OUT.rglob("*") if f.is_file()), total))
