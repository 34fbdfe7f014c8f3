"""FA2 (PyTorch SDPA's flash backend) at one prefill shape, for Nsight Compute.

Runs a few forward calls so that `ncu -k regex:flash --launch-skip 3
--launch-count 1 python3 bench/ncu_fa2.py [--causal]` profiles a warm one;
`--cudnn` runs SDPA's cuDNN backend instead (`ncu -k regex:sdpa`).
Shape: bench/compare.py's D=128 S=4k cell (B=4, H=16, bf16, BSHD tensors
passed as BHSD views), the shape attnc-bench profiles beside it; `--long`
takes the S=16k cell instead (B=1, H=16).
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def main():
    causal = "--causal" in sys.argv[1:]
    backend = (SDPBackend.CUDNN_ATTENTION if "--cudnn" in sys.argv[1:]
               else SDPBackend.FLASH_ATTENTION)
    batch, seq = (1, 16384) if "--long" in sys.argv[1:] else (4, 4096)
    torch.manual_seed(torch.seed())
    q, k, v = (torch.randn(batch, seq, 16, 128, device="cuda",
                           dtype=torch.bfloat16).transpose(1, 2)
               for _ in range(3))
    with sdpa_kernel(backend):
        for _ in range(6):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.cuda.synchronize()
    if not torch.isfinite(o).all():
        sys.exit(f"{backend} output has NaN/Inf")


if __name__ == "__main__":
    main()
