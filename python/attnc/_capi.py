"""ctypes declarations for libattnc.so (runtime/include/attnc/attnc.h).

Everything here is plain Python plus ctypes: no torch, no GPU. The library
is loaded on first use, so ``import attnc`` works without it.
"""

import ctypes
import dataclasses
import math
import os
import struct
import threading
from pathlib import Path
from typing import NamedTuple, Optional, Sequence

_REPO_ROOT = Path(__file__).resolve().parents[2]
_REPO_LIBRARY = _REPO_ROOT / "build" / "lib" / "libattnc.so"

# attnc_status values (attnc.h).
OK = 0
INVALID_ARGUMENT = 1
NOT_FOUND = 2
DRIVER_NOT_FOUND = 3


class AttncError(RuntimeError):
    """An attnc failure; ``status`` is the attnc_status code (None when the
    error was found in Python before calling the runtime)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


# --- C structs ---------------------------------------------------------------


class _Spec(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("op", ctypes.c_char_p),
        ("dtype", ctypes.c_char_p),
        ("heads", ctypes.c_int64),
        ("kv_heads", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("causal", ctypes.c_int32),
        ("has_lse", ctypes.c_int32),
        ("window_left", ctypes.c_int64),
        ("window_right", ctypes.c_int64),
        ("softcap", ctypes.c_double),
        ("scale", ctypes.c_double),
        ("arch", ctypes.c_char_p),
        ("custom_ir", ctypes.c_char_p),
        ("block_m", ctypes.c_int64),
        ("block_n", ctypes.c_int64),
        ("stages", ctypes.c_int64),
        ("warps", ctypes.c_int64),
        ("sinks", ctypes.c_int32),
        ("varlen", ctypes.c_int32),
        ("page_size", ctypes.c_int64),
    ]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("shape", ctypes.c_int64 * 4),
        ("stride", ctypes.c_int64 * 4),
    ]


class _Capture(ctypes.Structure):
    """attnc_capture: a tensor a score or mask mod captured."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_char_p),  # "f32" "f16" "bf16" "i32" "i64" "i8"
        ("rank", ctypes.c_int32),  # 1..4
        ("shape", ctypes.c_int64 * 4),  # elements; past rank ignored
        ("stride", ctypes.c_int64 * 4),  # elements; past rank ignored
    ]


class _AttentionArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t)] + [
        (name, _Tensor) for name in ("q", "k", "v", "o", "lse")] + [
        ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_size_t),
        ("sinks", ctypes.c_void_p),
        ("cu_seqlens_q", ctypes.c_void_p),
        ("cu_seqlens_k", ctypes.c_void_p),
        ("varlen_batch", ctypes.c_int64),
        ("max_seqlen_q", ctypes.c_int64),
        ("max_seqlen_k", ctypes.c_int64),
        # The kernel's captured tensors, in its IR's order (NULL, 0: none).
        ("captures", ctypes.POINTER(_Capture)),
        ("num_captures", ctypes.c_int64),
        ("kv_bounds", ctypes.c_void_p),
        # Paged varlen kernels: [B, max_blocks] i32 pages, [B] i32 key counts.
        ("block_table", ctypes.c_void_p),
        ("max_blocks", ctypes.c_int64),
        ("kv_lens", ctypes.c_void_p),
    ]


class _DecodeArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("q", _Tensor),
        ("k_cache", _Tensor),
        ("v_cache", _Tensor),
        ("block_table", ctypes.c_void_p),
        ("max_blocks", ctypes.c_int64),
        ("kv_lens", ctypes.c_void_p),
        ("max_kv_len", ctypes.c_int64),
        ("o", _Tensor),
        ("lse", _Tensor),
        ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_size_t),
        ("num_splits", ctypes.c_int64),
        ("sinks", ctypes.c_void_p),
    ]


class _ContextOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("cache_dir", ctypes.c_char_p),
        ("driver_library", ctypes.c_char_p),
        ("build_id", ctypes.c_char_p),
        ("device", ctypes.c_int32),
        ("link_cubin", ctypes.c_int32),
    ]


class _RowTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("stride", ctypes.c_int64),
    ]


class _RowArgs(ctypes.Structure):
    _fields_ = [
        ("rows", ctypes.c_int64),
        ("count", ctypes.c_int64),
        ("tensors", _RowTensor * 8),
    ]


