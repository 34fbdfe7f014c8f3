"""Where a prefill call's GPU time goes, attnc beside cuDNN: each kernel's
median duration and the idle time between back-to-back calls from a CUDA
trace (torch.profiler / CUPTI), and the per-call time as bench/compare.py
measures it (CUDA events around each call, inputs rotated among sets), at
D=128 (B*S = 16k tokens, H = 16, bf16, BSHD).

A gap between the trace's kernel time and the event time is host or launch
cost, not kernel speed. Run on the GPU machine with ATTNC_LIBRARY and
ATTNC_CACHE_DIR set (as scripts/gpu-run.sh does):
python3 bench/prefill_timeline.py
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

from attnc_hook import attnc_impl  # noqa: E402
from decode_timeline import CALLS, kernels_of  # noqa: E402

ROWS = ((4, 4096, False), (4, 4096, True), (16, 1024, False), (1, 16384, True))


def event_ms(runners, reps=30):
    """compare.py's timer: the median of CUDA-event-bracketed calls."""
    for r in runners:
        r()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True),
           torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for i, (s, e) in enumerate(ev):
        s.record()
        runners[i % len(runners)]()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in ev)


def main():
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    H, D = 16, 128
    for B, S, causal in ROWS:
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        sets = []
        for _ in range(2):
            q, k, v = (torch.randn(B, S, H, D, dtype=torch.bfloat16,
                                   device="cuda") for _ in range(3))
            ours = attnc_impl("prefill", q=q, k=k, v=v, causal=causal,
                              scale=D ** -0.5)
            qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

            def cudnn(qt=qt, kt=kt, vt=vt):
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return F.scaled_dot_product_attention(qt, kt, vt,
                                                          is_causal=causal)
            sets.append((ours, cudnn))
        o, ref = sets[0][0]().float(), sets[0][1]().transpose(1, 2).float()
        err = ((o - ref).norm() / ref.norm()).item()
        if not (torch.isfinite(o).all() and err < 2e-2):
            sys.exit(f"attnc disagrees with cuDNN at B={B} S={S}: {err:.2e}")
        print(f"B={B} S={S} causal={causal}: rel L2 vs cuDNN {err:.1e}")
        for i, name in enumerate(("attnc", "cuDNN")):
            ks = kernels_of(sets[0][i])
            durs = [d for _, _, d in ks]
            ks.sort(key=lambda k: k[1])
            span = ks[-1][1] + ks[-1][2] - ks[0][1]
            one = event_ms([sets[0][i]])
            two = event_ms([s[i] for s in sets])
            print(f"  {name}: kernel median {statistics.median(durs):.1f} us"
                  f" ({flops / statistics.median(durs) / 1e6:.1f} TFLOP/s),"
                  f" {len(ks) / CALLS:.0f} kernels per call, period"
                  f" {span / CALLS:.1f} us; events {one * 1e3:.1f} us (one"
                  f" set) {two * 1e3:.1f} us (two sets, compare.py:"
                  f" {flops / two / 1e9:.1f} TFLOP/s)")
        del sets
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
