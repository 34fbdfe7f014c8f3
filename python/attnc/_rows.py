"""attnc's fused elementwise kernels on torch tensors: silu_and_mul,
gelu_and_mul and fused_add_rms_norm (vLLM's semantics and names).

Tensors are [..., d] (any leading dims whose rows are evenly strided, unit
last-dim stride, 16-byte aligned rows), bf16 or fp16, on one CUDA device.
The checks work on tensor-like fakes; torch is imported only to allocate.
"""

import ctypes
import json

from . import _route
from ._attention import _contexts, arch_for_capability, context
from ._capi import (AttncError, RowDesc, _RowArgs, _check, _row_args_to_c,
                    lib)

_byref = ctypes.byref

_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "fp16"}


def _fail(name, message):
    raise AttncError("attnc.%s: %s" % (name, message))


def _rows_of(name, what, t):
    """(rows, cols, row stride) of t seen as [rows, cols]."""
    if getattr(t.device, "type", None) != "cuda":
        _fail(name, "%s is on %s; attnc runs on CUDA tensors" % (what, t.device))
    if len(t.shape) < 1:
        _fail(name, "%s must have at least one dim" % what)
    strides = t.stride()
    if strides[-1] != 1:
        _fail(name, "%s.stride(-1) is %d; it must be 1 (call .contiguous())"
              % (what, strides[-1]))
    cols = int(t.shape[-1])
    if len(t.shape) == 1:
        return 1, cols, cols
    rows = 1
    for s in t.shape[:-1]:
        rows *= int(s)
    # The leading dims must flatten to one evenly strided row index.
    expect = strides[-2]
    for i in range(len(t.shape) - 2, 0, -1):
        if t.shape[i - 1] > 1 and strides[i - 1] != strides[i] * t.shape[i]:
            _fail(name, "%s's leading dims do not flatten to evenly strided "
                  "rows (strides %s); call .contiguous()" % (what, strides))
    return rows, cols, int(expect)


def _dtype(name, t):
    dtype = _DTYPES.get(str(t.dtype))
    if dtype is None:
        _fail(name, "dtype %s is not supported (torch.bfloat16, "
              "torch.float16)" % (t.dtype,))
    return dtype


def spec_json(op, dtype, hidden, arch, eps=None, threads_per_row=0,
              rows_per_program=0):
    """The JSON spec of a row kernel (as in spec files)."""
    spec = {"op": op, "dtype": dtype, "hidden": int(hidden), "arch": arch,
            "tuning": {"block_m": int(rows_per_program),
                       "block_n": int(threads_per_row)}}
    if eps is not None:
        spec["eps"] = float(eps)
    return json.dumps(spec, sort_keys=True)


# (op, dtype, hidden, eps, arch, device index) -> (Context, kernel handle):
# a call after the first skips the spec's JSON, the device guard and the
# capability query (tens of microseconds of Python per call, as much as a
# 70 us add+rms_norm kernel takes on the GPU; bench/NOTES.md).
_kernels = {}


class _Plan:
    """A repeated call's reusable part: the kernel and the launch arguments
    with every row count, column count and stride filled in (a call sets
    only the data pointers), and the shape of an output allocated here."""

    __slots__ = ("ctx", "kernel", "args", "index", "handle", "out_shape")


# (op, the metadata of every tensor the first call checked, options) ->
# _Plan: a hit means the checks passed for tensors like these.
_plans = {}
_args_copy = _RowArgs.from_buffer_copy


def _meta(t):
    """What the checks and a row descriptor read of a tensor."""
    return (t.dtype, t.device, t.shape, t.stride())


def _planned(key):
    plan = _plans.get(key)
    if plan is not None and _contexts.get(plan.index) is not plan.ctx:
        return None  # the context was closed and replaced (tests)
    return plan


