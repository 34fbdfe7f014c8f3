#!/usr/bin/env bash
# Quick start (a): set up, build, and run the main job on the built-in default:
# the forward attention of one Llama-3.1-8B layer (32 query heads, 8 KV heads,
# head dim 128, bf16, causal) for sm_90a, with its summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
mkdir -p out
build/bin/attnc emit --op attention --heads 32 --kv-heads 8 --head-dim 128 \
  --dtype bf16 --causal --arch sm_90a --emit ptx \
  -o out/llama31-8b-attention-fwd.sm_90a.ptx --summary --seq-len 8192
