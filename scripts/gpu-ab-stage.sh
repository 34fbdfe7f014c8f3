#!/usr/bin/env bash
# Stages one compiler variant for an A/B on the GPU (scripts/gpu-run.sh step
# compare-ab, and bench/ab_compilers.py): the benchmark grids' kernels
# (bench/specs.json, bench/ab_specs.json) bundled by a build into
# .gpu-ab/NAME/bundle, beside copies of its libattnc.so and Python binding.
# Build each variant (a commit, or the environment given after NAME, e.g. an
# emitter switch under test), stage it, then carry .gpu-ab with .gpu-pack.
# $ATTNC_BUILD_DIR (default build) and $ATTNC_SOURCE_DIR (default: this
# checkout) name another checkout's build, e.g. an older commit's worktree:
#   ATTNC_BUILD_DIR=../old/build ATTNC_SOURCE_DIR=../old scripts/gpu-ab-stage.sh base
#   scripts/gpu-ab-stage.sh new SOME_EMITTER_SWITCH=1
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ATTNC_BUILD_DIR:-build}
name=${1:?usage: gpu-ab-stage.sh NAME [VAR=VALUE ...]}
shift
dir=.gpu-ab/$name
rm -rf "$dir"
mkdir -p "$dir/lib"
src=${ATTNC_SOURCE_DIR:-.}
for specs in bench/specs.json bench/ab_specs.json; do
  env "$@" "$build/bin/attnc" bundle --specs "$specs" -o "$dir/bundle"
done
cp "$build/lib/libattnc.so" "$dir/lib/"
mkdir -p "$dir/python"
cp -r "$src/python/attnc" "$dir/python/"
find "$dir/python" -name __pycache__ -prune -exec rm -rf {} +
echo "$name: $*" >"$dir/variant.txt"
du -sh "$dir"
