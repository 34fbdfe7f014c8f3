#!/usr/bin/env python3
"""Side-by-side benchmark of attnc against its peers (PyTorch SDPA flash / cuDNN,
FlexAttention, torch eager / torch.compile), all in one process on one GPU.

    PYTHONUNBUFFERED=1 python3 bench/compare.py [--grids prefill,decode,elementwise]
                                                [--quick] [--out bench/RESULTS.md]

Grids and FLOP/byte conventions: bench/bench_grids.py (= shared/PEERS.md).
Markdown/plots: bench/bench_report.py. attnc's own kernels: bench/attnc_hook.py.
Writes --out (default bench/RESULTS.md, overwritten) and PNGs beside it; when the
environment variable OUT is set, also copies RESULTS.md, the PNGs and results.json
there. torch is imported lazily, so the pure-Python parts import without it.
"""

import argparse
import datetime
import itertools
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
import warnings

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
if BENCH_DIR not in sys.path:
    sys.path.insert(0, BENCH_DIR)

import bench_grids as G  # noqa: E402
import bench_report as R  # noqa: E402
from attnc_hook import NotAvailable, attnc_impl, reference_impl  # noqa: E402

torch = None  # imported in main()
F = None


def log(*a):
    print(*a, flush=True)


# =============================================================== CLI
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grids", default=",".join(G.GRID_NAMES),
                    help="comma-separated subset of: " + ",".join(G.GRID_NAMES))
    ap.add_argument("--quick", action="store_true", help="few reps: a smoke run, not numbers to quote")
    ap.add_argument("--out", default=os.path.join(BENCH_DIR, "RESULTS.md"), help="markdown output path")
    ap.add_argument("--seed", type=int, default=None, help="default: fresh from the clock (printed)")
    ap.add_argument("--warmup", type=int, default=None,
                    help="warm-up calls per cell and round (default 3, quick 2)")
    ap.add_argument("--reps", type=int, default=None,
                    help="timed calls per cell, over all rounds (default 40, quick 5)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds per row: each round times every implementation of the row in turn, "
                         "starting one further along each time, so the card's drifting clock and "
                         "power state fall on all of them alike (default 5, quick 1)")
    ap.add_argument("--layout", choices=["bshd", "bhsd"], default="bshd",
                    help="memory layout of Q/K/V/KV-cache allocations (default bshd)")
    ap.add_argument("--timer", choices=["events", "do_bench"], default="events",
                    help="events: CUDA events around each call, median (default); "
                         "do_bench: triton.testing.do_bench(return_mode='median'), a cross-check")
    ap.add_argument("--expand-kv", action="store_true",
                    help="decode: give the SDPA peers K/V expanded to 32 heads even when they accept "
                         "enable_gqa (exercises the fallback path; cells read '(expanded)')")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    try:
        args.grid_list = G.parse_grids(args.grids)
    except ValueError as e:
        ap.error(str(e))
    if args.warmup is None:
        args.warmup = 2 if args.quick else 3
    if args.reps is None:
        args.reps = 5 if args.quick else 40
    if args.rounds is None:
        args.rounds = 1 if args.quick else 5
    if args.warmup < 0 or args.reps < 1 or not 1 <= args.rounds <= args.reps:
        ap.error("--warmup must be >= 0, --reps >= 1 and 1 <= --rounds <= --reps")
    if args.seed is None:
        args.seed = int(time.time_ns() % (2**31 - 1))
    return args


# =============================================================== timing
def time_calls(runners, warmup, reps, timer="events"):
    """Times in ms of `reps` calls, each bracketed by CUDA events, rotating among
    runners (one per input set), after `warmup` untimed calls. timer="do_bench":
    one time, Triton's do_bench median (it zeroes a 256 MB buffer between calls to
    flush L2, outside the timed region; its warm-up and repetition budgets are in ms)."""
    n = len(runners)
    if timer == "do_bench":
        from triton.testing import do_bench

        it = itertools.cycle(runners)
        rep_ms = 20 if reps < 20 else 100
        return [float(do_bench(lambda: next(it)(), warmup=max(5, 5 * warmup), rep=rep_ms,
                               return_mode="median"))]
    for i in range(warmup):
        runners[i % n]()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for i, (start, end) in enumerate(events):
        start.record()
        runners[i % n]()
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in events]


