"""attnc.attention: FlashAttention-layout torch tensors in, the runtime out.

The argument checks work on anything tensor-like (.dtype, .shape,
.stride(), .device, .data_ptr()), so they are tested without torch; torch
itself is imported only inside launch(), after them.
"""

import ctypes
import math
import threading
import types
import weakref

from . import _route
from ._capi import (AttncError, CaptureDesc, Context, Spec, TensorDesc,
                    VarlenDesc, _AttentionArgs, _Capture, _args_to_c, _check,
                    capture_packer, lib)

_byref = ctypes.byref

_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "fp16"}

# Per-process state: one Context per CUDA device index.
_contexts = {}
_contexts_lock = threading.Lock()
# Per (device, stream) one zeroed workspace buffer (a persistent kernel's
# stream-K tail) that every launch on that stream shares (launches leave it
# zeroed).
_workspaces = {}
# Tests point this at a fake libcuda.so.1; None means the real driver.
_driver_library = None
# (dtypes, devices, shapes and strides of q, k, v, options) -> _Plan: what
# the checks, the spec, the runtime's kernel lookup (with the tuning
# database's choice for the size) and workspace_size() gave for a call like
# this one, and its launch arguments. A repeated call skips all of that and
# only fills in the data pointers: the caller of a short kernel waits for
# attention()'s host time when the host cannot run ahead of the GPU.
_plans = {}


def _fail(message):
    raise AttncError("attnc.attention: " + message)


def _device_text(device):
    index = getattr(device, "index", None)
    kind = getattr(device, "type", str(device))
    return kind if index is None else "%s:%d" % (kind, index)


def sinks_key(sinks):
    """What check_sinks() looks at, for a plan's key (None: no sinks)."""
    if sinks is None:
        return None
    return (sinks.dtype, sinks.device, sinks.shape, sinks.stride())


def kv_bounds_key(kv_bounds):
    """What check_kv_bounds() looks at, for a plan's key."""
    if kv_bounds is None:
        return None
    try:
        return (kv_bounds.dtype, kv_bounds.device, kv_bounds.shape,
                kv_bounds.stride())
    except AttributeError:  # not a tensor: no plan; the checks say why
        raise TypeError("kv_bounds is not a tensor")


def check_kv_bounds(torch, kv_bounds, q):
    """Checks key ranges: int32 [batch, seq_q, 2] on q's device,
    contiguous."""
    want = (q.shape[0], q.shape[1], 2)
    if not isinstance(kv_bounds, torch.Tensor) or \
            kv_bounds.dtype != torch.int32 or tuple(kv_bounds.shape) != want:
        _fail("kv_bounds must be an int32 tensor of shape [batch, seq_q, 2] "
              "= %s, got %s" % (list(want), getattr(
                  kv_bounds, "dtype", type(kv_bounds).__name__)) +
              ("" if not hasattr(kv_bounds, "shape") else
               " of shape %s" % (tuple(kv_bounds.shape),)))
    if kv_bounds.device != q.device:
        _fail("kv_bounds are on %s but q is on %s" % (kv_bounds.device,
                                                      q.device))
    if not kv_bounds.is_contiguous():
        _fail("kv_bounds must be contiguous, got stride %s"
              % (kv_bounds.stride(),))


def check_sinks(torch, sinks, q):
    """Checks attention sinks: float32 [heads] on q's device, contiguous."""
    if not isinstance(sinks, torch.Tensor):
        _fail("sinks must be a float32 tensor of shape [heads], got %s"
              % type(sinks).__name__)
    if sinks.dtype != torch.float32 or tuple(sinks.shape) != (q.shape[2],):
        _fail("sinks must be float32 of shape [%d] (one logit per query "
              "head), got %s of shape %s"
              % (q.shape[2], sinks.dtype, tuple(sinks.shape)))
    if sinks.device != q.device:
        _fail("sinks are on %s but q is on %s" % (sinks.device, q.device))
    if sinks.stride() != (1,):
        _fail("sinks must be contiguous (stride 1), got stride %s"
              % (sinks.stride(),))


def check_inputs(q, k, v):
    """Checks q, k, v ([batch, seq, heads, head_dim], bf16/fp16, one CUDA
    device, unit head-dim stride). Returns the runtime dtype name."""
    named = (("q", q), ("k", k), ("v", v))
    for name, t in named:
        if getattr(t.device, "type", None) != "cuda":
            _fail("%s is on %s; attnc runs on CUDA tensors (move it with "
                  "%s.cuda())" % (name, _device_text(t.device), name))
    for name, t in named[1:]:
        if _device_text(t.device) != _device_text(q.device):
            _fail("q is on %s but %s is on %s; q, k and v must be on one "
                  "device" % (_device_text(q.device), name,
                              _device_text(t.device)))
    return check_shapes(q, k, v)


