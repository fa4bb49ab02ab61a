# Random gemma3-1b (tessera's preset config), bf16, seed 0: the same weights in every call.
import sys, json, torch, transformers
cfg = json.load(open(sys.argv[1])); out = sys.argv[2]
torch.manual_seed(0)
c = transformers.Gemma3TextConfig(**{k: v for k, v in cfg.items() if k not in ("architectures", "torch_dtype")})
with torch.device("cuda"):
    m = transformers.Gemma3ForCausalLM(c).to(torch.bfloat16)
m.save_pretrained(out)
print("saved", out, sum(p.numel() for p in m.parameters()))
