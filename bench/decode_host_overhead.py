"""Where the Python decode path loses time against the C++ bench: the host
cost of one attnc.decode call (argument checks, ctypes, two launches) and
the GPU time of the same calls captured in a CUDA graph (no host at all),
next to the back-to-back CUDA-event timing bench/compare.py uses.

Run on the GPU machine with ATTNC_LIBRARY and ATTNC_CACHE_DIR set (as
scripts/gpu-run.sh does): python3 bench/decode_host_overhead.py
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

import torch  # noqa: E402

import attnc  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from attnc_hook import attnc_impl  # noqa: E402


def main():
    torch.manual_seed(int(time.time()))
    for B, L in ((1, 131072), (16, 32768), (64, 4096)):
        Hq, Hkv, D = 32, 8, 128
        q = torch.randn(B, 1, Hq, D, dtype=torch.bfloat16, device="cuda")
        k = torch.randn(B, L, Hkv, D, dtype=torch.bfloat16, device="cuda")
        v = torch.randn(B, L, Hkv, D, dtype=torch.bfloat16, device="cuda")
        run = attnc_impl("decode", q=q, k=k, v=v, causal=False,
                         scale=D ** -0.5)
        for _ in range(5):
            run()
        torch.cuda.synchronize()
        # Host: enqueue 50 calls, no sync inside.
        t0 = time.perf_counter()
        for _ in range(50):
            run()
        host_us = (time.perf_counter() - t0) / 50 * 1e6
        torch.cuda.synchronize()
        # compare.py's timing: events around each call, back to back.
        ev = [(torch.cuda.Event(enable_timing=True),
               torch.cuda.Event(enable_timing=True)) for _ in range(30)]
        for s, e in ev:
            s.record()
            run()
            e.record()
        torch.cuda.synchronize()
        events_ms = statistics.median(s.elapsed_time(e) for s, e in ev)
        # GPU only: 10 calls in a CUDA graph.
        g = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            run()
            with torch.cuda.graph(g, stream=stream):
                for _ in range(10):
                    run()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        times = []
        for _ in range(5):
            s, e = (torch.cuda.Event(enable_timing=True),
                    torch.cuda.Event(enable_timing=True))
            s.record()
            g.replay()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) / 10)
        graph_ms = statistics.median(times)
        kv = 2 * B * L * Hkv * D * 2
        print("decode B=%-3d L=%-6d host %.1f us/call; events %.3f ms "
              "(%.2f TB/s); graph %.3f ms (%.2f TB/s)"
              % (B, L, host_us, events_ms, kv / events_ms / 1e9, graph_ms,
                 kv / graph_ms / 1e9))


if __name__ == "__main__":
    main()
