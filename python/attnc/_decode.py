"""attnc.decode: paged split-KV decode of torch tensors through the runtime.

The cache follows vLLM/FlashInfer: pages of ``page_size`` tokens, either
NHD ``[pages, page_size, kv_heads, head_dim]`` or HND ``[pages, kv_heads,
page_size, head_dim]``, a ``[batch, max_blocks]`` int32 block table and
``[batch]`` int32 sequence lengths. A contiguous ``[batch, seq, kv_heads,
head_dim]`` cache is ``k.view(batch * seq // P, P, kv_heads, head_dim)``
with ``block_table = arange(batch * seq // P).view(batch, -1)``.

With ``$ATTNC_TUNING_DB`` set when the process's context is created,
decode() takes its kernel (``block_n``) and split count from the tuning
database's entry for its size, as attnc.attention does, unless the caller
names them.
"""

from . import _route
from ._attention import (_DTYPES, _contexts, arch_for_capability,
                         check_sinks, context, sinks_key)
from ._capi import (AttncError, DecodeArgs, DecodeSpec, TensorDesc,
                    _DecodeArgs, _decode_args_to_c)


def _fail(message):
    raise AttncError("attnc.decode: " + message)


def _desc(t, perm):
    s, st = t.shape, t.stride()
    return TensorDesc(int(t.data_ptr()), tuple(int(s[p]) for p in perm),
                      tuple(int(st[p]) for p in perm))


# The decode specs met so far: key -> (Context, DecodeSpec, kernel handle
# or None, {size bucket: (kernel handle, database split count)}). The
# kernel handle is set when the caller named block_n (the spec keeps its
# tuning, the database is not asked); otherwise the kernel and split count
# come from the runtime once per size bucket.
_kernels = {}


def _size_bucket(batch, q_len, max_kv_len):
    """The runtime's tuning-database bucket of a decode size
    (runtime/lib/TuningDb.cpp, problemBucket), as a tuple: sizes with one
    bucket get one database entry, so an answer cached per bucket is the
    one an exact lookup would give. Decode (seq_q <= 16) buckets batch by
    the power of two at or above it, seq_kv by the power of two at or above
    it from 1024 up to 131072, and everything longer as one."""
    kv = max_kv_len
    kv = 1024 if kv <= 1024 else (
        1 << (kv - 1).bit_length() if kv <= 131072 else 0)
    return (1 << (max(batch, 1) - 1).bit_length(), kv, q_len <= 16)


def decode(q, k_cache, v_cache, block_table, kv_lens, *, max_kv_len=None,
           layout="NHD", causal=False, window=None, softcap=None, scale=None,
           return_lse=False, max_q_len=None, num_splits=0, workspace=None,
           arch=None, block_n=0, sinks=None):
    """Decode attention of ``q`` [batch, q_len, heads, head_dim] (q_len 1 to
    16: speculative decoding; the rows are the last q_len positions of each
    sequence) against the paged cache. ``max_kv_len``: a host-side bound of
    ``kv_lens`` that picks the split count (None: read from kv_lens, which
    synchronises). ``workspace``: a CUDA uint8 tensor to reuse, at least
    what decode_workspace() gives (a smaller one is an error, not silently
    replaced; None: allocated here). ``block_n`` (0: chosen) and
    ``num_splits`` (0: chosen): with a tuning database ($ATTNC_TUNING_DB
    when the context was created) the chosen ones are its entry's for this
    GPU, spec and size (batch, q_len, max_kv_len; looked up once per size
    bucket), a split count of 0 in the entry meaning the runtime's; without
    one, or without an entry, the compiler's default block_n and the
    runtime's split count. ``sinks``: attention sinks as in attention(), a
    float32 [heads] tensor (the split partials are then always merged by
    the combine kernel, which adds each head's sink once). Runs on
    torch.cuda.current_stream(). Returns o like q, or (o, lse) with lse
    float32 [batch, heads, q_len].

    Under torch.compile, torch.export, fake tensors or a dispatch mode the
    call goes through torch.ops.attnc.decode (attnc.torch_ops)."""
    ops = _route.ops_for(q)
    if ops is not None:
        left, right = (-1, -1) if window is None else (
            int(window[0]), int(window[1]))
        o, lse = ops.decode(
            q, k_cache, v_cache, block_table, kv_lens,
            None if max_kv_len is None else int(max_kv_len), layout,
            bool(causal), left, right,
            None if softcap is None else float(softcap),
            None if scale is None else float(scale), bool(return_lse),
            None if max_q_len is None else int(max_q_len), int(num_splits),
            workspace, arch, int(block_n), sinks)
        return (o, lse) if return_lse else o
    return launch(q, k_cache, v_cache, block_table, kv_lens, max_kv_len,
                  layout, causal, window, softcap, scale, return_lse,
                  max_q_len, num_splits, workspace, arch, block_n, sinks)


class _Plan:
    """A repeated call's reusable part: the _kernels entry of its spec, the
    launch arguments with every shape and stride filled in, whether q is
    re-laid out, and the output shapes."""

    __slots__ = ("hit", "args", "relayout_q", "lse_shape", "device",
                 "index", "batch", "q_len")