_status = ctypes.c_int
_SIGNATURES = {
    "attnc_version": (ctypes.c_char_p, []),
    "attnc_build_id": (ctypes.c_char_p, []),
    "attnc_status_string": (ctypes.c_char_p, [_status]),
    "attnc_last_error": (ctypes.c_char_p, []),
    "attnc_jit_enable": (_status, [ctypes.c_char_p]),
    "attnc_jit_info": (ctypes.c_char_p, []),
    "attnc_precompile_json": (
        _status, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32,
                  ctypes.POINTER(ctypes.c_int32)]),
    "attnc_spec_init": (None, [ctypes.POINTER(_Spec)]),
    "attnc_context_options_init": (None, [ctypes.POINTER(_ContextOptions)]),
    "attnc_context_create": (
        _status, [ctypes.POINTER(_ContextOptions),
                  ctypes.POINTER(ctypes.c_void_p)]),
    "attnc_context_destroy": (None, [ctypes.c_void_p]),
    "attnc_cache_dir": (ctypes.c_char_p, [ctypes.c_void_p]),
    "attnc_get_kernel": (
        _status, [ctypes.c_void_p, ctypes.POINTER(_Spec),
                  ctypes.POINTER(ctypes.c_void_p)]),
    "attnc_get_kernel_for": (
        _status, [ctypes.c_void_p, ctypes.POINTER(_Spec), ctypes.c_int64,
                  ctypes.c_int64, ctypes.c_int64,
                  ctypes.POINTER(ctypes.c_void_p)]),
    "attnc_kernel_key": (ctypes.c_char_p, [ctypes.c_void_p]),
    "attnc_attention_validate": (
        _status, [ctypes.POINTER(_Spec), ctypes.POINTER(_AttentionArgs)]),
    "attnc_attention_launch": (
        _status, [ctypes.c_void_p, ctypes.c_void_p,
                  ctypes.POINTER(_AttentionArgs), ctypes.c_void_p]),
    "attnc_attention_workspace_size": (
        _status, [ctypes.c_void_p, ctypes.c_void_p,
                  ctypes.POINTER(_AttentionArgs),
                  ctypes.POINTER(ctypes.c_size_t)]),
    "attnc_get_kernel_json": (
        _status, [ctypes.c_void_p, ctypes.c_char_p,
                  ctypes.POINTER(ctypes.c_void_p)]),
    "attnc_get_kernel_for_json": (
        _status, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64,
                  ctypes.c_int64, ctypes.c_int64,
                  ctypes.POINTER(ctypes.c_void_p),
                  ctypes.POINTER(ctypes.c_int64)]),
    "attnc_decode_args_init": (None, [ctypes.POINTER(_DecodeArgs)]),
    "attnc_decode_workspace_size": (
        _status, [ctypes.c_void_p, ctypes.c_void_p,
                  ctypes.POINTER(_DecodeArgs),
                  ctypes.POINTER(ctypes.c_size_t)]),
    "attnc_decode_launch": (
        _status, [ctypes.c_void_p, ctypes.c_void_p,
                  ctypes.POINTER(_DecodeArgs), ctypes.c_void_p]),
    # Fused elementwise (row) kernels.
    "attnc_row_validate_json": (
        _status, [ctypes.c_char_p, ctypes.POINTER(_RowArgs)]),
    "attnc_row_launch": (
        _status, [ctypes.c_void_p, ctypes.c_void_p,
                  ctypes.POINTER(_RowArgs), ctypes.c_void_p]),
}


# --- loading -----------------------------------------------------------------

_lib = None
_lib_path = None
_lib_lock = threading.Lock()


def _candidates():
    """(path to pass to CDLL, description) in lookup order. $ATTNC_LIBRARY,
    when set, is the only candidate: a wrong value is an error, not a
    silent fallback to another build."""
    env = os.environ.get("ATTNC_LIBRARY")
    if env:
        return [(env, "$ATTNC_LIBRARY=" + env)]
    return [(str(_REPO_LIBRARY), str(_REPO_LIBRARY)),
            ("libattnc.so", "libattnc.so on the loader path")]


