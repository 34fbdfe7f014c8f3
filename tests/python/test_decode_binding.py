#!/usr/bin/env python3
"""CPU tests of attnc.decode's kernel and split-count choice through the
real libattnc.so and the test-only fake libcuda.so.1: decode kernels
compiled by the attnc tool into a temporary cache, duck-typed tensors, a
tuning database through $ATTNC_TUNING_DB. The fake driver loads the PTX and
records launches, so a test sees the kernel handle and split count that
reached the runtime and the split count the combine kernel was given.

Plain script, no pytest: python3 tests/python/test_decode_binding.py
Environment: as test_binding.py, and ATTNC_TEST_ATTNC_TOOL (default: the
attnc executable next to the library's build).
The last line is "N passed, N failed"; the exit status is 1 on failure.
"""

import contextlib
import ctypes
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_binding as tb  # noqa: E402  (FakeTensor, the fake driver)

import attnc  # noqa: E402
from attnc import _attention, _decode  # noqa: E402
from attnc._capi import NOT_FOUND, Context, DecodeSpec  # noqa: E402

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


HEADS, KV_HEADS, HEAD_DIM, PAGE = 8, 2, 64, 16
SPEC = DecodeSpec(heads=HEADS, kv_heads=KV_HEADS, head_dim=HEAD_DIM,
                  page_size=PAGE, arch="sm_90a")
# The block_n of the database entries below and of an explicit block_n;
# the compiler's default (16, DecodeTileOptions) is neither.
TUNED_N, CALLER_N = 32, 64


# --- tensors and torch -------------------------------------------------------


class Tensor(tb.FakeTensor):
    """FakeTensor with the few more methods decode() calls."""

    def stride(self, dim=None):
        return self._stride if dim is None else self._stride[dim]

    def dim(self):
        return len(self.shape)

    def numel(self):
        n = 1
        for size in self.shape:
            n *= size
        return n


def decode_torch():
    torch = types.ModuleType("torch")
    torch.float32, torch.int32, torch.uint8 = (
        "torch.float32", "torch.int32", "torch.uint8")
    torch.empty_like = lambda t: Tensor(t.shape, t.stride(), t.dtype,
                                        t.device)
    torch.empty = lambda shape, dtype, device: Tensor(
        (shape,) if isinstance(shape, int) else shape, None, dtype, device)
    torch.cuda = types.SimpleNamespace(
        device=lambda d: contextlib.nullcontext(),
        get_device_capability=lambda d: (9, 0),
        current_stream=lambda d: types.SimpleNamespace(cuda_stream=0))
    return torch


def inputs(batch, max_kv_len):
    """q [batch, 1, H, D] and an NHD cache of max_kv_len tokens per
    sequence. Nothing is read on the CPU: only shapes and addresses."""
    blocks = (max_kv_len + PAGE - 1) // PAGE
    q = Tensor((batch, 1, HEADS, HEAD_DIM))
    cache = Tensor((batch * blocks, PAGE, KV_HEADS, HEAD_DIM))
    table = Tensor((batch, blocks), dtype="torch.int32")
    lens = Tensor((batch,), dtype="torch.int32")
    return q, cache, cache, table, lens


# --- the fake driver's record of the last launch -----------------------------


class FakeLaunch(ctypes.Structure):
    _fields_ = [("entry", ctypes.c_char * 128),
                ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3),
                ("dynamicSmem", ctypes.c_uint),
                ("stream", ctypes.c_void_p),
                ("paramCount", ctypes.c_size_t),
                ("params", ctypes.c_uint64 * 64),
                ("paramSizes", ctypes.c_size_t * 64),
                # FakeCuda.h's by-value aggregates (tensor maps)
                ("bigParams", (ctypes.c_ubyte * 128) * 4),
                ("bigParamCount", ctypes.c_size_t)]


