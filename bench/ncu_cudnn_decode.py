"""cuDNN's decode (PyTorch SDPA, cuDNN backend) at one decode row, for
Nsight Compute: B=16, L=32k (or `B L` on the command line), 32 query / 8 KV
heads, D=128, bf16, one query token, the cache BSHD passed as BHSD views
(bench/compare.py's decode row). Runs a few calls so that `ncu
--launch-skip N` profiles warm ones.
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def main():
    b, length = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 \
        else (16, 32768)
    q = torch.randn(b, 1, 32, 128, device="cuda",
                    dtype=torch.bfloat16).transpose(1, 2)
    k, v = (torch.randn(b, length, 8, 128, device="cuda",
                        dtype=torch.bfloat16).transpose(1, 2)
            for _ in range(2))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        for _ in range(8):
            o = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.cuda.synchronize()
    if not torch.isfinite(o).all():
        sys.exit("cuDNN decode output has NaN/Inf")


if __name__ == "__main__":
    main()
