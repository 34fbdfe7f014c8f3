"""attnc's entry points as PyTorch custom ops: torch.ops.attnc.*.

Importing this module registers them (it needs torch; ``import attnc``
does not). The public functions (attnc.attention, attnc.decode, ...)
import it themselves on their first call with a torch tensor and go
through these ops whenever the call is traced (torch.compile,
torch.export), runs on fake or other subclass tensors, or runs under a
dispatch mode; a plain eager call launches directly, without the
dispatcher's round trip. Each op has a fake (meta) kernel that gives the
real outputs' shapes, dtypes and strides without touching libattnc.so, so
torch.compile(fullgraph=True) keeps attnc calls in its graph.

Ops and what they mutate (schemas as torch.ops.attnc.NAME.default._schema
prints them):

- attention(q, k, v, causal, window_left, window_right, softcap, scale,
  return_lse, arch, block_m, block_n, sinks=None) -> (o, lse)
- attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
  max_seqlen_k, causal, window_left, window_right, softcap, scale,
  return_lse, arch, block_m, block_n, sinks=None) -> (o, lse); lse is
  [heads, total_q]
- attention_varlen_paged(q, k_cache, v_cache, cu_seqlens_q, block_table,
  seqused_k, max_seqlen_q, max_seqlen_k, layout, causal, window_left,
  window_right, softcap, scale, return_lse, arch, block_m, block_n,
  sinks=None) -> (o, lse): attention_varlen over a paged cache
- decode(q, k_cache, v_cache, block_table, kv_lens, max_kv_len, layout,
  causal, window_left, window_right, softcap, scale, return_lse, max_q_len,
  num_splits, workspace, arch, block_n, sinks=None) -> (o, lse); writes
  ``workspace``
- kv_append(key, value, k_cache, v_cache, slot_mapping, layout, arch);
  writes ``k_cache`` and ``v_cache`` (attnc.paged_kv_append is the same op)
- merge_state(o_a, lse_a, o_b, lse_b, return_lse, arch) -> (o, lse)
- silu_and_mul(x, arch) -> out; silu_and_mul_out(out, x, arch) writes out;
  gelu_and_mul and gelu_and_mul_out the same
- fused_add_rms_norm(x, residual, weight, eps, arch) -> (y, h);
  fused_add_rms_norm_inplace(x, residual, weight, eps, arch) writes y into
  x and h into residual; fused_add_rms_norm_out(out, residual_out, x,
  residual, weight, eps, arch) writes out and residual_out
  (attnc.add_rms_norm is fused_add_rms_norm)
- rotary_embedding(positions, query, key, head_size, cos_sin_cache,
  is_neox, arch); writes query and key

An lse the caller did not ask for (return_lse False) is an empty float32
tensor of shape (0,): an op returns the same number of tensors for every
set of arguments.
"""

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _attention, _cache_ops, _decode, _rows, _varlen
from ._capi import AttncError

# Every op this module registers, by name in torch.ops.attnc.
OPS = ("attention", "attention_varlen", "attention_varlen_paged", "decode",
       "kv_append", "merge_state", "silu_and_mul", "silu_and_mul_out", "gelu_and_mul", "gelu_and_mul_out",
       "fused_add_rms_norm", "fused_add_rms_norm_inplace",
       "fused_add_rms_norm_out", "rotary_embedding")


def _lse(like, shape, wanted):
    """The LSE output: float32 ``shape`` on like's device, or (0,) when
    the caller did not ask for one."""
    return like.new_empty(shape if wanted else (0,), dtype=torch.float32)


# --- attention ---------------------------------------------------------------


