"""attnc.kv_append and attnc.merge_state: the decode step's small kernels.

``kv_append`` writes new key/value rows into a paged cache at a slot mapping
(vLLM's ``reshape_and_cache``: slot = page * page_size + offset, negative =
padding, skipped). ``merge_state`` merges two attention results over
disjoint keys by their log-sum-exps (cascade / shared-prefix attention).
"""

import ctypes
import json

from ._attention import _DTYPES, arch_for_capability, context
from ._capi import AttncError, _check, _Tensor, _tensor_to_c, lib, TensorDesc


class _KVAppendArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("key", _Tensor),
        ("value", _Tensor),
        ("slot_mapping", ctypes.c_void_p),
        ("k_cache", _Tensor),
        ("v_cache", _Tensor),
    ]


class _MergeArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t)] + [
        (name, _Tensor) for name in ("o_a", "lse_a", "o_b", "lse_b", "o",
                                     "lse")]


def _fn(name, argtypes, restype=ctypes.c_int):
    f = getattr(lib(), name)
    f.argtypes = argtypes
    f.restype = restype
    return f


def _desc(t, perm):
    s, st = t.shape, t.stride()
    return TensorDesc(int(t.data_ptr()), tuple(int(s[p]) for p in perm),
                      tuple(int(st[p]) for p in perm))


def _kernel(ctx, spec):
    with ctx._lock:
        key = ("json", spec)
        kernel = ctx._kernels.get(key)
        if kernel is None:
            out = ctypes.c_void_p()
            _check(lib().attnc_get_kernel_json(ctx._handle, spec.encode(),
                                               ctypes.byref(out)),
                   "attnc_get_kernel_json(%s)" % spec)
            kernel = ctx._kernels[key] = out.value
        return kernel


def kv_append(key, value, k_cache, v_cache, slot_mapping, *, layout="NHD",
              arch=None):
    """Writes ``key``/``value`` [tokens, kv_heads, head_dim] into the paged
    caches in place at ``slot_mapping`` (int64 [tokens]; page * page_size +
    offset; negative entries are padding and write nothing). Caches as in
    attnc.decode: NHD [pages, page_size, kv_heads, head_dim] or HND [pages,
    kv_heads, page_size, head_dim]. Runs on torch.cuda.current_stream()."""
    import torch

    def fail(message):
        raise AttncError("attnc.kv_append: " + message)

    for name, t in (("key", key), ("value", value), ("k_cache", k_cache),
                    ("v_cache", v_cache), ("slot_mapping", slot_mapping)):
        if t.device.type != "cuda" or t.device != key.device:
            fail("%s must be a CUDA tensor on key's device" % name)
    dtype = _DTYPES.get(str(key.dtype))
    if dtype is None or any(t.dtype != key.dtype
                            for t in (value, k_cache, v_cache)):
        fail("key, value and the caches must share one of bf16/fp16")
    if slot_mapping.dtype != torch.int64 or slot_mapping.dim() != 1 or (
            slot_mapping.numel() > 1 and slot_mapping.stride(0) != 1):
        fail("slot_mapping must be a contiguous int64 [tokens] tensor")
    if key.dim() != 3 or value.shape != key.shape:
        fail("key and value must be [tokens, kv_heads, head_dim] of one shape")
    if k_cache.dim() != 4 or k_cache.shape != v_cache.shape:
        fail("expected two caches of one 4-d shape")
    if layout == "NHD":
        perm = (0, 2, 1, 3)
    elif layout == "HND":
        perm = (0, 1, 2, 3)
    else:
        fail("layout must be 'NHD' or 'HND', got %r" % (layout,))
    tokens, kv_heads, head_dim = (int(x) for x in key.shape)
    if slot_mapping.shape[0] != tokens:
        fail("slot_mapping has %d entries for %d tokens"
             % (slot_mapping.shape[0], tokens))
    page_size = int(k_cache.shape[perm[2]])
    device = key.device
    with torch.cuda.device(device):
        if arch is None:
            arch = arch_for_capability(torch.cuda.get_device_capability(device))
        spec = json.dumps({"op": "kv_append", "dtype": dtype,
                           "heads": kv_heads, "kv_heads": kv_heads,
                           "head_dim": head_dim, "page_size": page_size,
                           "arch": arch}, sort_keys=True)
        ctx = context(device.index)
        kernel = _kernel(ctx, spec)
        args = _KVAppendArgs()
        _fn("attnc_kv_append_args_init", [ctypes.POINTER(_KVAppendArgs)],
            None)(ctypes.byref(args))
        rows = (0, 1, 2, 2)  # [tokens, Hkv, D] in a 4-d descriptor
        args.key = _tensor_to_c(_desc(key, rows), "key")
        args.value = _tensor_to_c(_desc(value, rows), "value")
        args.slot_mapping = int(slot_mapping.data_ptr()) or None
        args.k_cache = _tensor_to_c(_desc(k_cache, perm), "k_cache")
        args.v_cache = _tensor_to_c(_desc(v_cache, perm), "v_cache")
        stream = torch.cuda.current_stream(device).cuda_stream
        _check(_fn("attnc_kv_append_launch",
                   [ctypes.c_void_p, ctypes.c_void_p,
                    ctypes.POINTER(_KVAppendArgs), ctypes.c_void_p])(
                       ctx._handle, kernel, ctypes.byref(args),
                       stream or None),
               "attnc_kv_append_launch")
    return k_cache, v_cache


