#!/usr/bin/env bash
# The build-machine half of the GPU loop (DESIGN.md, "Working with the GPU"):
# builds everything, bundles the kernels the GPU tests and benchmarks need
# with `attnc bundle`, and stages the runtime-side binaries, libattnc.so and
# the bundle in .gpu/ (git-ignored), and .gpu-pack/gpu.tgz, the same
# compressed. Then, with the device tool:
#   run(command="scripts/gpu-run.sh", carry=[".gpu-pack"])   (or [".gpu"])
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ATTNC_BUILD_DIR:-build}
scripts/build.sh
stage=.gpu
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib" "$stage/bundle"

# Kernels: the GPU tests' cases, the benchmark grid (bench/specs.json) and
# the Python binding's GPU tests (tests/python/gpu_specs.json).
"$build/bin/attnc-gpu-attention" --write-specs "$stage/gpu-test-specs.json"
"$build/bin/attnc" bundle --specs "$stage/gpu-test-specs.json" -o "$stage/bundle"
"$build/bin/attnc" bundle --specs bench/specs.json -o "$stage/bundle"
"$build/bin/attnc" bundle --specs tests/python/gpu_specs.json -o "$stage/bundle"
# Decode (op "decode"): the GPU test's cases and its benchmark rows.
"$build/bin/attnc-gpu-decode" --write-specs "$stage/gpu-decode-specs.json"
"$build/bin/attnc" bundle --specs "$stage/gpu-decode-specs.json" -o "$stage/bundle"
"$build/bin/attnc" bundle --specs tests/python/gpu_decode_specs.json -o "$stage/bundle"
# The custom ops' GPU tests and bench/host_overhead.py (issue 35).
"$build/bin/attnc" bundle --specs tests/python/gpu_torch_specs.json -o "$stage/bundle"
# bench/serving.py's kernels (Llama-3.1-8B shapes).
"$build/bin/attnc" bundle --specs bench/serving_specs.json -o "$stage/bundle"
# Score/mask mods traced from Python (their specs hold the traced IR).
python3 tests/python/test_gpu_mods.py --write-specs "$stage/gpu-mods-specs.json"
"$build/bin/attnc" bundle --specs "$stage/gpu-mods-specs.json" -o "$stage/bundle"
# Document masking beside FlexAttention (bench/doc_masking.py).
python3 bench/doc_masking.py --write-specs "$stage/doc-masking-specs.json"
"$build/bin/attnc" bundle --specs "$stage/doc-masking-specs.json" -o "$stage/bundle"

# Fused elementwise (row) kernels: the GPU test's cases and bench shapes,
# and what bench/compare.py's elementwise rows ask for (bench/row_specs.json).
"$build/bin/attnc-gpu-elementwise" --write-specs "$stage/gpu-row-specs.json"
"$build/bin/attnc" bundle --specs "$stage/gpu-row-specs.json" -o "$stage/bundle"
"$build/bin/attnc" bundle --specs bench/row_specs.json -o "$stage/bundle"

# The random differential test's spec pool and the prefill kernels
# compute-sanitizer runs one by one (gpu-run.sh's differential and
# sanitize-* steps).
"$build/bin/attnc-gpu-differential" --write-specs "$stage/gpu-differential-specs.json"
"$build/bin/attnc" bundle --specs "$stage/gpu-differential-specs.json" -o "$stage/bundle"


for b in attnc-gpu-attention attnc-gpu-decode attnc-gpu-elementwise attnc-gpu-differential attnc-bench attnc_runtime_gpu_tests templates_gpu_test; do
  cp "$build/bin/$b" "$stage/bin/"
done
cp "$build/lib/libattnc.so" "$stage/lib/"
# The header-only libraries the runtime side and its tools compile in, for a
# runtime-only build on a machine without a package registry:
#   cmake -S . -B build-rt -G Ninja -DATTNC_COMPILER=OFF -DATTNC_TESTS=OFF \
#     -DATTNC_EXTRA_INCLUDE_DIR=$PWD/.gpu/include
mkdir -p "$stage/include"
cp -r /usr/include/nlohmann /usr/include/xxhash.h /usr/include/CLI "$stage/include/"

# Autotuning sweep (issue #9): PEERS.md's D=128 prefill cells (causal and
# not) and decode cells; the candidates compiled into .gpu/tune/bundle, the
# plan (with the dropped ones and why) in .gpu/tune/plan.json, run by
# gpu-run.sh's `tune` step with the runtime-only attnc-tune-run.
# ATTNC_PREPARE_TUNE=0 skips it (minutes on 2 cores) when the run will not
# take the tune step.
if [ "${ATTNC_PREPARE_TUNE:-1}" != 0 ]; then
  "$build/bin/attnc" tune plan --preset peers-d128 -o "$stage/tune" -j "$(nproc)" \
    | tee "$stage/tune-plan.txt"
fi
cp "$build/bin/attnc-tune-run" "$stage/bin/"
du -sh "$stage"
# The device tool carries at most 64 MiB with the working tree, and .gpu/
# is close to that (about 61 MiB); compressed it is about a quarter.
# gpu-run.sh unpacks it when .gpu/ did not travel:
#   run(command="scripts/gpu-run.sh", carry=[".gpu-pack"])
mkdir -p .gpu-pack
tar czf .gpu-pack/gpu.tgz "$stage"
du -sh .gpu-pack/gpu.tgz
