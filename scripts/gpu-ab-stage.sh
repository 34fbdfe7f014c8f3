#!/usr/bin/env bash
# Stages one compiler variant for an A/B on the GPU (scripts/gpu-run.sh step
# compare-ab): the benchmark grid's kernels (bench/specs.json) bundled by the
# current build into .gpu-ab/NAME/bundle, beside a copy of libattnc.so.
# Build each variant (a commit, or the environment given after NAME, e.g. an
# emitter switch under test), stage it, then carry .gpu-ab with .gpu-pack.
#   scripts/gpu-ab-stage.sh base
#   scripts/gpu-ab-stage.sh new SOME_EMITTER_SWITCH=1
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ATTNC_BUILD_DIR:-build}
name=${1:?usage: gpu-ab-stage.sh NAME [VAR=VALUE ...]}
shift
dir=.gpu-ab/$name
rm -rf "$dir"
mkdir -p "$dir/lib"
env "$@" "$build/bin/attnc" bundle --specs bench/specs.json -o "$dir/bundle"
cp "$build/lib/libattnc.so" "$dir/lib/"
echo "$name: $*" >"$dir/variant.txt"
du -sh "$dir"
