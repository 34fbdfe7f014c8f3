#!/usr/bin/env bash
# Builds attnc with AddressSanitizer and UndefinedBehaviorSanitizer into its
# own directory and runs the unit, lit, CPU-numerics and fuzz tests there;
# any report fails the run. The Python-binding tests are left out (they load
# libattnc.so into an uninstrumented interpreter), and so are the GPU tests.
#
#   scripts/sanitize.sh                      # compiler and runtime (a full,
#                                            # uncached build: long on 2 cores)
#   ATTNC_COMPILER=OFF scripts/sanitize.sh   # the runtime alone (minutes)
#
# ATTNC_SANITIZE_BUILD_DIR (default build-sanitize[-runtime]) and
# ATTNC_SANITIZE (default address,undefined) override the defaults; extra
# arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
compiler=${ATTNC_COMPILER:-ON}
default_dir=build-sanitize
[ "$compiler" = ON ] || default_dir=build-sanitize-runtime
build=${ATTNC_SANITIZE_BUILD_DIR:-$default_dir}
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DATTNC_COMPILER="$compiler" \
    -DATTNC_SANITIZE="${ATTNC_SANITIZE:-address,undefined}" \
    -DATTNC_CUDA_HOME="${ATTNC_CUDA_HOME:-/usr/local/cuda}"
fi
cmake --build "$build" -j "$(nproc)"
# MLIR and LLVM are not instrumented: their containers' annotations would
# look like overflows to ASan, and the inline BumpPtrAllocator code in our
# (instrumented) objects poisons slabs that LLVM's uninstrumented copy hands
# out without unpoisoning (use-after-poison in MLIRContext's set-up): no
# manual poisoning, which attnc itself does not use.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_container_overflow=0:allow_user_poisoning=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" \
  -L 'unit|lit|cpu|fuzz' -E '^(python-|bench-offline)' "$@"
