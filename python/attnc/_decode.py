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

from ._attention import _DTYPES, arch_for_capability, context
from ._capi import AttncError, DecodeArgs, DecodeSpec, TensorDesc


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
           arch=None, block_n=0):
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
    runtime's split count. Runs on torch.cuda.current_stream(). Returns o
    like q, or (o, lse) with lse float32 [batch, heads, q_len]."""
    import torch

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
    if q_len > 1 and q.stride(2) != q_len * q.stride(1):
        # The kernel reads a head's rows as one strided matrix.
        q = q.transpose(1, 2).contiguous().transpose(1, 2)
    if max_kv_len is None:
        max_kv_len = int(kv_lens.max().item()) if batch else 0
    max_kv_len = int(max_kv_len)
    if window is None:
        window = (-1, -1)
    device = q.device
    rows = int(max_q_len if max_q_len is not None else q_len)
    key = (int(heads), kv_heads, int(head_dim), page_size, rows, dtype,
           bool(causal), bool(return_lse), tuple(window), softcap, scale, arch,
           int(block_n), device.index)
    hit = _kernels.get(key)
    if hit is None:
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
                arch=spec_arch, block_n=int(block_n))
            ctx = context(device.index)
            kernel = ctx.get_decode_kernel(spec) if block_n else None
        hit = _kernels[key] = (ctx, spec, kernel, {})
    ctx, spec, kernel, buckets = hit
    if kernel is None:
        # The tuning database's choice for this size (the spec as it is
        # without a database or entry), asked once per size bucket.
        bucket = _size_bucket(batch, q_len, max_kv_len)
        choice = buckets.get(bucket)
        if choice is None:
            with torch.cuda.device(device):
                choice = buckets[bucket] = ctx.get_decode_kernel_for(
                    spec, max(batch, 1), max(q_len, 1), max(max_kv_len, 1))
        kernel, tuned_splits = choice
        if not num_splits:
            num_splits = tuned_splits
    o = torch.empty_like(q)
    lse = None
    if return_lse:
        lse = torch.empty((batch, heads, q_len), dtype=torch.float32,
                          device=device)
    args = DecodeArgs(
        q=_desc(q, (0, 2, 1, 3)), k_cache=_desc(k_cache, perm),
        v_cache=_desc(v_cache, perm),
        block_table=int(block_table.data_ptr()),
        max_blocks=int(block_table.shape[1]),
        kv_lens=int(kv_lens.data_ptr()), max_kv_len=max_kv_len,
        o=_desc(o, (0, 2, 1, 3)),
        lse=None if lse is None else TensorDesc(
            int(lse.data_ptr()), tuple(lse.shape), tuple(lse.stride())),
        num_splits=int(num_splits))
    if workspace is None:
        need = ctx.decode_workspace_size(kernel, args)
        workspace = torch.empty(max(need, 256), dtype=torch.uint8,
                                device=device)
    # A caller's workspace is checked by the launch (a clear error when it
    # is too small; decode_workspace() sizes one for any split count).
    args = args._replace(workspace=int(workspace.data_ptr()),
                         workspace_bytes=int(workspace.numel()))
    stream = torch.cuda.current_stream(device).cuda_stream
    ctx.launch_decode(kernel, args, stream=stream)
    return (o, lse) if return_lse else o


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
    partial = splits * batch * heads * q_len
    need = ((partial * head_dim * 4 + 255) // 256 * 256
            + (partial * 4 + 255) // 256 * 256)
    del kv_heads, block_table, max_kv_len
    return torch.empty(need, dtype=torch.uint8, device=q.device)
