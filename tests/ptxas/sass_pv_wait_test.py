#!/usr/bin/env python3
"""The wait for P·V_{j-1} stays after the softmax of tile j in the SASS.

The sm_90a KV loop issues Q·Kᵀ_j and P·V_{j-1}, waits for Q·Kᵀ_j only and
runs the softmax of tile j while P·V_{j-1} is still on the tensor cores; the
wait for P·V (`wgmma.wait_group 0`, SASS `WARPGROUP.DEPBAR.LE gsb0, 0x0`)
belongs after the softmax. ptxas schedules that wait near the top of its
basic block: emitted after the softmax in the softmax's block, it would run
before the first exponential and the overlap would be lost (bench/NOTES-hopper.md,
2026-12-06: D128 +7-8% with the wait in the arms of the rescale's vote
branch). This assembles the default kernels that have the vote branch
(head dim >= 128) and checks that, in the KV loop, every such wait comes
after the last MUFU.EX2, and that the loop stays in the uniform datapath
(at most R2UR_MAX values moved to uniform registers per tile).

Needs nvdisasm (PyPI: nvidia-cuda-nvdisasm; bench/sass_loops.py finds it):
without it the test reports itself skipped (exit 77).

Usage: sass_pv_wait_test.py ATTNC PTXAS
"""
import os
import re
import sys
import tempfile

from kv_loop_sass import SKIP, emitted_kv_loop, find_nvdisasm, sass_loops

VARIANTS = ((128, False), (128, True), (256, False), (256, True), (192, True))
# R2UR per tile of the KV loop with the uniform datapath (measured): 16 at
# D128, 32 at D256 (the D-dependent wgmma descriptors); more means ptxas
# moved the loop's descriptors to vector registers.
R2UR_MAX = {128: 16, 192: 24, 256: 32}
PV_WAIT = re.compile(r"WARPGROUP\.DEPBAR\.LE\s+gsb0,\s*0x0")


def main():
    attnc, ptxas = sys.argv[1], sys.argv[2]
    nvdisasm = find_nvdisasm()
    if not nvdisasm:
        return SKIP
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for d, causal in VARIANTS:
            ptx = os.path.join(tmp, f"d{d}{'c' if causal else ''}.ptx")
            body = emitted_kv_loop(attnc, ptxas, nvdisasm, ptx, d, causal)
            waits = [i for i, t in enumerate(body) if PV_WAIT.search(t)]
            exps = [i for i, t in enumerate(body) if re.search(r"MUFU\.EX2", t)]
            r2ur = sass_loops.count(body, "R2UR")
            ok = bool(waits) and min(waits) > max(exps) and r2ur <= R2UR_MAX[d]
            failed += not ok
            print(f"{'PASS' if ok else 'FAIL'} D{d}{' causal' if causal else ''}: KV loop "
                  f"{len(body)} instructions, P·V waits at {waits}, exponentials "
                  f"{min(exps)}..{max(exps)}, R2UR {r2ur} (at most {R2UR_MAX[d]})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
