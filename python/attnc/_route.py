"""Which path a call with torch tensors takes, and the current stream.

A plain eager call launches directly: the dispatcher's round trip through a
Python custom op cost about 10 us of host time per call on the build
machine's CPU, more than the whole direct launch (bench/host_overhead.py
measures both on a GPU machine). A call being traced (torch.compile, torch.export), on
fake or other subclass tensors, or under a dispatch mode (make_fx, fake
tensor mode, a debugging mode) goes through torch.ops.attnc, registered by
attnc.torch_ops, so that the tracer sees one op with a fake kernel instead
of data_ptr() calls it cannot follow. Meta tensors take the op too: its
fake kernel gives their outputs.

Nothing here imports torch: it looks for the torch the caller has already
imported (a torch tensor cannot exist otherwise).
"""

import sys

# (torch.ops.attnc, torch.Tensor, torch.compiler.is_compiling, a function
# that says whether a dispatch mode is active), set once torch_ops has
# registered the ops; its first item is None for a torch too old for them.
_state = None


def _never():
    return False


def _load():
    global _state
    torch = sys.modules.get("torch")
    # No torch yet: the argument is no torch tensor. A module without
    # torch.library is a test's stand-in for torch (tests/python).
    if torch is None or getattr(torch, "library", None) is None:
        return None
    if not hasattr(torch.library, "custom_op"):
        # A torch without torch.library.custom_op (before 2.4): every call
        # launches directly, and a traced call breaks the graph.
        _state = (None, torch.Tensor, _never, _never)
        return _state
    from . import torch_ops  # noqa: F401  (registers torch.ops.attnc.*)

    try:
        from torch.utils._python_dispatch import is_in_torch_dispatch_mode
    except ImportError:
        is_in_torch_dispatch_mode = _never
    _state = (torch.ops.attnc, torch.Tensor, torch.compiler.is_compiling,
              is_in_torch_dispatch_mode)
    return _state


def ops_for(t):
    """torch.ops.attnc when a call whose first tensor is ``t`` must go
    through the custom ops; None when it launches directly (a plain torch
    tensor in eager mode, or no torch tensor at all)."""
    state = _state
    if state is None:
        state = _load()
        if state is None:
            return None
    ops, tensor, is_compiling, in_dispatch_mode = state
    if ops is None:
        return None
    if type(t) is tensor:
        if is_compiling() or t.is_meta or in_dispatch_mode():
            return ops
        return None
    return ops if isinstance(t, tensor) else None


def current_stream(torch, index):
    """The raw CUstream of torch's current stream on device ``index``
    (torch._C's accessor when there is one: torch.cuda.current_stream()
    builds a Stream object per call)."""
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream",
                  None)
    if raw is not None:
        return raw(index)
    return torch.cuda.current_stream(index).cuda_stream


# Plans kept per entry point at most: a server whose batches take many
# shapes makes one plan per shape; past this many the dictionary starts
# over (a dropped plan is made again on its next call).
MAX_PLANS = 4096


def remember(plans, key, plan):
    """plans[key] = plan, keeping at most MAX_PLANS entries."""
    if len(plans) >= MAX_PLANS:
        plans.clear()
    plans[key] = plan