def lib():
    """The loaded libattnc.so (a ctypes.CDLL); raises AttncError if none."""
    global _lib, _lib_path
    handle = _lib  # loaded once, never unloaded: no lock on every call
    if handle is not None:
        return handle
    with _lib_lock:
        if _lib is not None:
            return _lib
        tried = []
        for path, where in _candidates():
            if "/" in path and not os.path.exists(path):
                tried.append("%s (no such file)" % where)
                continue
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                tried.append("%s (%s)" % (where, e))
                continue
            for name, (restype, argtypes) in _SIGNATURES.items():
                fn = getattr(handle, name)
                fn.restype = restype
                fn.argtypes = argtypes
            _check_struct_sizes(handle, where)
            _enable_jit(handle)
            _lib, _lib_path = handle, path
            return _lib
        raise AttncError(
            "attnc: cannot load libattnc.so; looked at:\n  "
            + "\n  ".join(tried)
            + "\nBuild it with scripts/build.sh (or `ninja -C build "
            "attnc_shared`), or set ATTNC_LIBRARY to the path of "
            "libattnc.so.")


# Why the JIT compiler is not enabled ("" once it is), for error messages.
_jit_problem = "not looked for yet"


def _enable_jit(handle):
    """Enables the JIT compiler (libattnc_jit.so, found as the runtime finds
    it) for every context created afterwards, unless $ATTNC_JIT is 0. Its
    absence is not an error here: cached and bundled kernels still run, and
    a miss then says why nothing could compile it."""
    global _jit_problem
    if os.environ.get("ATTNC_JIT", "1") == "0":
        _jit_problem = "disabled by ATTNC_JIT=0"
        return
    status = handle.attnc_jit_enable(None)
    _jit_problem = ("" if status == OK
                    else _text(handle.attnc_last_error()))


def jit_info():
    """Where the JIT compiler was loaded from and what it is, or None with
    the reason in jit_problem()."""
    info = _text(lib().attnc_jit_info())
    return info or None


def jit_problem():
    """Why no JIT compiler is enabled ("" when one is)."""
    lib()
    return _jit_problem


def precompile(spec, cache_dir=None, link_cubin=True):
    """Compiles `spec` (a Spec or a spec-file JSON object/text) into the
    cache with the JIT compiler, without a GPU. Returns True when it
    compiled, False when the cache already held it."""
    if hasattr(spec, "to_json"):
        text = spec.to_json()
    elif isinstance(spec, dict):
        import json
        text = json.dumps(spec)
    else:
        text = str(spec)
    compiled = ctypes.c_int32(0)
    handle = lib()
    status = handle.attnc_precompile_json(
        cache_dir.encode() if cache_dir else None, text.encode(),
        1 if link_cubin else 0, ctypes.byref(compiled))
    if status != OK:
        message = _text(handle.attnc_last_error())
        if _jit_problem:
            message += "\n(JIT compiler: %s)" % _jit_problem
        raise AttncError("attnc: precompile failed (%s): %s"
                         % (_text(handle.attnc_status_string(status)),
                            message), status)
    return bool(compiled.value)


def _check_struct_sizes(handle, where):
    spec = _Spec()
    handle.attnc_spec_init(ctypes.byref(spec))
    options = _ContextOptions()
    handle.attnc_context_options_init(ctypes.byref(options))
    for name, got, want in (
            ("attnc_spec", spec.struct_size, ctypes.sizeof(_Spec)),
            ("attnc_context_options", options.struct_size,
             ctypes.sizeof(_ContextOptions))):
        if got != want:
            raise AttncError(
                "attnc: %s has sizeof(%s) = %d but the Python binding "
                "expects %d; the library and python/attnc are from "
                "different versions" % (where, name, got, want))


def library_path():
    """The path libattnc.so was loaded from (loads it if needed)."""
    lib()
    return _lib_path


def _text(value):
    return value.decode("utf-8", "replace") if value is not None else ""


def _check(status, what):
    if status != OK:
        handle = lib()
        message = _text(handle.attnc_last_error())
        # A kernel neither cached nor compilable: say why no JIT compiled it.
        if status == NOT_FOUND and _jit_problem:
            message += "\n(JIT compiler: %s)" % _jit_problem
        raise AttncError(
            "attnc: %s failed (%s): %s"
            % (what, _text(handle.attnc_status_string(status)), message),
            status)


def version():
    """The runtime's version string, e.g. "0.1.0"."""
    return _text(lib().attnc_version())


def build_id():
    """The compiler build id baked into the runtime (part of cache keys)."""
    return _text(lib().attnc_build_id())


# --- specs and tensor descriptors --------------------------------------------


