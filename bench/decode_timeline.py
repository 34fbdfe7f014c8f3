"""Where a decode call's GPU time goes, for attnc beside cuDNN: each kernel's
median duration and the idle time between calls, from a CUDA trace
(torch.profiler / CUPTI) of back-to-back calls, at bench/compare.py's decode
rows (32 query / 8 KV heads, D=128, bf16, one query token).

Per implementation and row it prints: the period (first kernel start to last
kernel end, divided by the calls), each kernel's median duration, and the
idle share of the period (launch gaps). The split between the split kernel,
the combine and the gaps is what decides whether fusing the combine pays.

Run on the GPU machine with ATTNC_LIBRARY and ATTNC_CACHE_DIR set (as
scripts/gpu-run.sh does): python3 bench/decode_timeline.py
"""
import collections
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

from attnc_hook import attnc_impl  # noqa: E402

ROWS = ((1, 131072), (16, 32768), (64, 4096), (64, 16384))
CALLS = 20


def kernels_of(run):
    """The CUDA kernels of CALLS back-to-back calls: [(name, start, dur)] in us."""
    for _ in range(5):
        run()
    torch.cuda.synchronize()
    with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            run()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    return sorted((e["name"], float(e["ts"]), float(e["dur"]))
                  for e in trace.get("traceEvents", [])
                  if e.get("cat") == "kernel")


def summarize(label, kernels, kv_bytes):
    if not kernels:
        print(f"  {label}: no kernels in the trace")
        return
    kernels.sort(key=lambda k: k[1])
    span = kernels[-1][1] + kernels[-1][2] - kernels[0][1]
    period = span / CALLS
    busy = sum(k[2] for k in kernels) / CALLS
    by_name = collections.defaultdict(list)
    for name, _, dur in kernels:
        by_name[name].append(dur)
    print(f"  {label}: period {period:.1f} us ({kv_bytes / period / 1e6:.2f} TB/s),"
          f" busy {busy:.1f} us, idle {period - busy:.1f} us per call")
    for name, durs in by_name.items():
        short = name if len(name) < 70 else name[:67] + "..."
        print(f"    {len(durs) / CALLS:.0f}x {statistics.median(durs):8.1f} us"
              f" (min {min(durs):.1f}, max {max(durs):.1f})  {short}")


def main():
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    Hq, Hkv, D = 32, 8, 128
    for B, L in ROWS:
        q = torch.randn(B, 1, Hq, D, dtype=torch.bfloat16, device="cuda")
        k = torch.randn(B, L, Hkv, D, dtype=torch.bfloat16, device="cuda")
        v = torch.randn(B, L, Hkv, D, dtype=torch.bfloat16, device="cuda")
        kv_bytes = 2 * k.numel() * k.element_size()
        print(f"B={B} L={L}: K+V {kv_bytes / 1e6:.0f} MB")
        ours = attnc_impl("decode", q=q, k=k, v=v, causal=False, scale=D ** -0.5)
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)

        o_ref = cudnn().transpose(1, 2).float()
        o = ours().float()
        err = ((o - o_ref).norm() / o_ref.norm()).item()
        if not (torch.isfinite(o).all() and err < 2e-2):
            sys.exit(f"attnc decode disagrees with cuDNN at B={B} L={L}: rel L2 {err:.2e}")
        summarize("attnc", kernels_of(ours), kv_bytes)
        summarize("cuDNN", kernels_of(cudnn), kv_bytes)
        del q, k, v, qt, kt, vt, ours
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
