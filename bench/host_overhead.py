#!/usr/bin/env python3
"""Host time of one eager call: attnc's Python entry points beside PyTorch's
own eager ops for the same work (issue 35: an eager call should cost no more
host time than PyTorch's equivalent op).

Tiny problems, so the GPU is idle and every call returns as soon as its
kernels are enqueued; each call is timed alone with time.perf_counter_ns
(the call only: no synchronisation inside the timed region; the queue is
drained every 50 calls outside it). Prints the median and the 10th/90th
percentiles per op, and a markdown table of the medians with the ratio
attnc / PyTorch.

Rows:
- attention: attnc.attention (B=1, S=128, GQA 8/2, D=128, causal) vs
  F.scaled_dot_product_attention on the same tensors in BHSD (enable_gqa);
- decode: attnc.decode (B=4, one token, 32/8 heads, pages of 16, max_kv_len
  512, preallocated workspace) vs SDPA of one query row over a contiguous
  512-token cache;
- fused_add_rms_norm (4 x 4096, out of place and in place) vs x + r then
  F.rms_norm;
- silu_and_mul (4 x 2*14336) vs F.silu(x[..., :d]) * x[..., d:];
- kv_append (4 tokens, 8 x 128, pages of 16) vs index_put_ into the caches;
- rotary_embedding (4 tokens, 32/8 x 128, NeoX) vs nothing (no single
  PyTorch op; the attnc time alone);
- torch.ops.attnc.attention called directly: the custom op's dispatcher
  round trip, what a call costs when it is traced (attnc.torch_ops).

Run on the GPU machine with ATTNC_LIBRARY and ATTNC_CACHE_DIR set (as
scripts/gpu-run.sh does), with the kernels of
tests/python/gpu_torch_specs.json bundled:
    python3 bench/host_overhead.py [--calls N] [--out FILE.md]
"""
import argparse
import datetime
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import attnc  # noqa: E402

BF = torch.bfloat16