@dataclasses.dataclass(frozen=True)
class Spec:
    """A kernel spec (attnc_spec). ``scale=None`` means 1/sqrt(head_dim);
    -1 in a window bound means unbounded; ``softcap=0`` means none."""

    heads: int
    kv_heads: int
    head_dim: int
    dtype: str = "bf16"
    causal: bool = False
    has_lse: bool = False
    window_left: int = -1
    window_right: int = -1
    softcap: float = 0.0
    scale: Optional[float] = None
    arch: str = "sm_90a"
    block_m: int = 0
    block_n: int = 0
    stages: int = 0
    warps: int = 0
    op: str = "attention_fwd"
    # The kernel function's MLIR text when the kernel comes from IR (score
    # or mask mods, attnc.mods.attention_ir); "" for the built-in op.
    custom_ir: str = ""
    # Attention sinks: the launch passes one float32 logit per query head.
    sinks: bool = False
    # Varlen prefill: packed [total, H, D] sequences with cu_seqlens.
    varlen: bool = False
    # Varlen over a paged KV cache of this page size (0: packed K/V).
    page_size: int = 0

    def to_json(self):
        """The spec as a spec-file JSON object (text)."""
        import json
        extra = {"sinks": True} if self.sinks else {}
        if self.varlen:
            extra["varlen"] = True
        if self.page_size:
            extra["page_size"] = self.page_size
        return json.dumps({**extra,
            "op": self.op, "dtype": self.dtype, "heads": self.heads,
            "kv_heads": self.kv_heads, "head_dim": self.head_dim,
            "causal": bool(self.causal), "has_lse": bool(self.has_lse),
            "window_left": self.window_left,
            "window_right": self.window_right,
            "softcap": float(self.softcap), "scale": self.scale,
            "arch": self.arch, "custom_ir": self.custom_ir,
            "tuning": {"block_m": self.block_m, "block_n": self.block_n,
                       "stages": self.stages, "warps": self.warps}},
            sort_keys=True)

    def _to_c(self):
        spec = _Spec()
        lib().attnc_spec_init(ctypes.byref(spec))
        # ctypes keeps the bytes objects alive as long as the struct.
        spec.op = self.op.encode()
        spec.dtype = self.dtype.encode()
        spec.arch = self.arch.encode()
        spec.heads = self.heads
        spec.kv_heads = self.kv_heads
        spec.head_dim = self.head_dim
        spec.causal = int(bool(self.causal))
        spec.has_lse = int(bool(self.has_lse))
        spec.window_left = self.window_left
        spec.window_right = self.window_right
        spec.softcap = float(self.softcap)
        spec.scale = math.nan if self.scale is None else float(self.scale)
        spec.block_m = self.block_m
        spec.block_n = self.block_n
        spec.stages = self.stages
        spec.warps = self.warps
        spec.custom_ir = self.custom_ir.encode() if self.custom_ir else None
        spec.sinks = int(bool(self.sinks))
        spec.varlen = int(bool(self.varlen))
        spec.page_size = int(self.page_size)
        return spec


class TensorDesc(NamedTuple):
    """A tensor as the runtime sees it: an integer device address and the
    logical [B, H, S, D] shape and strides in elements (LSE: [B, H, S])."""

    data: int
    shape: Sequence[int]
    stride: Sequence[int]


def _tensor_to_c(desc, name):
    out = _Tensor()
    if desc is None:
        return out  # all zeros: data NULL
    shape, stride = tuple(desc.shape), tuple(desc.stride)
    if len(shape) == 3 and len(stride) == 3:  # LSE [B, H, S]
        shape, stride = shape + (1,), stride + (1,)
    if len(shape) != 4 or len(stride) != 4:
        raise AttncError("attnc: %s descriptor must have 4 dims [B, H, S, D] "
                         "(lse: 3), got shape %r and stride %r"
                         % (name, desc.shape, desc.stride))
    out.data = desc.data or None
    out.shape[:] = [int(x) for x in shape]
    out.stride[:] = [int(x) for x in stride]
    return out


class CaptureDesc(NamedTuple):
    """A tensor a score or mask mod captured, as the runtime sees it: an
    integer device address, the dtype ("f32", "f16", "bf16", "i32", "i64"
    or "i8"), and the shape and strides in elements (rank 1 to 4)."""

    data: int
    dtype: str
    shape: Sequence[int]
    stride: Sequence[int]


# The dtype strings as bytes, alive as long as the module (a _Capture's
# c_char_p points into them).
_CAPTURE_DTYPE_NAMES = {name: name.encode()
                   for name in ("f32", "f16", "bf16", "i32", "i64", "i8")}