def combine_splits():
    """num_splits as the last launch received it: decode's combine, or the
    split kernel when one split wrote O itself (write_o, no combine)."""
    fake = ctypes.CDLL(tb.fake_cuda_path())  # the runtime's handle
    fake.fakecuda_last_launch.restype = ctypes.c_bool
    launch = FakeLaunch()
    assert fake.fakecuda_last_launch(ctypes.byref(launch)), "no launch"
    if b"combine" in launch.entry:
        return int(launch.params[6])  # o_part, lse_part, o, lse, batch, seq_q
    assert launch.entry == b"decode_split", launch.entry
    # q, k_cache, v_cache, block_table, kv_lens, o_part, lse_part, o, lse,
    # merge_counts, batch, seq_q, num_splits, ..., write_o, merge_ticket.
    splits, write_o = int(launch.params[12]), int(launch.params[29])
    # write_o 1: one split wrote O; 2: the last of a few splits merged them.
    assert launch.paramCount == 31 and write_o in (1, 2), (
        launch.paramCount, splits, write_o)
    assert (splits == 1) == (write_o == 1), (splits, write_o)
    return splits


# --- a process with compiled decode kernels and maybe a database -------------


def attnc_tool():
    path = os.environ.get("ATTNC_TEST_ATTNC_TOOL")
    if not path:
        build = Path(attnc.library_path()).resolve().parents[1]
        path = str(build / "bin" / "attnc")
    if not os.path.exists(path):
        raise tb.Skip("no attnc tool at %s (set ATTNC_TEST_ATTNC_TOOL)"
                      % path)
    return path


