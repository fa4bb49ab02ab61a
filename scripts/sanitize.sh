#!/usr/bin/env bash
# The test suite under sanitizers, each build in a directory of its own (clang, CUDA and the
# benchmarks off; cmake/sanitize.cmake):
#   scripts/sanitize.sh asan   build-asan: ASan + UBSan (every report fatal), also the fuzzers'
#                              build (scripts/fuzz.sh); the whole CPU suite through CTest
#   scripts/sanitize.sh tsan   build-tsan: TSan; the engine/scheduler, server and C ABI tests
#                              (CTest labels engine, server, capi)
#   scripts/sanitize.sh configure asan|tsan   only configure (scripts/fuzz.sh uses it)
# Suppressions (third-party false positives only, each with its reason): scripts/sanitizers/.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: scripts/sanitize.sh asan|tsan|configure asan|tsan}
configure_only=0
if [ "$mode" = configure ]; then configure_only=1; mode=${2:?configure asan|tsan}; fi
case $mode in
  asan) build=${TESSERA_ASAN_BUILD:-build-asan}; flags=(-DTESSERA_SANITIZE=address,undefined -DTESSERA_FUZZ=ON) ;;
  tsan) build=${TESSERA_TSAN_BUILD:-build-tsan}; flags=(-DTESSERA_SANITIZE=thread) ;;
  *) echo "sanitize.sh: unknown mode '$mode' (asan or tsan)" >&2; exit 2 ;;
esac
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_CUDA=OFF -DTESSERA_BENCH=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${flags[@]}" "${launcher[@]}" >/dev/null
if [ $configure_only = 1 ]; then exit 0; fi

supp=$PWD/scripts/sanitizers
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
if [ "$mode" = asan ]; then
  # ASan's redzones make stack frames several times larger than a release build's, and the
  # recursion limits (the Jinja evaluator's, the grammar matcher's closure) are sized for release
  # frames in an 8 MiB stack: 64 MiB (threads inherit it as their default stack size) keeps the
  # tests about those limits meaningful rather than overflowing first.
  ulimit -s 65536 2>/dev/null || ulimit -s unlimited 2>/dev/null || true
  cmake --build "$build" -j "$(nproc)"
  # ${TESSERA_ASAN_CTEST_ARGS}: e.g. -LE slow to leave out a label while measuring.
  ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 900 ${TESSERA_ASAN_CTEST_ARGS:-}
else
  cmake --build "$build" -j "$(nproc)" --target tessera_tests_engine tessera_tests_server tessera_tests_capi
  ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 900 -L '^(engine|server|capi)$'
fi