def _fill_capture(out, data, dtype, shape, stride):
    """Fills one _Capture (dtype: the runtime's name, as str or bytes)."""
    rank = len(shape)
    if not 1 <= rank <= 4 or len(stride) != rank:
        raise AttncError("attnc: a captured tensor has rank 1 to 4 with one "
                         "stride per dimension, got shape %r and stride %r"
                         % (tuple(shape), tuple(stride)))
    if isinstance(dtype, str):
        name = _CAPTURE_DTYPE_NAMES.get(dtype)
        if name is None:
            raise AttncError("attnc: a captured tensor's dtype is one of %s, "
                             "got %r"
                             % (", ".join(_CAPTURE_DTYPE_NAMES), dtype))
        dtype = name
    out.data = data or None
    out.dtype = dtype
    out.rank = rank
    for d in range(rank):
        out.shape[d] = shape[d]
        out.stride[d] = stride[d]


# One attnc_capture as bytes, for launches that fill their captures on every
# call (a packed struct is about three times faster to fill than ctypes
# fields): data, dtype, rank, 4 bytes of padding, shape[4], stride[4].
assert (_Capture.data.offset, _Capture.dtype.offset, _Capture.rank.offset,
        _Capture.shape.offset, _Capture.stride.offset,
        ctypes.sizeof(_Capture)) == (0, 8, 16, 24, 56, 88)


def capture_packer(dtype, rank):
    """(pack, dtype address, rank) for a capture of this dtype ("f32", ...)
    and rank: pack(data, dtype address, rank, *shape, *stride) is its
    attnc_capture's bytes (the dtype string lives as long as the module)."""
    name = _CAPTURE_DTYPE_NAMES[dtype]
    address = ctypes.cast(ctypes.c_char_p(name), ctypes.c_void_p).value
    pad = 8 * (4 - rank)
    layout = struct.Struct("=QQi4x%dq%dx%dq%dx" % (rank, pad, rank, pad))
    assert layout.size == ctypes.sizeof(_Capture)
    return layout.pack, address, rank


def _captures_to_c(captures):
    """A ctypes array of _Capture for CaptureDesc-likes (None: none)."""
    if not captures:
        return None
    array = (_Capture * len(captures))()
    for out, c in zip(array, captures):
        _fill_capture(out, int(c.data), c.dtype, tuple(c.shape),
                      tuple(c.stride))
    return array


def _set_captures(args, array):
    """Points args at a capture array; the struct keeps the array alive."""
    if array is None:
        args.captures = None
        args.num_captures = 0
    else:
        args.captures = array
        args.num_captures = len(array)


def _args_to_c(q, k, v, o, lse, sinks=0, varlen=None, captures=None):
    args = _AttentionArgs(ctypes.sizeof(_AttentionArgs), *(
        _tensor_to_c(t, n) for t, n in (
            (q, "q"), (k, "k"), (v, "v"), (o, "o"), (lse, "lse"))))
    args.sinks = sinks or None
    if varlen is not None:
        (args.cu_seqlens_q, args.cu_seqlens_k, args.varlen_batch,
         args.max_seqlen_q, args.max_seqlen_k) = (
             varlen.cu_seqlens_q or None, varlen.cu_seqlens_k or None,
             int(varlen.batch), int(varlen.max_seqlen_q),
             int(varlen.max_seqlen_k))
        if varlen.block_table:
            (args.block_table, args.max_blocks, args.kv_lens) = (
                varlen.block_table, int(varlen.max_blocks),
                varlen.kv_lens or None)
    _set_captures(args, _captures_to_c(captures))
    return args


class VarlenDesc(NamedTuple):
    """A varlen launch's sequences: the device addresses of the B + 1 i32
    sequence starts of each side, B, and the longest lengths. With it, q,
    k, v and o are the packed [total, H, D] tensors as [1, H, total, D]
    descriptors and lse the [H, total_q] LSE as [1, H, total_q]. Paged
    (a spec with page_size): cu_seqlens_k is 0, k and v are the caches as
    [pages, Hkv, page_size, D] descriptors, and block_table / kv_lens the
    addresses of the [B, max_blocks] i32 page indices and [B] i32 key
    counts."""

    cu_seqlens_q: int
    cu_seqlens_k: int
    batch: int
    max_seqlen_q: int
    max_seqlen_k: int
    block_table: int = 0
    max_blocks: int = 0
    kv_lens: int = 0