def bundle(cache, block_ns):
    specs = []
    for n in block_ns:
        spec = json.loads(SPEC.to_json())
        spec["tuning"] = {"block_n": n} if n else {}
        specs.append(spec)
    path = os.path.join(cache, "specs.json")
    with open(path, "w") as f:
        json.dump({"specs": specs}, f)
    r = subprocess.run([attnc_tool(), "bundle", "--specs", path, "-o", cache,
                        "--no-cubin"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def untuned_key():
    """The runtime's canonical key of SPEC, as database records name it
    (read from the missing-kernel error of an empty cache)."""
    with tempfile.TemporaryDirectory() as empty, tb.fake_gpu_process(empty):
        msg = tb.expect_error(
            lambda: _attention.context(0).get_decode_kernel(SPEC),
            status=NOT_FOUND)
    key = msg.split("no compiled kernel for spec ")[1].split()[0]
    return key.strip("'\",;()")


def record(bucket, block_n, splits=0):
    r = {"gpu": "", "arch": "sm_90a", "spec": untuned_key(),
         "bucket": bucket, "tuning": {"block_n": block_n}, "ms": 1.0}
    if splits:
        r["splits"] = splits
    return r


@contextlib.contextmanager
def decode_process(records):
    """A fresh process state: a cache with SPEC's kernels (default, TUNED_N,
    CALLER_N), $ATTNC_TUNING_DB holding `records` (None: unset), the fake
    driver and torch, and a spy on launches and database lookups. Yields
    (spy, kernels by block_n)."""
    saved_db = os.environ.pop("ATTNC_TUNING_DB", None)
    saved_torch = sys.modules.get("torch")
    saved_launch = Context.launch_decode
    saved_lookup = Context.get_decode_kernel_for
    spy = types.SimpleNamespace(launches=[], lookups=0)

    def launch(self, kernel, args, stream=0):
        spy.launches.append((kernel, args.num_splits))
        return saved_launch(self, kernel, args, stream)

    def lookup(self, *args):
        spy.lookups += 1
        return saved_lookup(self, *args)

    with tempfile.TemporaryDirectory() as cache:
        bundle(cache, (0, TUNED_N, CALLER_N))
        if records is not None:
            db = os.path.join(cache, "tuning.json")
            with open(db, "w") as f:
                json.dump({"version": 1, "records": records}, f)
            os.environ["ATTNC_TUNING_DB"] = db
        _decode._kernels.clear()
        Context.launch_decode, Context.get_decode_kernel_for = launch, lookup
        try:
            with tb.fake_gpu_process(cache):
                sys.modules["torch"] = decode_torch()
                ctx = _attention.context(0)
                kernels = {n: ctx.get_decode_kernel(
                    dataclasses.replace(SPEC, block_n=n))
                    for n in (0, TUNED_N, CALLER_N)}
                assert len(set(kernels.values())) == 3, kernels
                yield spy, kernels
        finally:
            Context.launch_decode = saved_launch
            Context.get_decode_kernel_for = saved_lookup
            _decode._kernels.clear()
            os.environ.pop("ATTNC_TUNING_DB", None)
            if saved_db is not None:
                os.environ["ATTNC_TUNING_DB"] = saved_db
            if saved_torch is not None:
                sys.modules["torch"] = saved_torch


def run(spy, batch, max_kv_len, **kw):
    """decode() at a size; (kernel, num_splits passed, combine's splits)."""
    attnc.decode(*inputs(batch, max_kv_len), max_kv_len=max_kv_len, **kw)
    kernel, splits = spy.launches[-1]
    return kernel, splits, combine_splits()


# --- tests -------------------------------------------------------------------


@test
def decode_without_a_database_runs_the_default_kernel():
    with decode_process(None) as (spy, kernels):
        for batch, kv in ((2, 500), (2, 3000), (64, 131073)):
            kernel, splits, combined = run(spy, batch, kv)
            assert kernel == kernels[0], (batch, kv)
            assert splits == 0 and combined >= 1, (splits, combined)
        # The caller's knobs.
        assert run(spy, 2, 3000, num_splits=3)[1:] == (3, 3)
        assert run(spy, 2, 3000, block_n=CALLER_N)[0] == kernels[CALLER_N]


@test
def decode_takes_the_database_kernel_and_splits_for_its_bucket():
    # 3 splits: below what the runtime's heuristic picks in that bucket
    # (5 to 7 with the fake driver's SM count), so the combine's count
    # tells the two apart.
    records = [record("decode b<=2 kv<=2048", TUNED_N, splits=3),
               record("decode b<=1 kv<=1024", TUNED_N)]
    with decode_process(records) as (spy, kernels):
        tuned, default = kernels[TUNED_N], kernels[0]
        # Sizes on both sides of each bucket edge, in an order that moves
        # in and out of the tuned bucket: the per-bucket cache gives what
        # the runtime's exact lookup gives.
        expected = [
            ((2, 1025), (tuned, 3)), ((2, 1024), (default, 0)),
            ((2, 2048), (tuned, 3)), ((2, 2049), (default, 0)),
            ((1, 1500), (default, 0)), ((3, 1500), (default, 0)),
            ((2, 1500), (tuned, 3)), ((1, 1024), (tuned, 0)),
            ((1, 1), (tuned, 0)), ((2, 1024), (default, 0)),
        ]
        for (batch, kv), (kernel, splits) in expected:
            got = run(spy, batch, kv)
            assert got[:2] == (kernel, splits), (batch, kv, got, kernels)
            if splits:
                assert got[2] == splits, (batch, kv, got)
        # One runtime lookup per bucket met: (2, 1024), (2, 2048),
        # (2, 4096), (1, 2048), (4, 2048), (1, 1024).
        assert spy.lookups == 6, spy.lookups
        # A caller's split count wins over the entry's; a caller's block_n
        # keeps its kernel, and the entry's splits are not applied to it.
        assert run(spy, 2, 1500, num_splits=7)[:2] == (tuned, 7)
        got = run(spy, 2, 1500, block_n=CALLER_N)
        assert got[:2] == (kernels[CALLER_N], 0), (got, kernels)
        assert spy.lookups == 6, spy.lookups


@test
def a_missing_database_kernel_falls_back_to_the_spec_kernel():
    # The database's variant is not compiled and no compiler is linked: the
    # runtime loads the spec's own kernel (it says so once on stderr)
    # instead of failing the call.
    records = [record("decode b<=2 kv<=1024", 128)]  # not compiled
    with decode_process(records) as (spy, kernels):
        got = run(spy, 2, 100)
        assert got[:2] == (kernels[0], 0), (got, kernels)
        assert run(spy, 2, 2000)[0] == kernels[0]


@test
def size_buckets_follow_the_runtime():
    bucket = _decode._size_bucket
    assert bucket(1, 1, 1) == bucket(1, 1, 1024) != bucket(1, 1, 1025)
    assert bucket(1, 1, 1025) == bucket(1, 1, 2048) != bucket(1, 1, 2049)
    assert bucket(1, 1, 131072) != bucket(1, 1, 131073)
    assert bucket(1, 1, 131073) == bucket(1, 1, 1 << 30)
    assert bucket(0, 1, 5) == bucket(1, 1, 5) != bucket(2, 1, 5)
    assert bucket(3, 1, 5) == bucket(4, 1, 5) != bucket(5, 1, 5)
    assert bucket(1, 16, 5) == bucket(1, 1, 5) != bucket(1, 17, 5)


# --- runner ------------------------------------------------------------------


def main():
    return tb.main(TESTS)


if __name__ == "__main__":
    sys.exit(main())
