#!/usr/bin/env python3
"""The loops of a kernel's SASS, with what each one issues per iteration.

Reads PTX (assembled here with ptxas) or a cubin, disassembles it with
nvdisasm, and lists every loop (a branch back to an earlier label): its
address range, its instruction count, and how many of those are HGMMA,
R2UR (a value moved from the vector registers into the uniform datapath:
a wgmma descriptor built per thread), BAR/SYNCS (barriers) and MUFU (the
softmax's exp2). Nested loops are listed separately; the count of a loop
includes its inner loops' bodies once.

No GPU is needed, so the KV loop of two schedules can be compared before
spending device time (bench/NOTES-hopper.md, 2026-12-02). nvdisasm is not in
the CUDA Toolkit's minimal install here; NVIDIA publishes it on PyPI
(`pip install nvidia-cuda-nvdisasm`), which this script finds, or give its
path with --nvdisasm / $NVDISASM.

Usage: sass_loops.py KERNEL.ptx|KERNEL.cubin [--arch sm_90a] [--min-hgmma 1]
       [--dump FILE]
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
BRANCH = re.compile(r"\bBRA(?:\.\S+)?\s+(?:\S+\s+)?`?\(?(\.L_x_\d+)\)?")
KINDS = ("HGMMA", "R2UR", "BAR", "SYNCS", "MUFU", "SHFL", "LDS", "STS", "STSM",
         "STG", "UTMALDG")


def find_nvdisasm(explicit, required=True):
    """nvdisasm's path; None when not found and not required."""
    for cand in (explicit, os.environ.get("NVDISASM"),
                 shutil.which("nvdisasm"), "/usr/local/cuda/bin/nvdisasm"):
        if cand and os.path.exists(cand):
            return cand
    # The PyPI wheel (nvidia-cuda-nvdisasm) installs under site-packages.
    import site
    roots = site.getsitepackages() + [site.getusersitepackages()]
    for root in roots + ["/opt/nvdisasm"]:
        hits = glob.glob(os.path.join(root, "nvidia", "*", "bin", "nvdisasm"))
        if hits:
            return hits[0]
    if not required:
        return None
    sys.exit("sass_loops: nvdisasm not found: pip install "
             "nvidia-cuda-nvdisasm, or pass --nvdisasm PATH")


def disassemble(path, arch, nvdisasm, ptxas):
    with tempfile.TemporaryDirectory() as tmp:
        cubin = path
        if path.endswith(".ptx"):
            cubin = os.path.join(tmp, "k.cubin")
            subprocess.run([ptxas, f"-arch={arch}", "-o", cubin, path],
                           check=True)
        return subprocess.run([nvdisasm, "-c", cubin], check=True,
                              capture_output=True, text=True).stdout


def loops(sass):
    insns = []  # (address, text)
    labels = {}  # label -> address of the next instruction
    pending = []
    for line in sass.splitlines():
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSN.search(line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        for name in pending:
            labels[name] = addr
        pending = []
        insns.append((addr, m.group(2)))
    found = []
    for addr, text in insns:
        m = BRANCH.search(text)
        if m and m.group(1) in labels and labels[m.group(1)] <= addr:
            lo = labels[m.group(1)]
            body = [t for a, t in insns if lo <= a <= addr]
            found.append((lo, addr, body))
    return insns, found


def kv_loop(sass):
    """The attention KV loop of a kernel's SASS: the smallest loop that
    issues wgmmas and a tile's exponentials (HGMMA, >= 16 MUFU; an item loop
    around it issues the peeled first tile's too). None without one."""
    _, found = loops(sass)
    bodies = [body for _, _, body in found
              if count(body, "HGMMA") and count(body, "MUFU") >= 16]
    return min(bodies, key=len) if bodies else None


def count(body, kind):
    return sum(1 for t in body if re.search(rf"(^|\s|\}}){kind}\b", t))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--nvdisasm")
    ap.add_argument("--ptxas", default=os.path.join(
        os.environ.get("ATTNC_CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas"))
    ap.add_argument("--min-hgmma", type=int, default=0,
                    help="list only loops with at least this many HGMMA")
    ap.add_argument("--dump", help="write the whole disassembly here")
    args = ap.parse_args()
    sass = disassemble(args.kernel, args.arch, find_nvdisasm(args.nvdisasm),
                       args.ptxas)
    if args.dump:
        with open(args.dump, "w") as f:
            f.write(sass)
    insns, found = loops(sass)
    print(f"{os.path.basename(args.kernel)}: {len(insns)} instructions, "
          + ", ".join(f"{k} {count([t for _, t in insns], k)}"
                      for k in KINDS))
    for lo, hi, body in found:
        if count(body, "HGMMA") < args.min_hgmma:
            continue
        print(f"  loop {lo:#06x}-{hi:#06x}: {len(body)} instructions, "
              + ", ".join(f"{k} {count(body, k)}" for k in KINDS))


if __name__ == "__main__":
    main()
