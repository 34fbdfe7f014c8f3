"""attnc.kv_append and attnc.merge_state: the decode step's small kernels.

``kv_append`` writes new key/value rows into a paged cache at a slot mapping
(vLLM's ``reshape_and_cache``: slot = page * page_size + offset, negative =
padding, skipped). ``merge_state`` merges two attention results over
disjoint keys by their log-sum-exps (cascade / shared-prefix attention).
"""

import ctypes
import json

from . import _route
from ._attention import _DTYPES, _contexts, arch_for_capability, context
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


# The C functions of this module, their argument types set once (the first
# call of each loads the library).
_SIGNATURES = {
    "attnc_kv_append_args_init": (None, [ctypes.POINTER(_KVAppendArgs)]),
    "attnc_kv_append_launch": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_KVAppendArgs),
        ctypes.c_void_p]),
    "attnc_merge_args_init": (None, [ctypes.POINTER(_MergeArgs)]),
    "attnc_merge_launch": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_MergeArgs),
        ctypes.c_void_p]),
}
_functions = {}


def _fn(name):
    f = _functions.get(name)
    if f is None:
        f = getattr(lib(), name)
        f.restype, f.argtypes = _SIGNATURES[name]
        _functions[name] = f
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


class _Plan:
    """A repeated call's reusable part: the kernel, the launch function
    and its arguments with every shape and stride filled in (a call sets
    only the data pointers), and the LSE shape of merge_state."""

    __slots__ = ("ctx", "kernel", "args", "launch", "index", "device",
                 "lse_shape")


# (op, the metadata of every tensor the first call checked, options) ->
# _Plan: a hit means the checks passed for tensors like these.
_plans = {}


def _meta(t):
    return (t.dtype, t.device, t.shape, t.stride())


def _planned(key):
    plan = _plans.get(key)
    if plan is not None and _contexts.get(plan.index) is not plan.ctx:
        return None  # the context was closed and replaced (tests)
    return plan


def _run(torch, plan, args, what):
    status = plan.launch(plan.ctx._handle, plan.kernel, ctypes.byref(args),
                         _route.current_stream(torch, plan.index) or None)
    if status:
        _check(status, what)


def kv_append(key, value, k_cache, v_cache, slot_mapping, *, layout="NHD",
              arch=None):
    """Writes ``key``/``value`` [tokens, kv_heads, head_dim] into the paged
    caches in place at ``slot_mapping`` (int64 [tokens]; page * page_size +
    offset; negative entries are padding and write nothing). Caches as in
    attnc.decode: NHD [pages, page_size, kv_heads, head_dim] or HND [pages,
    kv_heads, page_size, head_dim]. Runs on torch.cuda.current_stream().
    Returns (k_cache, v_cache). Under tracing it is torch.ops.attnc.kv_append
    (which mutates both caches)."""
    ops = _route.ops_for(key)
    if ops is not None:
        ops.kv_append(key, value, k_cache, v_cache, slot_mapping, layout,
                      arch)
        return k_cache, v_cache
    return launch_kv_append(key, value, k_cache, v_cache, slot_mapping,
                            layout, arch)


def launch_kv_append(key, value, k_cache, v_cache, slot_mapping,
                     layout="NHD", arch=None):
    """kv_append()'s eager launch; returns (k_cache, v_cache)."""
    import torch

    try:
        plan_key = ("kv_append", _meta(key), _meta(value), _meta(k_cache),
                    _meta(v_cache), _meta(slot_mapping), layout, arch)
        plan = _planned(plan_key)
    except TypeError:  # an unhashable option: no plan
        plan_key, plan = None, None
    if plan is None:
        plan = _kv_append_plan(torch, key, value, k_cache, v_cache,
                               slot_mapping, layout, arch)
        if plan_key is not None:
            _route.remember(_plans, plan_key, plan)
    args = _KVAppendArgs.from_buffer_copy(plan.args)
    args.key.data = key.data_ptr()
    args.value.data = value.data_ptr()
    args.slot_mapping = slot_mapping.data_ptr() or None
    args.k_cache.data = k_cache.data_ptr()
    args.v_cache.data = v_cache.data_ptr()
    _run(torch, plan, args, "attnc_kv_append_launch")
    return k_cache, v_cache


