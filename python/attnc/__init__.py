"""attnc: attention kernels compiled by attnc, launched through libattnc.so.

Importing needs neither torch nor a GPU nor libattnc.so; the library is
loaded on first use ($ATTNC_LIBRARY, else <repo>/build/lib/libattnc.so,
else libattnc.so on the loader path).
"""

from ._attention import attention
from ._decode import decode, decode_workspace
from ._capi import (AttncError, Context, Spec, TensorDesc, build_id,
                    library_path, validate_attention, version)

__all__ = [
    "AttncError",
    "Context",
    "Spec",
    "TensorDesc",
    "attention",
    "decode",
    "decode_workspace",
    "build_id",
    "library_path",
    "validate_attention",
    "version",
]
