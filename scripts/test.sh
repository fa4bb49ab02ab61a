#!/usr/bin/env bash
# The README's test command (and CI's): installs and builds (scripts/setup.sh), then runs every
# test: the C++ suite through CTest, then the Go package (bindings/go, go test -race), then the
# server tests with the official OpenAI client and the other JavaScript clients, then a 2-minute
# soak of the server (scripts/soak.sh). Each part's
# time goes to stderr (the README's "Testing" table is made of these lines).
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