def _kv_append_plan(torch, key, value, k_cache, v_cache, slot_mapping, layout,
                    arch):
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
    plan = _Plan()
    with torch.cuda.device(device):
        if arch is None:
            arch = arch_for_capability(torch.cuda.get_device_capability(device))
        spec = json.dumps({"op": "kv_append", "dtype": dtype,
                           "heads": kv_heads, "kv_heads": kv_heads,
                           "head_dim": head_dim, "page_size": page_size,
                           "arch": arch}, sort_keys=True)
        plan.ctx = ctx = context(device.index)
        plan.kernel = _kernel(ctx, spec)
    args = _KVAppendArgs()
    _fn("attnc_kv_append_args_init")(ctypes.byref(args))
    rows = (0, 1, 2, 2)  # [tokens, Hkv, D] in a 4-d descriptor
    args.key = _tensor_to_c(_desc(key, rows), "key")
    args.value = _tensor_to_c(_desc(value, rows), "value")
    args.k_cache = _tensor_to_c(_desc(k_cache, perm), "k_cache")
    args.v_cache = _tensor_to_c(_desc(v_cache, perm), "v_cache")
    plan.args = args
    plan.launch = _fn("attnc_kv_append_launch")
    plan.index = device.index
    plan.device = device
    return plan


def merge_state(o_a, lse_a, o_b, lse_b, *, return_lse=True, arch=None):
    """Merges two attention results of the same queries over disjoint key
    sets: o [batch, q_len, heads, head_dim] (bf16/fp16) and lse float32
    [batch, heads, q_len] each. Returns (o, lse) (or o) of attention over
    the union; a side with lse = -inf (no key) weighs 0, both -inf give
    o = 0 and lse = -inf. Under tracing it is torch.ops.attnc.merge_state."""
    ops = _route.ops_for(o_a)
    if ops is not None:
        o, lse = ops.merge_state(o_a, lse_a, o_b, lse_b, bool(return_lse),
                                 arch)
        return (o, lse) if return_lse else o
    return launch_merge_state(o_a, lse_a, o_b, lse_b, return_lse, arch)


_BHSD = (0, 2, 1, 3)


def _lse_desc(t):
    return TensorDesc(int(t.data_ptr()), tuple(t.shape), tuple(t.stride()))


def launch_merge_state(o_a, lse_a, o_b, lse_b, return_lse=True, arch=None):
    """merge_state()'s eager launch; returns (o, lse), or o."""
    import torch

    try:
        plan_key = ("lse_merge", _meta(o_a), _meta(lse_a), _meta(o_b),
                    _meta(lse_b), return_lse, arch)
        plan = _planned(plan_key)
    except TypeError:  # an unhashable option: no plan
        plan_key, plan = None, None
    if plan is None:
        plan = _merge_plan(torch, o_a, lse_a, o_b, lse_b, return_lse, arch)
        if plan_key is not None:
            _route.remember(_plans, plan_key, plan)
    o = torch.empty_like(o_a)
    args = _MergeArgs.from_buffer_copy(plan.args)
    args.o_a.data = o_a.data_ptr()
    args.lse_a.data = lse_a.data_ptr()
    args.o_b.data = o_b.data_ptr()
    args.lse_b.data = lse_b.data_ptr()
    args.o.data = o.data_ptr()
    lse = None
    if return_lse:
        lse = torch.empty(plan.lse_shape, dtype=torch.float32,
                          device=plan.device)
        args.lse.data = lse.data_ptr()
    _run(torch, plan, args, "attnc_merge_launch")
    return (o, lse) if return_lse else o


def _merge_plan(torch, o_a, lse_a, o_b, lse_b, return_lse, arch):
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
    plan = _Plan()
    with torch.cuda.device(device):
        if arch is None:
            arch = arch_for_capability(torch.cuda.get_device_capability(device))
        spec = json.dumps({"op": "lse_merge", "dtype": dtype, "heads": heads,
                           "kv_heads": heads, "head_dim": head_dim,
                           "has_lse": bool(return_lse), "arch": arch},
                          sort_keys=True)
        plan.ctx = ctx = context(device.index)
        plan.kernel = _kernel(ctx, spec)
    # o is torch.empty_like(o_a) on every call: its strides follow o_a's
    # (the plan's key), so the first call's stand for all.
    o = torch.empty_like(o_a)
    plan.lse_shape = (batch, heads, q_len)
    lse = (torch.empty(plan.lse_shape, dtype=torch.float32, device=device)
           if return_lse else None)
    args = _MergeArgs()
    _fn("attnc_merge_args_init")(ctypes.byref(args))
    args.o_a = _tensor_to_c(_desc(o_a, _BHSD), "o_a")
    args.lse_a = _tensor_to_c(_lse_desc(lse_a), "lse_a")
    args.o_b = _tensor_to_c(_desc(o_b, _BHSD), "o_b")
    args.lse_b = _tensor_to_c(_lse_desc(lse_b), "lse_b")
    args.o = _tensor_to_c(_desc(o, _BHSD), "o")
    args.lse = _tensor_to_c(None if lse is None else _lse_desc(lse), "lse")
    plan.args = args
    plan.launch = _fn("attnc_merge_launch")
    plan.index = device.index
    plan.device = device
    return plan


# vLLM's name for the same operation.
paged_kv_append = kv_append
