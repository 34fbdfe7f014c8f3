#!/usr/bin/env bash
# Quick start (b): set up, build, and run every test (ctest). GPU tests report
# "skipped: no CUDA device" and count as skipped where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir "${ATTNC_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