def _kernel_of(name, op, ref, hidden, eps=None, arch=None):
    """(Context, kernel) of a row op for tensors like ``ref``."""
    import torch

    device = ref.device
    key = (op, ref.dtype, hidden, eps, arch, device.index)
    hit = _kernels.get(key)
    if hit is None or _contexts.get(device.index) is not hit[0]:
        with torch.cuda.device(device):
            spec_arch = arch or arch_for_capability(
                torch.cuda.get_device_capability(device))
            ctx = context(device.index)
            kernel = ctx.get_kernel_json(spec_json(op, _dtype(name, ref),
                                                   hidden, spec_arch, eps))
        hit = _kernels[key] = (ctx, kernel)
    return hit


def _new_plan(key, name, op, ref, hidden, rows, descs, eps=None, arch=None,
              out_shape=None):
    ctx, kernel = _kernel_of(name, op, ref, hidden, eps, arch)
    plan = _Plan()
    plan.ctx, plan.kernel = ctx, kernel
    plan.args = _row_args_to_c(rows, descs)
    plan.index = ref.device.index
    plan.handle = lib()
    plan.out_shape = out_shape
    if key is not None:
        _route.remember(_plans, key, plan)
    return plan


def _run(torch, plan, *pointers):
    """Launches a plan's kernel with these data pointers (ABI order) on
    torch's current stream."""
    args = _args_copy(plan.args)
    tensors = args.tensors
    for i, p in enumerate(pointers):
        tensors[i].data = p
    # The runtime makes its own CUDA context current for the launch.
    status = plan.handle.attnc_row_launch(
        plan.ctx._handle, plan.kernel, _byref(args),
        _route.current_stream(torch, plan.index) or None)
    if status:
        _check(status, "attnc_row_launch")


def _desc(name, what, t):
    rows, cols, stride = _rows_of(name, what, t)
    return RowDesc(int(t.data_ptr()), rows, cols, stride)


def _gated(name, op, x, out, arch):
    try:
        key = (op, _meta(x), None if out is None else _meta(out), arch)
        plan = _planned(key)
    except TypeError:  # an unhashable option: no plan
        key, plan = None, None
    if plan is None:
        _dtype(name, x)
        rows, cols, _ = _rows_of(name, "x", x)
        if cols % 2:
            _fail(name, "x's last dim (%d) must be even: gate and up halves"
                  % cols)
        d = cols // 2
        out_shape = tuple(x.shape[:-1]) + (d,)
        fresh = out
        if fresh is None:
            import torch
            fresh = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        plan = _new_plan(key, name, op, x, d, rows,
                         [_desc(name, "x", x), _desc(name, "out", fresh)],
                         arch=arch, out_shape=out_shape)
    import torch
    if out is None:
        out = torch.empty(plan.out_shape, dtype=x.dtype, device=x.device)
    _run(torch, plan, x.data_ptr(), out.data_ptr())
    return out


def silu_and_mul(x, out=None, *, arch=None):
    """silu(x[..., :d]) * x[..., d:] for x [..., 2d]; returns out [..., d].
    Under tracing it is torch.ops.attnc.silu_and_mul (silu_and_mul_out with
    ``out``)."""
    ops = _route.ops_for(x)
    if ops is not None:
        if out is None:
            return ops.silu_and_mul(x, arch)
        ops.silu_and_mul_out(out, x, arch)
        return out
    return _gated("silu_and_mul", "silu_mul", x, out, arch)


def gelu_and_mul(x, out=None, *, arch=None):
    """gelu_tanh(x[..., :d]) * x[..., d:] for x [..., 2d]. Under tracing
    it is torch.ops.attnc.gelu_and_mul (gelu_and_mul_out with ``out``)."""
    ops = _route.ops_for(x)
    if ops is not None:
        if out is None:
            return ops.gelu_and_mul(x, arch)
        ops.gelu_and_mul_out(out, x, arch)
        return out
    return _gated("gelu_and_mul", "gelu_mul", x, out, arch)