def validate_attention(spec, q, k, v, o, lse=None, sinks=0, varlen=None,
                       captures=None):
    """Checks launch arguments against ``spec`` with the runtime's own
    validation (attnc_attention_validate); needs no GPU and no torch.

    q, k, v, o, lse are TensorDesc (or anything with .data/.shape/.stride)
    in the logical [B, H, S, D] layout; lse is [B, H, S] or None; sinks an
    integer address (0: none); varlen a VarlenDesc for a varlen spec;
    captures the CaptureDesc of the tensors a mod kernel captures, in its
    IR's order (only their count and ranks are checked here: their dtypes
    and memory need the kernel, and are checked at launch). Raises
    AttncError with the runtime's message; returns None when valid."""
    c_spec = spec._to_c()
    args = _args_to_c(q, k, v, o, lse, sinks, varlen, captures)
    _check(lib().attnc_attention_validate(ctypes.byref(c_spec),
                                          ctypes.byref(args)),
           "attnc_attention_validate")


class RowDesc(NamedTuple):
    """A row-kernel tensor: device address, rows, columns and the row
    stride in elements ([d] weights: rows and stride are ignored)."""

    data: int
    rows: int
    cols: int
    stride: int


def _row_args_to_c(rows, tensors):
    if len(tensors) > 8:
        raise AttncError("attnc: at most 8 tensors per row kernel, got %d"
                         % len(tensors))
    args = _RowArgs()
    args.rows = int(rows)
    args.count = len(tensors)
    for i, t in enumerate(tensors):
        args.tensors[i].data = int(t.data) or None
        args.tensors[i].rows = int(t.rows)
        args.tensors[i].cols = int(t.cols)
        args.tensors[i].stride = int(t.stride)
    return args


def validate_rows(spec_json, rows, tensors):
    """Checks row-kernel arguments (RowDesc, in the op's ABI order) against
    a spec (a JSON object string) with the runtime's own validation; needs
    no GPU. Raises AttncError with the runtime's message."""
    args = _row_args_to_c(rows, tensors)
    _check(lib().attnc_row_validate_json(spec_json.encode(),
                                         ctypes.byref(args)),
           "attnc_row_validate_json")


# --- contexts and kernels ----------------------------------------------------


