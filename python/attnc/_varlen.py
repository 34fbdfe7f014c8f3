"""attnc.attention_varlen: FlashAttention's flash_attn_varlen_func contract.

Packed sequences: q [total_q, heads, head_dim], k and v [total_k, kv_heads,
head_dim], sequence b owning rows cu_seqlens[b] .. cu_seqlens[b + 1] - 1 of
each side. One kernel serves every batch composition (the lengths are read
on the device). The argument checks work on anything tensor-like, so they
are tested without torch or a GPU.
"""

from . import _route
from ._attention import (_byref, _contexts, arch_for_capability, check_dtypes,
                         check_sinks, context, sinks_key, window_bounds)
from ._capi import (AttncError, Spec, TensorDesc, VarlenDesc, _args_to_c,
                    _check, lib)

# (dtype, device, heads, head dim, options) -> (context, kernel): the kernel
# lookup of a call like this one (the lengths do not enter: one kernel
# serves every batch composition).
_plans = {}


def _fail(message):
    raise AttncError("attnc.attention_varlen: " + message)


def check_varlen_shapes(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                        max_seqlen_k):
    """Dtypes, ranks, heads, head-dim strides, the cu_seqlens and the
    longest lengths (what needs no device). Returns the runtime dtype
    name."""
    named = (("q", q), ("k", k), ("v", v))
    dtype = check_dtypes(q, k, v)
    for name, t in named:
        if len(t.shape) != 3:
            _fail("%s has shape %s (%d dims); expected 3 dims [total, heads, "
                  "head_dim] (packed sequences)"
                  % (name, tuple(t.shape), len(t.shape)))
    _, h, d = q.shape
    tk, hk, _ = k.shape
    if tuple(v.shape) != tuple(k.shape):
        _fail("k has shape %s but v has %s; they must match"
              % (tuple(k.shape), tuple(v.shape)))
    if k.shape[2] != d:
        _fail("head_dim differs: q.shape[2] = %d but k.shape[2] = %d"
              % (d, k.shape[2]))
    if hk < 1 or h % hk != 0:
        _fail("q has %d heads, which is not a multiple of k/v's %d heads"
              % (h, hk))
    for name, t in named:
        if t.stride()[2] != 1:
            _fail("%s.stride(2) (head_dim) is %d; it must be 1 (call "
                  "%s.contiguous())" % (name, t.stride()[2], name))
    for name, cu in (("cu_seqlens_q", cu_seqlens_q),
                     ("cu_seqlens_k", cu_seqlens_k)):
        if str(cu.dtype) != "torch.int32" or len(cu.shape) != 1:
            _fail("%s must be a 1-D torch.int32 tensor of B + 1 sequence "
                  "starts, got %s of shape %s"
                  % (name, cu.dtype, tuple(cu.shape)))
        if cu.shape[0] < 1:
            _fail("%s is empty; it holds B + 1 entries (0 first)" % name)
        if cu.shape[0] > 1 and cu.stride()[0] != 1:
            _fail("%s must be contiguous, got stride %s"
                  % (name, cu.stride()))
    if cu_seqlens_q.shape[0] != cu_seqlens_k.shape[0]:
        _fail("cu_seqlens_q has %d entries but cu_seqlens_k %d; both are "
              "B + 1" % (cu_seqlens_q.shape[0], cu_seqlens_k.shape[0]))
    for name, value, total in (("max_seqlen_q", max_seqlen_q, q.shape[0]),
                               ("max_seqlen_k", max_seqlen_k, k.shape[0])):
        if isinstance(value, (bool, float)) or not hasattr(value,
                                                            "__index__"):
            _fail("%s must be an int, got %r" % (name, value))
        if value < 0 or value > total:
            _fail("%s is %d; it must be 0 to the packed rows (%d)"
                  % (name, value, total))
    if max_seqlen_q == 0 and q.shape[0] > 0 and cu_seqlens_q.shape[0] > 1:
        _fail("max_seqlen_q is 0 but q has %d rows: pass the longest "
              "sequence's length" % q.shape[0])
    return dtype


def describe_packed(t):
    """TensorDesc of a packed [total, H, D] tensor as the runtime's
    [1, H, total, D] view (the batch stride is unused)."""
    s, st = t.shape, t.stride()
    return TensorDesc(int(t.data_ptr()), (1, s[1], s[0], s[2]),
                      (0, st[1], st[0], st[2]))


def describe_varlen_lse(lse):
    """TensorDesc of the [H, total_q] float32 LSE as [1, H, total_q]."""
    return TensorDesc(int(lse.data_ptr()), (1, lse.shape[0], lse.shape[1]),
                      (0, lse.stride()[0], 1))