@torch.library.custom_op("attnc::attention", mutates_args=())
def attention(q: Tensor, k: Tensor, v: Tensor, causal: bool,
              window_left: int, window_right: int, softcap: Optional[float],
              scale: Optional[float], return_lse: bool, arch: Optional[str],
              block_m: int, block_n: int,
              sinks: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    out = _attention.launch(q, k, v, causal, (window_left, window_right),
                            softcap, scale, return_lse, arch, block_m,
                            block_n, sinks=sinks)
    if return_lse:
        return out
    return out, _lse(q, None, False)


@attention.register_fake
def _(q, k, v, causal, window_left, window_right, softcap, scale, return_lse,
      arch, block_m, block_n, sinks=None):
    _attention.check_shapes(q, k, v)
    if sinks is not None:
        _attention.check_sinks(torch, sinks, q)
    return (torch.empty_like(q),
            _lse(q, (q.shape[0], q.shape[2], q.shape[1]), return_lse))


# --- attention_varlen --------------------------------------------------------


@torch.library.custom_op("attnc::attention_varlen", mutates_args=())
def attention_varlen(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor,
                     cu_seqlens_k: Tensor, max_seqlen_q: int,
                     max_seqlen_k: int, causal: bool, window_left: int,
                     window_right: int, softcap: Optional[float],
                     scale: Optional[float], return_lse: bool,
                     arch: Optional[str], block_m: int, block_n: int,
                     sinks: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    out = _varlen.launch(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                         max_seqlen_k, causal, (window_left, window_right),
                         softcap, scale, return_lse, arch, block_m, block_n,
                         sinks)
    if return_lse:
        return out
    return out, _lse(q, None, False)


@attention_varlen.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
      causal, window_left, window_right, softcap, scale, return_lse, arch,
      block_m, block_n, sinks=None):
    _varlen.check_varlen_shapes(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                max_seqlen_q, max_seqlen_k)
    if sinks is not None:
        _attention.check_sinks(torch, sinks, q.unsqueeze(0))
    return (torch.empty_like(q),
            _lse(q, (q.shape[1], q.shape[0]), return_lse))


@torch.library.custom_op("attnc::attention_varlen_paged", mutates_args=())
def attention_varlen_paged(q: Tensor, k_cache: Tensor, v_cache: Tensor,
                           cu_seqlens_q: Tensor, block_table: Tensor,
                           seqused_k: Tensor, max_seqlen_q: int,
                           max_seqlen_k: int, layout: str, causal: bool,
                           window_left: int, window_right: int,
                           softcap: Optional[float], scale: Optional[float],
                           return_lse: bool, arch: Optional[str],
                           block_m: int, block_n: int,
                           sinks: Optional[Tensor] = None
                           ) -> Tuple[Tensor, Tensor]:
    out = _varlen.launch_paged(q, k_cache, v_cache, cu_seqlens_q,
                               block_table, seqused_k, max_seqlen_q,
                               max_seqlen_k, layout, causal,
                               (window_left, window_right), softcap, scale,
                               return_lse, arch, block_m, block_n, sinks)
    if return_lse:
        return out
    return out, _lse(q, None, False)


@attention_varlen_paged.register_fake
def _(q, k_cache, v_cache, cu_seqlens_q, block_table, seqused_k,
      max_seqlen_q, max_seqlen_k, layout, causal, window_left, window_right,
      softcap, scale, return_lse, arch, block_m, block_n, sinks=None):
    _varlen.check_paged_shapes(q, k_cache, v_cache, cu_seqlens_q,
                               block_table, seqused_k, max_seqlen_q,
                               max_seqlen_k, layout)
    if sinks is not None:
        _attention.check_sinks(torch, sinks, q.unsqueeze(0))
    return (torch.empty_like(q),
            _lse(q, (q.shape[1], q.shape[0]), return_lse))


# --- decode ------------------------------------------------------------------


@torch.library.custom_op("attnc::decode", mutates_args=("workspace",))
def decode(q: Tensor, k_cache: Tensor, v_cache: Tensor, block_table: Tensor,
           kv_lens: Tensor, max_kv_len: Optional[int], layout: str,
           causal: bool, window_left: int, window_right: int,
           softcap: Optional[float], scale: Optional[float],
           return_lse: bool, max_q_len: Optional[int], num_splits: int,
           workspace: Optional[Tensor], arch: Optional[str],
           block_n: int,
           sinks: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    out = _decode.launch(q, k_cache, v_cache, block_table, kv_lens,
                         max_kv_len, layout, causal,
                         (window_left, window_right), softcap, scale,
                         return_lse, max_q_len, num_splits, workspace, arch,
                         block_n, sinks)
    if return_lse:
        return out
    return out, _lse(q, None, False)


@decode.register_fake
def _(q, k_cache, v_cache, block_table, kv_lens, max_kv_len, layout, causal,
      window_left, window_right, softcap, scale, return_lse, max_q_len,
      num_splits, workspace, arch, block_n, sinks=None):
    if sinks is not None:
        _attention.check_sinks(torch, sinks, q)
    if q.dim() != 4 or k_cache.dim() != 4:
        raise AttncError("attnc.decode: expected q [B, S, H, D] and two "
                         "caches of one 4-d shape")
    # o is empty_like of q as the kernel reads it (re-laid out when its
    # rows do not form one strided matrix per head).
    o = torch.empty_like(_decode._relayout_q(q)[0])
    return o, _lse(q, (q.shape[0], q.shape[2], q.shape[1]), return_lse)


# --- kv_append and merge_state ----------------------------------------------


@torch.library.custom_op("attnc::kv_append",
                         mutates_args=("k_cache", "v_cache"))
def kv_append(key: Tensor, value: Tensor, k_cache: Tensor, v_cache: Tensor,
              slot_mapping: Tensor, layout: str,
              arch: Optional[str]) -> None:
    _cache_ops.launch_kv_append(key, value, k_cache, v_cache, slot_mapping,
                                layout, arch)


@kv_append.register_fake
def _(key, value, k_cache, v_cache, slot_mapping, layout, arch):
    return None


@torch.library.custom_op("attnc::merge_state", mutates_args=())
def merge_state(o_a: Tensor, lse_a: Tensor, o_b: Tensor, lse_b: Tensor,
                return_lse: bool,
                arch: Optional[str]) -> Tuple[Tensor, Tensor]:
    out = _cache_ops.launch_merge_state(o_a, lse_a, o_b, lse_b, return_lse,
                                        arch)
    if return_lse:
        return out
    return out, _lse(o_a, None, False)


@merge_state.register_fake
def _(o_a, lse_a, o_b, lse_b, return_lse, arch):
    if o_a.dim() != 4:
        raise AttncError("attnc.merge_state: o_a and o_b must be [batch, "
                         "q_len, heads, head_dim] of one shape")
    return (torch.empty_like(o_a),
            _lse(o_a, (o_a.shape[0], o_a.shape[2], o_a.shape[1]),
                 return_lse))


# --- row ops -----------------------------------------------------------------


def _gated_shape(name, x):
    if x.dim() < 1 or x.shape[-1] % 2:
        raise AttncError("attnc.%s: x's last dim (%s) must be even: gate and "
                         "up halves" % (name, tuple(x.shape)[-1:]))
    return tuple(x.shape[:-1]) + (x.shape[-1] // 2,)


@torch.library.custom_op("attnc::silu_and_mul", mutates_args=())
def silu_and_mul(x: Tensor, arch: Optional[str]) -> Tensor:
    return _rows._gated("silu_and_mul", "silu_mul", x, None, arch)


@silu_and_mul.register_fake
def _(x, arch):
    return x.new_empty(_gated_shape("silu_and_mul", x))


@torch.library.custom_op("attnc::silu_and_mul_out", mutates_args=("out",))
def silu_and_mul_out(out: Tensor, x: Tensor, arch: Optional[str]) -> None:
    _rows._gated("silu_and_mul", "silu_mul", x, out, arch)


@silu_and_mul_out.register_fake
def _(out, x, arch):
    return None


@torch.library.custom_op("attnc::gelu_and_mul", mutates_args=())
def gelu_and_mul(x: Tensor, arch: Optional[str]) -> Tensor:
    return _rows._gated("gelu_and_mul", "gelu_mul", x, None, arch)


@gelu_and_mul.register_fake
def _(x, arch):
    return x.new_empty(_gated_shape("gelu_and_mul", x))


@torch.library.custom_op("attnc::gelu_and_mul_out", mutates_args=("out",))
def gelu_and_mul_out(out: Tensor, x: Tensor, arch: Optional[str]) -> None:
    _rows._gated("gelu_and_mul", "gelu_mul", x, out, arch)


@gelu_and_mul_out.register_fake
def _(out, x, arch):
    return None


@torch.library.custom_op("attnc::fused_add_rms_norm", mutates_args=())
def fused_add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor,
                       eps: float,
                       arch: Optional[str]) -> Tuple[Tensor, Tensor]:
    return _rows.launch_add_rms_norm(x, residual, weight, eps, arch=arch)


@fused_add_rms_norm.register_fake
def _(x, residual, weight, eps, arch):
    return torch.empty_like(x), torch.empty_like(x)


@torch.library.custom_op("attnc::fused_add_rms_norm_inplace",
                         mutates_args=("x", "residual"))
def fused_add_rms_norm_inplace(x: Tensor, residual: Tensor, weight: Tensor,
                               eps: float, arch: Optional[str]) -> None:
    _rows.launch_add_rms_norm(x, residual, weight, eps, inplace=True,
                              arch=arch)


@fused_add_rms_norm_inplace.register_fake
def _(x, residual, weight, eps, arch):
    return None


@torch.library.custom_op("attnc::fused_add_rms_norm_out",
                         mutates_args=("out", "residual_out"))
def fused_add_rms_norm_out(out: Tensor, residual_out: Tensor, x: Tensor,
                           residual: Tensor, weight: Tensor, eps: float,
                           arch: Optional[str]) -> None:
    _rows.launch_add_rms_norm(x, residual, weight, eps, out=out,
                              residual_out=residual_out, arch=arch)


@fused_add_rms_norm_out.register_fake
def _(out, residual_out, x, residual, weight, eps, arch):
    return None


@torch.library.custom_op("attnc::rotary_embedding",
                         mutates_args=("query", "key"))
def rotary_embedding(positions: Tensor, query: Tensor, key: Tensor,
                     head_size: int, cos_sin_cache: Tensor, is_neox: bool,
                     arch: Optional[str]) -> None:
    _rows.launch_rotary_embedding(positions, query, key, head_size,
                                  cos_sin_cache, is_neox, arch)


@rotary_embedding.register_fake
def _(positions, query, key, head_size, cos_sin_cache, is_neox, arch):
    return None
