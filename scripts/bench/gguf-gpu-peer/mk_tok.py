# A stand-in tokenizer.json for hf_to_gguf_gemma3.py (the benchmarks feed token ids): specials,
# the 256 byte tokens, the rest left as padding.
import json, sys
v = {"<pad>": 0, "<eos>": 1, "<bos>": 2}
v.update({"<0x%02X>" % b: 3 + b for b in range(256)})
json.dump({"model": {"type": "BPE", "byte_fallback": True, "vocab": v, "merges": []},
           "added_tokens": [{"id": i, "content": t, "special": True} for t, i in list(v.items())[:3]]},
          open(sys.argv[1], "w"))
