"""attnc's fused elementwise kernels on torch tensors: silu_and_mul,
gelu_and_mul and fused_add_rms_norm (vLLM's semantics and names).

Tensors are [..., d] (any leading dims whose rows are evenly strided, unit
last-dim stride, 16-byte aligned rows), bf16 or fp16, on one CUDA device.
The checks work on tensor-like fakes; torch is imported only to allocate.
"""

import json

from ._attention import arch_for_capability, context
from ._capi import AttncError, RowDesc

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


def _launch(name, op, ref, hidden, tensors, rows, eps=None, arch=None):
    import torch

    device = ref.device
    key = (op, ref.dtype, hidden, eps, arch, device.index)
    hit = _kernels.get(key)
    if hit is None:
        with torch.cuda.device(device):
            spec_arch = arch or arch_for_capability(
                torch.cuda.get_device_capability(device))
            ctx = context(device.index)
            kernel = ctx.get_kernel_json(spec_json(op, _dtype(name, ref),
                                                   hidden, spec_arch, eps))
        hit = _kernels[key] = (ctx, kernel)
    ctx, kernel = hit
    # The runtime makes its own CUDA context current for the launch.
    stream = torch.cuda.current_stream(device).cuda_stream
    ctx.launch_rows(kernel, rows, tensors, stream=stream)


def _desc(name, what, t):
    rows, cols, stride = _rows_of(name, what, t)
    return RowDesc(int(t.data_ptr()), rows, cols, stride)


def _gated(name, op, x, out, arch):
    _dtype(name, x)
    rows, cols, _ = _rows_of(name, "x", x)
    if cols % 2:
        _fail(name, "x's last dim (%d) must be even: gate and up halves" % cols)
    d = cols // 2
    if out is None:
        import torch
        out = torch.empty(tuple(x.shape[:-1]) + (d,), dtype=x.dtype,
                          device=x.device)
    _launch(name, op, x, d, [_desc(name, "x", x), _desc(name, "out", out)],
            rows, arch=arch)
    return out


def silu_and_mul(x, out=None, *, arch=None):
    """silu(x[..., :d]) * x[..., d:] for x [..., 2d]; returns out [..., d]."""
    return _gated("silu_and_mul", "silu_mul", x, out, arch)


def gelu_and_mul(x, out=None, *, arch=None):
    """gelu_tanh(x[..., :d]) * x[..., d:] for x [..., 2d]."""
    return _gated("gelu_and_mul", "gelu_mul", x, out, arch)


def fused_add_rms_norm(x, residual, weight, eps=1e-6, *, out=None,
                       residual_out=None, inplace=False, arch=None):
    """h = x + residual; y = h / sqrt(mean(h^2) + eps) * weight.

    Returns (y, h). With inplace=True, y is written into x and h into
    residual (vLLM's fused_add_rms_norm), and (x, residual) are returned.
    """
    name = "fused_add_rms_norm"
    dtype = _dtype(name, x)
    for what, t in (("residual", residual), ("weight", weight)):
        if _dtype(name, t) != dtype:
            _fail(name, "%s has dtype %s but x has %s" % (what, t.dtype,
                                                          x.dtype))
    rows, d, _ = _rows_of(name, "x", x)
    if len(weight.shape) != 1 or int(weight.shape[0]) != d:
        _fail(name, "weight has shape %s; expected [%d]"
              % (tuple(weight.shape), d))
    if inplace:
        out, residual_out = x, residual
    import torch
    if out is None:
        out = torch.empty_like(x)
    if residual_out is None:
        residual_out = torch.empty_like(x)
    _launch(name, "add_rmsnorm", x, d,
            [_desc(name, "x", x), _desc(name, "residual", residual),
             _desc(name, "weight", weight), _desc(name, "out", out),
             _desc(name, "residual_out", residual_out)],
            rows, eps=eps, arch=arch)
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
    Returns (query, key)."""
    name = "rotary_embedding"
    dtype = _dtype(name, query)
    for what, t in (("key", key), ("cos_sin_cache", cos_sin_cache)):
        if _dtype(name, t) != dtype:
            _fail(name, "%s has dtype %s but query has %s" % (what, t.dtype,
                                                              query.dtype))
    pos_type = str(positions.dtype)
    if pos_type not in ("torch.int64", "torch.int32"):
        _fail(name, "positions must be torch.int64 or torch.int32, got %s"
              % positions.dtype)
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
        if arch is None:
            arch = arch_for_capability(torch.cuda.get_device_capability(device))
        ctx = context(device.index)
        bits = 64 if pos_type == "torch.int64" else 32
        kernel = ctx.get_kernel_json(rope_spec_json(
            dtype, qcols // head_size, kcols // head_size, head_size, rot,
            is_neox, bits, arch))
        stream = torch.cuda.current_stream(device).cuda_stream
        descs = [RowDesc(int(positions.data_ptr()), tokens, 1, 1),
                 _desc(name, "query", query2), _desc(name, "key", key2),
                 _desc(name, "cos_sin_cache", cos_sin_cache)]
        ctx.launch_rows(kernel, tokens, descs, stream=stream)
    return query, key