def check_dtypes(q, k, v):
    """One supported dtype for q, k and v; returns its runtime name."""
    dtype = _DTYPES.get(str(q.dtype))
    if dtype is None:
        _fail("q has dtype %s; supported: torch.bfloat16, torch.float16"
              % (q.dtype,))
    for name, t in (("k", k), ("v", v)):
        if str(t.dtype) != str(q.dtype):
            _fail("q has dtype %s but %s has %s; q, k and v must have one "
                  "dtype" % (q.dtype, name, t.dtype))
    return dtype


def check_shapes(q, k, v):
    """check_inputs() without the devices (the fake kernel's checks, which
    also run on meta tensors): dtypes, ranks, shapes, head-dim strides.
    Returns the runtime dtype name."""
    named = (("q", q), ("k", k), ("v", v))
    dtype = check_dtypes(q, k, v)
    for name, t in named:
        if len(t.shape) != 4:
            _fail("%s has shape %s (%d dims); expected 4 dims [batch, seq, "
                  "heads, head_dim]" % (name, tuple(t.shape), len(t.shape)))
    b, _, h, d = q.shape
    _, sk, hk, _ = k.shape
    for name, t in named[1:]:
        if t.shape[0] != b:
            _fail("batch differs: q.shape[0] = %d but %s.shape[0] = %d"
                  % (b, name, t.shape[0]))
        if t.shape[3] != d:
            _fail("head_dim differs: q.shape[3] = %d but %s.shape[3] = %d"
                  % (d, name, t.shape[3]))
    if v.shape[1] != sk:
        _fail("seq differs: k.shape[1] = %d but v.shape[1] = %d"
              % (sk, v.shape[1]))
    if v.shape[2] != hk:
        _fail("kv heads differ: k.shape[2] = %d but v.shape[2] = %d"
              % (hk, v.shape[2]))
    if hk < 1 or h % hk != 0:
        _fail("q has %d heads, which is not a multiple of k/v's %d heads"
              % (h, hk))
    for name, t in named:
        if t.stride()[3] != 1:
            _fail("%s.stride(3) (head_dim) is %d; it must be 1 (call "
                  "%s.contiguous())" % (name, t.stride()[3], name))
    return dtype


def check_captures(mod_trace, tensors, q):
    """Checks the tensors a trace's mods captured (tensors: what
    mod_trace.current() gave) against q: one device. Their dtype and rank
    were checked by the trace; any strides are fine."""
    if tensors is None:
        _fail("a tensor the mods read changed while they were traced")
    for capture, t in zip(mod_trace.captures, tensors):
        if _device_text(t.device) != _device_text(q.device):
            _fail("the mods' captured tensor %r is on %s but q is on %s; "
                  "captured tensors must be on q's device (move it with "
                  ".to(q.device))" % (capture.variable, _device_text(t.device),
                                      _device_text(q.device)))


def describe_captures(mod_trace, tensors):
    """CaptureDesc of the captured tensors, in the trace's order."""
    return [CaptureDesc(int(t.data_ptr()), c.element, tuple(t.shape),
                        tuple(t.stride()))
            for c, t in zip(mod_trace.captures, tensors)]


def arch_for_capability(capability):
    """The kernel arch for a compute capability (major, minor)."""
    major, minor = capability
    if (major, minor) == (9, 0):
        return "sm_90a"
    if major == 8:
        return "sm_80"
    raise AttncError(
        "attnc.attention: compute capability %d.%d is not supported; attnc "
        "has kernels for sm_80 (8.x) and sm_90a (9.0). Pass arch='sm_80' to "
        "try the sm_80 kernel on a newer GPU." % (major, minor))


