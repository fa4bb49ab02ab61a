#!/usr/bin/env bash
# Two builds of tessera_gpu_bench on the same weights, alternating (A B A B ...), so that a change
# is measured against its starting point in one device call (clocks and the GPU's state shared):
#   scripts/gpu-ab.sh --a OLD_BENCH --b NEW_BENCH --model DIR [--rounds 3] [--only LIST]
# Each run writes $OUT/ab-{a,b}-N.json; the table printed last has each workload's median over
# the rounds for A and B and B / A (for ttft_512, lower is better: A / B is printed instead).
set -euo pipefail
A="" B="" MODEL="" ROUNDS=3 ONLY="decode_b1,decode_b8,decode_b128,prefill_4096,ttft_512,classify_256x64"
while [ $# -gt 0 ]; do
  case "$1" in
    --a) A=$2; shift 2 ;;
    --b) B=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    *) echo "gpu-ab.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$A" ] && [ -x "$B" ] && [ -d "$MODEL" ] || { echo "gpu-ab.sh: need --a, --b and --model" >&2; exit 2; }
OUT=${OUT:-/tmp/gpu-ab}
mkdir -p "$OUT"
for r in $(seq 1 "$ROUNDS"); do
  for side in a b; do
    bin=$A; [ $side = b ] && bin=$B
    timeout 240 "$bin" --model "$MODEL" --only "$ONLY" --no-ceilings --json "$OUT/ab-$side-$r.json" \
      >"$OUT/ab-$side-$r.log" 2>&1 || echo "gpu-ab.sh: $side round $r failed (see $OUT/ab-$side-$r.log)" >&2
  done
done
python3 - "$OUT" "$ROUNDS" <<'EOF'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(side):
    runs = []
    for r in range(1, rounds + 1):
        p = os.path.join(out, "ab-%s-%d.json" % (side, r))
        if os.path.exists(p):
            runs.append(json.load(open(p)).get("tessera", {}))
    return runs
a, b = load("a"), load("b")
keys = [k for k in (a[0] if a else {}) if isinstance(a[0][k], (int, float))]
print("%-18s %12s %12s %8s   (median of %d rounds; each round's values in ab-*.json)" % ("workload", "A", "B", "B vs A", rounds))
for k in keys:
    va = [r[k] for r in a if k in r]
    vb = [r[k] for r in b if k in r]
    if not va or not vb:
        continue
    ma, mb = statistics.median(va), statistics.median(vb)
    ratio = ma / mb if k.startswith("ttft") else mb / ma
    print("%-18s %12.2f %12.2f %7.3fx   A %s  B %s" % (k, ma, mb, ratio, " ".join("%.1f" % v for v in va), " ".join("%.1f" % v for v in vb)))
EOF
