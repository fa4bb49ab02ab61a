#!/usr/bin/env bash
# The README's test command (and CI's): installs and builds (scripts/setup.sh), then runs every
# test: the C++ suite through CTest, then the Go package (bindings/go, go test -race), then the
# server tests with the official OpenAI client and the other JavaScript clients, then the
# sanitizer builds (scripts/sanitize.sh: the CPU suite under ASan + UBSan, the engine, server and
# C ABI tests under TSan) and each fuzzer for 60 s (scripts/fuzz.sh). Each part's time goes to
# stderr (the README's test timings are made of these lines). TESSERA_SKIP_SANITIZERS=1 leaves
# the sanitizer builds and the fuzzers out (a quicker local run; CI runs everything).
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
if [ "${TESSERA_SKIP_SANITIZERS:-0}" != 1 ]; then
  scripts/sanitize.sh asan
  took "ASan + UBSan: build and CTest"
  scripts/fuzz.sh 60
  took "fuzzers, 60 s each"
  scripts/sanitize.sh tsan
  took "TSan: build and the engine, server and C ABI tests"
fi