def make_spec(q, k, *, dtype, arch, causal=False, window=None, softcap=None,
              scale=None, return_lse=False, block_m=0, block_n=0,
              score_mod=None, mask_mod=None, sinks=False, mod_trace=None,
              kv_bounds=False, varlen=False):
    """The Spec for checked q/k ([B, S, H, D]; with varlen packed
    [total, H, D]) and attention() options; with mods, its custom_ir is
    their trace (attnc.mods.attention_ir; mod_trace: their
    attnc.mods.trace_mods() when already made)."""
    left, right = window_bounds(window)
    heads, kv_heads, head_dim = (
        (int(q.shape[1]), int(k.shape[1]), int(q.shape[2])) if varlen else
        (int(q.shape[2]), int(k.shape[2]), int(q.shape[3])))
    if scale is not None and math.isnan(scale):
        scale = None
    custom_ir = ""
    if score_mod is not None or mask_mod is not None or kv_bounds:
        from . import mods

        custom_ir = mods.attention_ir(
            heads=heads, kv_heads=kv_heads, head_dim=head_dim, dtype=dtype,
            causal=bool(causal),
            window=None if window is None else (left, right),
            softcap=softcap or None, scale=scale,
            return_lse=bool(return_lse), score_mod=score_mod,
            mask_mod=mask_mod, sinks=bool(sinks), mod_trace=mod_trace,
            kv_bounds=bool(kv_bounds), varlen=bool(varlen))
    return Spec(heads=heads, kv_heads=kv_heads,
                head_dim=head_dim, dtype=dtype, causal=bool(causal),
                has_lse=bool(return_lse), window_left=left,
                window_right=right,
                softcap=0.0 if softcap is None else float(softcap),
                scale=None if scale is None else float(scale), arch=arch,
                block_m=int(block_m), block_n=int(block_n),
                custom_ir=custom_ir, sinks=bool(sinks), varlen=bool(varlen))


def describe(t):
    """TensorDesc of a [B, S, H, D] tensor in the runtime's [B, H, S, D]."""
    s, st = t.shape, t.stride()
    return TensorDesc(int(t.data_ptr()), (s[0], s[2], s[1], s[3]),
                      (st[0], st[2], st[1], st[3]))


def describe_lse(lse):
    """TensorDesc of a [B, H, S] float32 LSE tensor (already in order)."""
    return TensorDesc(int(lse.data_ptr()), tuple(lse.shape),
                      tuple(lse.stride()))


def context(device_index):
    """The process's Context for a CUDA device, created on first use with
    the CUDA context current on this thread (torch's primary context).
    The cache directory is $ATTNC_CACHE_DIR, else the runtime's default."""
    with _contexts_lock:
        ctx = _contexts.get(device_index)
        if ctx is None:
            ctx = _contexts[device_index] = Context(
                device=device_index, driver_library=_driver_library)
        return ctx


def _kernel_for(ctx, q, k, dtype, device, arch, causal, window, softcap,
                scale, return_lse, block_m, block_n, score_mod=None,
                mask_mod=None, sinks=False, mod_trace=None, kv_bounds=False,
                varlen=None):
    """The runtime's kernel for a call: for its spec at its size (the
    tuning database's config when it has one; varlen: the sequences and
    the longest lengths)."""
    import torch

    if arch is None:
        arch = arch_for_capability(torch.cuda.get_device_capability(device))
    spec = make_spec(q, k, dtype=dtype, arch=arch, causal=causal,
                     window=window, softcap=softcap, scale=scale,
                     return_lse=return_lse, block_m=block_m, block_n=block_n,
                     score_mod=score_mod, mask_mod=mask_mod, sinks=sinks,
                     mod_trace=mod_trace, kv_bounds=kv_bounds,
                     varlen=varlen is not None)
    # (Empty shapes look up as size 1: the runtime wants sizes >= 1.)
    if varlen is not None:
        sizes = (varlen.batch, varlen.max_seqlen_q, varlen.max_seqlen_k)
    else:
        sizes = (q.shape[0], q.shape[1], k.shape[1])
    return ctx.get_kernel_for(spec, *(max(int(n), 1) for n in sizes))


def window_bounds(window):
    """(left, right) of a window option: None or (left, right), -1 or None
    for an unbounded side."""
    if window is None:
        return -1, -1
    if len(window) != 2:
        _fail("window must be (left, right) or None, got %r" % (window,))
    left, right = window
    return (-1 if left is None else int(left),
            -1 if right is None else int(right))


