#!/usr/bin/env python3
"""CPU tests of the attnc Python binding (python/attnc) through the real
libattnc.so: loading, version, the runtime's argument validation, the
torch-facing checks (on duck-typed fake tensors; torch is not needed) and,
with the test-only fake libcuda.so.1, the missing-kernel error.

Plain script, no pytest: python3 tests/python/test_binding.py
Environment: ATTNC_LIBRARY (default: <repo>/build/lib/libattnc.so),
ATTNC_TEST_FAKE_CUDA (default: the fake driver next to the library's build).
The last line is "N passed, N failed"; the exit status is 1 on failure.
"""

import contextlib
import ctypes
import math
import os
import subprocess
import sys
import tempfile
import traceback
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

import attnc  # noqa: E402
from attnc import _attention  # noqa: E402
from attnc._capi import INVALID_ARGUMENT, NOT_FOUND  # noqa: E402

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


class Skip(Exception):
    pass


def expect_error(fn, *fragments, status=None):
    """Calls fn, which must raise AttncError whose message contains every
    fragment (and whose status is `status` when given)."""
    try:
        fn()
    except attnc.AttncError as e:
        message = str(e)
        for fragment in fragments:
            assert fragment in message, \
                "%r not in message:\n  %s" % (fragment, message)
        if status is not None:
            assert e.status == status, \
                "status %r, expected %r (%s)" % (e.status, status, message)
        return message
    raise AssertionError("no AttncError raised; expected one containing %r"
                         % (fragments,))


def run_python(code, **env):
    full_env = dict(os.environ, PYTHONPATH=str(REPO / "python"), **env)
    return subprocess.run([sys.executable, "-c", code], env=full_env,
                          capture_output=True, text=True, timeout=60)


# --- duck-typed tensors ------------------------------------------------------


class FakeDevice:
    def __init__(self, type, index=None):
        self.type, self.index = type, index

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (
            self.type, self.index)


CUDA0 = FakeDevice("cuda", 0)
BASE = 0x7F0000000000  # 16-byte aligned


class FakeTensor:
    """Enough of torch.Tensor for attnc: dtype, shape, stride(), device,
    data_ptr(). dtype is the string torch prints, e.g. "torch.bfloat16"."""

    _next = BASE

    def __init__(self, shape, stride=None, dtype="torch.bfloat16",
                 device=CUDA0, data=None):
        self.shape = tuple(shape)
        if stride is None:  # contiguous
            stride, n = [], 1
            for size in reversed(self.shape):
                stride.insert(0, n)
                n *= size
        self._stride = tuple(stride)
        self.dtype, self.device = dtype, device
        if data is None:
            data = FakeTensor._next
            FakeTensor._next += 1 << 32
        self._data = data

    def stride(self):
        return self._stride

    def data_ptr(self):
        return self._data


def bhsd_as_bshd(b, h, s, d, **kw):
    """A contiguous [B, H, S, D] tensor viewed as [B, S, H, D], as
    x.transpose(1, 2) would give."""
    return FakeTensor((b, s, h, d), (h * s * d, d, s * d, 1), **kw)


def qkv(b=2, sq=128, skv=256, h=8, hkv=2, d=64, **kw):
    return (FakeTensor((b, sq, h, d), **kw),
            FakeTensor((b, skv, hkv, d), **kw),
            FakeTensor((b, skv, hkv, d), **kw))


SPEC = attnc.Spec(heads=8, kv_heads=2, head_dim=64, dtype="bf16")


def descs(q, k, v, o=None):
    o = o if o is not None else FakeTensor(q.shape, q.stride())
    return [_attention.describe(t) for t in (q, k, v, o)]


# --- (a), (b), (e): import, library, version ---------------------------------


