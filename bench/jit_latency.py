#!/usr/bin/env python3
"""How long a kernel attnc has never seen takes to become runnable (issue 34's
JIT targets), measured through the Python binding and libattnc_jit.so:

- cold JIT: a fresh process compiles one spec into an empty cache with
  attnc.precompile (attn IR -> tile -> GPU mapping -> PTX -> cubin by
  ptxas): the default prefill kernel (Llama-3.1-8B layer: 32/8 heads, D128,
  bf16, causal, sm_90a), a decode kernel (32/8, D128, pages of 16) and a
  row kernel (silu_and_mul, 14336). Reported as the time inside the call
  and, separately, the whole process (interpreter, imports, dlopen of the
  JIT library);
- disk-cache hit: a new process gets the kernel from the cache the cold run
  filled (Context.get_kernel: read, verify checksums, load the module);
- warm lookup: the same Context asked again (the process-local map).

Without a GPU the last two run over the tests' fake libcuda.so.1
(--fake-driver PATH): the runtime's own cost, without the real driver's
module load. With a GPU and torch (--gpu) it also times the first
attnc.attention call in a fresh process (JIT + load + launch) beside
FlexAttention's first compiled call on the same shapes.

  python3 bench/jit_latency.py [--fake-driver PATH] [--gpu] [--rounds 3]
Environment: ATTNC_LIBRARY, ATTNC_JIT_LIBRARY as for the binding.
Prints a markdown table (median of --rounds fresh processes).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SPECS = {
    "prefill 32/8 D128 causal": {
        "op": "attention_fwd", "dtype": "bf16", "heads": 32, "kv_heads": 8,
        "head_dim": 128, "causal": True, "arch": "sm_90a"},
    "decode 32/8 D128 p16": {
        "op": "decode", "dtype": "bf16", "heads": 32, "kv_heads": 8,
        "head_dim": 128, "page_size": 16, "arch": "sm_90a"},
    "silu_and_mul 14336": {
        "op": "silu_mul", "dtype": "bf16", "hidden": 14336, "arch": "sm_90a"},
}

# One child process: precompile, then (with a driver) load and look up.
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import attnc
from attnc._capi import Context
spec, cache, driver, mode = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
link_cubin = mode != "cold-ptx"
out = {}
attnc.jit_info()  # loads libattnc.so and the JIT library
out["import_s"] = time.perf_counter() - t0
if mode.startswith("cold"):
    t = time.perf_counter()
    compiled = attnc.precompile(spec, cache_dir=cache, link_cubin=link_cubin)
    out["compile_s"] = time.perf_counter() - t
    assert compiled, "expected a miss"
if driver:
    ctx = Context(cache_dir=cache, driver_library=driver or None)
    text = json.dumps(spec)
    t = time.perf_counter()
    ctx.get_kernel_json(text)
    out["load_s"] = time.perf_counter() - t
    n = 2000
    t = time.perf_counter()
    for _ in range(n):
        ctx.get_kernel_json(text)
    out["lookup_us"] = (time.perf_counter() - t) / n * 1e6
    ctx.close()
out["process_s"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def child(spec, cache, driver, mode):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    t = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec), cache, driver or "",
         mode], env=env, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - t
    if run.returncode != 0:
        raise SystemExit("child failed:\n" + run.stderr)
    out = json.loads(run.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    return out


GPU_CHILD = r"""
import sys, time, tempfile, os
import torch
t0 = time.perf_counter()
which = sys.argv[1]
B, S, H, KV, D = 1, 2048, 32, 8, 128
q = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16)
k = torch.randn(B, S, KV, D, device="cuda", dtype=torch.bfloat16)
v = torch.randn_like(k)
torch.cuda.synchronize()
t = time.perf_counter()
if which == "attnc":
    import attnc
    o = attnc.attention(q, k, v, causal=True)
else:
    from torch.nn.attention.flex_attention import flex_attention, create_block_mask
    causal = lambda b, h, qi, ki: qi >= ki
    mask = create_block_mask(causal, None, None, S, S, device="cuda")
    fn = torch.compile(flex_attention)
    o = fn(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
           block_mask=mask, enable_gqa=True)
torch.cuda.synchronize()
print(time.perf_counter() - t)
"""


def gpu_first_call(which, cache):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"),
               ATTNC_CACHE_DIR=cache)
    run = subprocess.run([sys.executable, "-c", GPU_CHILD, which], env=env,
                         capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise SystemExit("%s child failed:\n%s" % (which, run.stderr))
    return float(run.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fake-driver", default="",
                    help="the tests' fake libcuda.so.1 (no GPU here)")
    ap.add_argument("--gpu", action="store_true",
                    help="use the real driver and time first calls")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    driver = "libcuda.so.1" if args.gpu else args.fake_driver

    rows = []
    for name, spec in SPECS.items():
        cold, hit = [], []
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as cache:
                cold.append(child(spec, cache, "", "cold"))
                if driver and not args.gpu:
                    # The fake driver reads PTX only: a PTX-only entry.
                    with tempfile.TemporaryDirectory() as ptx_cache:
                        child(spec, ptx_cache, "", "cold-ptx")
                        hit.append(child(spec, ptx_cache, driver, "hit"))
                elif driver:
                    hit.append(child(spec, cache, driver, "hit"))
        med = lambda runs, key: statistics.median(r[key] for r in runs)
        rows.append((name, med(cold, "compile_s"), med(cold, "wall_s"),
                     med(hit, "load_s") * 1e3 if hit else None,
                     med(hit, "lookup_us") if hit else None))

    print("| kernel | cold JIT in call (s) | cold process (s) | "
          "disk hit, new process (ms) | warm lookup (µs) |")
    print("|---|---|---|---|---|")
    for name, c, w, h, l in rows:
        print("| %s | %.3f | %.2f | %s | %s |" % (
            name, c, w, "%.2f" % h if h is not None else "-",
            "%.2f" % l if l is not None else "-"))
    print("\n(driver: %s; median of %d fresh processes each)"
          % (driver or "none", args.rounds))

    if args.gpu:
        print("\n| first call in a fresh process (s) | attnc (JIT) | "
              "FlexAttention (torch.compile) |")
        print("|---|---|---|")
        with tempfile.TemporaryDirectory() as cache:
            a = gpu_first_call("attnc", cache)
            a_hit = gpu_first_call("attnc", cache)
        f = gpu_first_call("flex", tempfile.mkdtemp())
        print("| causal 32/8 D128 S2048 | %.2f (disk hit: %.3f) | %.2f |"
              % (a, a_hit, f))


if __name__ == "__main__":
    main()