def make_varlen_spec(q, k, *, dtype, arch, causal=False, window=None,
                     softcap=None, scale=None, return_lse=False, block_m=0,
                     block_n=0, sinks=False):
    """The Spec of a checked varlen call."""
    left, right = window_bounds(window)
    if scale is not None and scale != scale:
        scale = None
    return Spec(heads=int(q.shape[1]), kv_heads=int(k.shape[1]),
                head_dim=int(q.shape[2]), dtype=dtype, causal=bool(causal),
                has_lse=bool(return_lse), window_left=left,
                window_right=right,
                softcap=0.0 if softcap is None else float(softcap),
                scale=None if scale is None else float(scale), arch=arch,
                block_m=int(block_m), block_n=int(block_n),
                sinks=bool(sinks), varlen=True)


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                     max_seqlen_k, *, causal=False, window=None, softcap=None,
                     sinks=None, scale=None, return_lse=False, arch=None,
                     block_m=0, block_n=0, score_mod=None, mask_mod=None):
    """Attention forward of packed variable-length sequences
    (FlashAttention's flash_attn_varlen_func).

    q: [total_q, heads, head_dim]; k, v: [total_k, kv_heads, head_dim];
    bf16 or fp16 on one CUDA device, unit head-dim stride. cu_seqlens_q and
    cu_seqlens_k: int32 [B + 1] on that device, the sequences' starts (0
    first, non-decreasing, last = total; the kernel trusts them).
    max_seqlen_q and max_seqlen_k: ints at least every sequence's length
    (the grid covers max_seqlen_q rows per sequence). Lengths may be 0.
    Each sequence is attended on its own: causal and window are
    bottom-right aligned on its own lengths. window, softcap, scale, sinks
    and arch as in attnc.attention. Returns o (like q; rows outside every
    sequence are not written), or (o, lse) with lse float32
    [heads, total_q] when return_lse. On sm_90a the kernel copies K and V
    in whole tiles, past a sequence's end into the next rows, and weights
    those V rows by 0: every row of v must be finite, padding after the
    last sequence included (0 * NaN is NaN; docs/variants.md).

    score_mod(score, b, h, q_idx, kv_idx) and mask_mod(b, h, q_idx, kv_idx)
    as in attnc.attention, where b is the sequence and q_idx, kv_idx are
    positions within it (a captured per-sequence tensor is indexed
    [b, q_idx]); eager calls only.

    Under torch.compile, torch.export, fake tensors or a dispatch mode the
    call goes through torch.ops.attnc.attention_varlen.
    """
    ops = _route.ops_for(q)
    if score_mod is not None or mask_mod is not None:
        if ops is not None:
            _fail("score_mod and mask_mod run in eager calls only; under "
                  "torch.compile, torch.export or a dispatch mode they are "
                  "not supported yet")
        from . import _attention

        return _attention.launch(
            q, k, v, causal, window, softcap, scale, return_lse, arch,
            block_m, block_n, score_mod, mask_mod, sinks,
            varlen=(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k))
    if ops is not None:
        left, right = window_bounds(window)
        o, lse = ops.attention_varlen(
            q, k, v, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q),
            int(max_seqlen_k), bool(causal), left, right,
            None if softcap is None else float(softcap),
            None if scale is None else float(scale), bool(return_lse), arch,
            int(block_m), int(block_n), sinks)
        return (o, lse) if return_lse else o
    return launch(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                  max_seqlen_k, causal, window, softcap, scale, return_lse,
                  arch, block_m, block_n, sinks)


def check_devices(q, k, v, cu_seqlens_q, cu_seqlens_k):
    for name, t in (("q", q), ("k", k), ("v", v),
                    ("cu_seqlens_q", cu_seqlens_q),
                    ("cu_seqlens_k", cu_seqlens_k)):
        if getattr(t.device, "type", None) != "cuda":
            _fail("%s is on %s; attnc runs on CUDA tensors" % (name, t.device))
        if str(t.device) != str(q.device):
            _fail("q is on %s but %s is on %s; all must be on one device"
                  % (q.device, name, t.device))


def launch(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
           causal=False, window=None, softcap=None, scale=None,
           return_lse=False, arch=None, block_m=0, block_n=0, sinks=None):
    """attention_varlen()'s eager launch. Returns (o, lse) when return_lse,
    else o."""
    if scale is not None and scale != scale:
        scale = None
    dtype = check_varlen_shapes(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                max_seqlen_q, max_seqlen_k)
    check_devices(q, k, v, cu_seqlens_q, cu_seqlens_k)
    import torch

    if sinks is not None:
        check_sinks(torch, sinks, q.unsqueeze(0))
    device = q.device
    key = ("varlen", q.dtype, device, q.shape[1:], k.shape[1:], causal,
           window, softcap, scale, return_lse, arch, block_m, block_n,
           sinks_key(sinks))
    kernel_plan = _plans.get(key)
    if kernel_plan is not None and _contexts.get(device.index) is not \
            kernel_plan[0]:
        kernel_plan = None  # the context was closed and replaced (tests)
    with torch.cuda.device(device):
        if kernel_plan is None:
            ctx = context(device.index)
            use_arch = arch or arch_for_capability(
                torch.cuda.get_device_capability(device))
            spec = make_varlen_spec(
                q, k, dtype=dtype, arch=use_arch, causal=causal,
                window=window, softcap=softcap, scale=scale,
                return_lse=return_lse, block_m=block_m, block_n=block_n,
                sinks=sinks is not None)
            kernel = ctx.get_kernel_for(spec, max(cu_seqlens_q.shape[0] - 1,
                                                  1),
                                        max(int(max_seqlen_q), 1),
                                        max(int(max_seqlen_k), 1))
            kernel_plan = (ctx, kernel)
            _route.remember(_plans, key, kernel_plan)
        ctx, kernel = kernel_plan
        o = torch.empty_like(q)
        lse = None
        if return_lse:
            lse = torch.empty((q.shape[1], q.shape[0]), dtype=torch.float32,
                              device=device)
        varlen = VarlenDesc(int(cu_seqlens_q.data_ptr()),
                            int(cu_seqlens_k.data_ptr()),
                            cu_seqlens_q.shape[0] - 1, int(max_seqlen_q),
                            int(max_seqlen_k))
        args = _args_to_c(describe_packed(q), describe_packed(k),
                          describe_packed(v), describe_packed(o),
                          None if lse is None else describe_varlen_lse(lse),
                          0 if sinks is None else sinks.data_ptr(), varlen)
        stream = _route.current_stream(torch, device.index)
        _check(lib().attnc_attention_launch(ctx._handle, kernel, _byref(args),
                                            stream or None),
               "attnc_attention_launch")
    return (o, lse) if return_lse else o
