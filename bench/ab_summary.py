#!/usr/bin/env python3
"""Summarises an A/B of compiler variants beside the peers (gpu-run.sh step
compare-ab): reads the prefill tables of compare.py's markdown outputs, one
per run, named <order>-<variant>.md, and prints attnc / cuDNN per cell and
run, then each variant's geometric mean over its runs per cell.

Usage: ab_summary.py RUN.md [RUN.md ...]
"""
import math
import os
import re
import sys


def prefill_ratios(path):
    """{(D, S, causal): attnc / cuDNN} from the prefill TFLOP/s table."""
    out = {}
    header = None
    in_prefill = False
    for line in open(path):
        if line.startswith("## "):
            in_prefill = line.startswith("## Prefill forward")
            header = None
            continue
        if not in_prefill or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= set("-"):
            continue
        row = dict(zip(header, cells))
        try:
            ratio = float(row["attnc"]) / float(row["cuDNN"])
        except (KeyError, ValueError):
            continue
        out[(row["D"], row["S"], row["causal"])] = ratio
    return out


def main():
    runs = []
    for path in sys.argv[1:]:
        name = os.path.basename(path)[:-3]
        variant = re.sub(r"^\d+-", "", name)
        runs.append((name, variant, prefill_ratios(path)))
    if not runs:
        sys.exit("ab_summary: no runs given")
    cells = sorted({c for _, _, r in runs for c in r},
                   key=lambda c: (int(c[0]), int(c[1].rstrip("k")), c[2]))
    print("attnc / cuDNN per run:")
    print("| D | S | causal | " + " | ".join(n for n, _, _ in runs) + " |")
    for c in cells:
        print(f"| {c[0]} | {c[1]} | {c[2]} | "
              + " | ".join(f"{r[c]:.3f}" if c in r else "-" for _, _, r in runs)
              + " |")
    variants = list(dict.fromkeys(v for _, v, _ in runs))
    print("\ngeometric mean per variant:")
    print("| D | S | causal | " + " | ".join(variants) + " |")
    for c in cells:
        means = []
        for v in variants:
            xs = [r[c] for _, w, r in runs if w == v and c in r]
            means.append(math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None)
        print(f"| {c[0]} | {c[1]} | {c[2]} | "
              + " | ".join(f"{m:.3f}" if m else "-" for m in means) + " |")


if __name__ == "__main__":
    main()
