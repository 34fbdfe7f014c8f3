#!/usr/bin/env bash
# Configures and builds attnc into ./build (Release, Ninja, ccache if present).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ATTNC_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DATTNC_CUDA_HOME="${ATTNC_CUDA_HOME:-/usr/local/cuda}" "$@"
fi
cmake --build "$build" -j "$(nproc)"
