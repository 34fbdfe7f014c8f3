#!/usr/bin/env python3
"""A/B of two attnc compilers on one GPU in one run: GPU time per call of
each variant's kernels over a fixed grid, in interleaved rounds.

Each variant is staged by scripts/gpu-ab-stage.sh in .gpu-ab/NAME (its
libattnc.so, its Python binding and its bundle of bench/ab_specs.json plus
decode variants). The driver runs one worker process per variant and round,
in the order A B, B A, A B, ... (so drift of the card's clock falls on both
alike), each worker timing every cell of the grid with the same inputs (one
seed, fresh per run, printed). Per cell: the median over the rounds of each
round's median per-call time (bursts of back-to-back calls between two CUDA
events). The verdict column flags cells where the second variant is more
than --tolerance slower.

    python3 bench/ab_compilers.py --variants base,new [--rounds 4] [--out ab.md]

The grid is issue #32's: prefill D64/D128/D256 at S 1k/4k/16k, causal and
not (B*S = 16k, H = 2048/D), GQA 32/8 D128 at S 8k (both); decode 32/8 D128
at B1 L128k, B16 L32k, B64 L4k/16k (pages of 256); silu_and_mul 8192x14336
and add_rms_norm 8192x4096. With --arch sm_80: the prefill cells only,
through the portable mma.sync kernels (bench/specs.json bundles D64, D128
and D256 non-causal; cells without a kernel read n/a).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def grid(arch=None):
    """(label, kind, params) of every cell (prefill only for an explicit
    arch)."""
    cells = []
    for D in (64, 128, 256):
        for S in (1024, 4096, 16384):
            for causal in (False, True):
                B, H = 16384 // S, 2048 // D
                cells.append((f"prefill D{D} S{S // 1024}k{' causal' if causal else ''}",
                              "prefill", dict(B=B, S=S, Hq=H, Hkv=H, D=D, causal=causal,
                                              arch=arch)))
    if arch:
        return cells
    for causal in (False, True):
        cells.append((f"prefill GQA 32/8 D128 S8k{' causal' if causal else ''}", "prefill",
                      dict(B=2, S=8192, Hq=32, Hkv=8, D=128, causal=causal)))
    for B, L in ((1, 131072), (16, 32768), (64, 4096), (64, 16384)):
        cells.append((f"decode B{B} L{L // 1024}k", "decode", dict(B=B, L=L, Hq=32, Hkv=8, D=128)))
    cells.append(("silu_and_mul 8192x14336", "silu_and_mul", dict(T=8192, I=14336)))
    cells.append(("add_rms_norm 8192x4096", "add_rms_norm", dict(T=8192, N=4096)))
    return cells


# ---------------------------------------------------------------- worker


def make_call(attnc, torch, kind, p, gen):
    """(launch, check): launch() runs the variant's kernel once; check()
    returns its relative L2 error against a float32 torch reference."""
    dev = "cuda"
    bf = torch.bfloat16

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=dev, dtype=torch.float32).to(bf)

    if kind == "prefill":
        B, S, Hq, Hkv, D, causal = p["B"], p["S"], p["Hq"], p["Hkv"], p["D"], p["causal"]
        q, k, v = randn(B, S, Hq, D), randn(B, S, Hkv, D), randn(B, S, Hkv, D)
        scale = 1.0 / math.sqrt(D)

        kw = {"arch": p["arch"]} if p.get("arch") else {}

        def launch():
            return attnc.attention(q, k, v, causal=causal, scale=scale, **kw)

        def check(out):
            # Batch entry 0, its first 8 query heads (and their KV heads),
            # float32 through SDPA: small enough for any SDPA backend.
            hq = min(Hq, 8)
            hk = hq * Hkv // Hq
            qs = q[:1, :, :hq].transpose(1, 2).float()
            ks, vs = (t[:1, :, :hk].transpose(1, 2).float() for t in (k, v))
            ref = torch.nn.functional.scaled_dot_product_attention(
                qs, ks, vs, is_causal=causal, scale=scale, enable_gqa=hq != hk)
            return rel_l2(out[:1, :, :hq].transpose(1, 2).float(), ref)

        return launch, check
    if kind == "decode":
        B, L, Hq, Hkv, D = p["B"], p["L"], p["Hq"], p["Hkv"], p["D"]
        page = 256
        q = randn(B, 1, Hq, D)
        kc, vc = randn(B * L // page, page, Hkv, D), randn(B * L // page, page, Hkv, D)
        table = torch.arange(B * L // page, dtype=torch.int32, device=dev).view(B, -1)
        lens = torch.full((B,), L, dtype=torch.int32, device=dev)
        scale = 1.0 / math.sqrt(D)
        ws = attnc.decode_workspace(q, kc, table, max_kv_len=L)

        def launch():
            return attnc.decode(q, kc, vc, table, lens, max_kv_len=L, scale=scale, workspace=ws)

        def check(out):
            b = B - 1
            k_b = kc.view(B, L, Hkv, D)[b].transpose(0, 1).float()
            v_b = vc.view(B, L, Hkv, D)[b].transpose(0, 1).float()
            ref = torch.nn.functional.scaled_dot_product_attention(
                q[b].transpose(0, 1).float()[None], k_b[None], v_b[None], scale=scale,
                enable_gqa=True)
            return rel_l2(out[b].transpose(0, 1).float()[None], ref)

        return launch, check
    if kind == "silu_and_mul":
        T, I = p["T"], p["I"]
        x = randn(T, 2 * I)

        def check(out):
            xf = x.float()
            return rel_l2(out.float(), torch.nn.functional.silu(xf[:, :I]) * xf[:, I:])

        return (lambda: attnc.silu_and_mul(x)), check
    if kind == "add_rms_norm":
        T, N = p["T"], p["N"]
        x, r, w = randn(T, N), randn(T, N), randn(N)

        def launch():
            return attnc.add_rms_norm(x, r, w, eps=1e-6)

        def check(out):
            res = x.float() + r.float()
            y = res * torch.rsqrt(res.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
            return rel_l2(out[0].float(), y)

        return launch, check
    raise ValueError(kind)


def rel_l2(a, b):
    if not bool(a.isfinite().all()):
        return float("inf")
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def burst_ms(torch, launch, target_ms=20.0, bursts=7):
    """Median per-call time of `bursts` bursts of back-to-back calls, each
    burst long enough (about target_ms) that launch gaps hide."""
    for _ in range(3):
        launch()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    launch()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t0, 1e-6) * 1e3
    n = max(3, min(200, int(target_ms / one)))
    times = []
    for _ in range(bursts):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n):
            launch()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / n)
    return statistics.median(times)


def worker(args):
    sys.path.insert(0, args.python)
    import torch
    import attnc

    results = {}
    for label, kind, p in grid(args.arch):
        gen = torch.Generator(device="cuda")
        gen.manual_seed(args.seed)
        try:
            launch, check = make_call(attnc, torch, kind, p, gen)
            out = launch()
            torch.cuda.synchronize()
            err = check(out)
            ms = burst_ms(torch, launch)
            results[label] = {"ms": ms, "rel_l2": err}
        except Exception as e:  # a cell a variant cannot run: reported, not fatal
            results[label] = {"error": f"{type(e).__name__}: {e}"[:300]}
        print(f"  {args.worker:>6} {label:<34} {results[label]}", flush=True)
        launch = check = out = None
        torch.cuda.empty_cache()
    with open(args.json, "w") as f:
        json.dump(results, f)


# ---------------------------------------------------------------- driver


def driver(args):
    names = args.variants.split(",")
    if len(names) != 2:
        sys.exit("--variants takes two names: A,B")
    seed = args.seed if args.seed is not None else int(time.time()) % 2**31
    print(f"seed {seed}", flush=True)
    runs = {n: [] for n in names}
    tmp = args.workdir
    os.makedirs(tmp, exist_ok=True)
    for r in range(args.rounds):
        for n in (names if r % 2 == 0 else names[::-1]):
            stage = os.path.join(ROOT, ".gpu-ab", n)
            out = os.path.join(tmp, f"{r}-{n}.json")
            env = dict(os.environ, ATTNC_LIBRARY=os.path.join(stage, "lib", "libattnc.so"),
                       ATTNC_CACHE_DIR=os.path.join(stage, "bundle"))
            env.pop("ATTNC_TUNING_DB", None)  # each compiler's own defaults
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", n, "--json", out,
                   "--python", os.path.join(stage, "python"), "--seed", str(seed)]
            if args.arch:
                cmd += ["--arch", args.arch]
            print(f"round {r}: {n}", flush=True)
            subprocess.run(cmd, env=env, check=True)
            with open(out) as f:
                runs[n].append(json.load(f))
    a, b = names
    lines = [f"A/B {a} vs {b}{' (' + args.arch + ')' if args.arch else ''}: "
             f"{args.rounds} interleaved rounds, seed {seed}; "
             f"GPU time per call (ms), median over rounds; ratio = {b} / {a} "
             f"(> 1: {b} slower); flag: slower by more than {args.tolerance:.0%}.", "",
             f"| cell | {a} ms | {b} ms | {b}/{a} | rel L2 {a} / {b} | flag |",
             "|---|---|---|---|---|---|"]
    worst = 0.0
    for label, _, _ in grid(args.arch):
        med, err = {}, {}
        for n in names:
            ms = [run[label]["ms"] for run in runs[n] if "ms" in run.get(label, {})]
            med[n] = statistics.median(ms) if ms else None
            errs = [run[label].get("rel_l2") for run in runs[n] if "rel_l2" in run.get(label, {})]
            err[n] = max(errs) if errs else None
        if med[a] is None or med[b] is None:
            why = [run.get(label, {}).get("error") for n in names for run in runs[n]]
            lines.append(f"| {label} | {fmt(med[a])} | {fmt(med[b])} | n/a | | "
                         f"{next((w for w in why if w), 'missing')} |")
            continue
        ratio = med[b] / med[a]
        worst = max(worst, ratio)
        bad = [n for n in names if err[n] is None or not err[n] < 2e-2]
        flag = ("SLOWER" if ratio > 1 + args.tolerance else "") + (
            f" WRONG({','.join(bad)})" if bad else "")
        lines.append(f"| {label} | {med[a]:.4f} | {med[b]:.4f} | {ratio:.3f} | "
                     f"{err[a]:.1e} / {err[b]:.1e} | {flag.strip()} |")
    lines += ["", f"worst {b}/{a}: {worst:.3f}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


def fmt(x):
    return "n/a" if x is None else f"{x:.4f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default="base,new")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--out")
    ap.add_argument("--arch", help="prefill cells only, on this arch's kernels (e.g. sm_80)")
    ap.add_argument("--workdir", default=os.path.join(ROOT, ".gpu-ab", "runs"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    ap.add_argument("--python", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