def host_us(fn, calls):
    """(median, p10, p90) host microseconds of fn() over `calls` calls."""
    for _ in range(200):  # kernels loaded, plans made, allocator warm
        fn()
    torch.cuda.synchronize()
    times = []
    clock = time.perf_counter_ns
    for i in range(calls):
        t0 = clock()
        fn()
        times.append(clock() - t0)
        if i % 50 == 49:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    times.sort()
    return (statistics.median(times) / 1e3, times[len(times) // 10] / 1e3,
            times[len(times) * 9 // 10] / 1e3)


def rows():
    """(name, attnc call, PyTorch call or None, what the PyTorch call is)."""
    dev = "cuda"
    out = []
    # Prefill attention.
    q = torch.randn(1, 128, 8, 128, device=dev, dtype=BF)
    k = torch.randn(1, 128, 2, 128, device=dev, dtype=BF)
    v = torch.randn_like(k)
    qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))
    out.append(("attention B1 S128 8/2 D128 causal",
                lambda: attnc.attention(q, k, v, causal=True),
                lambda: F.scaled_dot_product_attention(
                    qt, kt, vt, is_causal=True, enable_gqa=True),
                "F.scaled_dot_product_attention (BHSD, enable_gqa)"))
    # Decode.
    b, hq, hk, d, page, kv = 4, 32, 8, 128, 16, 512
    kc = torch.randn(b * kv // page, page, hk, d, device=dev, dtype=BF)
    vc = torch.randn_like(kc)
    table = torch.arange(b * kv // page, dtype=torch.int32,
                         device=dev).view(b, -1)
    lens = torch.full((b,), kv, dtype=torch.int32, device=dev)
    dq = torch.randn(b, 1, hq, d, device=dev, dtype=BF)
    ws = attnc.decode_workspace(dq, kc, table, max_kv_len=kv)
    dqt = dq.transpose(1, 2).contiguous()
    kd = torch.randn(b, hk, kv, d, device=dev, dtype=BF)
    vd = torch.randn_like(kd)
    out.append(("decode B4 32/8 D128 page16 kv512",
                lambda: attnc.decode(dq, kc, vc, table, lens, max_kv_len=kv,
                                     workspace=ws),
                lambda: F.scaled_dot_product_attention(dqt, kd, vd,
                                                       enable_gqa=True),
                "F.scaled_dot_product_attention (one query row)"))
    # add + RMSNorm.
    x = torch.randn(4, 4096, device=dev, dtype=BF)
    r = torch.randn_like(x)
    w = torch.randn(4096, device=dev, dtype=BF)
    out.append(("fused_add_rms_norm 4 x 4096",
                lambda: attnc.fused_add_rms_norm(x, r, w, 1e-6),
                lambda: F.rms_norm(x + r, (4096,), w, 1e-6),
                "x + r; F.rms_norm"))
    xi, ri = x.clone(), r.clone()
    out.append(("fused_add_rms_norm 4 x 4096 in place",
                lambda: attnc.fused_add_rms_norm(xi, ri, w, 1e-6,
                                                 inplace=True),
                lambda: F.rms_norm(x + r, (4096,), w, 1e-6),
                "x + r; F.rms_norm"))
    # SiLU * mul.
    g = torch.randn(4, 2 * 14336, device=dev, dtype=BF)
    out.append(("silu_and_mul 4 x 2*14336",
                lambda: attnc.silu_and_mul(g),
                lambda: F.silu(g[..., :14336]) * g[..., 14336:],
                "F.silu(x[..., :d]) * x[..., d:]"))
    # kv_append.
    key = torch.randn(4, 8, 128, device=dev, dtype=BF)
    kc8 = torch.randn(16, 16, 8, 128, device=dev, dtype=BF)
    vc8 = torch.randn_like(kc8)
    slots = torch.tensor([3, 40, 77, 200], device=dev)
    fk, fv = kc8.view(-1, 8, 128), vc8.view(-1, 8, 128)

    def torch_append():
        fk.index_put_((slots,), key)
        fv.index_put_((slots,), key)
    out.append(("kv_append 4 tokens 8 x 128 page16",
                lambda: attnc.kv_append(key, key, kc8, vc8, slots),
                torch_append, "two index_put_"))
    # RoPE (in place).
    pos = torch.arange(4, device=dev)
    inv = 10000.0 ** (-torch.arange(0, 128, 2, device=dev,
                                    dtype=torch.float64) / 128)
    ang = torch.arange(1024, device=dev, dtype=torch.float64)[:, None] * inv
    cos_sin = torch.cat([ang.cos(), ang.sin()], -1).to(BF)
    rq = torch.randn(4, 32 * 128, device=dev, dtype=BF)
    rk = torch.randn(4, 8 * 128, device=dev, dtype=BF)
    out.append(("rotary_embedding 4 tokens 32/8 x 128",
                lambda: attnc.rotary_embedding(pos, rq, rk, 128, cos_sin),
                None, ""))
    # The custom op itself (the traced path's cost when run eagerly).
    from attnc import torch_ops  # noqa: F401  (registers torch.ops.attnc)
    op = torch.ops.attnc.attention.default
    out.append(("torch.ops.attnc.attention (dispatcher)",
                lambda: op(q, k, v, True, -1, -1, None, None, False, None, 0,
                           0),
                lambda: F.scaled_dot_product_attention(
                    qt, kt, vt, is_causal=True, enable_gqa=True),
                "F.scaled_dot_product_attention (BHSD, enable_gqa)"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args()
    lines = ["Host time per eager call, %s, %s, torch %s, %d calls per row "
             "(median; p10-p90 in the log)" % (
                 datetime.datetime.now(datetime.timezone.utc).strftime(
                     "%Y-%m-%d %H:%M UTC"),
                 torch.cuda.get_device_name(), torch.__version__, args.calls),
             "",
             "| op | attnc us | PyTorch us | attnc / PyTorch | PyTorch op |",
             "|---|---|---|---|---|"]
    for name, ours, theirs, what in rows():
        a = host_us(ours, args.calls)
        print("%-42s attnc   median %6.1f us (p10 %.1f, p90 %.1f)"
              % (name, *a), flush=True)
        if theirs is None:
            lines.append("| %s | %.1f | - | - | - |" % (name, a[0]))
            continue
        t = host_us(theirs, args.calls)
        print("%-42s PyTorch median %6.1f us (p10 %.1f, p90 %.1f): %s"
              % ("", *t, what), flush=True)
        lines.append("| %s | %.1f | %.1f | %.2f | %s |"
                     % (name, a[0], t[0], a[0] / t[0], what))
    table = "\n".join(lines)
    print()
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