# (dtype, device, shape and strides of q, the caches and the block table,
# kv_lens' dtype and device, options) -> _Plan.
_plans = {}
_args_copy = _DecodeArgs.from_buffer_copy


def _relayout_q(q):
    """q as the kernel reads it: with q_len > 1 a head's rows must form one
    strided matrix, so a q whose rows are not is copied into one."""
    if q.shape[1] > 1 and q.stride(2) != q.shape[1] * q.stride(1):
        return q.transpose(1, 2).contiguous().transpose(1, 2), True
    return q, False


def launch(q, k_cache, v_cache, block_table, kv_lens, max_kv_len=None,
           layout="NHD", causal=False, window=None, softcap=None, scale=None,
           return_lse=False, max_q_len=None, num_splits=0, workspace=None,
           arch=None, block_n=0, sinks=None):
    """decode()'s eager launch (the arguments as decode()'s); returns
    (o, lse) when return_lse, else o."""
    import torch

    try:
        # Everything the first call's checks look at, and the options.
        key = (q.dtype, q.device, q.shape, q.stride(), k_cache.dtype,
               k_cache.device, k_cache.shape, k_cache.stride(),
               v_cache.dtype, v_cache.device, v_cache.shape,
               v_cache.stride(), block_table.dtype, block_table.device,
               block_table.shape, block_table.stride(), kv_lens.dtype,
               kv_lens.device, layout, causal, window, softcap, scale,
               return_lse, max_q_len, arch, block_n, sinks_key(sinks))
        plan = _plans.get(key)
    except TypeError:  # an unhashable option: no plan, the long way
        key, plan = None, None
    if plan is not None and _contexts.get(plan.index) is not plan.hit[0]:
        plan = None  # the context was closed and replaced (tests)
    if plan is None:
        if sinks is not None:
            check_sinks(torch, sinks, q)
        plan = _make_plan(torch, q, k_cache, v_cache, block_table, kv_lens,
                          layout, causal, window, softcap, scale, return_lse,
                          max_q_len, arch, block_n, sinks is not None)
        if key is not None:
            _route.remember(_plans, key, plan)
    batch = plan.batch
    if max_kv_len is None:
        max_kv_len = int(kv_lens.max().item()) if batch else 0
    max_kv_len = int(max_kv_len)
    ctx, spec, kernel, buckets = plan.hit
    if kernel is None:
        # The tuning database's choice for this size (the spec as it is
        # without a database or entry), asked once per size bucket.
        bucket = _size_bucket(batch, plan.q_len, max_kv_len)
        choice = buckets.get(bucket)
        if choice is None:
            with torch.cuda.device(plan.device):
                choice = buckets[bucket] = ctx.get_decode_kernel_for(
                    spec, max(batch, 1), max(plan.q_len, 1),
                    max(max_kv_len, 1))
        kernel, tuned_splits = choice
        if not num_splits:
            num_splits = tuned_splits
    if plan.relayout_q:
        q = _relayout_q(q)[0]
    o = torch.empty_like(q)
    args = _args_copy(plan.args)
    args.q.data = q.data_ptr()
    args.k_cache.data = k_cache.data_ptr()
    args.v_cache.data = v_cache.data_ptr()
    args.block_table = block_table.data_ptr() or None
    args.kv_lens = kv_lens.data_ptr() or None
    args.max_kv_len = max_kv_len
    args.o.data = o.data_ptr()
    args.num_splits = int(num_splits)
    if sinks is not None:
        args.sinks = sinks.data_ptr()
    lse = None
    if return_lse:
        lse = torch.empty(plan.lse_shape, dtype=torch.float32,
                          device=plan.device)
        args.lse.data = lse.data_ptr()
    if workspace is None:
        need = ctx.decode_workspace_size(kernel, args)
        workspace = torch.empty(max(need, 256), dtype=torch.uint8,
                                device=plan.device)
    # A caller's workspace is checked by the launch (a clear error when it
    # is too small; decode_workspace() sizes one for any split count).
    args.workspace = workspace.data_ptr() or None
    args.workspace_bytes = workspace.numel()
    ctx.launch_decode(kernel, args,
                      stream=_route.current_stream(torch, plan.index))
    return (o, lse) if return_lse else o


