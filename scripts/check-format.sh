#!/usr/bin/env bash
# Fails when a tracked C/C++ source is not clang-format clean (LLVM style).
set -euo pipefail
cf=${1:-clang-format-22}
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.cpp' '*.h' '*.cu' '*.cuh' | grep -v '^build')
bad=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! "$cf" --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not clang-format clean: $f"
    bad=1
  fi
done
[ "$bad" = 0 ] && echo "format-check: ${#files[@]} files clean"
exit $bad
