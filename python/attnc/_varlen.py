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


def _cache_perm(layout):
    """The permutation of a paged cache to the runtime's [pages, Hkv,
    page_size, D]."""
    if layout == "NHD":
        return (0, 2, 1, 3)  # [pages, page_size, Hkv, D]
    if layout == "HND":
        return (0, 1, 2, 3)
    _fail("layout must be 'NHD' or 'HND', got %r" % (layout,))


def check_paged_shapes(q, k_cache, v_cache, cu_seqlens_q, block_table,
                       seqused_k, max_seqlen_q, max_seqlen_k, layout="NHD"):
    """The paged form's checks (needing no device): q [total_q, heads, D],
    the caches [pages, page_size, kv_heads, D] (NHD) or [pages, kv_heads,
    page_size, D] (HND), block_table [B, max_blocks] and seqused_k [B]
    int32. Returns (dtype name, page size)."""
    dtype = check_dtypes(q, k_cache, v_cache)
    perm = _cache_perm(layout)
    if len(q.shape) != 3:
        _fail("q has shape %s (%d dims); expected 3 dims [total, heads, "
              "head_dim] (packed sequences)" % (tuple(q.shape), len(q.shape)))
    for name, t in (("k", k_cache), ("v", v_cache)):
        if len(t.shape) != 4:
            _fail("with block_table, %s is a paged cache of 4 dims (%s), got "
                  "shape %s" % (name, "[pages, page_size, kv_heads, head_dim]"
                                if layout == "NHD" else
                                "[pages, kv_heads, page_size, head_dim]",
                                tuple(t.shape)))
        if t.stride()[3] != 1:
            _fail("%s.stride(3) (head_dim) is %d; it must be 1"
                  % (name, t.stride()[3]))
    if tuple(v_cache.shape) != tuple(k_cache.shape):
        _fail("k has shape %s but v has %s; they must match"
              % (tuple(k_cache.shape), tuple(v_cache.shape)))
    if q.stride()[2] != 1:
        _fail("q.stride(2) (head_dim) is %d; it must be 1" % q.stride()[2])
    _, h, d = q.shape
    hk = k_cache.shape[perm[1]]
    page_size = int(k_cache.shape[perm[2]])
    if k_cache.shape[3] != d:
        _fail("head_dim differs: q.shape[2] = %d but the caches' is %d"
              % (d, k_cache.shape[3]))
    if hk < 1 or h % hk != 0:
        _fail("q has %d heads, which is not a multiple of the caches' %d "
              "heads" % (h, hk))
    if str(cu_seqlens_q.dtype) != "torch.int32" or len(cu_seqlens_q.shape) != 1 \
            or cu_seqlens_q.shape[0] < 1:
        _fail("cu_seqlens_q must be a 1-D torch.int32 tensor of B + 1 "
              "sequence starts, got %s of shape %s"
              % (cu_seqlens_q.dtype, tuple(cu_seqlens_q.shape)))
    if cu_seqlens_q.shape[0] > 1 and cu_seqlens_q.stride()[0] != 1:
        _fail("cu_seqlens_q must be contiguous")
    batch = cu_seqlens_q.shape[0] - 1
    if str(block_table.dtype) != "torch.int32" or len(block_table.shape) != 2 \
            or block_table.shape[0] != batch or block_table.shape[1] < 1 or (
                block_table.shape[1] > 1 and block_table.stride()[1] != 1) or (
                batch > 1 and block_table.stride()[0] != block_table.shape[1]):
        _fail("block_table must be a contiguous [B, max_blocks] torch.int32 "
              "tensor (B = %d sequences), got %s of shape %s"
              % (batch, block_table.dtype, tuple(block_table.shape)))
    if seqused_k is None or str(seqused_k.dtype) != "torch.int32" or \
            tuple(seqused_k.shape) != (batch,) or (
                batch > 1 and seqused_k.stride()[0] != 1):
        _fail("with block_table, seqused_k must be a contiguous [B] "
              "torch.int32 tensor of key counts (B = %d), got %s"
              % (batch, None if seqused_k is None else
                 "%s of shape %s" % (seqused_k.dtype,
                                     tuple(seqused_k.shape))))
    capacity = block_table.shape[1] * page_size
    for name, value, top in (("max_seqlen_q", max_seqlen_q, q.shape[0]),
                             ("max_seqlen_k", max_seqlen_k, capacity)):
        if isinstance(value, (bool, float)) or not hasattr(value,
                                                            "__index__"):
            _fail("%s must be an int, got %r" % (name, value))
        if value < 0 or value > top:
            _fail("%s is %d; it must be 0 to %d" % (name, value, top))
    if max_seqlen_q == 0 and q.shape[0] > 0 and batch > 0:
        _fail("max_seqlen_q is 0 but q has %d rows: pass the longest "
              "sequence's length" % q.shape[0])
    return dtype, page_size