def _make_plan(torch, q, k_cache, v_cache, block_table, kv_lens, layout,
               causal, window, softcap, scale, return_lse, max_q_len, arch,
               block_n, sinks=False):
    """The first call of a kind: the checks, the spec's _kernels entry (its
    context and, with block_n named, its kernel) and the launch arguments'
    shapes and strides."""
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache),
                    ("block_table", block_table), ("kv_lens", kv_lens)):
        if t.device.type != "cuda" or t.device != q.device:
            _fail("%s must be a CUDA tensor on q's device (%s), got %s"
                  % (name, q.device, t.device))
    dtype = _DTYPES.get(str(q.dtype))
    if dtype is None or k_cache.dtype != q.dtype or v_cache.dtype != q.dtype:
        _fail("q, k_cache and v_cache must be one of bf16/fp16, got %s, %s, "
              "%s" % (q.dtype, k_cache.dtype, v_cache.dtype))
    if block_table.dtype != torch.int32 or kv_lens.dtype != torch.int32:
        _fail("block_table and kv_lens must be int32")
    if q.dim() != 4 or k_cache.dim() != 4 or k_cache.shape != v_cache.shape:
        _fail("expected q [B, S, H, D] and two caches of one 4-d shape")
    if block_table.dim() != 2 or block_table.stride(1) != 1 or (
            block_table.shape[0] > 1
            and block_table.stride(0) != block_table.shape[1]):
        _fail("block_table must be a contiguous [batch, max_blocks] tensor")
    if layout == "NHD":
        perm = (0, 2, 1, 3)  # [pages, P, Hkv, D] -> [pages, Hkv, P, D]
    elif layout == "HND":
        perm = (0, 1, 2, 3)
    else:
        _fail("layout must be 'NHD' or 'HND', got %r" % (layout,))
    batch, q_len, heads, head_dim = q.shape
    page_size = int(k_cache.shape[perm[2]])
    kv_heads = int(k_cache.shape[perm[1]])
    if window is None:
        window = (-1, -1)
    device = q.device
    rows = int(max_q_len if max_q_len is not None else q_len)
    kernel_key = (int(heads), kv_heads, int(head_dim), page_size, rows,
                  dtype, bool(causal), bool(return_lse), tuple(window),
                  softcap, scale, arch, int(block_n), bool(sinks),
                  device.index)
    hit = _kernels.get(kernel_key)
    if hit is None or _contexts.get(device.index) is not hit[0]:
        # First call for this spec: the device guard, the capability query
        # and the kernel lookup; later calls skip them (tens of
        # microseconds of Python per call, bench/NOTES.md).
        with torch.cuda.device(device):
            spec_arch = arch or arch_for_capability(
                torch.cuda.get_device_capability(device))
            spec = DecodeSpec(
                heads=int(heads), kv_heads=kv_heads, head_dim=int(head_dim),
                page_size=page_size, max_q_len=rows,
                dtype=dtype, causal=bool(causal), has_lse=bool(return_lse),
                window_left=int(window[0]), window_right=int(window[1]),
                softcap=0.0 if softcap is None else float(softcap),
                scale=None if scale is None else float(scale),
                arch=spec_arch, block_n=int(block_n), sinks=bool(sinks))
            ctx = context(device.index)
            kernel = ctx.get_decode_kernel(spec) if block_n else None
        hit = _kernels[kernel_key] = (ctx, spec, kernel, {})
    plan = _Plan()
    plan.hit = hit
    q, plan.relayout_q = _relayout_q(q)
    # o is torch.empty_like(q) on every call: its strides follow q's (the
    # plan's key), so the first call's stand for all.
    o = torch.empty_like(q)
    plan.lse_shape = (int(batch), int(heads), int(q_len))
    lse = None
    if return_lse:
        lse = torch.empty(plan.lse_shape, dtype=torch.float32,
                          device=device)
    plan.args = _decode_args_to_c(DecodeArgs(
        q=_desc(q, (0, 2, 1, 3)), k_cache=_desc(k_cache, perm),
        v_cache=_desc(v_cache, perm),
        block_table=int(block_table.data_ptr()),
        max_blocks=int(block_table.shape[1]),
        kv_lens=int(kv_lens.data_ptr()), max_kv_len=0,
        o=_desc(o, (0, 2, 1, 3)),
        lse=None if lse is None else TensorDesc(
            int(lse.data_ptr()), tuple(lse.shape), tuple(lse.stride()))))
    plan.device = device
    plan.index = device.index
    plan.batch = int(batch)
    plan.q_len = int(q_len)
    return plan


def decode_workspace(q, k_cache, block_table, *, max_kv_len, layout="NHD",
                     num_splits=0):
    """A workspace tensor big enough for decode() with these shapes, to
    allocate once outside a timed or captured region."""
    import torch

    perm = (0, 2, 1, 3) if layout == "NHD" else (0, 1, 2, 3)
    batch, q_len, heads, head_dim = q.shape
    kv_heads = int(k_cache.shape[perm[1]])
    splits = num_splits
    if splits <= 0:
        # Same bound the runtime's heuristic uses at most (256 splits).
        splits = 256
    # abi::decodeWorkspaceLayout (abi/include/attnc/abi/Workspace.h): the
    # f32 partials o_part and lse_part, then the [B, Hkv] i64 merge
    # counters, each 256-byte aligned.
    partial = splits * batch * heads * q_len
    need = ((partial * head_dim * 4 + 255) // 256 * 256
            + (partial * 4 + 255) // 256 * 256
            + (batch * kv_heads * 8 + 255) // 256 * 256)
    del block_table, max_kv_len
    return torch.empty(need, dtype=torch.uint8, device=q.device)