def attention(q, k, v, *, causal=False, window=None, softcap=None,
              scale=None, return_lse=False, arch=None, block_m=0, block_n=0,
              score_mod=None, mask_mod=None, sinks=None, kv_bounds=None):
    """Attention forward of FlashAttention-layout tensors.

    q: [batch, seq_q, heads, head_dim]; k, v: [batch, seq_kv, kv_heads,
    head_dim]; bf16 or fp16 on one CUDA device, any strides with unit
    head-dim stride. window: (left, right), -1 or None = unbounded; with
    causal, (left, -1) means (left, 0) as in FlashAttention. softcap:
    None = none. scale: None = 1/sqrt(head_dim). arch: None = from the
    device. Runs on torch.cuda.current_stream(). Returns o (like q), or
    (o, lse) with lse float32 [batch, heads, seq_q] when return_lse.

    sinks: None, or attention sinks (gpt-oss): a float32 [heads] tensor on
    q's device, one logit per query head that joins the softmax's
    denominator (taken as it is: no scale, softcap or mods), so that
    o = sum_j e^s_j v_j / (e^sinks[h] + sum_j e^s_j) and lse includes it.

    score_mod(score, b, h, q_idx, kv_idx) and mask_mod(b, h, q_idx, kv_idx):
    FlexAttention-style mods, traced into the kernel's IR (attnc.mods); the
    kernel must be bundled (`attnc bundle` of the spec whose custom_ir is
    attnc.mods.attention_ir(...)) until the process has a compiler. Tensors
    the mods index (read from their closures, globals or defaults: ALiBi
    slopes, document ids, bias tables) are passed to the kernel on every
    call as they are then (on q's device, any strides; no bounds checks);
    the mods are traced again only when such a tensor's dtype or rank
    changes.

    kv_bounds: None, or an int32 [batch, seq_q, 2] tensor on q's device
    (contiguous), a range mask: row i of batch b sees only the keys in
    [kv_bounds[b, i, 0], kv_bounds[b, i, 1]) (and-ed with causal, window
    and mask_mod), both columns non-decreasing in i. The kernel visits
    only the KV tiles a query tile's ranges reach and runs the tiles inside
    every row's range without per-element masks: FlexAttention's block
    sparsity for masks whose keys are one range per row. Documents are
    causal=True with kv_bounds=attnc.mods.document_kv_bounds(doc_ids) and
    no mask_mod; prefix-LM and per-row windows likewise.

    Under torch.compile, torch.export, fake tensors or a dispatch mode the
    call goes through the custom op torch.ops.attnc.attention (see
    attnc.torch_ops); a plain eager call launches directly.
    """
    ops = _route.ops_for(q)
    if ops is not None and (score_mod is not None or mask_mod is not None
                            or kv_bounds is not None):
        _fail("attnc.attention: score_mod, mask_mod and kv_bounds run in "
              "eager calls only; under torch.compile, torch.export or a "
              "dispatch mode they are not supported yet")
    if ops is not None:
        left, right = window_bounds(window)
        o, lse = ops.attention(
            q, k, v, bool(causal), left, right,
            None if softcap is None else float(softcap),
            None if scale is None else float(scale), bool(return_lse), arch,
            int(block_m), int(block_n), sinks)
        return (o, lse) if return_lse else o
    return launch(q, k, v, causal, window, softcap, scale, return_lse, arch,
                  block_m, block_n, score_mod, mask_mod, sinks, kv_bounds)


def _mod_owner(fn):
    """What keeps a mod alive: a bound method's object (the method itself
    is made anew at every attribute access), else the function."""
    return fn.__self__ if isinstance(fn, types.MethodType) else fn


def _mod_key(fn):
    """A mod's part of a plan's key, by identity (the plan holds the mod
    weakly, so that a mod made per call, and the tensors it holds, die
    with the caller's last reference): a bound method by its function and
    object."""
    if fn is None:
        return None
    if isinstance(fn, types.MethodType):
        return (id(fn.__func__), id(fn.__self__))
    return id(fn)


def _no_mod():
    return None


def _mod_ref(fn):
    """A weak reference to a mod (TypeError when it takes none)."""
    if fn is None:
        return _no_mod
    if isinstance(fn, types.MethodType):
        return weakref.WeakMethod(fn)
    return weakref.ref(fn)


# id(mod owner) -> the keys of the plans made for it; each owner has one
# finalizer, which drops them when it dies.
_mod_plan_keys = {}


def _remember_plan(key, plan, score_mod, mask_mod):
    """Keeps a plan for calls like this one; with mods, only while they
    live (a mod that cannot be referenced weakly is traced on every
    call)."""
    plan.mods = None
    owners = [_mod_owner(fn) for fn in (score_mod, mask_mod)
              if fn is not None]
    if owners:
        try:
            plan.mods = (_mod_ref(score_mod), _mod_ref(mask_mod))
            for owner in owners:
                if id(owner) not in _mod_plan_keys:
                    weakref.finalize(owner, _forget_plans, id(owner))
        except TypeError:
            return
    if len(_plans) >= _route.MAX_PLANS:  # remember() clears the plans
        _mod_plan_keys.clear()
    _route.remember(_plans, key, plan)
    for owner in owners:
        _mod_plan_keys.setdefault(id(owner), set()).add(key)


