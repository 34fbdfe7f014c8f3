#!/usr/bin/env bash
# Emits the PTX of a fixed set of kernels with two attnc binaries and reports
# which differ: the safety net of a refactor of the compiler that must not
# change the code it generates (a byte-identical PTX needs no GPU A/B).
#   scripts/ptx-diff.sh OLD_ATTNC NEW_ATTNC [OUT_DIR]
# Exit code 1 when any kernel's PTX differs or fails to emit.
set -u
old=$1 new=$2 out=${3:-$(mktemp -d)}
mkdir -p "$out"
configs=(
  "default|--causal"
  "d128|"
  "d128-gqa|--heads 32 --kv-heads 8"
  "d64|--head-dim 64"
  "d64-causal|--head-dim 64 --causal"
  "d64-softcap|--head-dim 64 --softcap 30"
  "d256|--head-dim 256"
  "d256-causal|--head-dim 256 --causal"
  "d192|--head-dim 192"
  "window|--window 256,0"
  "softcap|--softcap 50 --causal"
  "fp16|--dtype fp16 --causal"
  "tiles|--grid tiles --causal"
  "registers|--epilogue registers"
  "no-stream-k|--grid persistent --no-stream-k"
  "stages3|--stages 3"
  "exact|--rescale exact"
  "mbarrier|--kv-sync mbarrier"
  "barrier|--kv-sync barrier --block-m 64"
  "producer|--kv-sync producer"
  "pingpong|--kv-sync pingpong --causal"
  "block192|--block-m 192 --block-n 64"
  "sm80|--arch sm_80 --causal"
  "sm80-d64|--arch sm_80 --head-dim 64"
  "sm80-d256|--arch sm_80 --head-dim 256"
  "mma-on-90a|--mapping mma --causal"
  "simt|--mapping simt"
  "varlen|--varlen"
  "varlen-causal|--varlen --causal --head-dim 64"
  "varlen-sm80|--varlen --arch sm_80 --causal"
  "decode|--op decode"
  "decode-p64|--op decode --page-size 64"
  "decode-warps|--op decode --warps 4 --block-n 64 --page-size 128"
  "kv-append|--op kv-append"
  "lse-merge|--op lse-merge"
  "rmsnorm|--op add-rmsnorm"
  "silu|--op silu-mul"
  "rope|--op rope"
)
status=0
for c in "${configs[@]}"; do
  name=${c%%|*} args=${c#*|}
  # shellcheck disable=SC2086
  "$old" emit --emit ptx -o "$out/$name.old.ptx" $args >/dev/null 2>"$out/$name.old.err"
  a=$?
  # shellcheck disable=SC2086
  "$new" emit --emit ptx -o "$out/$name.new.ptx" $args >/dev/null 2>"$out/$name.new.err"
  b=$?
  if [ $a -ne 0 ] || [ $b -ne 0 ]; then
    echo "FAILED    $name (old rc $a, new rc $b; $out/$name.*.err)"
    status=1
  elif cmp -s "$out/$name.old.ptx" "$out/$name.new.ptx"; then
    echo "identical $name"
  else
    echo "DIFFERENT $name ($out/$name.{old,new}.ptx)"
    status=1
  fi
done
exit $status
