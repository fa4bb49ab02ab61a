#!/usr/bin/env bash
# The Go package's tests (scripts/test.sh runs them after the CTest suite), against the library
# in the build tree: pkg-config finds build/tessera-uninstalled.pc (include/ and build/ in place,
# with an rpath). Go's standard library only; nothing is downloaded (GOPROXY=off).
# Usage: bindings/go/run-tests.sh [build dir]   (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
if [ ! -f "$build/tessera-uninstalled.pc" ] || [ ! -e "$build/libtessera.so" ]; then
  echo "run-tests: $build has no libtessera.so (cmake --build $build --target tessera_shared)" >&2
  exit 1
fi
cd "$root/bindings/go"
export PKG_CONFIG_PATH="$build${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export TESSERA_BUILD_DIR="$build" GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=readonly
# Go's build cache notices neither PKG_CONFIG_PATH nor a change of tessera.h (a header outside
# the module): one cache per build tree, emptied when the header changes, so that the package is
# never linked against another tree's library or compiled against an older header.
export GOCACHE="$build/go-cache"
header_sum="$(sha1sum "$root/include/tessera/tessera.h" | cut -d' ' -f1)"
if [ "$(cat "$GOCACHE/.tessera-h" 2>/dev/null)" != "$header_sum" ]; then
  rm -rf "$GOCACHE"
  mkdir -p "$GOCACHE"
  echo "$header_sum" > "$GOCACHE/.tessera-h"
fi
# The engine's scheduler and the CPU kernels' pool spin briefly when idle; on a small shared
# machine that only slows the goroutines down.
export TESSERA_CPU_TUNING="${TESSERA_CPU_TUNING:-spin_us=0}"
gofmt_out="$(gofmt -l .)"
if [ -n "$gofmt_out" ]; then
  echo "not gofmt-formatted: $gofmt_out" >&2
  exit 1
fi
go vet ./...
go test -race -count=1 -timeout 600s "${@:2}" ./...
