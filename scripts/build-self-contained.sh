#!/usr/bin/env bash
# Builds attnc's compiler so that it runs where LLVM/MLIR is not installed
# (a GPU machine, a serving container): `attnc`, libattnc.so and
# libattnc_jit.so with LLVM and MLIR linked statically, stripped, in
# dist/attnc/{bin,lib,python}, packed as dist/attnc-<version>.tar.gz and,
# without the CLI (what a program that JITs needs: the two libraries and
# the Python binding), as dist/attnc-jit-<version>.tar.gz.
# Needs what scripts/setup.sh installs. The CUDA toolkit on the target
# provides libdevice and ptxas (optional: without ptxas the driver JITs).
#   ATTNC_STATIC_BUILD_DIR  build directory (default build-static)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ATTNC_STATIC_BUILD_DIR:-build-static}
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DATTNC_CUDA_HOME="${ATTNC_CUDA_HOME:-/usr/local/cuda}" \
    -DATTNC_STATIC_LLVM=ON -DATTNC_TESTS=OFF
fi
cmake --build "$build" -j "$(nproc)" --target attnc attnc_jit attnc_shared

dist=dist/attnc
rm -rf "$dist"
mkdir -p "$dist/bin" "$dist/lib" "$dist/python"
cp "$build/bin/attnc" "$dist/bin/"
cp "$build/lib/libattnc.so" "$build/lib/libattnc_jit.so" "$dist/lib/"
strip --strip-unneeded "$dist/bin/attnc" "$dist/lib/libattnc.so" \
  "$dist/lib/libattnc_jit.so"
cp -r python/attnc "$dist/python/"
find "$dist/python" -name __pycache__ -prune -exec rm -rf {} +

# Nothing of LLVM/MLIR may remain a run-time dependency.
for f in "$dist/bin/attnc" "$dist/lib/libattnc_jit.so"; do
  if ldd "$f" | grep -E 'libLLVM|libMLIR|libclang'; then
    echo "error: $f still needs LLVM/MLIR at run time" >&2
    exit 1
  fi
done
version=$(sed -n "s/^project(attnc .*VERSION \([0-9.]*\).*/\1/p" CMakeLists.txt)
tar czf "dist/attnc-${version:-dev}.tar.gz" -C dist attnc
tar czf "dist/attnc-jit-${version:-dev}.tar.gz" -C dist attnc/lib attnc/python
du -b "$dist/bin/attnc" "$dist/lib/libattnc_jit.so" "$dist/lib/libattnc.so" \
  "dist/attnc-${version:-dev}.tar.gz" "dist/attnc-jit-${version:-dev}.tar.gz"
echo "run with: ATTNC_LIBRARY=$PWD/$dist/lib/libattnc.so " \
  "PYTHONPATH=$PWD/$dist/python python3 ..."