class Context:
    """An attnc_context: a CUDA context, the kernel cache and loaded
    kernels. With a CUDA context current on the calling thread the runtime
    uses it; otherwise it retains ``device``'s primary context."""

    def __init__(self, device=0, cache_dir=None, driver_library=None,
                 link_cubin=True):
        options = _ContextOptions()
        handle = lib()
        handle.attnc_context_options_init(ctypes.byref(options))
        options.device = device
        # A kernel compiled here is also cached as a cubin (ptxas, else
        # nvJitLink) unless link_cubin is False: the driver then JITs PTX.
        options.link_cubin = 1 if link_cubin else 0
        if cache_dir:  # None: $ATTNC_CACHE_DIR, XDG, ~/.cache
            options.cache_dir = os.fsencode(cache_dir)
        if driver_library:  # None: libcuda.so.1
            options.driver_library = os.fsencode(driver_library)
        ctx = ctypes.c_void_p()
        _check(handle.attnc_context_create(ctypes.byref(options),
                                           ctypes.byref(ctx)),
               "attnc_context_create")
        self._handle = ctx.value
        self._kernels = {}
        self._lock = threading.Lock()

    def close(self):
        if self._handle:
            lib().attnc_context_destroy(self._handle)
            self._handle = None
            self._kernels.clear()

    def cache_dir(self):
        return _text(lib().attnc_cache_dir(self._handle))

    def get_kernel(self, spec):
        """The kernel handle (an int) for ``spec``, loading it from the
        cache on first use. AttncError(status=NOT_FOUND) when it is not
        compiled."""
        with self._lock:
            kernel = self._kernels.get(spec)
            if kernel is None:
                c_spec = spec._to_c()
                out = ctypes.c_void_p()
                _check(lib().attnc_get_kernel(self._handle,
                                              ctypes.byref(c_spec),
                                              ctypes.byref(out)),
                       "attnc_get_kernel(%s)" % (spec,))
                kernel = self._kernels[spec] = out.value
            return kernel

    def get_kernel_for(self, spec, batch, seq_q, seq_kv):
        """The kernel handle for ``spec`` at one problem size: the tuning
        database's choice for this GPU and size bucket when the context has
        one ($ATTNC_TUNING_DB), else what get_kernel gives. Asks the runtime
        every time (its own lookup is a map find)."""
        c_spec = spec._to_c()
        out = ctypes.c_void_p()
        _check(lib().attnc_get_kernel_for(self._handle, ctypes.byref(c_spec),
                                          int(batch), int(seq_q), int(seq_kv),
                                          ctypes.byref(out)),
               "attnc_get_kernel_for(%s, batch %d, seq_q %d, seq_kv %d)"
               % (spec, batch, seq_q, seq_kv))
        return out.value

    def get_kernel_json(self, spec_json):
        """The kernel handle for a spec given as a JSON object string (the
        form of spec files; row kernels are asked for this way)."""
        with self._lock:
            kernel = self._kernels.get(spec_json)
            if kernel is None:
                out = ctypes.c_void_p()
                _check(lib().attnc_get_kernel_json(self._handle,
                                                   spec_json.encode(),
                                                   ctypes.byref(out)),
                       "attnc_get_kernel_json(%s)" % spec_json)
                kernel = self._kernels[spec_json] = out.value
            return kernel

    def launch_rows(self, kernel, rows, tensors, stream=0):
        """Launches a row kernel; ``tensors`` are RowDesc in ABI order."""
        args = _row_args_to_c(rows, tensors)
        _check(lib().attnc_row_launch(self._handle, kernel,
                                      ctypes.byref(args), stream or None),
               "attnc_row_launch")

    def workspace_size(self, kernel, q, k, v, o, lse=None, sinks=0,
                       captures=None):
        """Bytes of workspace a launch of ``kernel`` with these arguments
        can take (0: none): the stream-K tail of a persistent kernel."""
        args = _args_to_c(q, k, v, o, lse, sinks, captures=captures)
        out = ctypes.c_size_t()
        _check(lib().attnc_attention_workspace_size(self._handle, kernel,
                                                    ctypes.byref(args),
                                                    ctypes.byref(out)),
               "attnc_attention_workspace_size")
        return out.value

    def launch(self, kernel, q, k, v, o, lse=None, stream=0, workspace=0,
               workspace_bytes=0, sinks=0, varlen=None, captures=None):
        """Launches ``kernel`` on ``stream`` (an integer CUstream, 0: the
        legacy default stream); validates the arguments first. workspace:
        an optional device pointer of workspace_size() bytes, 256-byte
        aligned, zeroed before its first use (launches leave it zeroed).
        sinks: the device address of the float32 sink logits (one per
        query head) of a kernel whose spec has sinks, else 0. varlen: a
        VarlenDesc for a kernel whose spec has varlen. captures: the
        CaptureDesc of the tensors the kernel's mods capture, in the order
        of its IR's captures (attnc.mods.ModTrace.captures gives it)."""
        args = _args_to_c(q, k, v, o, lse, sinks, varlen, captures)
        args.workspace = workspace or None
        args.workspace_bytes = int(workspace_bytes)
        _check(lib().attnc_attention_launch(self._handle, kernel,
                                            ctypes.byref(args),
                                            stream or None),
               "attnc_attention_launch")


# --- decode (op "decode", paged KV cache) ------------------------------------


@dataclasses.dataclass(frozen=True)
class DecodeSpec:
    """A decode kernel spec (a spec file's JSON object with op "decode")."""

    heads: int
    kv_heads: int
    head_dim: int
    page_size: int
    max_q_len: int = 1
    dtype: str = "bf16"
    causal: bool = False
    has_lse: bool = False
    window_left: int = -1
    window_right: int = -1
    softcap: float = 0.0
    scale: Optional[float] = None
    arch: str = "sm_90a"
    block_n: int = 0
    # Attention sinks: the launch passes one float32 logit per query head.
    sinks: bool = False

    def to_json(self):
        import json
        extra = {"sinks": True} if self.sinks else {}
        return json.dumps({**extra,
            "op": "decode", "dtype": self.dtype, "heads": self.heads,
            "kv_heads": self.kv_heads, "head_dim": self.head_dim,
            "causal": bool(self.causal), "has_lse": bool(self.has_lse),
            "window_left": self.window_left,
            "window_right": self.window_right,
            "softcap": float(self.softcap), "scale": self.scale,
            "arch": self.arch, "page_size": self.page_size,
            "max_q_len": self.max_q_len,
            "tuning": {"block_n": self.block_n}}, sort_keys=True)


