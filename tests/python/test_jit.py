#!/usr/bin/env python3
"""The JIT compiler (libattnc_jit.so) through the Python binding, on the CPU:
found and enabled on import, kernels compiled into the disk cache on a miss
(attnc.precompile, and a Context over the test-only fake libcuda.so.1),
concurrent misses compiled once, and clear errors when it is absent,
disabled or handed a bad spec.

Plain script, no pytest: python3 tests/python/test_jit.py
Environment as test_binding.py; libattnc_jit.so must sit beside
libattnc.so (the build puts both in build/lib) or be named by
$ATTNC_JIT_LIBRARY.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_binding as tb  # noqa: E402  (harness, fake driver)

import attnc  # noqa: E402
from attnc._capi import INVALID_ARGUMENT, NOT_FOUND, Context, Spec  # noqa

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def entries(cache):
    return sorted(p for p in Path(cache).iterdir()
                  if len(p.name) == 32 and p.is_dir())


@test
def jit_is_enabled_on_import():
    info = attnc.jit_info()
    assert info is not None, attnc.jit_problem()
    assert "libattnc_jit.so" in info and "LLVM/MLIR 22" in info, info
    assert attnc.jit_problem() == ""


@test
def precompile_compiles_a_miss_once_into_the_cache():
    spec = Spec(heads=8, kv_heads=2, head_dim=64, causal=True,
                window_left=37, window_right=0)
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        assert attnc.precompile(spec, cache_dir=cache) is True
        cold = time.perf_counter() - start
        assert attnc.precompile(spec, cache_dir=cache) is False
        (entry,) = entries(cache)
        ptx = (entry / "kernel.ptx").read_text()
        assert ".visible .entry" in ptx and ".target sm_90a" in ptx
        meta = json.loads((entry / "meta.json").read_text())
        assert "window_left=37" in meta["spec"], meta["spec"]
        assert meta["build_id"] == attnc.build_id()
        print("  cold compile of %s: %.2f s" % (meta["entry"], cold))


@test
def precompile_takes_spec_json_of_every_op():
    # Pages of 64: the size rule may pick a variant with 32-key tiles.
    decode = attnc._capi.DecodeSpec(heads=32, kv_heads=8, head_dim=128,
                                    page_size=64)
    rows = {"op": "silu_mul", "dtype": "bf16", "hidden": 4096,
            "arch": "sm_90a"}
    with tempfile.TemporaryDirectory() as cache:
        assert attnc.precompile(decode, cache_dir=cache, link_cubin=False)
        # The decode spec and the variants its size rule may pick.
        n_decode = len(entries(cache))
        assert n_decode == 2, n_decode
        assert attnc.precompile(rows, cache_dir=cache, link_cubin=False)
        assert len(entries(cache)) == n_decode + 1
        # All cached now: nothing compiles again.
        assert attnc.precompile(decode, cache_dir=cache) is False


@test
def a_bad_spec_is_a_clear_error():
    with tempfile.TemporaryDirectory() as cache:
        tb.expect_error(
            lambda: attnc.precompile(Spec(heads=8, kv_heads=3, head_dim=64),
                                     cache_dir=cache),
            "precompile failed", "kv_heads", status=INVALID_ARGUMENT)
        assert entries(cache) == []


@test
def precompile_into_a_cache_that_cannot_hold_it_is_an_error():
    with tempfile.TemporaryDirectory() as tmp:
        not_a_dir = os.path.join(tmp, "file")
        with open(not_a_dir, "w") as f:
            f.write("x")
        tb.expect_error(
            lambda: attnc.precompile(Spec(heads=8, kv_heads=8, head_dim=64),
                                     cache_dir=not_a_dir, link_cubin=False),
            "could not cache it", not_a_dir)


@test
def precompile_keeps_every_spec_field():
    spec = Spec(heads=8, kv_heads=2, head_dim=64, causal=True, varlen=True,
                sinks=True)
    with tempfile.TemporaryDirectory() as cache:
        assert attnc.precompile(spec, cache_dir=cache, link_cubin=False)
        (entry,) = entries(cache)
        meta = json.loads((entry / "meta.json").read_text())
        assert "sinks=1" in meta["spec"] and "varlen=1" in meta["spec"], \
            meta["spec"]


@test
def a_context_compiles_a_missing_kernel():
    with tempfile.TemporaryDirectory() as cache:
        # PTX only: the fake driver reads PTX, not cubins.
        ctx = Context(cache_dir=cache, driver_library=tb.fake_cuda_path(),
                      link_cubin=False)
        try:
            kernel = ctx.get_kernel(Spec(heads=4, kv_heads=4, head_dim=128,
                                         softcap=30.0))
            assert kernel
        finally:
            ctx.close()
        assert len(entries(cache)) == 1


CONCURRENT = """
import attnc, sys
from attnc._capi import Spec
print(int(attnc.precompile(Spec(heads=8, kv_heads=8, head_dim=96),
                           cache_dir=sys.argv[1], link_cubin=False)))
"""


@test
def concurrent_processes_compile_a_miss_once():
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYTHONPATH=str(tb.REPO / "python"))
        procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, cache],
                                  env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(3)]
        results = [p.communicate(timeout=120) for p in procs]
        for p, (out, err) in zip(procs, results):
            assert p.returncode == 0, err
        compiled = sorted(int(out.strip()) for out, _ in results)
        assert compiled == [0, 0, 1], results
        assert len(entries(cache)) == 1


DISABLED = """
import attnc
from attnc._capi import Spec
print("problem:", attnc.jit_problem())
print("info:", attnc.jit_info())
try:
    attnc.precompile(Spec(heads=8, kv_heads=8, head_dim=64))
except attnc.AttncError as e:
    print("status:", e.status)
    print(e)
"""


@test
def disabled_or_missing_jit_says_why():
    off = tb.run_python(DISABLED, ATTNC_JIT="0")
    assert off.returncode == 0, off.stderr
    assert "problem: disabled by ATTNC_JIT=0" in off.stdout, off.stdout
    assert "info: None" in off.stdout
    assert "status: %d" % NOT_FOUND in off.stdout, off.stdout
    assert "(JIT compiler: disabled by ATTNC_JIT=0)" in off.stdout

    missing = tb.run_python(DISABLED,
                            ATTNC_JIT_LIBRARY="/nowhere/libattnc_jit.so")
    assert missing.returncode == 0, missing.stderr
    assert "/nowhere/libattnc_jit.so (no such file)" in missing.stdout, \
        missing.stdout
    assert "status: %d" % NOT_FOUND in missing.stdout


def main():
    return tb.main(TESTS)


if __name__ == "__main__":
    sys.exit(main())
