"""The two hooks through which bench/compare.py reaches attnc's own kernels.

Wire the real binding in HERE (and only here) once python/attnc exists.

Contract for both hooks:
  * called with the problem's tensors already on the GPU (outside the timed region);
  * return a zero-argument callable that launches the kernel on the current
    stream and returns its output(s); it is called many times and must not
    synchronise, allocate workspace it could have allocated up front, or compile;
  * raise NotAvailable(reason) when the kernel does not exist (yet); the cell
    then reads "n/a (reason)". Any other exception becomes "error: ...".

Kinds and their problem keywords (all tensors bf16, CUDA, layout BSHD):
  "prefill":      q (B,S,H,D), k (B,S,H,D), v (B,S,H,D), causal: bool, scale: float
                  -> o (B,S,H,D)
  "decode":       q (B,1,Hq,D), k (B,L,Hkv,D), v (B,L,Hkv,D), causal=False, scale
                  -> o (B,1,Hq,D)          (GQA: q head h reads KV head h // (Hq//Hkv))
  "silu_and_mul": x (T,2I) -> out (T,I) = silu(x[:, :I]) * x[:, I:]
  "add_rms_norm": x (T,N), r (T,N), w (N,), eps: float
                  -> (y, residual): residual = x + r; y = residual * rsqrt(mean(residual^2) + eps) * w
"""

import os
import sys


class NotAvailable(Exception):
    """The implementation does not exist or cannot run here; not a failure."""


_REPO_PYTHON = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")


def _import_attnc():
    if _REPO_PYTHON not in sys.path:
        sys.path.insert(0, _REPO_PYTHON)
    try:
        import attnc  # noqa: F401  (python/attnc, the thin binding over the C ABI)
    except Exception as e:  # ImportError, or the binding failing to load libattnc
        raise NotAvailable(f"import attnc: {type(e).__name__}: {e}") from None
    return attnc


def _get(mod, name):
    fn = getattr(mod, name, None)
    if fn is None:
        raise NotAvailable(f"attnc.{name} missing")
    return fn


def attnc_impl(kind, **problem):
    """attnc's fused kernel for `kind` (see the module docstring)."""
    attnc = _import_attnc()
    if kind == "decode":
        # The contiguous cache as pages of 256 tokens (block table in order);
        # the workspace is allocated here, outside the timed region.
        decode = _get(attnc, "decode")
        q, k, v, scale = problem["q"], problem["k"], problem["v"], problem["scale"]
        try:
            import torch
        except ImportError as e:
            raise NotAvailable(f"decode needs torch: {e}") from None
        B, L, Hkv, D = k.shape
        page = 256 if (L % 256 == 0 and k.is_contiguous() and v.is_contiguous()) else L
        kc = k.reshape(B * L // page, page, Hkv, D)
        vc = v.reshape(B * L // page, page, Hkv, D)
        table = torch.arange(B * L // page, dtype=torch.int32, device=k.device).view(B, -1)
        lens = torch.full((B,), L, dtype=torch.int32, device=k.device)
        ws = _get(attnc, "decode_workspace")(q, kc, table, max_kv_len=L)
        return lambda: decode(q, kc, vc, table, lens, max_kv_len=L, scale=scale, workspace=ws)
    if kind == "prefill":
        attention = _get(attnc, "attention")
        q, k, v = problem["q"], problem["k"], problem["v"]
        causal, scale = problem["causal"], problem["scale"]
        # ATTNC_BENCH_ARCH=sm_80: the portable mma.sync kernels on the same
        # GPU (issue #5's comparison; bench/specs.json bundles them).
        arch = os.environ.get("ATTNC_BENCH_ARCH")
        kw = {"arch": arch} if arch else {}
        return lambda: attention(q, k, v, causal=causal, scale=scale, **kw)
    if kind == "silu_and_mul":
        silu_and_mul = _get(attnc, "silu_and_mul")
        x = problem["x"]
        return lambda: silu_and_mul(x)
    if kind == "add_rms_norm":
        add_rms_norm = _get(attnc, "add_rms_norm")
        x, r, w, eps = problem["x"], problem["r"], problem["w"], problem["eps"]
        return lambda: add_rms_norm(x, r, w, eps=eps)
    raise NotAvailable(f"no attnc kernel for kind {kind!r}")


def reference_impl(kind, **problem):
    """The NVRTC "standard attention" reference kernel (templates/), attention kinds only."""
    if kind not in ("prefill", "decode"):
        raise NotAvailable("no reference kernel for this kind")
    attnc = _import_attnc()
    reference_attention = _get(attnc, "reference_attention")
    q, k, v = problem["q"], problem["k"], problem["v"]
    causal, scale = problem["causal"], problem["scale"]
    return lambda: reference_attention(q, k, v, causal=causal, scale=scale)
