"""attnc: attention kernels compiled by attnc, launched through libattnc.so.

Importing needs neither torch nor a GPU nor libattnc.so; the library is
loaded on first use ($ATTNC_LIBRARY, else <repo>/build/lib/libattnc.so,
else libattnc.so on the loader path).
"""

from ._attention import attention
from ._varlen import attention_varlen
from ._cache_ops import kv_append, merge_state, paged_kv_append
from ._decode import decode, decode_workspace
from ._rows import (add_rms_norm, fused_add_rms_norm, gelu_and_mul,
                    rotary_embedding, silu_and_mul)
from ._capi import (AttncError, CaptureDesc, Context, RowDesc, Spec,
                    TensorDesc,
                    VarlenDesc, build_id, jit_info, jit_problem,
                    library_path, precompile, validate_attention,
                    validate_rows, version)

__all__ = [
    "AttncError",
    "CaptureDesc",
    "Context",
    "Spec",
    "RowDesc",
    "TensorDesc",
    "VarlenDesc",
    "add_rms_norm",
    "attention",
    "attention_varlen",
    "decode",
    "decode_workspace",
    "build_id",
    "fused_add_rms_norm",
    "kv_append",
    "merge_state",
    "paged_kv_append",
    "precompile",
    "gelu_and_mul",
    "jit_info",
    "jit_problem",
    "library_path",
    "rotary_embedding",
    "silu_and_mul",
    "validate_attention",
    "validate_rows",
    "version",
]
