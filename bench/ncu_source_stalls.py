#!/usr/bin/env python3
"""Where a kernel's warps stall, per SASS instruction and per opcode.

Reads what `ncu --section SourceCounters --section WarpStateStats --page
source --print-source sass --csv ...` prints (one kernel per file) and
summarises the PC-sampling columns: the samples per stall reason over the
whole kernel, per opcode (HGMMA, MUFU, SYNCS, BAR, ...) and the instructions
with the most samples, each with its address and SASS text. Two files side
by side (attnc's kernel and cuDNN's at the same shape) show where the one
spends cycles the other does not (bench/NOTES-hopper.md, 2026-12-06).

Usage: ncu_source_stalls.py SOURCE.csv [SOURCE2.csv ...] [--top 40]
"""
import argparse
import collections
import csv
import io
import re
import sys


def read_rows(path):
    """The CSV rows of ncu's source page: the header is the first line whose
    fields include "Source" and an address column ("Address", "# Address")."""
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    start = None
    for i, line in enumerate(lines):
        fields = next(csv.reader([line]), [])
        if "Source" in fields and any(f.strip("# ") == "Address"
                                      for f in fields):
            start = i
            break
    if start is None:
        sys.exit(f"{path}: no source-page header (Address, Source, ...) found")
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    header = next(reader)
    rows = [r for r in reader if len(r) == len(header) and r != header]
    return header, rows


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def opcode(sass):
    """The opcode of a SASS line without predicate and modifiers."""
    text = re.sub(r"^@!?U?P\w+\s+", "", sass.strip())
    return re.split(r"[\s.]", text, maxsplit=1)[0] if text else "?"


def summarise(path, top):
    header, rows = read_rows(path)
    col = {name: i for i, name in enumerate(header)}
    src = col.get("Source")
    addr = next((i for i, c in enumerate(header) if c.strip("# ") == "Address"),
                None)
    total_col = next((c for c in header
                      if c.startswith("Warp Stall Sampling (All")), None)
    if src is None or total_col is None:
        sys.exit(f"{path}: columns Source / Warp Stall Sampling missing: "
                 f"{header}")
    # Per-reason sample columns: `stall_<reason>` (all samples); the
    # `stall_<reason> (Not Issued)` twins are a subset of them.
    reasons = [c for c in header
               if c.startswith("stall_") and not c.endswith("(Not Issued)")]
    total = 0.0
    by_reason = collections.Counter()
    by_op = collections.Counter()
    by_op_reason = collections.defaultdict(collections.Counter)
    lines = []
    for r in rows:
        n = number(r[col[total_col]]) or 0.0
        total += n
        op = opcode(r[src])
        by_op[op] += n
        for c in reasons:
            v = number(r[col[c]])
            if v:
                by_reason[c] += v
                by_op_reason[op][c] += v
        lines.append((n, r[addr] if addr is not None else "", r[src].strip()))
    print(f"== {path}")
    print(f"{len(rows)} SASS lines, {total:.0f} samples ({total_col})")
    if not total:
        return
    print("\nby reason (share of all samples):")
    for c, v in by_reason.most_common():
        if v / total >= 0.002:
            print(f"  {c:48s} {v:9.0f} {100 * v / total:6.2f}%")
    print("\nby opcode (share; top reasons):")
    for op, v in by_op.most_common(25):
        if v / total < 0.002:
            break
        tops = ", ".join(f"{c.replace('stall_', '')} {100 * x / total:.1f}"
                         for c, x in by_op_reason[op].most_common(3))
        print(f"  {op:10s} {v:9.0f} {100 * v / total:6.2f}%  [{tops}]")
    print(f"\ntop {top} instructions:")
    for n, a, s in sorted(lines, key=lambda t: -t[0])[:top]:
        print(f"  {a:>8s} {n:8.0f} {100 * n / total:5.2f}%  {s}")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    for f in args.files:
        summarise(f, args.top)


if __name__ == "__main__":
    main()
