#!/usr/bin/env bash
# The CUDA backend's exactness and speed checks, in one run on the GPU machine:
#   1. the op harness (tessera_tests_cuda: every CUDA op vs the CPU op, attention, sampling, whole
#      tiny model, batch = single, graphs = eager, memory limits);
#   2. last-position logits vs transformers: gemma3-1b on a 600-token prompt (crossing the
#      512-token window) and gemma3-tiny, the same saved weights in both engines
#      (tests/cuda/hf_compare.py); the transformers fixtures of tests/fixtures/models when present;
#   3. tessera_gpu_bench on gemma3-1b (the five workloads, then the ceilings and the GEMV /
#      cuBLASLt crossover) and bench/hf_peer.py on the same directory, one after the other on an
#      idle GPU;
#   4. compute-sanitizer memcheck on decode (graphs included) and a CLI forward.
# Logs go under $OUT (default /tmp/gpu-check); a PASS/FAIL table is printed last.
#
#   scripts/gpu-check.sh [--bin DIR] [--no-bench] [--no-peer] [--peer-reps N] [--no-sanitizer]
#                        [--profile] [--quick]
# --profile: ncu kernel durations of one decode_b1 step and one ttft_512 forward, and the bench
#            with programmatic dependent launch off, into profile.log.
# --bin: where tessera, tessera_tests_cuda and tessera_gpu_bench are (default: build/, build/tests/).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
BIN="" BENCH=1 PEER=1 PEER_REPS=3 SANITIZER=1 PROFILE=0 QUICK=0 AB=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --no-bench) BENCH=0; shift ;;
    --no-peer) PEER=0; shift ;;
    --peer-reps) PEER_REPS=$2; shift 2 ;;
    --no-sanitizer) SANITIZER=0; shift ;;
    --profile) PROFILE=1; shift ;;
    --quick) QUICK=1; shift ;;  # no transformers comparisons, no ceilings or crossover
    --ab) AB=1; shift ;;        # decode_b1 with the fusions off and on, alternately, into bench.log
    *) echo "gpu-check.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
find_bin() {  # name -> path
  for d in "$BIN" build build/tests build/bench; do
    [ -n "$d" ] && [ -x "$d/$1" ] && { echo "$d/$1"; return; }
  done
  echo ""
}
TESSERA=$(find_bin tessera) TESTS=$(find_bin tessera_tests_cuda) GBENCH=$(find_bin tessera_gpu_bench)
LOG=$OUT/checks.log
: >"$LOG"
declare -a SUMMARY=()
record() { SUMMARY+=("$(printf '%-34s %-5s %s' "$1" "$2" "$3")"); echo "== $1: $2 $3" >>"$LOG"; }

{
  echo "date: $(date -u +%FT%TZ)"; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.mem --format=csv
  echo "binaries: $TESSERA $TESTS $GBENCH"
} >>"$LOG" 2>&1