def fused_add_rms_norm(x, residual, weight, eps=1e-6, *, out=None,
                       residual_out=None, inplace=False, arch=None):
    """h = x + residual; y = h / sqrt(mean(h^2) + eps) * weight.

    Returns (y, h). With inplace=True, y is written into x and h into
    residual (vLLM's fused_add_rms_norm), and (x, residual) are returned.
    Under tracing it is torch.ops.attnc.fused_add_rms_norm (its _inplace
    and _out variants when the outputs are given).
    """
    ops = _route.ops_for(x)
    if ops is not None:
        eps = float(eps)
        if inplace or (out is x and residual_out is residual):
            ops.fused_add_rms_norm_inplace(x, residual, weight, eps, arch)
            return x, residual
        if out is None and residual_out is None:
            return ops.fused_add_rms_norm(x, residual, weight, eps, arch)
        if out is None:
            out = torch_empty_like(x)
        if residual_out is None:
            residual_out = torch_empty_like(x)
        ops.fused_add_rms_norm_out(out, residual_out, x, residual, weight,
                                   eps, arch)
        return out, residual_out
    return launch_add_rms_norm(x, residual, weight, eps, out, residual_out,
                               inplace, arch)


def torch_empty_like(t):
    import torch
    return torch.empty_like(t)


def launch_add_rms_norm(x, residual, weight, eps=1e-6, out=None,
                        residual_out=None, inplace=False, arch=None):
    """fused_add_rms_norm()'s eager launch; returns (y, h)."""
    name = "fused_add_rms_norm"
    if inplace:
        out, residual_out = x, residual
    try:
        key = ("add_rmsnorm", _meta(x), _meta(residual), _meta(weight),
               None if out is None else _meta(out),
               None if residual_out is None else _meta(residual_out),
               out is x, residual_out is residual, eps, arch)
        plan = _planned(key)
    except TypeError:  # an unhashable option: no plan
        key, plan = None, None
    import torch
    if plan is None:
        dtype = _dtype(name, x)
        for what, t in (("residual", residual), ("weight", weight)):
            if _dtype(name, t) != dtype:
                _fail(name, "%s has dtype %s but x has %s"
                      % (what, t.dtype, x.dtype))
        rows, d, _ = _rows_of(name, "x", x)
        if len(weight.shape) != 1 or int(weight.shape[0]) != d:
            _fail(name, "weight has shape %s; expected [%d]"
                  % (tuple(weight.shape), d))
        # Outputs allocated here are torch.empty_like(x) on every call:
        # their strides follow x's (the plan's key).
        y = out if out is not None else torch.empty_like(x)
        h = residual_out if residual_out is not None else torch.empty_like(x)
        plan = _new_plan(key, name, "add_rmsnorm", x, d, rows,
                         [_desc(name, "x", x),
                          _desc(name, "residual", residual),
                          _desc(name, "weight", weight),
                          _desc(name, "out", y),
                          _desc(name, "residual_out", h)],
                         eps=eps, arch=arch)
    if out is None:
        out = torch.empty_like(x)
    if residual_out is None:
        residual_out = torch.empty_like(x)
    _run(torch, plan, x.data_ptr(), residual.data_ptr(), weight.data_ptr(),
         out.data_ptr(), residual_out.data_ptr())
    return out, residual_out


def add_rms_norm(x, r, w, eps=1e-6):
    """bench/compare.py's name: (y, residual) of fused_add_rms_norm."""
    return fused_add_rms_norm(x, r, w, eps)


def rope_spec_json(dtype, heads, kv_heads, head_size, rotary_dim, is_neox,
                   position_bits, arch):
    """The JSON spec of a rope kernel."""
    return json.dumps({"op": "rope", "dtype": dtype, "heads": int(heads),
                       "kv_heads": int(kv_heads), "head_dim": int(head_size),
                       "rotary_dim": int(rotary_dim), "is_neox": bool(is_neox),
                       "position_bits": int(position_bits), "arch": arch},
                      sort_keys=True)


