#!/usr/bin/env bash
# Soak test of `tessera serve` (issue #29): mixed load for a while on the CPU with the embedded
# tiny model, sampling the server's RSS, open descriptors, threads and KV blocks in use, and
# failing if they grow after warm-up (the tolerances are in scripts/soak-load.mjs).
# Usage: scripts/soak.sh [--minutes N] [--model DIR] [--csv FILE]
#   CI runs it for 2 minutes (scripts/test.sh); nightly: scripts/soak.sh --minutes 30
# Loopback only: the server listens on a free port of 127.0.0.1 and is always killed (trap).
set -uo pipefail
cd "$(dirname "$0")/.."

MINUTES=2
MODEL=models/tessera-tiny-en
CSV=""
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) MINUTES="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --csv) CSV="$2"; shift 2 ;;
    *) echo "scripts/soak.sh: unknown argument '$1' (usage: [--minutes N] [--model DIR] [--csv FILE])" >&2; exit 2 ;;
  esac
done
if ! [[ "$MINUTES" =~ ^[0-9]+(\.[0-9]+)?$ ]] || [ "$(awk "BEGIN{print ($MINUTES < 0.5 || $MINUTES > 1440)}")" = 1 ]; then
  echo "scripts/soak.sh: --minutes must be a number in [0.5, 1440]" >&2; exit 2
fi
BIN=./build/tessera
if [ ! -x "$BIN" ]; then echo "scripts/soak.sh: $BIN is missing (build first)" >&2; exit 1; fi

TMP=$(mktemp -d)
PID=""
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
[ -n "$CSV" ] || CSV="$TMP/samples.csv"

# Short timeouts, so that the slow client is cut off often and idle connections expire before
# the final count of descriptors.
"$BIN" serve --model "$MODEL" --port 0 --context 512 --max-queue 64 --header-timeout 3 --keep-alive 2 \
  >"$TMP/out" 2>"$TMP/err" &
PID=$!
URL=""
for _ in $(seq 1 300); do
  URL=$(grep -o 'http://[0-9.]*:[0-9]*' "$TMP/out" 2>/dev/null | head -1)
  [ -n "$URL" ] && break
  if ! kill -0 "$PID" 2>/dev/null; then echo "scripts/soak.sh: the server exited:" >&2; cat "$TMP/err" >&2; exit 1; fi
  sleep 0.1
done
if [ -z "$URL" ]; then echo "scripts/soak.sh: the server did not start in 30 s" >&2; exit 1; fi

SECONDS_RUN=$(awk "BEGIN{print int($MINUTES * 60)}")
echo "soak: $SECONDS_RUN s against $URL (pid $PID, model $MODEL); samples in $CSV"
node scripts/soak-load.mjs "$URL" "$PID" "$SECONDS_RUN" "$CSV"
rc=$?
kill -TERM "$PID"
wait "$PID"
src=$?
PID=""
if [ "$src" -ne 0 ]; then echo "soak: the server exited $src after SIGTERM" >&2; rc=1; fi
if [ "$rc" -ne 0 ]; then echo "soak FAILED; server log:" >&2; tail -n 20 "$TMP/err" >&2; exit 1; fi
echo "soak passed"
