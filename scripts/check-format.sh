#!/usr/bin/env bash
# Fails when a tracked C/C++/CUDA source differs from .clang-format's style (CI runs it from
# scripts/test.sh). Fix with: clang-format -i $(git ls-files '*.cpp' '*.h' '*.cu' '*.c')
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' '*.c')
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/tessera-format.log; then
  grep -E "^[^ ].*: (error|warning):" /tmp/tessera-format.log | cut -d: -f1 | sort -u | sed 's/^/not formatted: /' >&2
  exit 1
fi
echo "format: ${#files[@]} files clean"
