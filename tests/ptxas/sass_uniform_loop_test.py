#!/usr/bin/env python3
"""The persistent KV loop stays in the uniform datapath with the TMA epilogue.

ptxas keeps the KV loop's counter and wgmma descriptors in uniform registers
only while it can: an `.aligned` instruction (stmatrix, bar.sync) in the
epilogue after a causal KV loop makes it wrap the loop for reconvergence and
move them to vector registers, R2UR before every HGMMA (bench/NOTES-hopper.md,
2026-12-02/03: D128 causal 828 SASS instructions per tile against 752).
This assembles the persistent kernels with both epilogues and checks that the
TMA epilogue's KV loop is no longer than the register epilogue's and moves no
more values into uniform registers. The same for the stream-K tail (where
a piece's dynamic first key and one thread's spin on a flag would each take
the loop out of the uniform datapath, 654 and 698 instructions per tile
against 617): the kernel with the tail against --no-stream-k.

Needs nvdisasm, which the CUDA Toolkit's minimal install lacks (PyPI:
nvidia-cuda-nvdisasm; bench/sass_loops.py finds it): without it the test
reports itself skipped (exit 77).

Usage: sass_uniform_loop_test.py ATTNC PTXAS
"""
import os
import sys
import tempfile

from kv_loop_sass import SKIP, emitted_kv_loop, find_nvdisasm, sass_loops

# (head dim, causal): the causal ones are where an .aligned epilogue
# instruction takes the loop out of the uniform datapath; D128 without the
# mask is the default that must stay in it too.
VARIANTS = ((128, True), (64, True), (128, False))
SLACK = 8  # instructions: the two kernels' loops may differ by a few moves


def kv_loop(attnc, ptxas, nvdisasm, d, causal, epilogue, tmp, extra=()):
    tag = "".join(extra).replace("-", "")
    ptx = os.path.join(tmp, f"d{d}{'c' if causal else ''}-{epilogue}{tag}.ptx")
    return emitted_kv_loop(attnc, ptxas, nvdisasm, ptx, d, causal,
                           ("--grid", "persistent", "--epilogue", epilogue, *extra))


def main():
    attnc, ptxas = sys.argv[1], sys.argv[2]
    nvdisasm = find_nvdisasm()
    if not nvdisasm:
        return SKIP
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for d, causal in VARIANTS:
            tma = kv_loop(attnc, ptxas, nvdisasm, d, causal, "tma", tmp)
            regs = kv_loop(attnc, ptxas, nvdisasm, d, causal, "registers", tmp)
            r2ur = (sass_loops.count(tma, "R2UR"), sass_loops.count(regs, "R2UR"))
            ok = len(tma) <= len(regs) + SLACK and r2ur[0] <= r2ur[1]
            failed += not ok
            print(f"{'PASS' if ok else 'FAIL'} D{d}{' causal' if causal else ''}: KV loop "
                  f"{len(tma)} instructions, R2UR {r2ur[0]} with the TMA epilogue; "
                  f"{len(regs)}, R2UR {r2ur[1]} with registers")
        for d in (128, 64):
            tail = kv_loop(attnc, ptxas, nvdisasm, d, False, "tma", tmp)
            plain = kv_loop(attnc, ptxas, nvdisasm, d, False, "tma", tmp,
                            ("--no-stream-k",))
            r2ur = (sass_loops.count(tail, "R2UR"), sass_loops.count(plain, "R2UR"))
            ok = len(tail) <= len(plain) + SLACK and r2ur[0] <= r2ur[1]
            failed += not ok
            print(f"{'PASS' if ok else 'FAIL'} D{d} stream-K tail: KV loop "
                  f"{len(tail)} instructions, R2UR {r2ur[0]}; without it "
                  f"{len(plain)}, R2UR {r2ur[1]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
