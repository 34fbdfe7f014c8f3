#!/usr/bin/env bash
# The GPU-machine half of the GPU loop: runs every GPU test and the
# side-by-side benchmark from what scripts/gpu-prepare.sh staged in .gpu/,
# and leaves tables under $OUT (default out/gpu), logs in $OUT/logs.tgz. Each step runs
# even when an earlier one fails; the exit code says whether any failed.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-out/gpu}
mkdir -p "$out"
# Step logs and side files go to $logs and travel as one $out/logs.tgz: the
# device tool brings back only a few files per run (RESULTS.md and the
# plots stay beside it).
logs=$(mktemp -d)
# Pack the logs however the run ends: a call cut off at the device tool's
# limit (timeout -s TERM around this script) still brings back the steps done.
pack_logs() {
  rm -f "$logs/hgmma.cubin"
  tar czf "$out/logs.tgz" -C "$logs" .
}
trap pack_logs EXIT
trap 'echo "=== terminated"; exit 143' TERM INT
stage=.gpu
# scripts/gpu-prepare.sh's compressed copy, when .gpu/ itself did not travel.
if [ ! -d "$stage" ] && [ -f .gpu-pack/gpu.tgz ]; then
  tar xzf .gpu-pack/gpu.tgz || exit 1
fi
status=0
# ATTNC_GPU_STEPS="a b ..." runs only the named steps (default: all).
step() { # name, command...
  local name=$1
  shift
  if [ -n "${ATTNC_GPU_STEPS:-}" ] && [[ " $ATTNC_GPU_STEPS " != *" $name "* ]]; then
    echo "=== $name: not selected"
    return
  fi
  echo "=== $name: $*"
  "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$logs/$name.log"
  echo "=== $name: exit $rc"
  [ $rc -eq 0 ] || status=1
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv \
  >"$logs/device.txt" 2>&1
cat "$logs/device.txt"
# sm_90a kernels of the wgmma mapping (issue #6): their SASS must hold
# HGMMA (the tensor-core op wgmma becomes); counts per kernel in the log.
hgmma_check() {
  local n=0 bad=0 dir sass count
  local cuobjdump ptxas
  cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
  for dir in "$stage"/bundle/*/; do
    grep -q '"mapping": *"wgmma"' "$dir/meta.json" 2>/dev/null || continue
    if [ -f "$dir/kernel.cubin" ]; then
      sass=$("$cuobjdump" --dump-sass "$dir/kernel.cubin")
    else
      "$ptxas" -arch=sm_90a -o "$logs/hgmma.cubin" "$dir/kernel.ptx" || return 1
      sass=$("$cuobjdump" --dump-sass "$logs/hgmma.cubin")
    fi
    count=$(grep -c HGMMA <<<"$sass")
    echo "$(basename "$dir"): $count HGMMA"
    n=$((n + 1))
    [ "$count" -gt 0 ] || bad=$((bad + 1))
  done
  echo "$n wgmma kernels, $bad without HGMMA"
  [ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
}
step hgmma-sass hgmma_check
step runtime-gpu "$stage/bin/attnc_runtime_gpu_tests"
step templates-gpu "$stage/bin/templates_gpu_test"
# timeout: a kernel that never finishes (an mbarrier protocol bug) must not
# eat the GPU session; the tests log each case as it finishes ("run NAME"
# before it, PASS/FAIL after). attention-gpu runs the defaults (on sm_90a
# the tma schedule) and none of the cases named for a
# kv_sync schedule: those have steps of their own below.
# The stream-K tail's cases first, under a short timeout: a block waiting
# for a slot nobody fills would hang.
step attention-gpu-stream-k timeout 180 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --only stream-K
# Varlen prefill (packed sequences with cu_seqlens; not yet run on a GPU
# when added): its cases first in a step of their own, as stream-K's, so
# that a failure there stands apart; the default step runs them again.
step attention-gpu-varlen timeout 180 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --only varlen
step attention-gpu timeout 300 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle"
# The wgmma K/V rings on per-stage mbarriers (tuning.kv_sync "mbarrier",
# issue #6): correctness first, then the bench rows beside the CTA barrier.
step attention-gpu-mbarrier timeout 120 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --only mbarrier
step attention-bench-mbarrier timeout 120 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --bench --only mbarrier
# Warp specialisation (tuning.kv_sync "producer" / "pingpong" / "tma", issue #6):
# a protocol bug hangs the kernel, so each in a step of its own under a
# short timeout; then their bench rows (bench tiles with the schedule's
# name) beside the default's.
step attention-gpu-producer timeout 90 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --only producer
step attention-gpu-pingpong timeout 90 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --only pingpong
step attention-gpu-tma timeout 400 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --only tma
step attention-bench-specialised timeout 300 bash -c "for s in default producer pingpong tma; do $stage/bin/attnc-gpu-attention --bundle $stage/bundle --bench --only \$s || exit 1; done"
# The default tiles (and rescale=exact beside the default threshold).
step attention-bench-default timeout 120 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --bench --only default
step attention-bench-tma timeout 120 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --bench --only tma
step attention-bench timeout 300 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --bench
step attention-bench-causal timeout 300 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --bench --only causal
# Varlen (B = 4 packed sequences of 4k) beside the dense default over the
# same tokens and layout: issue #35's "within 3% of the padded dense kernel".
step attention-bench-varlen timeout 120 "$stage/bin/attnc-gpu-attention" --bundle "$stage/bundle" --bench --only varlen
step decode-gpu "$stage/bin/attnc-gpu-decode" --bundle "$stage/bundle"
# The differential test of decode: random configurations (page sizes 1 to
# 1000, lengths 0 and up, q_len, splits, merges), a new seed each run.
step decode-random timeout 300 "$stage/bin/attnc-gpu-decode" --bundle "$stage/bundle" --random ${ATTNC_DECODE_RANDOM:-200}
step decode-bench "$stage/bin/attnc-gpu-decode" --bundle "$stage/bundle" --bench
# 2-8 splits merged by the last split program vs the combine kernel, alternating.
step decode-ab-merge timeout 180 "$stage/bin/attnc-gpu-decode" --bundle "$stage/bundle" --bench --ab-merge
# Nsight Compute on the decode bench (skip the check run and warm-ups):
# split and combine times at B=1 L=128k (row 0), and the split kernel's full
# section set at B=16 L=32k (row 1). Clocks left alone (--clock-control none).
ncu_bin=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
step ncu-decode-times timeout 180 "$ncu_bin" --clock-control none \
  --metrics gpu__time_duration.sum -k regex:decode --launch-skip 2 \
  --launch-count 4 "$stage/bin/attnc-gpu-decode" --bundle "$stage/bundle" \
  --bench --row 0
step ncu-decode-split timeout 240 "$ncu_bin" --clock-control none --set full \
  -k regex:decode_split --launch-skip 2 --launch-count 1 \
  "$stage/bin/attnc-gpu-decode" --bundle "$stage/bundle" --bench --row 1
# Issue #5: the mma.sync kernel beside FA2 (PyTorch's flash backend) at
# D=128 S=4k non-causal (B=4, H=16), full section sets and the stall
# reasons, to see where the portable path loses to FA2.
ncu_stalls='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
step ncu-prefill-mma timeout 240 "$ncu_bin" --clock-control none --set full \
  --metrics "$ncu_stalls" -k regex:attention --launch-skip 3 --launch-count 1 \
  "$stage/bin/attnc-bench" --bundle "$stage/bundle" --heads 16 --kv-heads 16 \
  --head-dim 128 --batch 4 --seq-len 4096 --arch sm_80 --block-m 128 \
  --block-n 64 --warps 4 --reps 2
step ncu-prefill-fa2 timeout 240 "$ncu_bin" --clock-control none --set full \
  --metrics "$ncu_stalls" -k regex:flash --launch-skip 3 --launch-count 1 \
  python3 bench/ncu_fa2.py
# The same two, causal (sm_80 was 0.92x FA2 at S4k, 0.99x at S16k on
# 2026-11-30).
step ncu-prefill-causal timeout 300 bash -c "$ncu_bin --clock-control none --set full \
  --metrics '$ncu_stalls' -k regex:attention --launch-skip 3 --launch-count 1 \
  $stage/bin/attnc-bench --bundle $stage/bundle --heads 16 --kv-heads 16 \
  --head-dim 128 --batch 4 --seq-len 4096 --arch sm_80 --block-m 128 \
  --block-n 64 --warps 4 --reps 2 --causal; $ncu_bin --clock-control none \
  --set full --metrics '$ncu_stalls' -k regex:flash --launch-skip 3 \
  --launch-count 1 python3 bench/ncu_fa2.py --causal"
# Issue #6: the sm_90a default (TMA, warp-specialised, ping-pong) beside
# cuDNN at D=128 S=4k (B=4, H=16), non-causal and causal: full sections and
# stall reasons.
step ncu-prefill-tma timeout 300 bash -c "for c in '' --causal; do $ncu_bin --clock-control none --set full \
  --metrics '$ncu_stalls' -k regex:attention --launch-skip 3 --launch-count 1 \
  $stage/bin/attnc-bench --bundle $stage/bundle --heads 16 --kv-heads 16 \
  --head-dim 128 --batch 4 --seq-len 4096 --arch sm_90a --reps 2 \$c; done"
# Persistent CTAs against one CTA per tile at D64 S4k without a mask (the
# cell where persistence loses): the bench's 3rd launch of each
# (12 launches per bench row; --only 'default persistent' lists D128 then
# D64, --only default lists D128, D128 causal, D64 first).
step ncu-persistent timeout 300 bash -c "for sel in 'default persistent:14' 'default:26'; do \
  $ncu_bin --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section LaunchStats --section WarpStateStats --section SchedulerStats \
  --metrics 'sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,$ncu_stalls' \
  -k regex:attention --launch-skip \${sel##*:} --launch-count 1 \
  $stage/bin/attnc-gpu-attention --bundle $stage/bundle --bench --only \"\${sel%:*}\"; done"
# Issue #6: why D128 without the mask is further from cuDNN at S=16k (B=1)
# than at S=4k (B=4): the same 2048 work items, 4x the KV tiles each. Tail
# (sm__cycles_active min/avg/max), L2 hits, DRAM bytes and the tensor pipe,
# attnc's default and cuDNN, both shapes.
ncu_long='--section SpeedOfLight --section ComputeWorkloadAnalysis --section LaunchStats --metrics gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,lts__t_sector_hit_rate.pct,dram__bytes_read.sum'
step ncu-prefill-long timeout 300 bash -c "for bs in '4 4096' '1 16384'; do set -- \$bs; \
  $ncu_bin --clock-control none $ncu_long -k regex:attention --launch-skip 3 --launch-count 1 \
  $stage/bin/attnc-bench --bundle $stage/bundle --heads 16 --kv-heads 16 --head-dim 128 \
  --batch \$1 --seq-len \$2 --arch sm_90a --reps 2; done; for l in '' --long; do \
  $ncu_bin --clock-control none $ncu_long -k regex:sdpa --launch-skip 3 --launch-count 1 \
  python3 bench/ncu_fa2.py --cudnn \$l; done"
step ncu-prefill-cudnn timeout 300 bash -c "for c in '' --causal; do $ncu_bin --clock-control none --set full \
  --metrics '$ncu_stalls' -k regex:sdpa --launch-skip 3 --launch-count 1 \
  python3 bench/ncu_fa2.py --cudnn \$c; done"
# Issue #6: where the warps of the D128 S4k non-causal kernel stall, per SASS
# instruction, attnc's default beside cuDNN's (PC sampling: SourceCounters);
# the raw source pages go to the logs, bench/ncu_source_stalls.py sums them.
# $ATTNC_SOURCE_VARIANTS: names of .gpu-ab variants (gpu-ab-stage.sh) to
# profile the same way.
ncu_src='--clock-control none --section SourceCounters --section WarpStateStats --page source --print-source sass --csv'
step ncu-prefill-source timeout 300 bash -c "for v in '' \${ATTNC_SOURCE_VARIANTS:-}; do \
  bundle=$stage/bundle; [ -z \"\$v\" ] || bundle=.gpu-ab/\$v/bundle; \
  $ncu_bin $ncu_src -k regex:attention --launch-skip 3 --launch-count 1 \
  $stage/bin/attnc-bench --bundle \$bundle --heads 16 --kv-heads 16 --head-dim 128 \
  --batch 4 --seq-len 4096 --arch sm_90a --reps 2 >$logs/source-attnc\${v:+-\$v}.csv; done; \
  $ncu_bin $ncu_src -k regex:sdpa --launch-skip 3 --launch-count 1 \
  python3 bench/ncu_fa2.py --cudnn >$logs/source-cudnn.csv; \
  python3 bench/ncu_source_stalls.py --top 60 $logs/source-*.csv"
# Issue #7: where cuDNN's decode reads faster than the split kernel. The
# same row (B=16 L=32k) through both, memory sections and DRAM bytes.
ncu_mem='--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --metrics dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct'
step ncu-decode-mem timeout 180 "$ncu_bin" --clock-control none $ncu_mem \
  -k regex:decode --launch-skip 2 --launch-count 2 \
  "$stage/bin/attnc-gpu-decode" --bundle "$stage/bundle" --bench --row 1
step ncu-decode-cudnn timeout 180 "$ncu_bin" --clock-control none $ncu_mem \
  --launch-skip 5 --launch-count 4 python3 bench/ncu_cudnn_decode.py
# SM activity spread (max vs avg vs min active cycles: an uneven tail) and
# time of our split kernel and cuDNN's, at B=64 L=4k and B=64 L=16k.
sm_spread="--clock-control none --metrics gpu__time_duration.sum,sm__cycles_active.max,sm__cycles_active.avg,sm__cycles_active.min,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active"
step ncu-decode-spread bash -c "for r in 0 2 3; do timeout 120 $ncu_bin $sm_spread -k regex:decode_split --launch-skip 2 --launch-count 1 $stage/bin/attnc-gpu-decode --bundle $stage/bundle --bench --row \$r; done; for bl in '1 131072' '64 4096' '64 16384'; do timeout 120 $ncu_bin $sm_spread -k regex:sdpa --launch-skip 5 --launch-count 1 python3 bench/ncu_cudnn_decode.py \$bl; done"
# Which instructions of the split kernel make its excess L2 sectors (ncu
# counted 1.5x the K+V sectors at B=16 L=32k; cuDNN's kernel 1.0x): the
# per-SASS-instruction source counters, and the SASS of the default kernel.
decode_sass() {
  local dir cuobjdump ptxas
  cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
  for dir in "$stage"/bundle/*/; do
    grep -q 'op=decode;dtype=bf16;heads=32;kv_heads=8;head_dim=128;causal=0;window_left=-1;window_right=-1;softcap=0;scale=0.088388346;has_lse=0;arch=sm_90a;custom_ir=none;block_m=0;block_n=0;stages=0;warps=0;page_size=256;max_q_len=1"' \
      "$dir/meta.json" || continue
    "$ptxas" -arch=sm_90a -o "$logs/decode.cubin" "$dir/kernel.ptx" || return 1
    "$cuobjdump" --dump-sass "$logs/decode.cubin"
    rm -f "$logs/decode.cubin"
    return 0
  done
  echo "no default decode kernel at page 256 in the bundle"
  return 1
}
step decode-sass decode_sass
step ncu-decode-source timeout 180 "$ncu_bin" --clock-control none \
  --section SourceCounters --section MemoryWorkloadAnalysis_Tables \
  -k regex:decode_split --launch-skip 2 --launch-count 1 \
  --page source --print-source sass --csv \
  "$stage/bin/attnc-gpu-decode" --bundle "$stage/bundle" --bench --row 1
# Every split-kernel variant (block_n x stages x split policy) side by side.
step decode-sweep "$stage/bin/attnc-gpu-decode" --bundle "$stage/bundle" --bench --sweep
# The default split count beside fixed ones (B=1 L=128k: 57 = the old
# choice, 66 = 4 per SM on 132 SMs, 132 = 8 per SM).
step decode-splits "$stage/bin/attnc-gpu-decode" --bundle "$stage/bundle" --bench \
  --splits 33,57,64,66,99,132
step elementwise-gpu "$stage/bin/attnc-gpu-elementwise" --bundle "$stage/bundle"
# Issue 39: random prefill configurations against float64 (head dims, GQA,
# masks, soft-cap, lengths 1 and primes, seq_q != seq_kv, layouts, padded
# rows), a new seed each run, printed first; ATTNC_DIFF_ARGS="--seed N"
# replays a run.
step differential timeout 540 "$stage/bin/attnc-gpu-differential" --bundle "$stage/bundle" --count 400 ${ATTNC_DIFF_ARGS:-}
# compute-sanitizer's four tools over every kernel family, zero reports
# wanted (--error-exitcode): prefill per head dim, arch and sm_90a schedule
# (the differential test's --sanitize runs, small problems), decode with
# splits, the merge and kv_append (the decode test), the row kernels (the
# elementwise test). One step per tool, each binary under its own timeout.
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
sanitize_all() { # tool
  local rc=0
  local cs=("$sanitizer" --tool "$1" --error-exitcode 99 --print-limit 20)
  echo "--- prefill (differential --sanitize)"
  timeout 180 "${cs[@]}" "$stage/bin/attnc-gpu-differential" --bundle "$stage/bundle" --sanitize || rc=1
  echo "--- decode, lse_merge, kv_append (decode test)"
  timeout 180 "${cs[@]}" "$stage/bin/attnc-gpu-decode" --bundle "$stage/bundle" || rc=1
  echo "--- row kernels (elementwise test)"
  timeout 180 "${cs[@]}" "$stage/bin/attnc-gpu-elementwise" --bundle "$stage/bundle" || rc=1
  return $rc
}
for tool in memcheck racecheck synccheck initcheck; do
  step "sanitize-$tool" sanitize_all "$tool"
done
step elementwise-bench "$stage/bin/attnc-gpu-elementwise" --bundle "$stage/bundle" --bench
# The row kernels' schedule knobs side by side (threads per row, rows per
# program, blocks per SM), each variant checked first: picks the default.
step elementwise-sweep "$stage/bin/attnc-gpu-elementwise" --bundle "$stage/bundle" --bench --sweep
step unfused-baseline "$stage/bin/attnc-bench" --bundle "$stage/bundle" \
  --heads 16 --kv-heads 16 --head-dim 128 --batch 4 --seq-len 4096 \
  --baseline unfused
# Autotuning sweep (issue #9): check and time every kept candidate of
# .gpu/tune/plan.json; the database, the results table (default vs best,
# gain per cell) and the per-candidate log under $OUT.
step tune timeout 540 "$stage/bin/attnc-tune-run" --plan "$stage/tune/plan.json" \
  --db "$logs/tuning.json" --table "$logs/tune-results.md"
export ATTNC_LIBRARY=$PWD/$stage/lib/libattnc.so ATTNC_CACHE_DIR=$PWD/$stage/bundle
export PYTHONUNBUFFERED=1
step python-gpu python3 tests/python/test_gpu_binding.py
step python-gpu-decode python3 tests/python/test_gpu_decode.py
step python-gpu-cache-ops python3 tests/python/test_gpu_cache_ops.py
step python-gpu-rows python3 tests/python/test_gpu_rows.py
# Issue 35: every kernel family captured in a CUDA graph and replayed with
# new data (decode with no host sync), the custom ops under opcheck and
# torch.compile(fullgraph=True), and the host time of an eager call beside
# PyTorch's own ops (its table also in $OUT).
step python-gpu-graphs timeout 300 python3 tests/python/test_gpu_graphs.py
step python-gpu-mods timeout 120 python3 tests/python/test_gpu_mods.py
# Document masking from captured doc ids against FlexAttention's block mask
# and attnc's dense causal (issue 34's targets; bench/doc_masking.py).
step doc-masking timeout 300 python3 bench/doc_masking.py --out "$out/doc-masking.md"
step python-gpu-torch-ops timeout 540 python3 tests/python/test_gpu_torch_ops.py
step host-overhead timeout 300 python3 bench/host_overhead.py --out "$out/host-overhead.md"
# Issue 35's end-to-end serving benchmark: Llama-3.1-8B-shaped layers on
# attnc ops (varlen prefill, paged decode under a CUDA graph) beside
# PyTorch SDPA + torch.compile, outputs compared first (bench/serving.py).
step serving timeout 540 python3 bench/serving.py --check
# Host cost of a Python decode call vs its CUDA-graph GPU time.
step decode-overhead timeout 120 python3 bench/decode_host_overhead.py
# Each decode kernel's time and the gaps between calls, attnc beside cuDNN.
step decode-timeline timeout 180 python3 bench/decode_timeline.py
# The same for prefill at D=128, with compare.py's event timer beside it.
step prefill-timeline timeout 180 python3 bench/prefill_timeline.py
# Issue #6: clock and power of the D128 prefill kernels run back to back,
# attnc beside cuDNN, and its sm_80 kernels beside FA2 (nvidia-smi,
# read-only queries).
step power-draw timeout 120 python3 bench/power_draw.py
step power-draw-sm80 timeout 120 env ATTNC_BENCH_ARCH=sm_80 python3 bench/power_draw.py
# Issue #5: the portable sm_80 kernels beside the same peers (their table in
# the logs; $OUT keeps the default grid's).
step compare-sm80 timeout 300 env -u OUT ATTNC_BENCH_ARCH=sm_80 python3 bench/compare.py \
  --grids prefill --no-plots --out "$logs/RESULTS-sm80.md"
step compare timeout 420 python3 bench/compare.py --out "$out/RESULTS.md" ${ATTNC_BENCH_ARGS:-}
# A/B of compiler variants staged by scripts/gpu-ab-stage.sh in .gpu-ab/NAME
# (carried beside .gpu-pack): the prefill grid beside the peers once per name
# of $ATTNC_AB_ORDER (e.g. "base new new base"), each with its own
# libattnc.so and bundle; bench/ab_summary.py puts the runs side by side.
ab_runs() {
  local i=0 v
  for v in $ATTNC_AB_ORDER; do
    i=$((i + 1))
    ATTNC_LIBRARY=$PWD/.gpu-ab/$v/lib/libattnc.so ATTNC_CACHE_DIR=$PWD/.gpu-ab/$v/bundle \
      python3 bench/compare.py --grids prefill --no-plots --out "$logs/ab/$i-$v.md" || return 1
  done
  python3 bench/ab_summary.py "$logs"/ab/*.md | tee "$out/ab-summary.md"
}
# Two compilers' kernels alone, GPU time per call over issue #32's grid in
# interleaved rounds (bench/ab_compilers.py), e.g. ATTNC_AB_COMPILERS=base,new
# with both staged by scripts/gpu-ab-stage.sh.
if [ -n "${ATTNC_AB_COMPILERS:-}" ]; then
  step ab-compilers timeout 540 python3 bench/ab_compilers.py \
    --variants "$ATTNC_AB_COMPILERS" --rounds "${ATTNC_AB_ROUNDS:-4}" --out "$out/ab-compilers.md"
fi
if [ -n "${ATTNC_AB_ORDER:-}" ]; then
  mkdir -p "$logs/ab"
  export -f ab_runs
  export logs out
  step compare-ab timeout 540 bash -c ab_runs
fi
# Issue 34: the self-contained JIT (dist/attnc-jit-*.tar.gz from
# scripts/build-self-contained.sh, carried): cold JIT, disk hit and warm
# lookup on the real driver beside FlexAttention's first compiled call; then
# the Python GPU tests over an empty cache, every kernel compiled on first use.
jit_dist=$(ls dist/attnc-jit-*.tar.gz 2>/dev/null | head -n 1)
if [ -n "$jit_dist" ]; then
  jit_root=$(mktemp -d)
  jit_cache=$(mktemp -d)
  tar xzf "$jit_dist" -C "$jit_root"
  step jit-latency env ATTNC_LIBRARY="$jit_root/attnc/lib/libattnc.so" \
    timeout 400 python3 bench/jit_latency.py --gpu --rounds 3
  step jit-python-gpu env ATTNC_LIBRARY="$jit_root/attnc/lib/libattnc.so" \
    ATTNC_CACHE_DIR="$jit_cache" timeout 500 python3 tests/python/test_gpu_binding.py
  step jit-python-gpu-decode env ATTNC_LIBRARY="$jit_root/attnc/lib/libattnc.so" \
    ATTNC_CACHE_DIR="$jit_cache" timeout 300 python3 tests/python/test_gpu_decode.py
fi
exit $status