def rotary_embedding(positions, query, key, head_size, cos_sin_cache,
                     is_neox=True, *, arch=None):
    """vLLM's rotary_embedding, in place: rotates the first rotary_dim
    (= cos_sin_cache.shape[-1]) columns of every head of query
    [tokens, heads * head_size] and key [tokens, kv_heads * head_size] (or
    [tokens, heads, head_size]) by cos_sin_cache[positions] (cos half, then
    sin half). NeoX pairs (i, i + rotary_dim/2) or GPT-J pairs (2i, 2i + 1).
    Returns (query, key). Under tracing it is
    torch.ops.attnc.rotary_embedding (which mutates query and key)."""
    ops = _route.ops_for(query)
    if ops is not None:
        ops.rotary_embedding(positions, query, key, int(head_size),
                             cos_sin_cache, bool(is_neox), arch)
        return query, key
    return launch_rotary_embedding(positions, query, key, head_size,
                                   cos_sin_cache, is_neox, arch)


def launch_rotary_embedding(positions, query, key, head_size, cos_sin_cache,
                            is_neox=True, arch=None):
    """rotary_embedding()'s eager launch; returns (query, key)."""
    name = "rotary_embedding"
    try:
        plan_key = ("rope", _meta(positions), _meta(query), _meta(key),
                    _meta(cos_sin_cache), head_size, is_neox, arch)
        plan = _planned(plan_key)
    except TypeError:  # an unhashable option: no plan
        plan_key, plan = None, None
    if plan is None:
        dtype = _dtype(name, query)
        for what, t in (("key", key), ("cos_sin_cache", cos_sin_cache)):
            if _dtype(name, t) != dtype:
                _fail(name, "%s has dtype %s but query has %s"
                      % (what, t.dtype, query.dtype))
        pos_type = str(positions.dtype)
        if pos_type not in ("torch.int64", "torch.int32"):
            _fail(name, "positions must be torch.int64 or torch.int32, got "
                  "%s" % positions.dtype)
        if positions.numel() > 1 and not positions.is_contiguous():
            _fail(name, "positions must be contiguous")
        tokens = int(positions.numel())

        def flat(what, t):
            # [tokens, heads, head_size] -> [tokens, heads * head_size] view
            if len(t.shape) == 3:
                t = t.view(t.shape[0], -1)
            rows, cols, stride = _rows_of(name, what, t)
            if rows != tokens:
                _fail(name, "%s has %d rows but positions has %d tokens"
                      % (what, rows, tokens))
            if cols % head_size:
                _fail(name, "%s's rows (%d) are not whole heads of %d"
                      % (what, cols, head_size))
            return t, cols

        query2, qcols = flat("query", query)
        key2, kcols = flat("key", key)
        rows_c, rot, _ = _rows_of(name, "cos_sin_cache", cos_sin_cache)
        if tokens == 0:
            return query, key
        import torch
        device = query.device
        with torch.cuda.device(device):
            spec_arch = arch or arch_for_capability(
                torch.cuda.get_device_capability(device))
            ctx = context(device.index)
            bits = 64 if pos_type == "torch.int64" else 32
            kernel = ctx.get_kernel_json(rope_spec_json(
                dtype, qcols // head_size, kcols // head_size, head_size,
                rot, is_neox, bits, spec_arch))
        plan = _Plan()
        plan.ctx, plan.kernel = ctx, kernel
        plan.args = _row_args_to_c(tokens, [
            RowDesc(int(positions.data_ptr()), tokens, 1, 1),
            _desc(name, "query", query2), _desc(name, "key", key2),
            _desc(name, "cos_sin_cache", cos_sin_cache)])
        plan.index = device.index
        plan.handle = lib()
        plan.out_shape = None
        if plan_key is not None:
            _route.remember(_plans, plan_key, plan)
    import torch
    _run(torch, plan, positions.data_ptr(), query.data_ptr(),
         key.data_ptr(), cos_sin_cache.data_ptr())
    return query, key
