#!/usr/bin/env bash
# The README's test command (and CI's): installs and builds (scripts/setup.sh), then runs every
# test: the C++ suite through CTest, then the Go package (bindings/go, go test -race), then the
# server tests with the official OpenAI client.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/check-format.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
bindings/go/run-tests.sh build
if [ -x tests/server/run.sh ]; then tests/server/run.sh; fi
