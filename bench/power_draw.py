"""Clock and power while a prefill kernel runs back to back, attnc beside cuDNN.

At the card's power limit the SM clock depends on the kernel: one that draws
more energy per cycle runs at a lower clock, so a short burst (compare.py) and
a sustained run can rank two kernels differently. This measures the sustained
case: each implementation runs back to back for SECONDS, in alternating turns,
while `nvidia-smi` samples the SM clock, the power draw and the temperature
every 100 ms (read-only queries; no setting is changed). Per turn: TFLOP/s
(CUDA events over the turn's calls, a sync every 10 calls included), the median
SM clock and power, and TFLOP/s per W. Run on the GPU machine with
ATTNC_LIBRARY and ATTNC_CACHE_DIR set (as scripts/gpu-run.sh does):
python3 bench/power_draw.py
With ATTNC_BENCH_ARCH=sm_80 attnc runs its portable mma.sync kernels and the
peer is FA2 (SDPA's flash backend), issue #5's comparison. Results from
2026-12-03 (H200): docs/devlog/2026-11-29-to-12-06-gpu-runs.md.
"""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

from attnc_hook import attnc_impl  # noqa: E402

ROWS = ((1, 16384, False), (1, 16384, True), (4, 4096, False), (4, 4096, True))
SECONDS = 3.0
TURNS = 2


def sample(proc_out):
    """nvidia-smi csv lines -> [(t, clock MHz, power W, temp C)]."""
    rows = []
    for line in proc_out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        try:
            rows.append((float(parts[0]), float(parts[1]), float(parts[2]), float(parts[3])))
        except (ValueError, IndexError):
            continue
    return rows


def turn(fn, flops):
    """Runs fn back to back for SECONDS under nvidia-smi; returns the numbers."""
    smi = subprocess.Popen(
        ["bash", "-c", "while true; do echo \"$(date +%s.%N),$(nvidia-smi "
         "--query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader,nounits)\"; "
         "sleep 0.1; done"], stdout=subprocess.PIPE, text=True)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.time()
    start.record()
    calls = 0
    while time.time() - t0 < SECONDS:
        for _ in range(10):
            fn()
        calls += 10
        torch.cuda.synchronize()
    end.record()
    torch.cuda.synchronize()
    t1 = time.time()
    smi.terminate()
    out, _ = smi.communicate()
    ms = start.elapsed_time(end) / calls
    s = [r for r in sample(out) if t0 + 0.5 <= r[0] <= t1]  # skip the first half second
    clock = statistics.median(r[1] for r in s) if s else float("nan")
    power = statistics.median(r[2] for r in s) if s else float("nan")
    temp = max(r[3] for r in s) if s else float("nan")
    tflops = flops / ms / 1e9
    return tflops, clock, power, temp, len(s)


def main():
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    H, D = 16, 128
    sm80 = os.environ.get("ATTNC_BENCH_ARCH") == "sm_80"
    peer, backend = ("FA2", SDPBackend.FLASH_ATTENTION) if sm80 else ("cuDNN", SDPBackend.CUDNN_ATTENTION)
    print(f"attnc {'sm_80 (mma.sync)' if sm80 else 'default (sm_90a)'} beside {peer}")
    print(subprocess.run(["nvidia-smi", "--query-gpu=name,power.limit,clocks.max.sm",
                          "--format=csv"], capture_output=True, text=True).stdout.strip())
    for B, S, causal in ROWS:
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        q, k, v = (torch.randn(B, S, H, D, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        ours = attnc_impl("prefill", q=q, k=k, v=v, causal=causal, scale=D ** -0.5)
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

        def cudnn():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

        o, ref = ours().float(), cudnn().transpose(1, 2).float()
        err = ((o - ref).norm() / ref.norm()).item()
        if not (torch.isfinite(o).all() and err < 2e-2):
            sys.exit(f"attnc disagrees with {peer} at B={B} S={S}: {err:.2e}")
        print(f"B={B} S={S} causal={causal} (rel L2 vs {peer} {err:.1e}):")
        for t in range(TURNS):
            for name, fn in (("attnc", ours), (peer, cudnn)) if t % 2 == 0 else \
                    ((peer, cudnn), ("attnc", ours)):
                tf, clk, pw, temp, n = turn(fn, flops)
                print(f"  turn {t} {name:6s} {tf:6.1f} TFLOP/s  SM clock {clk:6.0f} MHz  "
                      f"power {pw:5.0f} W  max temp {temp:3.0f} C  "
                      f"{tf / pw:5.3f} TFLOP/s per W  ({n} samples)")
        del q, k, v, qt, kt, vt, ours, o, ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