def describe_cache(t, layout):
    """TensorDesc of a paged cache as [pages, Hkv, page_size, D]."""
    perm = _cache_perm(layout)
    s, st = t.shape, t.stride()
    return TensorDesc(int(t.data_ptr()), tuple(int(s[i]) for i in perm),
                      tuple(int(st[i]) for i in perm))


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
                     block_n=0, sinks=False, page_size=0, kv_heads=None):
    """The Spec of a checked varlen call (paged: page_size and the caches'
    kv_heads)."""
    left, right = window_bounds(window)
    if scale is not None and scale != scale:
        scale = None
    return Spec(heads=int(q.shape[1]),
                kv_heads=int(k.shape[1] if kv_heads is None else kv_heads),
                head_dim=int(q.shape[2]), dtype=dtype, causal=bool(causal),
                has_lse=bool(return_lse), window_left=left,
                window_right=right,
                softcap=0.0 if softcap is None else float(softcap),
                scale=None if scale is None else float(scale), arch=arch,
                block_m=int(block_m), block_n=int(block_n),
                sinks=bool(sinks), varlen=True, page_size=int(page_size))


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                     max_seqlen_k, *, causal=False, window=None, softcap=None,
                     sinks=None, scale=None, return_lse=False, arch=None,
                     block_m=0, block_n=0, score_mod=None, mask_mod=None,
                     block_table=None, seqused_k=None, layout="NHD"):
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

    Paged prefill (vLLM's single call over a mixed prefill and decode
    batch): with block_table ([B, max_blocks] int32 page indices) and
    seqused_k ([B] int32 key counts), k and v are a paged cache
    [pages, page_size, kv_heads, head_dim] (layout "NHD", vLLM's and
    FlashAttention's) or [pages, kv_heads, page_size, head_dim] ("HND"),
    cu_seqlens_k is None, and key j of sequence b is row j mod page_size
    of page block_table[b, j // page_size]. Each sequence's queries are its
    last keys' positions (causal is bottom-right aligned: chunked prefill).
    max_seqlen_k bounds seqused_k. On sm_90a pages of a multiple of 8 rows
    go by TMA, other page sizes by the mma.sync kernel; the rows of a
    sequence's last page past its length are read and weighted 0 (they
    must be finite, like v's padding above). Under torch.compile the call
    goes through torch.ops.attnc.attention_varlen_paged.

    score_mod(score, b, h, q_idx, kv_idx) and mask_mod(b, h, q_idx, kv_idx)
    as in attnc.attention, where b is the sequence and q_idx, kv_idx are
    positions within it (a captured per-sequence tensor is indexed
    [b, q_idx]); eager calls only.

    Under torch.compile, torch.export, fake tensors or a dispatch mode the
    call goes through torch.ops.attnc.attention_varlen.
    """
    ops = _route.ops_for(q)
    if block_table is not None:
        if cu_seqlens_k is not None:
            _fail("with block_table the key counts are seqused_k; pass "
                  "cu_seqlens_k=None")
        if score_mod is not None or mask_mod is not None:
            _fail("score_mod and mask_mod do not take a paged cache "
                  "(block_table) yet")
        if ops is not None:
            left, right = window_bounds(window)
            o, lse = ops.attention_varlen_paged(
                q, k, v, cu_seqlens_q, block_table, seqused_k,
                int(max_seqlen_q), int(max_seqlen_k), layout, bool(causal),
                left, right, None if softcap is None else float(softcap),
                None if scale is None else float(scale), bool(return_lse),
                arch, int(block_m), int(block_n), sinks)
            return (o, lse) if return_lse else o
        return launch_paged(q, k, v, cu_seqlens_q, block_table, seqused_k,
                            max_seqlen_q, max_seqlen_k, layout, causal,
                            window, softcap, scale, return_lse, arch,
                            block_m, block_n, sinks)
    if seqused_k is not None:
        _fail("seqused_k is the key counts of a paged cache: pass "
              "block_table too")
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


def check_on_q_device(q, named):
    """Every (name, tensor) of ``named`` is a CUDA tensor on q's device."""
    for name, t in named:
        if getattr(t.device, "type", None) != "cuda":
            _fail("%s is on %s; attnc runs on CUDA tensors" % (name, t.device))
        if str(t.device) != str(q.device):
            _fail("q is on %s but %s is on %s; all must be on one device"
                  % (q.device, name, t.device))


def check_devices(q, k, v, cu_seqlens_q, cu_seqlens_k):
    check_on_q_device(q, (("q", q), ("k", k), ("v", v),
                          ("cu_seqlens_q", cu_seqlens_q),
                          ("cu_seqlens_k", cu_seqlens_k)))


def _launch(torch, q, key, spec_for, k_desc, v_desc, varlen, return_lse,
            arch, sinks):
    """The launch both forms share: the kernel for ``key`` (built from
    ``spec_for(arch)`` on the first call), O and the LSE allocated, the
    arguments packed and the kernel launched on the current stream."""
    device = q.device
    kernel_plan = _plans.get(key)
    if kernel_plan is not None and _contexts.get(device.index) is not \
            kernel_plan[0]:
        kernel_plan = None  # the context was closed and replaced (tests)
    with torch.cuda.device(device):
        if kernel_plan is None:
            ctx = context(device.index)
            use_arch = arch or arch_for_capability(
                torch.cuda.get_device_capability(device))
            kernel = ctx.get_kernel_for(spec_for(use_arch),
                                        max(varlen.batch, 1),
                                        max(varlen.max_seqlen_q, 1),
                                        max(varlen.max_seqlen_k, 1))
            kernel_plan = (ctx, kernel)
            _route.remember(_plans, key, kernel_plan)
        ctx, kernel = kernel_plan
        o = torch.empty_like(q)
        lse = None
        if return_lse:
            lse = torch.empty((q.shape[1], q.shape[0]), dtype=torch.float32,
                              device=device)
        args = _args_to_c(describe_packed(q), k_desc, v_desc,
                          describe_packed(o),
                          None if lse is None else describe_varlen_lse(lse),
                          0 if sinks is None else sinks.data_ptr(), varlen)
        stream = _route.current_stream(torch, device.index)
        _check(lib().attnc_attention_launch(ctx._handle, kernel, _byref(args),
                                            stream or None),
               "attnc_attention_launch")
    return (o, lse) if return_lse else o


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
    key = ("varlen", q.dtype, q.device, q.shape[1:], k.shape[1:], causal,
           window, softcap, scale, return_lse, arch, block_m, block_n,
           sinks_key(sinks))

    def spec_for(use_arch):
        return make_varlen_spec(
            q, k, dtype=dtype, arch=use_arch, causal=causal, window=window,
            softcap=softcap, scale=scale, return_lse=return_lse,
            block_m=block_m, block_n=block_n, sinks=sinks is not None)

    varlen = VarlenDesc(int(cu_seqlens_q.data_ptr()),
                        int(cu_seqlens_k.data_ptr()),
                        cu_seqlens_q.shape[0] - 1, int(max_seqlen_q),
                        int(max_seqlen_k))
    return _launch(torch, q, key, spec_for, describe_packed(k),
                   describe_packed(v), varlen, return_lse, arch, sinks)


def launch_paged(q, k_cache, v_cache, cu_seqlens_q, block_table, seqused_k,
                 max_seqlen_q, max_seqlen_k, layout="NHD", causal=False,
                 window=None, softcap=None, scale=None, return_lse=False,
                 arch=None, block_m=0, block_n=0, sinks=None):
    """attention_varlen()'s eager launch over a paged cache."""
    if scale is not None and scale != scale:
        scale = None
    dtype, page_size = check_paged_shapes(
        q, k_cache, v_cache, cu_seqlens_q, block_table, seqused_k,
        max_seqlen_q, max_seqlen_k, layout)
    check_on_q_device(q, (("q", q), ("k", k_cache), ("v", v_cache),
                          ("cu_seqlens_q", cu_seqlens_q),
                          ("block_table", block_table),
                          ("seqused_k", seqused_k)))
    import torch

    if sinks is not None:
        check_sinks(torch, sinks, q.unsqueeze(0))
    kv_heads = int(k_cache.shape[_cache_perm(layout)[1]])
    key = ("paged", q.dtype, q.device, q.shape[1:], kv_heads, page_size,
           causal, window, softcap, scale, return_lse, arch, block_m,
           block_n, sinks_key(sinks))

    def spec_for(use_arch):
        return make_varlen_spec(
            q, None, dtype=dtype, arch=use_arch, causal=causal,
            window=window, softcap=softcap, scale=scale,
            return_lse=return_lse, block_m=block_m, block_n=block_n,
            sinks=sinks is not None, page_size=page_size, kv_heads=kv_heads)

    varlen = VarlenDesc(int(cu_seqlens_q.data_ptr()), 0,
                        cu_seqlens_q.shape[0] - 1, int(max_seqlen_q),
                        int(max_seqlen_k), int(block_table.data_ptr()),
                        int(block_table.shape[1]), int(seqused_k.data_ptr()))
    return _launch(torch, q, key, spec_for, describe_cache(k_cache, layout),
                   describe_cache(v_cache, layout), varlen, return_lse, arch,
                   sinks)