# libcublasLt.so.13 comes from the toolkit or from PyTorch's wheel; carried libs only if missing.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s, "lib") for p in nvidia.__path__ for s in os.listdir(p)))' 2>/dev/null); do
  [ -e "$d/libcublasLt.so.13" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && break
done
if [ -n "$TESSERA" ] && ldd "$TESSERA" | grep -q "not found" && [ -d "${BIN:-.}/lib" ]; then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(cd "${BIN:-.}/lib" && pwd)"
fi
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" >>"$LOG"
[ -n "$TESSERA" ] && ldd "$TESSERA" >>"$LOG" 2>&1

if [ -z "$TESSERA" ] || ! "$TESSERA" --help >/dev/null 2>>"$LOG"; then
  record "binaries run here" FAIL "see checks.log (build on this machine: cmake -S . -B build -G Ninja && ninja -C build)"
  printf '%s\n' "${SUMMARY[@]}" | tee "$OUT/summary.txt"
  exit 1
fi

G1B=/tmp/tessera-g1b TINY=/tmp/tessera-tiny
( "$TESSERA" make-model --preset gemma3-1b --out $G1B --dtype bf16 && \
  "$TESSERA" make-model --preset gemma3-tiny --out $TINY --dtype bf16 ) >>"$OUT/models.log" 2>&1 &
MAKE_PID=$!

# 1. Op harness (CPU references run on this machine's cores).
if [ -n "$TESTS" ]; then
  echo "---- tessera_tests_cuda" >>"$LOG"
  TESSERA_REQUIRE_CUDA=1 timeout 240 "$TESTS" >"$OUT/tests.log" 2>&1
  rc=$?
  grep -E "FAILED|Failure|rel err|error" "$OUT/tests.log" | head -n 60 >>"$LOG"
  [ $rc -eq 0 ] && record "op harness (tessera_tests_cuda)" PASS "rc 0" || \
    record "op harness (tessera_tests_cuda)" FAIL "rc $rc; failed: $(grep '^\[  FAILED  \]' "$OUT/tests.log" | sed 's/.*\] //; s/ (.*//' | sort -u | tr '\n' ' ')"
else
  record "op harness (tessera_tests_cuda)" FAIL "binary not found"
fi

wait $MAKE_PID || record "make-model gemma3-1b / tiny" FAIL "see models.log"

# 2. Logits vs transformers.
COMPARE=("$G1B 600 gemma3-1b" "$TINY 100 gemma3-tiny")
[ $QUICK -eq 1 ] && COMPARE=()
for m in "${COMPARE[@]}"; do
  set -- $m
  echo "---- hf_compare $3" >>"$LOG"
  line=$(timeout 150 python3 tests/cuda/hf_compare.py --model "$1" --tessera "$TESSERA" --tokens "$2" 2>>"$LOG" | tail -n 1)
  rc=$?
  echo "$line" >>"$LOG"
  err=$(echo "$line" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("rel err %.2e (hf bf16 %.2e), argmax %s" % (d["rel_err_tessera_vs_hf_f32"], d["rel_err_hf_bf16_vs_hf_f32"], d["argmax"]))' 2>/dev/null)
  if echo "$line" | grep -q '"pass": true'; then record "logits vs transformers ($3, $2 tok)" PASS "$err"
  else record "logits vs transformers ($3, $2 tok)" FAIL "${err:-no result, see checks.log}"; fi
done
if [ -d tests/fixtures/models ] && ls tests/fixtures/models/*/config.json >/dev/null 2>&1; then
  fx=$(find_bin tessera_tests_models)
  if [ -n "$fx" ]; then
    TESSERA_TEST_DEVICE=cuda timeout 300 "$fx" >"$OUT/fixtures.log" 2>&1 && record "transformers fixtures (cuda)" PASS "" || \
      record "transformers fixtures (cuda)" FAIL "see fixtures.log"
  else
    record "transformers fixtures (cuda)" SKIP "tessera_tests_models not built"
  fi
else
  record "transformers fixtures (cuda)" SKIP "tests/fixtures/models not present"
fi

# 3. Speed: tessera, then transformers, on the same files, the GPU otherwise idle.
if [ $BENCH -eq 1 ] && [ -n "$GBENCH" ]; then
  BFLAGS="--crossover"
  [ $QUICK -eq 1 ] && BFLAGS="--no-ceilings"
  timeout 240 "$GBENCH" --model $G1B $BFLAGS --json "$OUT/bench.json" >"$OUT/bench.log" 2>&1
  rc=$?
  cat "$OUT/bench.log" | grep -v '^{' >>"$LOG"
  [ $rc -eq 0 ] && record "tessera_gpu_bench" PASS "" || record "tessera_gpu_bench" FAIL "rc $rc, see bench.log"
fi
if [ $AB -eq 1 ] && [ -n "$GBENCH" ]; then
  for f in off on off on; do
    echo "---- TESSERA_CUDA_TUNING=fusions=$f" >>"$OUT/bench.log"
    TESSERA_CUDA_TUNING=fusions=$f timeout 60 "$GBENCH" --model $G1B --only decode_b1,ttft_512 --no-ceilings 2>&1 | \
      grep -E "^(decode_b1|ttft_512)" >>"$OUT/bench.log"
  done
fi
if [ $PEER -eq 1 ]; then
  PYTHONUNBUFFERED=1 timeout 240 python3 bench/hf_peer.py --model $G1B --reps "$PEER_REPS" >"$OUT/hf_peer.json" 2>>"$LOG"
  rc=$?
  [ $rc -eq 0 ] && record "hf_peer.py (transformers)" PASS "" || record "hf_peer.py (transformers)" FAIL "rc $rc"
fi

# Profile: per-kernel durations (ncu replays each kernel; the sum shows what the launch gaps cost).
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
if [ $PROFILE -eq 1 ] && [ -n "$NCU" ] && [ -n "$GBENCH" ]; then
  for w in decode_b1 ttft_512; do
    echo "==== ncu: one $w step" >>"$OUT/profile.log"
    timeout 240 "$NCU" --clock-control none --profile-from-start off --metrics gpu__time_duration.sum \
      --csv --log-file /tmp/ncu_$w.csv "$GBENCH" --model $G1B --only $w --reps 1 --no-ceilings \
      --profile $w >/dev/null 2>>"$OUT/profile.log"
    python3 - /tmp/ncu_$w.csv >>"$OUT/profile.log" 2>&1 <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
h = rows[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value"); ui = h.index("Metric Unit")
agg = collections.defaultdict(lambda: [0, 0.0]); total = 0.0
for r in rows[1:]:
    v = float(r[vi].replace(",", "")); v = v / 1000 if r[ui] == "nsecond" else v * 1000 if r[ui] == "msecond" else v
    name = r[ki].split("(")[0][:90]; agg[name][0] += 1; agg[name][1] += v; total += v
print("kernels %d, sum of durations %.1f us" % (sum(a[0] for a in agg.values()), total))
for n, (c, t) in sorted(agg.items(), key=lambda x: -x[1][1])[:25]:
    print("%8.1f us %5d  %s" % (t, c, n))
PY
  done
  echo "==== bench with TESSERA_CUDA_TUNING=pdl=off" >>"$OUT/profile.log"
  TESSERA_CUDA_TUNING=pdl=off timeout 120 "$GBENCH" --model $G1B --only decode_b1,decode_b128,ttft_512 --no-ceilings \
    2>&1 | grep -v '^{' >>"$OUT/profile.log"
  echo "==== bench with graphs off" >>"$OUT/profile.log"
  timeout 120 "$GBENCH" --model $G1B --only decode_b1 --no-ceilings --no-graphs 2>&1 | grep -v '^{' >>"$OUT/profile.log"
  record "profile (ncu)" INFO "see profile.log"
fi

# 4. compute-sanitizer (last: the slowest and the least likely to change the figures) memcheck: decode with graphs (the tiny model's batch tests) and the CLI.
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ $SANITIZER -eq 1 ] && [ -n "$SAN" ] && [ -n "$TESTS" ]; then
  echo "---- compute-sanitizer" >>"$LOG"
  timeout 150 "$SAN" --tool memcheck --error-exitcode 9 "$TESTS" \
    --gtest_filter='CudaModel.BatchEqualsSingleWithGraphs:CudaModel.GraphReplayEqualsEagerDecode:CudaOps.LinearPrefetchChangesNothing:CudaOps.LmHeadGreedyPickTies:CudaAttention.PaddedDecodeBucketAttendsToNothing:CudaSampling.SameSeedSameStepSamePick' \
    >"$OUT/sanitizer.log" 2>&1
  rc1=$?
  ids=$(python3 -c 'print(",".join(str(3 + i * 7919 % 260000) for i in range(90)))')
  timeout 60 "$SAN" --tool memcheck --error-exitcode 9 "$TESSERA" logits --device cuda --model $TINY --tokens "$ids" >>"$OUT/sanitizer.log" 2>&1
  rc2=$?
  tail -n 15 "$OUT/sanitizer.log" >>"$LOG"
  summary=$(grep -h "ERROR SUMMARY" "$OUT/sanitizer.log" | tr '\n' ' ')
  [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && record "compute-sanitizer memcheck" PASS "$summary" || \
    record "compute-sanitizer memcheck" FAIL "rc $rc1/$rc2 $summary"
else
  record "compute-sanitizer memcheck" SKIP "compute-sanitizer not found"
fi

# The figures side by side, then the table.
python3 - "$OUT" >>"$OUT/summary.txt" 2>/dev/null <<'EOF'
import json, sys, os
out = sys.argv[1]
t = json.load(open(os.path.join(out, "bench.json"))) if os.path.exists(os.path.join(out, "bench.json")) else {}
h = {}
try:
    h = json.loads(open(os.path.join(out, "hf_peer.json")).read().strip().splitlines()[-1])
except Exception:
    pass
tt = t.get("tessera", {})
print("%-18s %14s %14s" % ("workload", "tessera", "transformers"))
for k in ["decode_b1", "decode_b128", "prefill_4096", "ttft_512", "classify_256x64"]:
    hv = h.get(k)
    if isinstance(hv, dict):
        hv = max(v for v in hv.values() if isinstance(v, (int, float)))
    f = lambda v: ("%.1f" % v) if isinstance(v, (int, float)) else str(v)
    print("%-18s %14s %14s" % (k, f(tt.get(k, "-")), f(hv if hv is not None else "-")))
m = tt.get("peak_memory_decode_b1")
if m:
    print("peak memory decode_b1: %.3f x (weights + KV in use)" % m["ratio"])
EOF
printf '%s\n' "${SUMMARY[@]}" >>"$OUT/summary.txt"
echo
cat "$OUT/summary.txt"
grep -q " FAIL " "$OUT/summary.txt" && exit 1 || exit 0