def merge_state(o_a, lse_a, o_b, lse_b, *, return_lse=True, arch=None):
    """Merges two attention results of the same queries over disjoint key
    sets: o [batch, q_len, heads, head_dim] (bf16/fp16) and lse float32
    [batch, heads, q_len] each. Returns (o, lse) (or o) of attention over
    the union; a side with lse = -inf (no key) weighs 0, both -inf give
    o = 0 and lse = -inf."""
    import torch

    def fail(message):
        raise AttncError("attnc.merge_state: " + message)

    for name, t in (("o_a", o_a), ("lse_a", lse_a), ("o_b", o_b),
                    ("lse_b", lse_b)):
        if t.device.type != "cuda" or t.device != o_a.device:
            fail("%s must be a CUDA tensor on o_a's device" % name)
    dtype = _DTYPES.get(str(o_a.dtype))
    if dtype is None or o_b.dtype != o_a.dtype:
        fail("o_a and o_b must share one of bf16/fp16")
    if o_a.dim() != 4 or o_b.shape != o_a.shape:
        fail("o_a and o_b must be [batch, q_len, heads, head_dim] of one "
             "shape")
    batch, q_len, heads, head_dim = (int(x) for x in o_a.shape)
    for name, t in (("lse_a", lse_a), ("lse_b", lse_b)):
        if t.dtype != torch.float32 or tuple(t.shape) != (batch, heads, q_len):
            fail("%s must be float32 [batch, heads, q_len] = %r, got %s %r"
                 % (name, (batch, heads, q_len), t.dtype, tuple(t.shape)))
    device = o_a.device
    with torch.cuda.device(device):
        if arch is None:
            arch = arch_for_capability(torch.cuda.get_device_capability(device))
        spec = json.dumps({"op": "lse_merge", "dtype": dtype, "heads": heads,
                           "kv_heads": heads, "head_dim": head_dim,
                           "has_lse": bool(return_lse), "arch": arch},
                          sort_keys=True)
        ctx = context(device.index)
        kernel = _kernel(ctx, spec)
        o = torch.empty_like(o_a)
        lse = (torch.empty((batch, heads, q_len), dtype=torch.float32,
                           device=device) if return_lse else None)
        bhsd = (0, 2, 1, 3)

        def lse_desc(t):
            return TensorDesc(int(t.data_ptr()), tuple(t.shape),
                              tuple(t.stride()))
        args = _MergeArgs()
        _fn("attnc_merge_args_init", [ctypes.POINTER(_MergeArgs)], None)(
            ctypes.byref(args))
        args.o_a = _tensor_to_c(_desc(o_a, bhsd), "o_a")
        args.lse_a = _tensor_to_c(lse_desc(lse_a), "lse_a")
        args.o_b = _tensor_to_c(_desc(o_b, bhsd), "o_b")
        args.lse_b = _tensor_to_c(lse_desc(lse_b), "lse_b")
        args.o = _tensor_to_c(_desc(o, bhsd), "o")
        args.lse = _tensor_to_c(None if lse is None else lse_desc(lse), "lse")
        stream = torch.cuda.current_stream(device).cuda_stream
        _check(_fn("attnc_merge_launch",
                   [ctypes.c_void_p, ctypes.c_void_p,
                    ctypes.POINTER(_MergeArgs), ctypes.c_void_p])(
                       ctx._handle, kernel, ctypes.byref(args),
                       stream or None),
               "attnc_merge_launch")
    return (o, lse) if return_lse else o


# vLLM's name for the same operation.
paged_kv_append = kv_append
