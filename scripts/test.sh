#!/usr/bin/env bash
# The README's test command (and CI's): installs and builds (scripts/setup.sh), then runs every
# test: the C++ suite through CTest, then the server tests with the official OpenAI client.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/check-format.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
if [ -x tests/server/run.sh ]; then tests/server/run.sh; fi