class DecodeArgs(NamedTuple):
    """Launch arguments of a decode kernel (attnc_decode_args): TensorDesc
    in the runtime's logical layouts, integer device addresses."""

    q: "TensorDesc"
    k_cache: "TensorDesc"
    v_cache: "TensorDesc"
    block_table: int
    max_blocks: int
    kv_lens: int
    max_kv_len: int
    o: "TensorDesc"
    lse: Optional["TensorDesc"] = None
    workspace: int = 0
    workspace_bytes: int = 0
    num_splits: int = 0


def _decode_args_to_c(a):
    out = _DecodeArgs()
    lib().attnc_decode_args_init(ctypes.byref(out))
    out.q = _tensor_to_c(a.q, "q")
    out.k_cache = _tensor_to_c(a.k_cache, "k_cache")
    out.v_cache = _tensor_to_c(a.v_cache, "v_cache")
    out.block_table = a.block_table or None
    out.max_blocks = int(a.max_blocks)
    out.kv_lens = a.kv_lens or None
    out.max_kv_len = int(a.max_kv_len)
    out.o = _tensor_to_c(a.o, "o")
    out.lse = _tensor_to_c(a.lse, "lse")
    out.workspace = a.workspace or None
    out.workspace_bytes = int(a.workspace_bytes)
    out.num_splits = int(a.num_splits)
    return out


def _context_get_decode_kernel(self, spec):
    """The kernel handle for a DecodeSpec (attnc_get_kernel_json)."""
    with self._lock:
        kernel = self._kernels.get(spec)
        if kernel is None:
            out = ctypes.c_void_p()
            _check(lib().attnc_get_kernel_json(self._handle,
                                               spec.to_json().encode(),
                                               ctypes.byref(out)),
                   "attnc_get_kernel_json(%s)" % (spec,))
            kernel = self._kernels[spec] = out.value
        return kernel


def _context_get_kernel_for_json(self, spec_json, batch, seq_q, seq_kv):
    """(kernel handle, split count) for a spec given as a JSON object string
    at one problem size (batch, seq_q, seq_kv >= 1; for decode seq_kv is
    the longest sequence): the tuning database's choice for this GPU and
    size bucket when the context has one ($ATTNC_TUNING_DB), else what
    get_kernel_json gives. The split count is the database's decode split
    count, 0 when it names none (the launch then chooses). Asks the runtime
    every time; callers cache per size bucket."""
    out = ctypes.c_void_p()
    splits = ctypes.c_int64()
    _check(lib().attnc_get_kernel_for_json(self._handle, spec_json.encode(),
                                           int(batch), int(seq_q),
                                           int(seq_kv), ctypes.byref(out),
                                           ctypes.byref(splits)),
           "attnc_get_kernel_for_json(%s, batch %d, seq_q %d, seq_kv %d)"
           % (spec_json, batch, seq_q, seq_kv))
    return out.value, splits.value


def _context_get_decode_kernel_for(self, spec, batch, seq_q, seq_kv):
    """(kernel handle, split count) for a DecodeSpec at one problem size
    (get_kernel_for_json). A spec with block_n set keeps it."""
    return self.get_kernel_for_json(spec.to_json(), batch, seq_q, seq_kv)


def _context_decode_workspace_size(self, kernel, args):
    """Bytes of workspace a decode launch with ``args`` (DecodeArgs or an
    attnc_decode_args struct) needs."""
    c_args = args if isinstance(args, _DecodeArgs) else _decode_args_to_c(
        args)
    size = ctypes.c_size_t()
    _check(lib().attnc_decode_workspace_size(self._handle, kernel,
                                             ctypes.byref(c_args),
                                             ctypes.byref(size)),
           "attnc_decode_workspace_size")
    return size.value


def _context_launch_decode(self, kernel, args, stream=0):
    """Enqueues the decode split kernel and its combine on ``stream``.
    ``args``: DecodeArgs, or an attnc_decode_args struct already filled in
    (attnc.decode's repeated calls)."""
    c_args = args if isinstance(args, _DecodeArgs) else _decode_args_to_c(
        args)
    _check(lib().attnc_decode_launch(self._handle, kernel,
                                     ctypes.byref(c_args), stream or None),
           "attnc_decode_launch")


Context.get_decode_kernel = _context_get_decode_kernel
Context.get_kernel_for_json = _context_get_kernel_for_json
Context.get_decode_kernel_for = _context_get_decode_kernel_for
Context.decode_workspace_size = _context_decode_workspace_size
Context.launch_decode = _context_launch_decode