def _forget_plans(owner_id):
    """A mod's owner died: its plans go (they hold its tensors' readers).
    Runs from the garbage collector."""
    for key in _mod_plan_keys.pop(owner_id, ()):
        _plans.pop(key, None)


class _Plan:
    """What a repeated call with the same tensor metadata and options
    reuses: the context and kernel, the launch arguments with every shape
    and stride filled in (a call sets only the data pointers), the LSE
    shape and the workspace size."""

    __slots__ = ("ctx", "handle", "kernel", "args", "lse_shape", "need",
                 "device", "index", "mod_trace", "capture_packs",
                 "capture_array", "mods")


_launch_args_copy = _AttentionArgs.from_buffer_copy


def launch(q, k, v, causal=False, window=None, softcap=None, scale=None,
           return_lse=False, arch=None, block_m=0, block_n=0, score_mod=None,
           mask_mod=None, sinks=None, kv_bounds=None, varlen=None):
    """attention()'s eager launch: checks, the kernel lookup on the first
    call of a kind, and the launch on the current stream. Returns (o, lse)
    when return_lse, else o. varlen: (cu_seqlens_q, cu_seqlens_k,
    max_seqlen_q, max_seqlen_k) of attention_varlen() with mods, q, k, v
    then packed [total, H, D]."""
    if scale is not None and scale != scale:
        scale = None  # NaN: the default (and a key equal to itself)
    try:
        # Everything check_inputs() looks at and the options: a hit means
        # the checks passed for tensors like these, so only the data
        # pointers are new.
        plan_key = (q.dtype, k.dtype, v.dtype, q.device, k.device, v.device,
                    q.shape, k.shape, v.shape, q.stride(), k.stride(),
                    v.stride(), causal, window, softcap, scale, return_lse,
                    arch, block_m, block_n, _mod_key(score_mod),
                    _mod_key(mask_mod), sinks_key(sinks),
                    kv_bounds_key(kv_bounds), varlen is not None)
        plan = _plans.get(plan_key)
    except TypeError:  # an unhashable option: no plan, the long way
        plan_key, plan = None, None
    if plan is not None and _contexts.get(plan.index) is not plan.ctx:
        plan = None  # the context was closed and replaced (tests)
    if plan is not None and plan.mods is not None and (
            plan.mods[0]() != score_mod or plan.mods[1]() != mask_mod):
        plan = None  # another mod at a dead one's address
    captured = None
    if plan is not None and plan.mod_trace is not None:
        # The mods' tensors as they are now: another tensor of the traced
        # dtype and rank launches the same kernel; anything else (or
        # another device) takes the long way, which traces again.
        captured = plan.mod_trace.current()
        if captured is None or any(t.device != plan.device
                                   for t in captured):
            plan = None
    if plan is None:
        # Before torch: testable with fakes.
        if varlen is not None:
            from . import _varlen

            dtype = _varlen.check_varlen_shapes(q, k, v, *varlen)
            _varlen.check_devices(q, k, v, varlen[0], varlen[1])
            if kv_bounds is not None:
                _fail("kv_bounds do not combine with attention_varlen")
        else:
            dtype = check_inputs(q, k, v)
        import torch

        if sinks is not None:
            check_sinks(torch, sinks, q if varlen is None else q.unsqueeze(0))
        if kv_bounds is not None:
            check_kv_bounds(torch, kv_bounds, q)
        plan, captured = _make_plan(torch, dtype, q, k, v, causal, window,
                                    softcap, scale, return_lse, arch,
                                    block_m, block_n, score_mod, mask_mod,
                                    sinks, kv_bounds is not None, varlen)
        if plan_key is not None:
            _remember_plan(plan_key, plan, score_mod, mask_mod)
    else:
        import torch
    o = torch.empty_like(q)
    args = _launch_args_copy(plan.args)
    args.q.data = q.data_ptr()
    args.k.data = k.data_ptr()
    args.v.data = v.data_ptr()
    args.o.data = o.data_ptr()
    if sinks is not None:
        args.sinks = sinks.data_ptr()
    if kv_bounds is not None:
        args.kv_bounds = kv_bounds.data_ptr()
    if varlen is not None:
        args.cu_seqlens_q = varlen[0].data_ptr()
        args.cu_seqlens_k = varlen[1].data_ptr()
        args.varlen_batch = varlen[0].shape[0] - 1
        args.max_seqlen_q, args.max_seqlen_k = int(varlen[2]), int(varlen[3])
    if captured:
        # Shapes and strides too: one kernel serves every shape of them.
        # `args` keeps the array alive through the launch.
        args.captures = plan.capture_array(b"".join([
            pack(t.data_ptr(), address, rank, *t.shape, *t.stride())
            for (pack, address, rank), t in zip(plan.capture_packs,
                                                 captured)]))
        args.num_captures = len(captured)
    lse = None
    if return_lse:
        lse = torch.empty(plan.lse_shape, dtype=torch.float32,
                          device=plan.device)
        args.lse.data = lse.data_ptr()
    stream = _route.current_stream(torch, plan.index)
    need = plan.need
    if need:
        wkey = (plan.index, stream)
        workspace = _workspaces.get(wkey)
        if workspace is None or workspace.numel() < need:
            # torch's allocations are 512-byte aligned; zeroed once.
            workspace = _workspaces[wkey] = torch.zeros(
                need, dtype=torch.uint8, device=plan.device)
        args.workspace = workspace.data_ptr()
        args.workspace_bytes = workspace.numel()
    status = plan.handle.attnc_attention_launch(
        plan.ctx._handle, plan.kernel, _byref(args), stream or None)
    if status:
        _check(status, "attnc_attention_launch")
    return (o, lse) if return_lse else o