def time_ms(runners, warmup, reps, timer="events"):
    """Median of time_calls (the ceilings: one implementation, one round)."""
    return statistics.median(time_calls(runners, warmup, reps, timer))


def round_orders(names, rounds):
    """The order of the implementations in each round: round r starts r places
    further along (a rotation), so each one is timed first, right after another
    one, and last equally often when rounds is a multiple of len(names)."""
    n = len(names)
    return [[names[(r + i) % n] for i in range(n)] for r in range(rounds)] if n else []


def split_reps(reps, rounds):
    """Timed calls per round: reps spread over the rounds as evenly as they go."""
    return [reps // rounds + (1 if r < reps % rounds else 0) for r in range(rounds)]


def _reason_with_warnings(e, wl):
    """Short reason; SDPA explains a refused backend in UserWarnings, so append the first."""
    reason = R.exc_reason(e, 60)
    msgs = [re.sub(r"\s*\(Triggered internally at [^)]*\)\s*$", "", " ".join(str(w.message).split()))
            for w in (wl or [])]
    # skip headers such as "Flash attention kernel not used because:"; keep the specific reasons
    msgs = [m for m in msgs if m and not m.rstrip().endswith(":")]
    if msgs:
        reason += " / " + R.short_reason("; ".join(msgs[:2]), 110)
    return R.short_reason(reason, 180)


def measure_row(makers, n_sets, check, metric, args):
    """Every implementation of a row: set up, first call, checked (prepare_cell),
    then the correct ones timed in interleaved rounds (time_row). Returns
    {name: cell}."""
    cells, ready = {}, {}
    for name, mk in makers.items():
        got = prepare_cell(name, mk, n_sets, check)
        if isinstance(got, dict):
            cells[name] = got
        else:
            ready[name] = got
    cells.update(time_row(ready, metric, args))
    return {name: cells[name] for name in makers}


def time_row(ready, metric, args):
    """ready: {name: (runners, err, note, first_s)}. args.rounds rounds; in each,
    every implementation is warmed up and timed for its share of args.reps calls,
    in round_orders' order. A cell's time is the median of all its calls; its
    spread is the range of its round medians over that median."""
    names = list(ready)
    times = {name: [] for name in names}
    round_medians = {name: [] for name in names}
    failed = {}
    for order, reps in zip(round_orders(names, args.rounds), split_reps(args.reps, args.rounds)):
        for name in order:
            if name in failed:
                continue
            try:
                t = time_calls(ready[name][0], args.warmup, reps, args.timer)
            except Exception as e:  # noqa: BLE001
                log(f"    {name:10s} error while timing: {R.exc_reason(e, 300)}")
                failed[name] = R.error_cell("timing: " + R.exc_reason(e))
                continue
            times[name] += t
            round_medians[name].append(statistics.median(t))
    cells = {}
    for name in names:
        if name in failed:
            cells[name] = failed[name]
            continue
        _, err, note, first_s = ready[name]
        ms = statistics.median(times[name])
        spread = (max(round_medians[name]) - min(round_medians[name])) / ms
        value = metric(ms)
        log(f"    {name:10s} {value:9.2f}  ({ms:.3f} ms, spread {100 * spread:.1f}%, err {err:.1e}, "
            f"1st call {first_s:.1f} s)" + (f" [{note}]" if note else ""))
        cells[name] = R.ok_cell(value, ms, err, note, round(first_s, 2), spread=spread)
    return cells


def prepare_cell(name, make, n_sets, check):
    """make(i) -> (callable, note) for input set i; check(out) -> (err, why_wrong).
    Returns a final cell (n/a, error, WRONG) or (runners, err, note, first_s) for
    time_row. Never raises (except KeyboardInterrupt)."""
    try:
        runners, note = [], ""
        for i in range(n_sets):
            fn, note = make(i)
            runners.append(fn)
    except NotAvailable as e:
        log(f"    {name:10s} n/a: {e}")
        return R.na_cell(R.short_reason(e))
    except Exception as e:  # noqa: BLE001 - a failing peer is a cell, not a crash
        log(f"    {name:10s} error in setup: {R.exc_reason(e, 300)}")
        return R.error_cell(R.exc_reason(e))

    wl = []
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as wl:
            warnings.simplefilter("always")
            out = runners[0]()
            torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        reason = _reason_with_warnings(e, wl)
        log(f"    {name:10s} error: {reason}")
        _free()
        return R.error_cell(reason)
    first_s = time.perf_counter() - t0

    try:
        err, why = check(out)
    except Exception as e:  # noqa: BLE001
        log(f"    {name:10s} error in check: {R.exc_reason(e, 300)}")
        return R.error_cell("check: " + R.exc_reason(e))
    finally:
        out = None
    if why:
        log(f"    {name:10s} WRONG: {why}")
        return R.wrong_cell(err, why, first_s)
    log(f"    {name:10s} correct (err {err:.1e}, 1st call {first_s:.1f} s)")
    return runners, err, note, first_s


def _free():
    import gc

    gc.collect()
    torch.cuda.empty_cache()


# =============================================================== checks
def rel_err(pairs):
    """pairs: iterable of (out, ref) tensors -> sqrt(sum |out-ref|^2 / sum |ref|^2) in float64."""
    num = den = 0.0
    for o, r in pairs:
        d = o.double() - r.double()
        num += float((d * d).sum())
        den += float((r.double() ** 2).sum())
    return math.sqrt(num / den) if den > 0 else float("inf")


def verdict(outs, expect_shapes, pairs_fn, tol):
    """outs: tensor or tuple; returns (err, why_wrong_or_empty)."""
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    if len(outs) != len(expect_shapes):
        return None, f"expected {len(expect_shapes)} outputs, got {len(outs)}"
    for o, shp in zip(outs, expect_shapes):
        if not torch.is_tensor(o):
            return None, f"output is {type(o).__name__}, not a tensor"
        if tuple(o.shape) != tuple(shp):
            return None, f"output shape {tuple(o.shape)} != {tuple(shp)}"
        if not bool(torch.isfinite(o).all()):
            return float("nan"), "NaN/Inf in output"
    err = max(rel_err(pairs_fn(i, o)) for i, o in enumerate(outs))
    if not err <= tol:
        return err, f"rel L2 err {err:.1e} > {tol:g}"
    return err, ""


def ref_attention_fp32(q, k, v, causal, scale, chunk=4096):
    """float32 math SDPA for one head: q (Sq, D), k/v (Sk, D) -> (Sq, D) float32.
    Causal is top-left aligned (row i sees keys 0..i), as SDPA's is_causal and flex's
    q_idx >= kv_idx; query rows in chunks to bound the score matrix's memory."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    qf, kf, vf = (t.float()[None, None] for t in (q, k, v))
    Sq, Sk = q.shape[0], k.shape[0]
    outs = []
    for i0 in range(0, Sq, chunk):
        i1 = min(Sq, i0 + chunk)
        mask = None
        if causal:
            rows = torch.arange(i0, i1, device=q.device)[:, None]
            cols = torch.arange(Sk, device=q.device)[None, :]
            mask = cols <= rows
        with sdpa_kernel(SDPBackend.MATH):
            o = F.scaled_dot_product_attention(qf[:, :, i0:i1], kf, vf, attn_mask=mask, scale=scale)
        outs.append(o[0, 0])
    return torch.cat(outs)


# =============================================================== tensors
def alloc_bshd(B, S, H, D, layout):
    """A (B, S, H, D) bf16 randn tensor; with layout 'bhsd' it is a transposed view of
    contiguous (B, H, S, D) storage."""
    if layout == "bshd":
        return torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16)
    return torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2)


def bhsd(x):
    return x.transpose(1, 2)


def sdpa_runner(backend, q, k, v, causal, scale, enable_gqa=False):
    """SDPA with exactly one backend allowed; q/k/v BSHD views, output returned BSHD."""
    from torch.nn.attention import sdpa_kernel

    qt, kt, vt = bhsd(q), bhsd(k), bhsd(v)
    kw = {"enable_gqa": True} if enable_gqa else {}

    def run():
        with sdpa_kernel(backend):
            o = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale, **kw)
        return o.transpose(1, 2)

    return run


_FLEX = {}


def _raise_recompile_limits(n=64):
    cfg = torch._dynamo.config
    for attr in ("recompile_limit", "cache_size_limit"):
        if hasattr(cfg, attr):
            setattr(cfg, attr, max(n, getattr(cfg, attr)))
    for attr in ("accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(cfg, attr):
            setattr(cfg, attr, max(4 * n, getattr(cfg, attr)))


def _causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def flex_compiled():
    if "fn" not in _FLEX:
        from torch.nn.attention.flex_attention import flex_attention

        _raise_recompile_limits()
        _FLEX["fn"] = torch.compile(flex_attention, dynamic=False)
    return _FLEX["fn"]


def _full_mask(b, h, q_idx, kv_idx):
    return kv_idx >= 0


def flex_block_mask(kind, q_len, kv_len):
    key = (kind, q_len, kv_len)
    if key not in _FLEX:
        from torch.nn.attention.flex_attention import create_block_mask

        mod = _causal_mask if kind == "causal" else _full_mask
        _FLEX[key] = create_block_mask(mod, None, None, q_len, kv_len, device="cuda")
    return _FLEX[key]


def flex_runner(q, k, v, causal, scale, enable_gqa=False, full_block_mask=False):
    """Compiled flex_attention on BHSD views. Causal: create_block_mask(q_idx >= kv_idx).
    full_block_mask (decode): an explicit all-true block mask instead of block_mask=None;
    measured on the H200 with torch 2.11, None made the decode kernel 25x slower at
    B=1 L=128k (4.6 ms vs 0.19 ms), the explicit mask runs the split-KV decode kernel."""
    fn = flex_compiled()
    qt, kt, vt = bhsd(q), bhsd(k), bhsd(v)
    if causal:
        bm = flex_block_mask("causal", q.shape[1], k.shape[1])
    elif full_block_mask:
        bm = flex_block_mask("full", q.shape[1], k.shape[1])
    else:
        bm = None
    kw = {"enable_gqa": True} if enable_gqa else {}

    def run():
        return fn(qt, kt, vt, block_mask=bm, scale=scale, **kw).transpose(1, 2)

    return run


def hook_maker(hook, kind, sets, **extra):
    def make(i):
        return hook(kind, **sets[i], **extra), ""

    return make


# =============================================================== ceilings
def measure_ceilings(args):
    res = {}
    try:
        n = 1 << 29  # bf16 elements: 1 GiB
        src = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        dst = torch.empty_like(src)
        ms = time_ms([lambda: dst.copy_(src)], max(args.warmup, 3), max(args.reps, 20), args.timer)
        res.update(copy_bytes=4 * n, copy_ms=ms, copy_tbs=G.tbps(4 * n, ms))
        src = dst = None  # drop the tensors (closures above keep the names)
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        ms = time_ms([lambda: a @ b], max(args.warmup, 3), max(args.reps, 20), args.timer)
        res.update(matmul_ms=ms, matmul_tflops=G.tflops(2 * 8192**3, ms))
        a = b = None  # drop the tensors (closures above keep the names)
    except Exception as e:  # noqa: BLE001
        res = {"error": R.exc_reason(e)}
    _free()
    return res


# =============================================================== grids
def n_sets_for(io_bytes, l2_bytes):
    return G.rotation_sets(io_bytes, l2_bytes)


def run_prefill(args, l2_bytes):
    from torch.nn.attention import SDPBackend

    rows = []
    for prob in G.PREFILL_GRID:
        B, H, S, D, causal = prob.B, prob.H, prob.S, prob.D, prob.causal
        scale = 1.0 / math.sqrt(D)
        log(f"  [{prob.label}] B={B} H={H} FLOPs={prob.flops:.3e}")
        n_sets = n_sets_for(prob.io_bytes, l2_bytes)
        sets = [{"q": alloc_bshd(B, S, H, D, args.layout), "k": alloc_bshd(B, S, H, D, args.layout),
                 "v": alloc_bshd(B, S, H, D, args.layout)} for _ in range(n_sets)]
        # fp32 reference on a sample of (batch, head) pairs of set 0, all S query rows
        pairs = sorted({(b, h) for b in {0, B - 1} for h in {0, H // 3, (2 * H) // 3, H - 1}})
        s0 = sets[0]
        refs = [ref_attention_fp32(s0["q"][b, :, h], s0["k"][b, :, h], s0["v"][b, :, h], causal, scale)
                for b, h in pairs]

        def check(out):
            return verdict(out, [(B, S, H, D)],
                           lambda _i, o: [(o[b, :, h], r) for (b, h), r in zip(pairs, refs)],
                           G.RELATIVE_L2_TOL)

        def metric(ms):
            return G.tflops(prob.flops, ms)

        def sdpa_make(backend):
            return lambda i: (sdpa_runner(backend, sets[i]["q"], sets[i]["k"], sets[i]["v"], causal, scale), "")

        makers = {
            "FA2": sdpa_make(SDPBackend.FLASH_ATTENTION),
            "cuDNN": sdpa_make(SDPBackend.CUDNN_ATTENTION),
            "flex": lambda i: (flex_runner(sets[i]["q"], sets[i]["k"], sets[i]["v"], causal, scale), ""),
            R.ATTNC: hook_maker(attnc_impl, "prefill", sets, causal=causal, scale=scale),
            R.REFERENCE: hook_maker(reference_impl, "prefill", sets, causal=causal, scale=scale),
        }
        cells = measure_row(makers, n_sets, check, metric, args)
        rows.append({"key": list(prob.key), "label": prob.label,
                     "params": {"D": D, "S": S, "causal": causal, "B": B, "H": H, "flops": prob.flops,
                                "n_sets": n_sets},
                     "cells": cells})
        sets = refs = s0 = None  # drop the tensors (closures above keep the names)
        _free()
    return rows


def run_decode(args, l2_bytes):
    from torch.nn.attention import SDPBackend

    rows = []
    for prob in G.DECODE_GRID:
        B, L, Hq, Hkv, D = prob.B, prob.L, prob.Hq, prob.Hkv, prob.D
        scale = 1.0 / math.sqrt(D)
        log(f"  [{prob.label}] K+V bytes={prob.kv_bytes:.3e}")
        n_sets = n_sets_for(prob.io_bytes, l2_bytes)
        sets = [{"q": alloc_bshd(B, 1, Hq, D, args.layout), "k": alloc_bshd(B, L, Hkv, D, args.layout),
                 "v": alloc_bshd(B, L, Hkv, D, args.layout)} for _ in range(n_sets)]
        bs = sorted({0, B // 2, B - 1})
        s0 = sets[0]
        rep = Hq // Hkv
        refs = []
        for b in bs:
            k_b = s0["k"][b].transpose(0, 1).repeat_interleave(rep, dim=0)  # (Hq, L, D)
            v_b = s0["v"][b].transpose(0, 1).repeat_interleave(rep, dim=0)
            q_b = s0["q"][b].transpose(0, 1)  # (Hq, 1, D)
            refs.append(torch.stack([ref_attention_fp32(q_b[h], k_b[h], v_b[h], False, scale)
                                     for h in range(Hq)]))  # (Hq, 1, D)
            del k_b, v_b

        def check(out):
            return verdict(out, [(B, 1, Hq, D)],
                           lambda _i, o: [(o[b].transpose(0, 1), r) for b, r in zip(bs, refs)],
                           G.RELATIVE_L2_TOL)

        def metric(ms):
            return G.tbps(prob.kv_bytes, ms)

        def sdpa_make(backend):
            state = {}

            def make(i):
                s = sets[i]
                if args.expand_kv:
                    state["expand"] = True
                if "expand" not in state:  # probe GQA support once, on set 0
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            sdpa_runner(backend, s["q"], s["k"], s["v"], False, scale, enable_gqa=True)()
                            torch.cuda.synchronize()
                        state["expand"] = False
                    except RuntimeError as e:
                        log(f"    ({str(backend)}: enable_gqa refused: {R.exc_reason(e, 120)}; expanding K/V)")
                        state["expand"] = True
                if not state["expand"]:
                    return sdpa_runner(backend, s["q"], s["k"], s["v"], False, scale, enable_gqa=True), ""
                ke = s["k"].repeat_interleave(rep, dim=2)  # outside the timed region
                ve = s["v"].repeat_interleave(rep, dim=2)
                return sdpa_runner(backend, s["q"], ke, ve, False, scale), "expanded"

            return make

        makers = {
            "FA2": sdpa_make(SDPBackend.FLASH_ATTENTION),
            "cuDNN": sdpa_make(SDPBackend.CUDNN_ATTENTION),
            "flex": lambda i: (flex_runner(sets[i]["q"], sets[i]["k"], sets[i]["v"], False, scale,
                                           enable_gqa=True, full_block_mask=True), ""),
            R.ATTNC: hook_maker(attnc_impl, "decode", sets, causal=False, scale=scale),
            R.REFERENCE: hook_maker(reference_impl, "decode", sets, causal=False, scale=scale),
        }
        cells = measure_row(makers, n_sets, check, metric, args)
        rows.append({"key": list(prob.key), "label": prob.label,
                     "params": {"B": B, "L": L, "Hq": Hq, "Hkv": Hkv, "D": D, "kv_bytes": prob.kv_bytes,
                                "n_sets": n_sets},
                     "cells": cells})
        sets = refs = s0 = None  # drop the tensors (closures above keep the names)
        _free()
    return rows


def _silu_and_mul(x):
    i = x.shape[-1] // 2
    return F.silu(x[..., :i]) * x[..., i:]


def _add_rms_norm(x, r, w, eps):
    residual = x + r
    if hasattr(F, "rms_norm"):
        y = F.rms_norm(residual, (residual.shape[-1],), w, eps)
    else:
        rf = residual.float()
        y = (rf * torch.rsqrt(rf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
    return y, residual


_COMPILED = {}


def _compiled(fn):
    if fn not in _COMPILED:
        _raise_recompile_limits()
        _COMPILED[fn] = torch.compile(fn, dynamic=False)
    return _COMPILED[fn]


def run_elementwise(args, l2_bytes):
    rows = []
    for prob in G.ELEMENTWISE_GRID:
        T, N, eps = prob.T, prob.N, prob.eps
        log(f"  [{prob.label}] bytes={prob.bytes:.3e} (fused; unfused {prob.unfused_bytes:.3e})")
        n_sets = n_sets_for(prob.io_bytes, l2_bytes)
        bf = torch.bfloat16
        if prob.op == "silu_and_mul":
            sets = [{"x": torch.randn(T, 2 * N, device="cuda", dtype=bf)} for _ in range(n_sets)]
            x0 = sets[0]["x"].float()
            refs = [F.silu(x0[:, :N]) * x0[:, N:]]
            x0 = None  # drop the tensors (closures above keep the names)
            shapes = [(T, N)]
            eager = _silu_and_mul
            kw = {}
        else:
            sets = [{"x": torch.randn(T, N, device="cuda", dtype=bf), "r": torch.randn(T, N, device="cuda", dtype=bf),
                     "w": 1.0 + 0.1 * torch.randn(N, device="cuda", dtype=bf)} for _ in range(n_sets)]
            s0 = sets[0]
            res = s0["x"].float() + s0["r"].float()
            y = res * torch.rsqrt(res.pow(2).mean(-1, keepdim=True) + eps) * s0["w"].float()
            refs = [y, res]
            res = y = s0 = None  # drop the tensors (closures above keep the names)
            shapes = [(T, N), (T, N)]
            eager = _add_rms_norm
            kw = {"eps": eps}

        def check(out):
            return verdict(out, shapes, lambda i, o: [(o, refs[i])], G.RELATIVE_L2_TOL)

        def metric(ms):
            return G.tbps(prob.bytes, ms)

        def peer_make(fn):
            def make(i):
                s = sets[i]
                if prob.op == "silu_and_mul":
                    return (lambda: fn(s["x"])), ""
                return (lambda: fn(s["x"], s["r"], s["w"], eps)), ""

            return make

        makers = {
            "eager": peer_make(eager),
            "compile": lambda i: peer_make(_compiled(eager))(i),
            R.ATTNC: hook_maker(attnc_impl, prob.op, sets, **kw),
        }
        cells = measure_row(makers, n_sets, check, metric, args)
        rows.append({"key": list(prob.key), "label": prob.label,
                     "params": {"op": prob.op, "T": T, "N": N, "bytes": prob.bytes,
                                "unfused_bytes": prob.unfused_bytes, "n_sets": n_sets},
                     "cells": cells})
        sets = refs = None  # drop the tensors (closures above keep the names)
        _free()
    return rows


# =============================================================== meta + output
def _driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except Exception:  # noqa: BLE001
        pass
    try:
        v = torch._C._cuda_getDriverVersion()
        return f"CUDA driver API {v // 1000}.{(v % 1000) // 10} (nvidia-smi unavailable)"
    except Exception:  # noqa: BLE001
        return "unknown"


def collect_meta(args):
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", None)
    try:
        import triton

        triton_v = triton.__version__
    except Exception as e:  # noqa: BLE001
        triton_v = f"unavailable ({type(e).__name__})"
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "device": torch.cuda.get_device_name(0),
        "sm_count": props.multi_processor_count,
        "l2_mb": round(l2 / 1e6, 1) if l2 else "?",
        "l2_bytes": l2,
        "driver": _driver_version(),
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "torch": torch.__version__,
        "triton": triton_v,
        "python": platform.python_version(),
        "command": shlex.join([os.path.basename(sys.executable)] + sys.argv),
        "seed": args.seed,
        "layout": f"{args.layout.upper()} (q/k/v and KV cache)",
        "timing": (f"CUDA events around each call; per row, {args.rounds} rounds, each timing every "
                   f"implementation in turn (the order rotated one place per round) for {args.warmup} "
                   f"warm-up calls and its share of {args.reps} timed calls, back to back; the median "
                   f"of the {args.reps} calls{' (--quick: smoke run)' if args.quick else ''}; "
                   "triton.testing.do_bench not used") if args.timer == "events" else (
                   "triton.testing.do_bench(return_mode='median', warmup=%d ms, rep=%d ms), which zeroes a "
                   "256 MB buffer before each call (L2 flush, untimed)%s" % (
                       max(5, 5 * args.warmup), 20 if args.reps < 20 else 100,
                       " (--quick: smoke run)" if args.quick else "")),
        "timer": args.timer,
        "warmup": args.warmup,
        "reps": args.reps,
        "rounds": args.rounds,
        "quick": args.quick,
        "tolerance": G.RELATIVE_L2_TOL,
        "notes": (["--expand-kv: SDPA decode peers were given expanded K/V on purpose"]
                  if args.expand_kv else []),
    }


def write_outputs(results, args):
    out_md = os.path.abspath(args.out)
    out_dir = os.path.dirname(out_md)
    os.makedirs(out_dir, exist_ok=True)
    plots = []
    if not args.no_plots:
        try:
            plots = R.plot_results(results, out_dir)
        except Exception as e:  # noqa: BLE001
            log(f"plots failed: {R.exc_reason(e, 300)}")
            results["meta"]["notes"].append(f"plots failed: {R.exc_reason(e)}")
    with open(out_md, "w") as f:
        f.write(R.render_markdown(results, plots))
    log(f"wrote {out_md}" + (f" and {', '.join(plots)}" if plots else ""))
    env_out = os.environ.get("OUT")
    if env_out:
        os.makedirs(env_out, exist_ok=True)
        for name in [os.path.basename(out_md)] + plots:
            src = os.path.join(out_dir, name)
            dst = os.path.join(env_out, name)
            if os.path.abspath(src) != os.path.abspath(dst):
                shutil.copyfile(src, dst)
        with open(os.path.join(env_out, "results.json"), "w") as f:
            json.dump(results, f, indent=1, default=str)
        log(f"copied results to $OUT={env_out}")


GRID_RUNNERS = {"prefill": run_prefill, "decode": run_decode, "elementwise": run_elementwise}


def main(argv=None):
    global torch, F
    args = parse_args(argv)
    t_start = time.perf_counter()
    import torch as _torch

    torch = _torch
    F = torch.nn.functional
    if not torch.cuda.is_available():
        log("error: no CUDA device visible to torch; this benchmark needs a GPU")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 reference must be real fp32
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(args.seed)
    meta = collect_meta(args)
    log(f"attnc bench: {meta['device']}, driver {meta['driver']}, torch {meta['torch']} (CUDA {meta['cuda']}), "
        f"triton {meta['triton']}, cuDNN {meta['cudnn']}")
    log(f"seed {args.seed}; grids {args.grid_list}; warmup {args.warmup}, reps {args.reps}, rounds {args.rounds}; layout {args.layout}")
    l2_bytes = meta["l2_bytes"] or 60 * 10**6

    results = {"meta": meta, "ceilings": {}, "grids": {}}
    t0 = time.perf_counter()
    with torch.no_grad():
        results["ceilings"] = measure_ceilings(args)
    c = results["ceilings"]
    if "error" in c:
        log(f"ceilings: error: {c['error']}")
    else:
        log(f"ceilings: copy {c['copy_tbs']:.2f} TB/s (read+write), bf16 8192^3 matmul "
            f"{c['matmul_tflops']:.0f} TFLOP/s  [{time.perf_counter() - t0:.1f} s]")

    for grid in args.grid_list:
        t0 = time.perf_counter()
        log(f"== grid {grid}")
        try:
            with torch.no_grad():
                rows = GRID_RUNNERS[grid](args, l2_bytes)
        except Exception as e:  # noqa: BLE001 - e.g. OOM building inputs: keep the other grids
            log(f"grid {grid} aborted: {R.exc_reason(e, 300)}")
            results["meta"]["notes"].append(f"grid {grid} aborted: {R.exc_reason(e)}")
            rows = []
            _free()
        el = time.perf_counter() - t0
        results["grids"][grid] = {"elapsed_s": el, "rows": rows}
        log(f"== grid {grid} done in {el:.1f} s")

    results["total_elapsed_s"] = time.perf_counter() - t_start
    write_outputs(results, args)
    log("")
    log(R.summary_text(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
