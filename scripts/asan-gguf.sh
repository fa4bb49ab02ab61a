#!/usr/bin/env bash
# The GGUF reader's tests (tests/io) under AddressSanitizer and UBSan: the reader and its test
# only, compiled apart from the main build (the repository has no sanitizer build type), so the
# hostile-file cases are checked for out-of-bounds reads and overflows, not only for the errors
# they give.  Usage: scripts/asan-gguf.sh [build dir, default build-asan]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-asan}
mkdir -p "$out"
nice g++ -std=c++20 -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
  -fno-sanitize-recover=undefined -Isrc -Iinclude -Itests \
  -DTESSERA_SOURCE_DIR="\"$PWD\"" \
  src/io/gguf.cpp src/core/dtype.cpp tests/io/test_gguf.cpp \
  -lgtest -lgtest_main -pthread -o "$out/tessera_tests_io_asan"
ASAN_OPTIONS=detect_leaks=1 "$out/tessera_tests_io_asan"
