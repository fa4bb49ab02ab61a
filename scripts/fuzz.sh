#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*_fuzz.cpp) in the ASan + UBSan build directory and runs
# each for SECONDS (default 60, CI's), JOBS at a time (default: the number of cores). Each run
# starts from the committed seeds (fuzz/corpus/<target>/) plus what earlier runs on this machine
# found (build-asan/fuzz/corpus/<target>/), and fails on a crash, a sanitizer report, a leak, an
# input taking over FUZZ_TIMEOUT seconds (default 20) or a process over 2 GB: the script then
# prints the report's end and the reproducer's path, and exits 1.
#   scripts/fuzz.sh [SECONDS] [TARGET ...]     e.g. scripts/fuzz.sh 600 jinja gguf
# Reproduce a failure: build-asan/fuzz/tessera_fuzz_<target> <the crash-* file it names>.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
build=${TESSERA_ASAN_BUILD:-build-asan}
scripts/sanitize.sh configure asan
mapfile -t all < <(ls fuzz/*_fuzz.cpp | sed 's|fuzz/\(.*\)_fuzz.cpp|\1|')
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=("${all[@]}"); fi
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/tessera_fuzz_}" >&2

out=$build/fuzz
mkdir -p "$out/logs" "$out/artifacts"
run_one() {  # target seconds build-dir
  local t=$1 secs=$2 out=$3/fuzz
  mkdir -p "$out/corpus/$t"
  # -rss_limit_mb also limits one allocation (malloc_limit_mb defaults to it): a size taken from
  # the input and allocated unchecked is a finding, not a slow run.
  "$out/tessera_fuzz_$t" -max_total_time="$secs" -timeout="${FUZZ_TIMEOUT:-20}" \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" \
    "$out/corpus/$t" "fuzz/corpus/$t" >"$out/logs/$t.log" 2>&1
}
export -f run_one
status=0
printf '%s\n' "${targets[@]}" |
  xargs -P "${JOBS:-$(nproc)}" -I{} bash -c 'run_one "$1" "$2" "$3"' _ {} "$secs" "$build" || status=1

for t in "${targets[@]}"; do
  log=$out/logs/$t.log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if grep -qE "^==[0-9]+==ERROR|^SUMMARY: |deadly signal|ERROR: libFuzzer|out-of-memory|runtime error:" "$log"; then
    echo "fuzz: $t FAILED after ${execs:-?} executions; the report's end:" >&2
    tail -40 "$log" >&2
    grep -h "Test unit written to" "$log" | sed 's/^/fuzz: reproducer: /' >&2 || true
    status=1
  else
    echo "fuzz: $t: ${execs:-?} executions in $secs s, no failure" >&2
  fi
done
exit $status