def _make_plan(torch, dtype, q, k, v, causal, window, softcap, scale,
               return_lse, arch, block_m, block_n, score_mod=None,
               mask_mod=None, sinks=None, kv_bounds=False, varlen=None):
    """The first call of a kind, after the checks: the mods' trace and
    the tensors they capture, the context, the kernel for the spec at this
    size (the tuning database's config when it has one), the workspace
    size and the launch arguments' shapes and strides. Returns (plan, the
    captured tensors or None)."""
    device = q.device
    plan = _Plan()
    plan.mod_trace = captured = None
    plan.mods = None
    plan.capture_packs = plan.capture_array = None
    if score_mod is not None or mask_mod is not None or kv_bounds:
        from . import mods

        plan.mod_trace = mods.trace_mods(score_mod, mask_mod)
        captured = plan.mod_trace.current()
        check_captures(plan.mod_trace, captured, q)
        plan.capture_packs = [capture_packer(c.element, c.rank)
                              for c in plan.mod_trace.captures]
        if captured:
            plan.capture_array = (
                _Capture * len(captured)).from_buffer_copy
    if varlen is not None:
        from . import _varlen
    with torch.cuda.device(device):
        plan.ctx = ctx = context(device.index)
        sizes = None
        if varlen is not None:  # the sequences and the longest lengths
            sizes = VarlenDesc(0, 0, varlen[0].shape[0] - 1, int(varlen[2]),
                               int(varlen[3]))
        plan.kernel = _kernel_for(ctx, q, k, dtype, device, arch, causal,
                                  window, softcap, scale, return_lse, block_m,
                                  block_n, score_mod, mask_mod,
                                  sinks is not None, plan.mod_trace,
                                  kv_bounds, sizes)
        # o is torch.empty_like(q) on every call: its strides follow q's
        # (the plan's key), so the first call's stand for all.
        o = torch.empty_like(q)
        lse = None
        if varlen is not None:
            if return_lse:
                lse = torch.empty((q.shape[1], q.shape[0]),
                                  dtype=torch.float32, device=device)
            descs = tuple(_varlen.describe_packed(t) for t in (q, k, v, o)) \
                + (None if lse is None else _varlen.describe_varlen_lse(lse),)
            plan.need = 0  # varlen kernels have no stream-K tail
        else:
            if return_lse:
                lse = torch.empty((q.shape[0], q.shape[2], q.shape[1]),
                                  dtype=torch.float32, device=device)
            descs = (describe(q), describe(k), describe(v), describe(o),
                     None if lse is None else describe_lse(lse))
            plan.need = ctx.workspace_size(
                plan.kernel, *descs,
                sinks=0 if sinks is None else sinks.data_ptr(),
                captures=None if not captured else describe_captures(
                    plan.mod_trace, captured))
    # The sinks' address is set per call; the shapes and strides stay.
    plan.args = _args_to_c(*descs)
    plan.lse_shape = None if lse is None else tuple(lse.shape)
    plan.handle = lib()
    plan.device = device
    plan.index = device.index
    return plan, captured
