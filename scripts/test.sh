#!/usr/bin/env bash
# The README's test command (and CI's): installs and builds (scripts/setup.sh), then runs every
# test: the C++ suite through CTest, then the Go package (bindings/go, go test -race), then the
# server tests with the official OpenAI client and the other JavaScript clients, then a 2-minute
# soak of the server (scripts/soak.sh). Opt-in until they are timed and clean on CI (README,
# "Sanitizers and fuzzing"): TESSERA_FUZZ=1 runs each fuzzer for 60 s (scripts/fuzz.sh, in the
# ASan + UBSan build); TESSERA_SANITIZERS=1 adds the sanitizer suites (scripts/sanitize.sh: the
# CPU suite under ASan + UBSan, the engine, server and C ABI tests under TSan). Each part's time
# goes to stderr (the README's test timings are made of these lines).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
took() { echo "test.sh: $1 took $((SECONDS - t0)) s" >&2; t0=$SECONDS; }
scripts/setup.sh
took "setup (install + build)"
scripts/check-format.sh
took "format check"
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
took "CTest"
bindings/go/run-tests.sh build
took "Go package"
if [ -x tests/server/run.sh ]; then tests/server/run.sh; fi
took "server tests"
# RSS, descriptors, threads and KV blocks stay flat under 2 minutes of mixed load (nightly:
# scripts/soak.sh --minutes 30).
scripts/soak.sh --minutes 2
took "soak test (2 min)"
if [ "${TESSERA_FUZZ:-0}" = 1 ]; then
  scripts/fuzz.sh 60
  took "ASan + UBSan build and the fuzzers, 60 s each"
fi
if [ "${TESSERA_SANITIZERS:-0}" = 1 ]; then
  scripts/sanitize.sh asan
  took "ASan + UBSan: the rest of the build and CTest"
  scripts/sanitize.sh tsan
  took "TSan: build and the engine, server and C ABI tests"
fi