@test
def import_without_torch():
    r = run_python(
        "import sys; sys.modules['torch'] = None  # import torch fails\n"
        "import attnc\n"
        "assert 'torch' not in [m for m in sys.modules if sys.modules[m]]\n"
        "print(attnc.version())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == attnc.version(), r.stdout


@test
def import_does_not_load_torch_or_library():
    r = run_python("import sys, attnc, attnc._capi as c\n"
                   "assert 'torch' not in sys.modules\n"
                   "assert c._lib is None\n")
    assert r.returncode == 0, r.stderr


@test
def version_and_build_id_come_from_the_library():
    path = Path(attnc.library_path())
    if os.environ.get("ATTNC_LIBRARY"):
        assert path == Path(os.environ["ATTNC_LIBRARY"]), path
    text = (REPO / "CMakeLists.txt").read_text()
    project_version = text.split("project(attnc", 1)[1].split("VERSION")[1]
    project_version = project_version.split(")")[0].split()[0]
    assert attnc.version() == project_version, attnc.version()
    build_id = attnc.build_id()
    assert build_id and build_id == build_id.strip(), repr(build_id)
    # The same strings through a second, independent ctypes handle.
    import ctypes
    handle = ctypes.CDLL(str(path))
    for name, value in (("attnc_version", attnc.version()),
                        ("attnc_build_id", build_id)):
        fn = getattr(handle, name)
        fn.restype = ctypes.c_char_p
        assert fn().decode() == value, (name, fn(), value)


@test
def struct_sizes_match_the_library():
    import ctypes
    from attnc import _capi
    spec = _capi._Spec()
    _capi.lib().attnc_spec_init(ctypes.byref(spec))
    assert spec.struct_size == ctypes.sizeof(_capi._Spec)
    assert spec.op == b"attention_fwd" and spec.window_left == -1
    assert math.isnan(spec.scale)
    options = _capi._ContextOptions()
    _capi.lib().attnc_context_options_init(ctypes.byref(options))
    assert options.struct_size == ctypes.sizeof(_capi._ContextOptions)


MISSING_LIBRARY_CODE = (
    "import attnc\n"
    "try:\n"
    "    attnc.version()\n"
    "except attnc.AttncError as e:\n"
    "    print(e)\n"
    "else:\n"
    "    raise SystemExit('loaded a library')\n")


@test
def missing_library_is_a_clear_error():
    bogus = "/nonexistent/attnc/libattnc.so"
    r = run_python(MISSING_LIBRARY_CODE, ATTNC_LIBRARY=bogus)
    assert r.returncode == 0, r.stdout + r.stderr
    for fragment in (bogus, "no such file", "scripts/build.sh",
                     "ATTNC_LIBRARY"):
        assert fragment in r.stdout, "%r not in:\n%s" % (fragment, r.stdout)


@test
def unloadable_library_is_a_clear_error():
    r = run_python(MISSING_LIBRARY_CODE, ATTNC_LIBRARY=__file__)
    assert r.returncode == 0, r.stdout + r.stderr
    for fragment in (__file__, "invalid ELF header", "scripts/build.sh"):
        assert fragment in r.stdout, "%r not in:\n%s" % (fragment, r.stdout)


# --- (c): validate_attention through attnc_attention_validate ----------------


@test
def validate_valid_bshd():
    attnc.validate_attention(SPEC, *descs(*qkv()))


@test
def validate_valid_transposed_views_and_gqa():
    q = bhsd_as_bshd(2, 8, 128, 64)
    k = bhsd_as_bshd(2, 2, 256, 64)
    v = bhsd_as_bshd(2, 2, 256, 64)
    o = bhsd_as_bshd(2, 8, 128, 64)
    attnc.validate_attention(SPEC, *descs(q, k, v, o=o))


@test
def validate_rejects_an_output_over_an_input():
    q, k, v = qkv()
    expect_error(lambda: attnc.validate_attention(SPEC, *descs(q, k, v, o=q)),
                 "overlaps q", status=INVALID_ARGUMENT)


@test
def validate_valid_with_lse():
    q, k, v = qkv()
    lse = FakeTensor((2, 8, 128), dtype="torch.float32")
    spec = attnc.Spec(heads=8, kv_heads=2, head_dim=64, has_lse=True)
    attnc.validate_attention(spec, *descs(q, k, v),
                             lse=_attention.describe_lse(lse))


@test
def validate_sinks_against_the_spec():
    # Attention sinks: the address is given iff the spec has sinks, 4-byte
    # aligned and not inside an output.
    q, k, v = qkv()
    spec = attnc.Spec(heads=8, kv_heads=2, head_dim=64, sinks=True)
    sinks = 0x7f0000100000
    attnc.validate_attention(spec, *descs(q, k, v), sinks=sinks)
    expect_error(lambda: attnc.validate_attention(spec, *descs(q, k, v)),
                 "sinks: data pointer is null", status=INVALID_ARGUMENT)
    expect_error(lambda: attnc.validate_attention(SPEC, *descs(q, k, v),
                                                  sinks=sinks),
                 "built without sinks", status=INVALID_ARGUMENT)
    expect_error(lambda: attnc.validate_attention(spec, *descs(q, k, v),
                                                  sinks=sinks + 2),
                 "not 4-byte aligned", status=INVALID_ARGUMENT)
    d = descs(q, k, v)
    expect_error(lambda: attnc.validate_attention(spec, *d, sinks=d[3].data),
                 "overlaps sinks", status=INVALID_ARGUMENT)


# --- varlen: packed sequences with cu_seqlens --------------------------------


VARLEN = attnc.Spec(heads=8, kv_heads=2, head_dim=64, varlen=True,
                    has_lse=True)


def packed(total_q=100, total_k=140, h=8, hkv=2, d=64, **kw):
    return (FakeTensor((total_q, h, d), **kw), FakeTensor((total_k, hkv, d), **kw),
            FakeTensor((total_k, hkv, d), **kw))


def varlen_descs(q, k, v, o=None, lse=None):
    from attnc import _varlen
    o = o if o is not None else FakeTensor(q.shape, q.stride())
    lse = lse if lse is not None else FakeTensor(
        (q.shape[1], q.shape[0]), dtype="torch.float32")
    return ([_varlen.describe_packed(t) for t in (q, k, v, o)],
            _varlen.describe_varlen_lse(lse))


def varlen_desc(batch=3, max_q=60, max_k=80, cu_q=0x7f0000200000,
                cu_k=0x7f0000300000):
    return attnc.VarlenDesc(cu_q, cu_k, batch, max_q, max_k)


@test
def validate_varlen_valid_and_packed_views():
    # Packed [total, H, D] tensors become [1, H, total, D] views whose
    # head and token strides are the tensor's; the LSE [H, total_q] becomes
    # [1, H, total_q].
    from attnc import _varlen
    q, k, v = packed()
    d, lse = varlen_descs(q, k, v)
    assert tuple(d[0].shape) == (1, 8, 100, 64), d[0]
    assert tuple(d[0].stride) == (0, 64, 512, 1), d[0]
    assert tuple(lse.shape) == (1, 8, 100) and tuple(lse.stride) == (0, 100, 1)
    attnc.validate_attention(VARLEN, *d, lse=lse, varlen=varlen_desc())
    # Every sequence empty, with empty tensors whose pointers are null.
    e = [FakeTensor((0, 8, 64), data=0), FakeTensor((0, 2, 64), data=0),
         FakeTensor((0, 2, 64), data=0)]
    d, lse = varlen_descs(*e, o=FakeTensor((0, 8, 64), data=0),
                          lse=FakeTensor((8, 0), dtype="torch.float32",
                                         data=0))
    attnc.validate_attention(VARLEN, *d, lse=lse,
                             varlen=varlen_desc(batch=2, max_q=0, max_k=0))
    assert _varlen.check_varlen_shapes(
        q, k, v, FakeTensor((4,), dtype="torch.int32"),
        FakeTensor((4,), dtype="torch.int32"), 60, 80) == "bf16"


@test
def validate_varlen_rejects_bad_arguments():
    q, k, v = packed()
    d, lse = varlen_descs(q, k, v)

    def check(varlen, *fragments, spec=VARLEN, descs=None, lse_desc=lse):
        expect_error(lambda: attnc.validate_attention(
            spec, *(descs or d), lse=lse_desc, varlen=varlen), *fragments,
            status=INVALID_ARGUMENT)

    check(None, "cu_seqlens_q: data pointer is null")
    check(varlen_desc(cu_k=0), "cu_seqlens_k: data pointer is null")
    check(varlen_desc(cu_q=0x7f0000200002), "cu_seqlens_q", "not 4-byte")
    check(varlen_desc(max_q=101), "max_seqlen_q is 101", "total rows 100")
    check(varlen_desc(max_k=-1), "max_seqlen_k is -1")
    check(varlen_desc(max_q=0), "max_seqlen_q is 0 but q has 100 rows")
    check(varlen_desc(batch=70000), "varlen batch", "65535")
    # A dense [B, H, S, D] view is not a packed one.
    dense = descs(*qkv())
    check(varlen_desc(), "q.shape[0] must be 1 for a varlen kernel",
          descs=dense, lse_desc=None)
    # A spec without varlen takes no cu_seqlens.
    check(varlen_desc(), "built without varlen",
          spec=attnc.Spec(heads=8, kv_heads=2, head_dim=64, has_lse=True))
    # The output may not overlap an input (as for dense kernels).
    d2, _ = varlen_descs(q, k, v, o=q)
    check(varlen_desc(), "overlaps q", descs=d2)


# --- paged varlen: packed queries over a paged KV cache ---------------------


PAGED = attnc.Spec(heads=8, kv_heads=2, head_dim=64, varlen=True,
                   has_lse=True, page_size=16)


def paged_args(pages=40, page=16, layout="NHD"):
    """q [100, 8, 64], NHD/HND caches, their descriptors and a VarlenDesc."""
    from attnc import _varlen
    q = FakeTensor((100, 8, 64))
    shape = (pages, page, 2, 64) if layout == "NHD" else (pages, 2, page, 64)
    kc, vc = FakeTensor(shape), FakeTensor(shape)
    o = FakeTensor(q.shape)
    lse = FakeTensor((8, 100), dtype="torch.float32")
    d = [_varlen.describe_packed(q), _varlen.describe_cache(kc, layout),
         _varlen.describe_cache(vc, layout), _varlen.describe_packed(o)]
    return q, kc, vc, d, _varlen.describe_varlen_lse(lse)


def paged_desc(batch=3, max_q=60, max_k=200, table=0x7f0000400000,
               max_blocks=16, lens=0x7f0000500000, cu_k=0):
    return attnc.VarlenDesc(0x7f0000200000, cu_k, batch, max_q, max_k,
                            table, max_blocks, lens)


@test
def validate_paged_valid_and_cache_views():
    # An NHD cache [pages, page_size, Hkv, D] becomes the runtime's [pages,
    # Hkv, page_size, D] view with the cache's own strides; HND as it is.
    _, _, _, d, lse = paged_args()
    assert tuple(d[1].shape) == (40, 2, 16, 64), d[1]
    assert tuple(d[1].stride) == (16 * 2 * 64, 64, 128, 1), d[1]
    attnc.validate_attention(PAGED, *d, lse=lse, varlen=paged_desc())
    _, _, _, d, lse = paged_args(layout="HND")
    assert tuple(d[1].stride) == (2 * 16 * 64, 16 * 64, 64, 1), d[1]
    attnc.validate_attention(PAGED, *d, lse=lse, varlen=paged_desc())


@test
def validate_paged_rejects_bad_arguments():
    _, _, _, d, lse = paged_args()

    def check(varlen, *fragments, spec=PAGED, descs=None):
        expect_error(lambda: attnc.validate_attention(
            spec, *(descs or d), lse=lse, varlen=varlen), *fragments,
            status=INVALID_ARGUMENT)

    check(paged_desc(table=0), "block_table: data pointer is null")
    check(paged_desc(lens=0x7f0000500002), "kv_lens", "not 4-byte aligned")
    check(paged_desc(cu_k=0x7f0000300000), "cu_seqlens_k must be null")
    check(paged_desc(max_blocks=0), "max_blocks", "must be 1 to")
    check(paged_desc(max_k=16 * 16 + 1), "max_seqlen_k is 257",
          "max_blocks x page_size = 256")
    # The cache's page size is the spec's.
    _, _, _, d32, _ = paged_args(page=32)
    check(paged_desc(), "k_cache", "the kernel's spec page_size", descs=d32)
    # A varlen kernel without pages takes no block table.
    check(paged_desc(cu_k=0x7f0000300000), "built without a paged cache",
          spec=VARLEN)
    # page_size is a varlen attention's only.
    expect_error(lambda: attnc.validate_attention(
        attnc.Spec(heads=8, kv_heads=2, head_dim=64, page_size=16), *d),
        "needs varlen=true", status=INVALID_ARGUMENT)


@test
def paged_python_checks():
    # attention_varlen's paged checks, before any device or torch.
    from attnc import _varlen
    i32 = "torch.int32"
    q, kc, vc, _, _ = paged_args()
    cu = FakeTensor((4,), dtype=i32)
    table = FakeTensor((3, 16), dtype=i32)
    lens = FakeTensor((3,), dtype=i32)
    assert _varlen.check_paged_shapes(q, kc, vc, cu, table, lens, 60,
                                      200) == ("bf16", 16)

    def check(*fragments, **kw):
        args = dict(q=q, k_cache=kc, v_cache=vc, cu_seqlens_q=cu,
                    block_table=table, seqused_k=lens, max_seqlen_q=60,
                    max_seqlen_k=200)
        args.update(kw)
        expect_error(lambda: _varlen.check_paged_shapes(**args), *fragments)

    check("is a paged cache of 4 dims", k_cache=FakeTensor((640, 2, 64)),
          v_cache=FakeTensor((640, 2, 64)))
    check("block_table must be a contiguous [B, max_blocks]",
          block_table=FakeTensor((2, 16), dtype=i32))
    check("block_table must be", block_table=FakeTensor((3, 16)))
    check("seqused_k must be a contiguous [B]", seqused_k=None)
    check("max_seqlen_k is 257; it must be 0 to 256", max_seqlen_k=257)
    check("not a multiple of the caches' 3 heads",
          k_cache=FakeTensor((40, 16, 3, 64)), v_cache=FakeTensor((40, 16, 3, 64)))
    check("layout must be 'NHD' or 'HND'", layout="BHSD")
    # attention_varlen itself: cu_seqlens_k and seqused_k belong to one form
    # each.
    expect_error(lambda: attnc.attention_varlen(
        q, kc, vc, cu, cu, 60, 200, block_table=table, seqused_k=lens),
        "pass cu_seqlens_k=None")
    expect_error(lambda: attnc.attention_varlen(
        q, kc, vc, cu, cu, 60, 200, seqused_k=lens), "pass block_table too")


@test
def varlen_python_checks():
    # attnc.attention_varlen's own checks, before any device or torch.
    from attnc import _varlen
    i32 = "torch.int32"
    q, k, v = packed()
    cu = FakeTensor((4,), dtype=i32)

    def check(*fragments, **kw):
        args = dict(q=q, k=k, v=v, cu_seqlens_q=cu, cu_seqlens_k=cu,
                    max_seqlen_q=60, max_seqlen_k=80)
        args.update(kw)
        expect_error(lambda: _varlen.check_varlen_shapes(**args), *fragments)

    check("expected 3 dims [total, heads, head_dim]",
          q=FakeTensor((2, 50, 8, 64)))
    check("cu_seqlens_q must be a 1-D torch.int32",
          cu_seqlens_q=FakeTensor((4,), dtype="torch.int64"))
    check("cu_seqlens_q has 4 entries but cu_seqlens_k 3",
          cu_seqlens_k=FakeTensor((3,), dtype=i32))
    check("max_seqlen_q is 101", max_seqlen_q=101)
    check("max_seqlen_k must be an int", max_seqlen_k=1.5)
    check("not a multiple of k/v's 3 heads", k=FakeTensor((140, 3, 64)),
          v=FakeTensor((140, 3, 64)))
    check("q.stride(2) (head_dim) is 2", q=FakeTensor((100, 8, 64),
                                                      (1024, 128, 2)))
    check("q has dtype torch.float32", q=FakeTensor((100, 8, 64),
                                                    dtype="torch.float32"))


@test
def validate_null_pointer():
    q, k, v = qkv()
    q._data = 0
    expect_error(lambda: attnc.validate_attention(SPEC, *descs(q, k, v)),
                 "q: data pointer is null", "(InvalidArgument)",
                 status=INVALID_ARGUMENT)


@test
def validate_misaligned_pointer():
    q, k, v = qkv()
    k._data += 8
    expect_error(lambda: attnc.validate_attention(SPEC, *descs(q, k, v)),
                 "k: data pointer", "is not 16-byte aligned",
                 status=INVALID_ARGUMENT)


@test
def validate_head_dim_differs_from_spec():
    spec = attnc.Spec(heads=8, kv_heads=2, head_dim=128)
    expect_error(lambda: attnc.validate_attention(spec, *descs(*qkv())),
                 "q.shape[3] (head dim) is 64",
                 "the kernel's spec head_dim is 128")


@test
def validate_heads_differ_from_spec():
    spec = attnc.Spec(heads=16, kv_heads=2, head_dim=64)
    expect_error(lambda: attnc.validate_attention(spec, *descs(*qkv())),
                 "q.shape[1] (heads) is 8", "the kernel's spec heads is 16")


@test
def validate_kv_heads_differ_from_spec():
    spec = attnc.Spec(heads=8, kv_heads=4, head_dim=64)
    expect_error(lambda: attnc.validate_attention(spec, *descs(*qkv())),
                 "k.shape[1] (heads) is 2", "spec kv_heads is 4")


@test
def validate_non_unit_head_dim_stride():
    q, k, v = qkv()
    v._stride = v._stride[:3] + (2,)
    expect_error(lambda: attnc.validate_attention(SPEC, *descs(q, k, v)),
                 "v.stride[3] (head dim) must be 1, got 2")


@test
def validate_batch_mismatch():
    q, _, v = qkv()
    k = FakeTensor((3, 256, 2, 64))
    expect_error(lambda: attnc.validate_attention(SPEC, *descs(q, k, v)),
                 "k.shape[0] (batch) is 3 but q's batch is 2")


@test
def validate_lse_presence_follows_spec():
    q, k, v = qkv()
    lse = _attention.describe_lse(FakeTensor((2, 8, 128)))
    expect_error(lambda: attnc.validate_attention(SPEC, *descs(q, k, v),
                                                  lse=lse),
                 "lse: data pointer must be null", "has_lse=false")
    spec = attnc.Spec(heads=8, kv_heads=2, head_dim=64, has_lse=True)
    expect_error(lambda: attnc.validate_attention(spec, *descs(q, k, v)),
                 "lse: data pointer is null", "has_lse=true")


@test
def validate_descriptor_rank():
    q, k, v, o = descs(*qkv())
    bad = attnc.TensorDesc(q.data, q.shape[:2], q.stride[:2])
    expect_error(lambda: attnc.validate_attention(SPEC, bad, k, v, o),
                 "q descriptor must have 4 dims")


# --- (d): torch-facing checks on duck types ----------------------------------


def attention_error(q, k, v, *fragments, **kw):
    msg = expect_error(lambda: attnc.attention(q, k, v, **kw), *fragments)
    assert msg.startswith("attnc.attention: "), msg


@test
def attention_rejects_cpu_tensor():
    q, k, v = qkv()
    k.device = FakeDevice("cpu")
    attention_error(q, k, v, "k is on cpu", "CUDA tensors", "k.cuda()")


@test
def attention_rejects_tensors_on_different_devices():
    q, k, v = qkv()
    v.device = FakeDevice("cuda", 1)
    attention_error(q, k, v, "q is on cuda:0 but v is on cuda:1",
                    "one device")


@test
def attention_rejects_unsupported_dtype():
    q, k, v = qkv(dtype="torch.float32")
    attention_error(q, k, v, "q has dtype torch.float32",
                    "torch.bfloat16, torch.float16")


@test
def attention_rejects_dtype_mismatch():
    q, k, v = qkv()
    v.dtype = "torch.float16"
    attention_error(q, k, v,
                    "q has dtype torch.bfloat16 but v has torch.float16")


@test
def attention_rejects_wrong_rank():
    q, k, v = qkv()
    q = FakeTensor((2, 128, 512))
    attention_error(q, k, v, "q has shape (2, 128, 512) (3 dims)",
                    "[batch, seq, heads, head_dim]")


@test
def attention_rejects_batch_mismatch():
    q, k, v = qkv()
    v = FakeTensor((1, 256, 2, 64))
    attention_error(q, k, v, "batch differs: q.shape[0] = 2 but "
                    "v.shape[0] = 1")


@test
def attention_rejects_seq_mismatch():
    q, k, v = qkv()
    v = FakeTensor((2, 255, 2, 64))
    attention_error(q, k, v, "seq differs: k.shape[1] = 256 but "
                    "v.shape[1] = 255")


@test
def attention_rejects_head_dim_mismatch():
    q, k, v = qkv()
    k = FakeTensor((2, 256, 2, 128))
    attention_error(q, k, v, "head_dim differs: q.shape[3] = 64 but "
                    "k.shape[3] = 128")


@test
def attention_rejects_kv_heads_mismatch():
    q, k, v = qkv()
    v = FakeTensor((2, 256, 4, 64))
    attention_error(q, k, v, "kv heads differ: k.shape[2] = 2 but "
                    "v.shape[2] = 4")


@test
def attention_rejects_heads_not_multiple_of_kv_heads():
    q, k, v = qkv(h=6, hkv=4)
    attention_error(q, k, v, "q has 6 heads, which is not a multiple of "
                    "k/v's 4 heads")


@test
def attention_rejects_non_unit_head_dim_stride():
    q, k, v = qkv()
    q = FakeTensor((2, 128, 8, 64), (128 * 8 * 128, 8 * 128, 128, 2))
    attention_error(q, k, v, "q.stride(3) (head_dim) is 2; it must be 1",
                    "q.contiguous()")


@test
def check_inputs_accepts_fp16_and_transposed_views():
    assert _attention.check_inputs(*qkv(dtype="torch.float16")) == "fp16"
    q = bhsd_as_bshd(2, 8, 128, 64)
    k = bhsd_as_bshd(2, 2, 256, 64)
    assert _attention.check_inputs(q, k, k) == "bf16"


@test
def describe_maps_bshd_to_bhsd():
    t = FakeTensor((2, 128, 8, 64))  # [B, S, H, D] contiguous
    d = _attention.describe(t)
    assert tuple(d.shape) == (2, 8, 128, 64), d
    assert tuple(d.stride) == (128 * 8 * 64, 64, 8 * 64, 1), d
    assert d.data == t.data_ptr()
    t = bhsd_as_bshd(2, 8, 128, 64)  # contiguous [B, H, S, D] underneath
    d = _attention.describe(t)
    assert tuple(d.shape) == (2, 8, 128, 64), d
    assert tuple(d.stride) == (8 * 128 * 64, 128 * 64, 64, 1), d


@test
def arch_for_capability():
    assert _attention.arch_for_capability((9, 0)) == "sm_90a"
    assert _attention.arch_for_capability((8, 0)) == "sm_80"
    assert _attention.arch_for_capability((8, 9)) == "sm_80"
    for cc in ((7, 5), (10, 0), (12, 0)):
        expect_error(lambda: _attention.arch_for_capability(cc),
                     "compute capability %d.%d is not supported" % cc,
                     "sm_80", "sm_90a", "arch=")


@test
def make_spec_maps_options():
    q, k, _ = qkv()
    spec = _attention.make_spec(q, k, dtype="bf16", arch="sm_90a")
    assert spec == attnc.Spec(heads=8, kv_heads=2, head_dim=64, dtype="bf16",
                              arch="sm_90a"), spec
    assert (spec.window_left, spec.window_right, spec.softcap, spec.scale,
            spec.has_lse, spec.causal) == (-1, -1, 0.0, None, False, False)
    spec = _attention.make_spec(q, k, dtype="fp16", arch="sm_80", causal=1,
                                window=(128, 0), softcap=30, scale=0.1,
                                return_lse=True, block_m=64, block_n=32)
    assert (spec.dtype, spec.arch, spec.causal, spec.window_left,
            spec.window_right, spec.softcap, spec.scale, spec.has_lse,
            spec.block_m, spec.block_n) == (
        "fp16", "sm_80", True, 128, 0, 30.0, 0.1, True, 64, 32), spec
    spec = _attention.make_spec(q, k, dtype="bf16", arch="sm_80",
                                window=(None, 0), scale=float("nan"))
    assert (spec.window_left, spec.window_right, spec.scale) == (-1, 0, None)
    # Specs are dictionary keys (the per-context kernel cache).
    assert {spec: 1}[_attention.make_spec(q, k, dtype="bf16", arch="sm_80",
                                          window=(-1, 0))] == 1


# --- missing kernel, through the fake driver ---------------------------------


def fake_cuda_path():
    path = os.environ.get("ATTNC_TEST_FAKE_CUDA")
    if not path:
        build = Path(attnc.library_path()).resolve().parents[1]
        path = str(build / "tests" / "runtime" / "fake_cuda" / "libcuda.so.1")
    if not os.path.exists(path):
        raise Skip("no fake libcuda.so.1 at %s (set ATTNC_TEST_FAKE_CUDA)"
                   % path)
    return path


def fake_torch(capability=(9, 0)):
    """The few torch functions attention() calls, over FakeTensor."""
    torch = types.ModuleType("torch")
    torch.float32 = "torch.float32"
    torch.empty_like = lambda t: FakeTensor(t.shape, t.stride(), t.dtype,
                                            t.device)
    torch.empty = lambda shape, dtype, device: FakeTensor(shape, None, dtype,
                                                          device)
    torch.cuda = types.SimpleNamespace(
        device=lambda d: contextlib.nullcontext(),
        get_device_capability=lambda d: capability,
        current_stream=lambda d: types.SimpleNamespace(cuda_stream=0))
    return torch


@contextlib.contextmanager
def fake_gpu_process(cache_dir):
    saved = (sys.modules.get("torch"), os.environ.get("ATTNC_CACHE_DIR"),
             _attention._driver_library)
    sys.modules["torch"] = fake_torch()
    os.environ["ATTNC_CACHE_DIR"] = cache_dir
    _attention._driver_library = fake_cuda_path()
    try:
        yield
    finally:
        for ctx in _attention._contexts.values():
            ctx.close()
        _attention._contexts.clear()
        if saved[0] is None:
            del sys.modules["torch"]
        else:
            sys.modules["torch"] = saved[0]
        if saved[1] is None:
            del os.environ["ATTNC_CACHE_DIR"]
        else:
            os.environ["ATTNC_CACHE_DIR"] = saved[1]
        _attention._driver_library = saved[2]


@test
def missing_kernel_names_spec_and_attnc_bundle():
    with tempfile.TemporaryDirectory() as cache, fake_gpu_process(cache):
        q, k, v = qkv()
        msg = expect_error(
            lambda: attnc.attention(q, k, v, causal=True, window=(64, 0)),
            "attnc_get_kernel_for(Spec(heads=8, kv_heads=2, head_dim=64",
            "(NotFound)", "no compiled kernel for spec",
            "op=attention_fwd;dtype=bf16;heads=8;kv_heads=2;head_dim=64;"
            "causal=1;window_left=64;window_right=0;", "arch=sm_90a",
            "in cache directory '%s'" % cache, "attnc bundle",
            status=NOT_FOUND)
        assert "has_lse=0" in msg, msg
        # One context per device, reused.
        assert list(_attention._contexts) == [0]
        assert _attention.context(0).cache_dir() == cache
        expect_error(lambda: attnc.attention(q, k, v, return_lse=True,
                                             arch="sm_80"),
                     "has_lse=1", "arch=sm_80", "attnc bundle",
                     status=NOT_FOUND)
        assert list(_attention._contexts) == [0]


@test
def mods_look_up_the_kernel_of_their_trace():
    # score_mod / mask_mod: the spec's custom_ir is the traced kernel
    # function, whose hash is in the key: one kernel per distinct trace.
    import re
    import attnc.mods as mods

    def alibi(s, b, h, i, j):
        return s - 0.25 * mods.abs(i - j)

    def key_of(**kw):
        msg = expect_error(lambda: attnc.attention(q, k, v, **kw),
                           "no compiled kernel", "attnc bundle",
                           status=NOT_FOUND)
        found = re.search(r"custom_ir=(none|[0-9a-f]{32});", msg)
        assert found, msg
        return found.group(1)

    with tempfile.TemporaryDirectory() as cache, fake_gpu_process(cache):
        q, k, v = qkv()
        first = key_of(causal=True, score_mod=alibi)
        assert first != "none"
        assert key_of(causal=True, score_mod=alibi) == first
        assert key_of(causal=True,
                      score_mod=lambda s, b, h, i, j:
                      s - 0.25 * mods.abs(i - j)) == first  # same trace
        assert key_of(causal=True, score_mod=lambda s, b, h, i, j:
                      s - 0.5 * mods.abs(i - j)) != first
        assert key_of(causal=True, score_mod=alibi,
                      mask_mod=lambda b, h, i, j: j < 100) != first
        assert key_of(causal=True) == "none"
        spec = _attention.make_spec(q, k, dtype="bf16", arch="sm_90a",
                                    causal=True, window=(32, -1),
                                    score_mod=alibi)
        assert spec.custom_ir == mods.attention_ir(
            heads=8, kv_heads=2, head_dim=64, causal=True, window=(32, -1),
            score_mod=alibi), spec.custom_ir
        assert "window = #attn.window<32, 0>" in spec.custom_ir
        expect_error(lambda: attnc.attention(
            q, k, v, mask_mod=lambda b, h, i, j: i > j and j > 0),
            "no truth value while tracing")
        # mods.bundle_spec names the kernel attention() looks up: bundled
        # with the attnc tool (when built), the call finds and launches it.
        tool = os.environ.get("ATTNC_TEST_ATTNC_TOOL")
        if not tool:
            tool = str(Path(attnc.library_path()).resolve().parents[1] /
                       "bin" / "attnc")
        if os.path.exists(tool):
            import json
            spec = mods.bundle_spec(heads=8, kv_heads=2, head_dim=64,
                                    causal=True, score_mod=alibi)
            path = os.path.join(cache, "specs.json")
            with open(path, "w") as f:
                json.dump({"specs": [spec]}, f)
            r = subprocess.run([tool, "bundle", "--no-cubin", "--specs", path,
                                "-o", cache], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            o = attnc.attention(q, k, v, causal=True, score_mod=alibi)
            assert tuple(o.shape) == tuple(q.shape)
            # Another trace is still another kernel.
            assert key_of(causal=True, score_mod=lambda s, b, h, i, j:
                          s - 0.5 * mods.abs(i - j)) != first
        else:
            print("note: no attnc tool at %s; the bundled-mod lookup did not "
                  "run" % tool)


@test
def mods_pass_their_captured_tensors_to_the_kernel():
    # A kernel whose mods capture a slopes vector (closure) and document
    # ids (a default argument), bundled as PTX for the fake driver: each
    # call's launch takes the tensors the variables hold then, in the IR's
    # order, with one kernel lookup while dtypes and ranks stay.
    import json
    import attnc.mods as mods

    attnc_bin = Path(attnc.library_path()).resolve().parents[1] / "bin" / "attnc"
    if not attnc_bin.exists():
        raise Skip("no attnc CLI at %s" % attnc_bin)
    slopes = FakeTensor((8,), dtype="torch.float32")
    doc = FakeTensor((2, 128), dtype="torch.int32")

    def alibi(s, b, h, i, j):
        return s - slopes[h] * mods.abs(i - j)

    def documents(b, h, i, j, ids=doc):
        return ids[b, i] == ids[b, j]

    lookups = [0]
    original = attnc.Context.get_kernel_for

    def counted(self, *a, **kw):
        lookups[0] += 1
        return original(self, *a, **kw)

    spec = mods.bundle_spec(heads=8, kv_heads=2, head_dim=64, causal=True,
                            score_mod=alibi, mask_mod=documents)
    assert ("captures(%arg_c0, %arg_c1 : tensor<?xf32>, tensor<?x?xi32>)"
            in spec["custom_ir"]), spec["custom_ir"]
    attnc.Context.get_kernel_for = counted
    try:
        with tempfile.TemporaryDirectory() as cache:
            path = os.path.join(cache, "specs.json")
            with open(path, "w") as f:
                json.dump({"specs": [spec]}, f)
            r = subprocess.run([str(attnc_bin), "bundle", "--specs", path,
                                "-o", cache, "--no-cubin"],
                               capture_output=True, text=True)
            assert r.returncode == 0, r.stdout + r.stderr
            with fake_gpu_process(cache):
                q, k, v = qkv()
                slopes_before = slopes.data_ptr()
                params = []
                for n in range(3):
                    if n == 2:  # another vector in the closure variable
                        slopes = FakeTensor((40,), (2,),
                                            dtype="torch.float32")
                    attnc.attention(q, k, v, causal=True, score_mod=alibi,
                                    mask_mod=documents)
                    params.append(list(last_fake_launch().params))
                assert lookups[0] == 1, lookups
                first, _, third = params
                for launch, want in ((first, slopes_before),
                                     (third, slopes.data_ptr())):
                    assert want in launch and doc.data_ptr() in launch, (
                        [hex(x) for x in launch])
                    assert launch.index(want) < launch.index(
                        doc.data_ptr()), [hex(x) for x in launch]
                assert slopes_before not in third
                # The runtime checks the captures against the kernel.
                ctx = _attention.context(0)
                kernel = ctx.get_kernel_for(_attention.make_spec(
                    q, k, dtype="bf16", arch="sm_90a", causal=True,
                    score_mod=alibi, mask_mod=documents), 2, 128, 256)
                o = FakeTensor(q.shape)
                capture = attnc.CaptureDesc(slopes.data_ptr(), "f32", (8,),
                                            (1,))
                expect_error(lambda: ctx.launch(kernel, *descs(q, k, v, o),
                                                captures=[capture]),
                             "captured tensor", status=INVALID_ARGUMENT)
                expect_error(lambda: ctx.launch(
                    kernel, *descs(q, k, v, o), captures=[
                        capture, attnc.CaptureDesc(doc.data_ptr(), "f32",
                                                   (2, 128), (128, 1))]),
                    "capture 1", status=INVALID_ARGUMENT)
    finally:
        attnc.Context.get_kernel_for = original


@test
def attention_takes_the_tuning_database_config_for_its_size():
    # A database record for this spec at seq_kv <= 1024 (GPU "": the fake
    # driver names none). attention() asks for the kernel at its size, so
    # the missing kernel's spec is the tuned one; another size is not.
    with tempfile.TemporaryDirectory() as cache:
        db = os.path.join(cache, "tuning.json")
        key = ("op=attention_fwd;dtype=bf16;heads=8;kv_heads=2;head_dim=64;"
               "causal=0;window_left=-1;window_right=-1;softcap=0;"
               "scale=0.125;has_lse=0;arch=sm_90a;custom_ir=none;block_m=0;"
               "block_n=0;stages=0;warps=0")
        with open(db, "w") as f:
            f.write('{"version": 1, "records": [{"gpu": "", "arch": "sm_90a", '
                    '"spec": "%s", "bucket": "prefill kv<=1024", '
                    '"tuning": {"block_m": 64, "block_n": 32}, "ms": 1.0}]}'
                    % key)
        saved = os.environ.get("ATTNC_TUNING_DB")
        os.environ["ATTNC_TUNING_DB"] = db
        try:
            with fake_gpu_process(cache):
                expect_error(lambda: attnc.attention(*qkv(skv=256)),
                             "attnc_get_kernel_for(", "seq_kv 256",
                             "block_m=64;block_n=32;", status=NOT_FOUND)
                msg = expect_error(lambda: attnc.attention(*qkv(skv=4096)),
                                   "block_m=0;block_n=0;", status=NOT_FOUND)
                assert "seq_kv 4096" in msg, msg
        finally:
            if saved is None:
                del os.environ["ATTNC_TUNING_DB"]
            else:
                os.environ["ATTNC_TUNING_DB"] = saved


@test
def invalid_spec_option_is_reported_by_the_runtime():
    with tempfile.TemporaryDirectory() as cache, fake_gpu_process(cache):
        expect_error(lambda: attnc.attention(*qkv(), softcap=-1.0),
                     "softcap must be finite and >= 0",
                     status=INVALID_ARGUMENT)
        expect_error(lambda: attnc.attention(*qkv(), arch="sm_70"),
                     'arch "sm_70" is not supported',
                     status=INVALID_ARGUMENT)


class FakeCudaStats(ctypes.Structure):
    """FakeCuda.h's FakeCudaStats."""
    _fields_ = [(name, ctypes.c_int) for name in (
        "launches", "moduleLoads", "ptxLoads", "cubinLoads", "liveModules",
        "setAttributeCalls", "primaryRetains", "pushes")]


def fake_launches():
    """Kernel launches the fake driver has seen (the runtime's handle: the
    same library, loaded once)."""
    fake = ctypes.CDLL(fake_cuda_path())
    stats = FakeCudaStats()
    fake.fakecuda_stats(ctypes.byref(stats))
    return stats.launches


class FakeCudaLaunch(ctypes.Structure):
    """FakeCuda.h's FakeCudaLaunch."""
    _fields_ = [("entry", ctypes.c_char * 128),
                ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3),
                ("dynamicSmem", ctypes.c_uint),
                ("stream", ctypes.c_void_p),
                ("paramCount", ctypes.c_size_t),
                ("params", ctypes.c_uint64 * 64),
                ("paramSizes", ctypes.c_size_t * 64),
                ("bigParams", (ctypes.c_ubyte * 128) * 4),
                ("bigParamCount", ctypes.c_size_t)]


def last_fake_launch():
    fake = ctypes.CDLL(fake_cuda_path())
    fake.fakecuda_last_launch.restype = ctypes.c_bool
    launch = FakeCudaLaunch()
    assert fake.fakecuda_last_launch(ctypes.byref(launch)), "no launch"
    return launch


@test
def repeated_attention_call_reuses_its_plan():
    # A bundle with qkv()'s kernel as PTX (the fake driver loads PTX text).
    attnc_bin = Path(attnc.library_path()).resolve().parents[1] / "bin" / "attnc"
    if not attnc_bin.exists():
        raise Skip("no attnc CLI at %s" % attnc_bin)
    lookups = [0]
    original = attnc.Context.get_kernel_for

    def counted(self, *a, **kw):
        lookups[0] += 1
        return original(self, *a, **kw)
    attnc.Context.get_kernel_for = counted
    try:
        with tempfile.TemporaryDirectory() as cache:
            specs = os.path.join(cache, "specs.json")
            with open(specs, "w") as f:
                f.write('{"specs": [{"op": "attention_fwd", "dtype": "bf16", '
                        '"heads": 8, "kv_heads": 2, "head_dim": 64, '
                        '"arch": "sm_90a"}]}')
            subprocess.run([str(attnc_bin), "bundle", "--specs", specs, "-o",
                            cache, "--no-cubin"], check=True,
                           capture_output=True)
            with fake_gpu_process(cache):
                base = fake_launches()

                def calls():
                    return {"get_kernel_for": lookups[0],
                            "launch": fake_launches() - base}
                q, k, v = qkv()
                for _ in range(3):
                    attnc.attention(q, k, v)
                assert calls() == {"get_kernel_for": 1, "launch": 3}, calls()
                # New tensors of the same shapes: the same plan, and the
                # launch gets the new tensors' addresses.
                q2, k2, v2 = qkv()
                attnc.attention(q2, k2, v2)
                assert calls() == {"get_kernel_for": 1, "launch": 4}, calls()
                launch = last_fake_launch()
                # The kernel's first parameters: q, k, v, o.
                assert list(launch.params[:3]) == [
                    q2.data_ptr(), k2.data_ptr(), v2.data_ptr()], [
                    hex(p) for p in launch.params[:4]]
                # Another size or option is another plan; a failed lookup
                # (not compiled) is not kept.
                attnc.attention(*qkv(skv=512))
                assert calls() == {"get_kernel_for": 2, "launch": 5}, calls()
                for _ in range(2):
                    expect_error(lambda: attnc.attention(q, k, v, causal=True),
                                 "causal=1", status=NOT_FOUND)
                assert calls() == {"get_kernel_for": 4, "launch": 5}, calls()
                # A bad tensor whose metadata matches no plan is still
                # checked.
                attention_error(q, k, FakeTensor(v.shape, v.stride(),
                                                 "torch.float16"),
                                "but v has torch.float16")
            # A new process state (new context): looked up again.
            with fake_gpu_process(cache):
                attnc.attention(*qkv())
                assert lookups[0] == 5, lookups
    finally:
        attnc.Context.get_kernel_for = original


@test
def repeated_row_call_passes_new_addresses():
    # fused_add_rms_norm's kernel as PTX for the fake driver: a repeated
    # call (its launch arguments reused from the first) must still pass
    # each call's own tensors, and its outputs allocated like x.
    attnc_bin = Path(attnc.library_path()).resolve().parents[1] / "bin" / "attnc"
    if not attnc_bin.exists():
        raise Skip("no attnc CLI at %s" % attnc_bin)
    with tempfile.TemporaryDirectory() as cache:
        specs = os.path.join(cache, "specs.json")
        with open(specs, "w") as f:
            f.write('{"specs": [{"op": "add_rmsnorm", "dtype": "bf16", '
                    '"hidden": 4096, "eps": 1e-6, "arch": "sm_90a"}]}')
        subprocess.run([str(attnc_bin), "bundle", "--specs", specs, "-o",
                        cache, "--no-cubin"], check=True, capture_output=True)
        with fake_gpu_process(cache):
            base = fake_launches()
            for _ in range(3):
                x, r = FakeTensor((4, 4096)), FakeTensor((4, 4096))
                w = FakeTensor((4096,))
                y, h = attnc.fused_add_rms_norm(x, r, w)
                params = list(last_fake_launch().params[:5])
                assert params == [x.data_ptr(), r.data_ptr(), w.data_ptr(),
                                  y.data_ptr(), h.data_ptr()], params
                assert y.shape == x.shape and y.stride() == x.stride()
            x, r, w = FakeTensor((4, 4096)), FakeTensor((4, 4096)), FakeTensor((4096,))
            attnc.fused_add_rms_norm(x, r, w, inplace=True)
            params = list(last_fake_launch().params[:5])
            assert params == [x.data_ptr(), r.data_ptr(), w.data_ptr(),
                              x.data_ptr(), r.data_ptr()], params
            assert fake_launches() - base == 4
            # Metadata no earlier call had is checked again.
            expect_error(lambda: attnc.fused_add_rms_norm(
                x, r, FakeTensor((4095,))), "weight has shape (4095,)")


# --- row kernels: validate_rows through attnc_row_validate_json -------------


@test
def row_arguments_are_checked_by_the_runtime():
    spec = ('{"op": "add_rmsnorm", "dtype": "bf16", "hidden": 4096, '
            '"eps": 1e-5}')
    # Fake addresses 4 GiB apart: outputs may not overlap inputs.
    ok = [attnc.RowDesc((i + 1) << 32, 7, 4096, 4096) for i in range(5)]
    attnc.validate_rows(spec, 7, ok)
    bad = list(ok)
    bad[1] = attnc.RowDesc(0, 7, 4096, 4096)
    expect_error(lambda: attnc.validate_rows(spec, 7, bad),
                 "tensor 'residual' is a null pointer", status=INVALID_ARGUMENT)
    bad = list(ok)
    bad[3] = attnc.RowDesc((4 << 32) + 8, 7, 4096, 4096)
    expect_error(lambda: attnc.validate_rows(spec, 7, bad),
                 "tensor 'out'", "is not 16-byte aligned")
    expect_error(lambda: attnc.validate_rows(spec, 7, ok[:2]),
                 "expected 5 tensors, got 2")
    expect_error(lambda: attnc.validate_rows(
        '{"op": "silu_mul", "dtype": "bf16", "hidden": 100}', 1, ok[:2]),
        "hidden must be a positive multiple of 8")


# --- runner ------------------------------------------------------------------


def main(tests=None):
    """Runs `tests` (default: this file's), printing PASS/FAIL/SKIP lines;
    exit status 1 when any failed."""
    passed = failed = skipped = 0
    for fn in TESTS if tests is None else tests:
        try:
            fn()
        except Skip as e:
            skipped += 1
            print("SKIP %s: %s" % (fn.__name__, e))
        except Exception:
            failed += 1
            print("FAIL %s\n%s" % (fn.__name__, traceback.format_exc()))
        else:
            passed += 1
            print("PASS %s" % fn.__name__)
    if skipped:
        print("%d skipped" % skipped)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
