#!/usr/bin/env python3
"""Offline self-test of bench/compare.py's pure-Python parts (no GPU, no torch).

    python3 bench/test_compare_offline.py        # exits non-zero on failure

Checks: FLOP/byte formulas against hand-computed values; the grids against
PEERS.md's rows (parsed from PEERS.md when found: $ATTNC_PEERS_MD, <repo>/shared/,
<repo>/../shared/; else an embedded copy of its rows); the markdown writer, ratio
column and summary on fake results with ok / n/a / error / WRONG / expanded cells;
the output writer ($OUT copy); the CLI parser; the attnc hooks without attnc;
and the plots when matplotlib is installed.
"""

import json
import os
import re
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import attnc_hook as H  # noqa: E402
import bench_grids as G  # noqa: E402
import bench_report as R  # noqa: E402

FAILURES = []
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def eq(a, b, msg=""):
    if a != b:
        raise AssertionError(f"{msg}: {a!r} != {b!r}")


def close(a, b, rel=1e-12, msg=""):
    if abs(a - b) > rel * max(abs(a), abs(b)):
        raise AssertionError(f"{msg}: {a!r} !~ {b!r}")


# ----------------------------------------------------------------- formulas
@test
def test_prefill_flops_hand_values():
    # D=128, S=4k, non-causal: B=4, H=16: 4*4*16*4096^2*128 = 2^2*2^2*2^4*2^24*2^7 = 2^39
    p = G.PrefillProblem(128, 4096, False)
    eq((p.B, p.H), (4, 16), "B, H for D=128 S=4k")
    eq(p.flops, 549_755_813_888, "D=128 S=4k non-causal")
    eq(G.PrefillProblem(128, 4096, True).flops, 274_877_906_944, "causal halves")
    # D=64, S=16k, causal: B=1, H=32: 4*32*16384^2*64/2 = 2^40
    p = G.PrefillProblem(64, 16384, True)
    eq((p.B, p.H), (1, 32), "B, H for D=64 S=16k")
    eq(p.flops, 1_099_511_627_776, "D=64 S=16k causal")
    # D=256, S=16k: B=1, H=8: 4*8*16384^2*256 = 2^2*2^3*2^28*2^8 = 2^41
    eq(G.PrefillProblem(256, 16384, False).flops, 2**41, "D=256 S=16k")
    # D=128, S=1k: B=16, H=16: 4*16*16*1024^2*128 = 2^2*2^4*2^4*2^20*2^7 = 2^37
    eq(G.PrefillProblem(128, 1024, False).flops, 137_438_953_472, "D=128 S=1k")
    # every row: 16k tokens, 2048 channels, so flops = 4*16384*2048*S (/2)
    for p in G.PREFILL_GRID:
        eq(p.B * p.S, 16384, f"tokens {p.label}")
        eq(p.H * p.D, 2048, f"channels {p.label}")
        eq(p.flops, 4 * 16384 * 2048 * p.S // (2 if p.causal else 1), f"flops {p.label}")
    eq(G.prefill_flops(2, 3, 5, 7, False), 4 * 2 * 3 * 25 * 7, "small non-causal")
    eq(G.prefill_flops(2, 3, 5, 7, True), 2 * 2 * 3 * 25 * 7, "small causal")


@test
def test_decode_and_elementwise_bytes_hand_values():
    # B=1, L=128k: 2*1*131072*8*128*2 = 2^29
    eq(G.DecodeProblem(1, 131072).kv_bytes, 536_870_912, "decode 1x128k")
    eq(G.DecodeProblem(16, 32768).kv_bytes, 2 * 16 * 32768 * 8 * 128 * 2, "decode 16x32k")
    eq(G.DecodeProblem(16, 32768).kv_bytes, 2_147_483_648, "decode 16x32k = 2 GiB")
    eq(G.DecodeProblem(64, 4096).kv_bytes, 1_073_741_824, "decode 64x4k = 1 GiB")
    eq(G.DecodeProblem(64, 16384).kv_bytes, 4_294_967_296, "decode 64x16k = 4 GiB")
    # silu_and_mul: read 8192*28672*2 = 469762048, write 8192*14336*2 = 234881024
    eq(G.ElementwiseProblem("silu_and_mul", 8192, 14336).bytes, 704_643_072, "silu_and_mul")
    # add_rms_norm: read x, r: 2*8192*4096*2, w: 4096*2; write y, residual: 2*8192*4096*2
    eq(G.ElementwiseProblem("add_rms_norm", 8192, 4096).bytes, 268_443_648, "add_rms_norm")
    # metric conversions
    close(G.tflops(2**39, 1.0), 549.755813888, msg="tflops")
    close(G.tbps(536_870_912, 0.2), 2.68435456, msg="tbps")
    close(G.tbps(4 * 2**29, 0.5), 4.294967296, msg="copy tbps")
    # 2*8192^3 = 1099511627776 FLOPs in 1.4 ms
    close(G.tflops(2 * 8192**3, 1.4), 785.365448, rel=1e-6, msg="matmul tflops")


@test
def test_rotation_sets():
    l2 = 60 * 10**6
    eq(G.rotation_sets(10 * 10**6, l2), 8, "small set capped at 8")
    eq(G.rotation_sets(100 * 10**6, l2), 3, "ceil(240/100)")
    eq(G.rotation_sets(240 * 10**6, l2), 1, "exactly 4x L2")
    eq(G.rotation_sets(536_870_912, l2), 1, "decode 1x128k")
    for grid in (G.PREFILL_GRID, G.DECODE_GRID, G.ELEMENTWISE_GRID):
        for p in grid:
            eq(G.rotation_sets(p.io_bytes, l2), 1, f"current grid row {p.label} needs no rotation")
    try:
        G.rotation_sets(0, l2)
        raise AssertionError("rotation_sets(0) must raise")
    except ValueError:
        pass


@test
def test_size_labels_and_parse_grids():
    eq([G.size_label(n) for n in (1024, 4096, 16384, 131072, 100)], ["1k", "4k", "16k", "128k", "100"], "labels")
    eq(G.parse_grids("decode,prefill"), ["prefill", "decode"], "canonical order")
    eq(G.parse_grids(" elementwise "), ["elementwise"], "strip")
    for bad in ("", "prefil", "prefill,foo"):
        try:
            G.parse_grids(bad)
            raise AssertionError(f"parse_grids({bad!r}) must raise")
        except ValueError:
            pass


# ----------------------------------------------------------------- PEERS.md
EMBEDDED_PEERS_ROWS = {
    "prefill": [(64, "4k", "no", 297, 467, 231), (64, "16k", "yes", 284, 438, 272),
                (128, "1k", "no", 283, 450, 207), (128, "1k", "yes", 195, 294, 146),
                (128, "4k", "no", 336, 611, 349), (128, "4k", "yes", 286, 474, 267),
                (128, "16k", "no", 343, 651, 371), (128, "16k", "yes", 314, 609, 342),
                (256, "16k", "no", 318, 712, 299)],
    "decode": [(1, "128k", 2.59, 2.95), (16, "32k", 3.80, 3.91), (64, "4k", 2.28, 3.50), (64, "16k", 2.57, 4.13)],
    "elementwise": {"silu_and_mul": {"compile": 3.06}, "add_rms_norm": {"eager": 2.55, "compile": 1.90}},
    "ceilings": (4.22, 752),
}


def _find_peers_md():
    cands = [os.environ.get("ATTNC_PEERS_MD"), os.path.join(REPO, "shared", "PEERS.md"),
             os.path.join(os.path.dirname(REPO), "shared", "PEERS.md")]
    for c in cands:
        if c and os.path.isfile(c):
            return c
    return None


def _num(s):
    return int(s) if re.fullmatch(r"\d+", s) else float(s)


def parse_peers_md(text):
    """Rows of PEERS.md's prefill and decode tables, its elementwise line and ceilings."""
    prefill, decode = [], []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.strip().startswith("|") else []
        if len(cells) == 6 and re.fullmatch(r"\d+", cells[0]) and cells[2] in ("yes", "no"):
            prefill.append((int(cells[0]), cells[1], cells[2], *(_num(c) for c in cells[3:])))
        elif len(cells) == 4 and re.fullmatch(r"\d+", cells[0]) and re.fullmatch(r"\d+k", cells[1]):
            decode.append((int(cells[0]), cells[1], *(_num(c) for c in cells[2:])))
    ew = {}
    m = re.search(r"silu_and_mul \(8192×2·14336\) torch\.compile (\d+(?:\.\d+)?)", text)
    if m:
        ew["silu_and_mul"] = {"compile": float(m.group(1))}
    m = re.search(r"add \+ rms_norm \(8192×4096\) eager (\d+(?:\.\d+)?), torch\.compile (\d+(?:\.\d+)?)", text)
    if m:
        ew["add_rms_norm"] = {"eager": float(m.group(1)), "compile": float(m.group(2))}
    m = re.search(r"device copy (\d+(?:\.\d+)?) TB/s.*?bf16 matmul (\d+(?:\.\d+)?) TFLOP/s", text)
    ceilings = (float(m.group(1)), _num(m.group(2))) if m else None
    tokens_ok = "B·S = 16k tokens" in text and "H = 2048/D" in text
    decode_shape_ok = "32 q heads / 8 KV heads, D=128" in text
    return {"prefill": prefill, "decode": decode, "elementwise": ew, "ceilings": ceilings,
            "tokens_ok": tokens_ok, "decode_shape_ok": decode_shape_ok}


def _k(n):
    check(n.endswith("k"), f"size {n!r}")
    return int(n[:-1]) * 1024


def _check_against(rows):
    # prefill: same rows in the same order, same recorded numbers
    got = [(p.D, G.size_label(p.S), "yes" if p.causal else "no") for p in G.PREFILL_GRID]
    eq(got, [r[:3] for r in rows["prefill"]], "prefill grid rows vs PEERS.md")
    for r in rows["prefill"]:
        eq(G.PEERS_PREFILL[(r[0], _k(r[1]), r[2] == "yes")], tuple(r[3:]), f"PEERS prefill numbers {r[:3]}")
    got = [(p.B, G.size_label(p.L)) for p in G.DECODE_GRID]
    eq(got, [r[:2] for r in rows["decode"]], "decode grid rows vs PEERS.md")
    for p in G.DECODE_GRID:
        eq((p.Hq, p.Hkv, p.D), (32, 8, 128), "decode heads")
    for r in rows["decode"]:
        eq(G.PEERS_DECODE[(r[0], _k(r[1]))], tuple(r[2:]), f"PEERS decode numbers {r[:2]}")
    eq(sorted(p.op for p in G.ELEMENTWISE_GRID), sorted(rows["elementwise"]), "elementwise ops")
    for p in G.ELEMENTWISE_GRID:
        eq(G.PEERS_ELEMENTWISE[p.key], rows["elementwise"][p.op], f"PEERS elementwise {p.op}")
    eq((G.PEERS_CEILINGS["copy_tbs"], G.PEERS_CEILINGS["matmul_tflops"]), tuple(rows["ceilings"]), "ceilings")


@test
def test_grids_match_peers_md():
    path = _find_peers_md()
    _check_against(EMBEDDED_PEERS_ROWS)
    if path is None:
        print("    (PEERS.md not found; checked against the embedded copy of its rows only)")
        return
    rows = parse_peers_md(open(path, encoding="utf-8").read())
    check(rows["tokens_ok"], "PEERS.md no longer says 'B·S = 16k tokens, H = 2048/D'")
    check(rows["decode_shape_ok"], "PEERS.md decode shape text changed")
    check(len(rows["prefill"]) == 9 and len(rows["decode"]) == 4, f"parsed {rows}")
    _check_against(rows)
    print(f"    (checked against {path})")


# ----------------------------------------------------------------- report writer
def fake_results():
    def prow(D, S, causal, cells):
        p = G.PrefillProblem(D, S, causal)
        return {"key": list(p.key), "label": p.label,
                "params": {"D": D, "S": S, "causal": causal, "B": p.B, "H": p.H, "flops": p.flops, "n_sets": 1},
                "cells": cells}

    ok = R.ok_cell
    prefill = [
        prow(128, 4096, False, {"FA2": ok(336.0, 1.636, 3.1e-3, first_call_s=0.4),
                                "cuDNN": ok(611.0, 0.9, 3.0e-3),
                                "flex": R.error_cell("BackendCompilerFailed: out of | resource `shared`"),
                                "attnc": ok(700.0, 0.785, 2.9e-3),
                                "reference": R.na_cell("import attnc: ModuleNotFoundError: No module named 'attnc'")}),
        prow(128, 4096, True, {"FA2": R.wrong_cell(0.31, "rel L2 err 3.1e-01 > 0.02", 0.2),
                               "cuDNN": ok(474.0, 0.58, 3.3e-3),
                               "flex": ok(267.0, 1.03, 3.2e-3, first_call_s=12.5),
                               "attnc": R.na_cell("import attnc: ModuleNotFoundError: No module named 'attnc'"),
                               "reference": R.na_cell("attnc.reference_attention missing")}),
        prow(64, 16384, True, {"FA2": R.error_cell("x" * 500),
                               "cuDNN": R.wrong_cell(float("nan"), "NaN/Inf in output"),
                               "flex": R.na_cell("not run"),
                               "attnc": ok(300.0, 3.66, 4e-3),
                               "reference": R.na_cell("n")}),
    ]
    drow = lambda B, L, cells: {"key": [B, L], "label": G.DecodeProblem(B, L).label,  # noqa: E731
                                "params": {"B": B, "L": L, "Hq": 32, "Hkv": 8, "D": 128, "n_sets": 1},
                                "cells": cells}
    decode = [drow(1, 131072, {"FA2": ok(2.59, 0.207, 2e-3), "cuDNN": ok(2.95, 0.18, 2e-3, note="expanded"),
                               "flex": ok(2.0, 0.27, 2e-3), "attnc": ok(3.5, 0.153, 2e-3),
                               "reference": R.na_cell("attnc.reference_attention missing")})]
    erow = lambda op, T, N, cells: {"key": [op, T, N], "label": G.ElementwiseProblem(op, T, N).label,  # noqa: E731
                                    "params": {"op": op, "T": T, "N": N, "n_sets": 1}, "cells": cells}
    elementwise = [erow("silu_and_mul", 8192, 14336, {"eager": ok(1.5, 0.47, 1e-3), "compile": ok(3.06, 0.23, 1e-3),
                                                      "attnc": R.na_cell("attnc.silu_and_mul missing")}),
                   erow("add_rms_norm", 8192, 4096, {"eager": ok(2.55, 0.105, 4e-3), "compile": ok(1.9, 0.14, 4e-3),
                                                     "attnc": ok(3.0, 0.089, 4e-3)})]
    return {
        "meta": {"date": "2026-11-30 12:00:00 UTC", "device": "NVIDIA H200", "sm_count": 132, "l2_mb": 62.9,
                 "driver": "580.159.03", "cuda": "13.0", "cudnn": 91500, "torch": "2.11.0+cu130",
                 "triton": "3.6.0", "python": "3.12.3", "command": "python3 bench/compare.py --quick",
                 "seed": 1234, "layout": "BSHD (q/k/v and KV cache)", "timing": "CUDA events ...",
                 "tolerance": 0.02, "notes": ["an extra note"]},
        "ceilings": {"copy_tbs": 4.3, "copy_ms": 0.5, "matmul_tflops": 788.0, "matmul_ms": 1.4},
        "grids": {"prefill": {"elapsed_s": 120.0, "rows": prefill},
                  "decode": {"elapsed_s": 30.0, "rows": decode},
                  "elementwise": {"elapsed_s": 20.0, "rows": elementwise}},
        "total_elapsed_s": 180.0,
    }


@test
def test_ratio_computation():
    res = fake_results()
    rows = res["grids"]["prefill"]["rows"]
    eq(R.best_peer(rows[0]["cells"], G.PREFILL_PEERS), ("cuDNN", 611.0), "best peer skips error")
    close(R.attnc_ratio(rows[0]["cells"], G.PREFILL_PEERS), 700.0 / 611.0, msg="ratio")
    eq(R.ratio_text(rows[0]["cells"], G.PREFILL_PEERS), "1.15x vs cuDNN", "ratio text")
    eq(R.attnc_ratio(rows[1]["cells"], G.PREFILL_PEERS), None, "attnc n/a -> no ratio")
    eq(R.ratio_text(rows[1]["cells"], G.PREFILL_PEERS), "n/a", "attnc n/a -> n/a")
    eq(R.best_peer(rows[1]["cells"], G.PREFILL_PEERS), ("cuDNN", 474.0), "WRONG peer not best")
    eq(R.attnc_ratio(rows[2]["cells"], G.PREFILL_PEERS), None, "no correct peer")
    eq(R.ratio_text(rows[2]["cells"], G.PREFILL_PEERS), "n/a (no peer)", "no peer text")
    # the reference column is not a peer
    cells = {"FA2": R.ok_cell(100.0, 1.0), "reference": R.ok_cell(1000.0, 0.1), "attnc": R.ok_cell(50.0, 2.0)}
    eq(R.ratio_text(cells, G.PREFILL_PEERS), "0.50x vs FA2", "reference excluded")
    # the expanded cuDNN decode cell counts as a peer (its value uses minimal bytes)
    d = res["grids"]["decode"]["rows"][0]["cells"]
    eq(R.ratio_text(d, G.DECODE_PEERS), "1.19x vs cuDNN", "decode ratio")
    e = res["grids"]["elementwise"]["rows"][1]["cells"]
    eq(R.ratio_text(e, G.ELEMENTWISE_PEERS), "1.18x vs eager", "elementwise ratio")


@test
def test_cell_text():
    eq(R.cell_text(R.ok_cell(611.04, 1.0)), "611.0", "ok")
    eq(R.cell_text(R.ok_cell(2.954, 1.0, note="expanded"), "{:.2f}"), "2.95 (expanded)", "note")
    eq(R.cell_text(R.na_cell("No module named 'attnc'")), "n/a (No module named 'attnc')", "na")
    eq(R.cell_text(R.na_cell("")), "n/a", "bare na")
    eq(R.cell_text(R.error_cell("RuntimeError: No available kernel")), "error: RuntimeError: No available kernel", "err")
    eq(R.cell_text(R.wrong_cell(0.3125, "")), "WRONG (err=3.1e-01)", "wrong")
    check(R.cell_text(R.wrong_cell(float("nan"), "NaN/Inf in output")).startswith("WRONG (err=nan"), "wrong nan")
    long = R.cell_text(R.error_cell("a|b\nc " + "y" * 300))
    check("|" not in long and "\n" not in long and len(long) <= 100, f"sanitised: {long!r}")
    eq(R.exc_reason(RuntimeError("No available kernel.  Aborting execution.\nmore")),
       "RuntimeError: No available kernel. Aborting execution.", "exc_reason first line")
    eq(R.exc_reason(ValueError()), "ValueError", "exc_reason empty")


def _tables(md):
    """{heading: [[cells], ...]} for each markdown table following a '## ' heading."""
    out, head, cur = {}, None, None
    for line in md.splitlines():
        if line.startswith("## "):
            head, cur = line[3:], None
        elif line.startswith("|"):
            if cur is None:
                cur = out.setdefault(head, [])
                if cur:  # second table under the same heading (details)
                    cur = out.setdefault(head + " [details]", [])
            cur.append([c.strip() for c in line.strip().strip("|").split("|")])
        else:
            cur = None
    return out


@test
def test_markdown_writer():
    res = fake_results()
    md = R.render_markdown(res, ["bench_prefill.png"])
    for needle in ["2026-11-30 12:00:00 UTC", "NVIDIA H200", "580.159.03", "2.11.0+cu130", "triton 3.6.0",
                   "CUDA (torch build): 13.0", "`python3 bench/compare.py --quick`", "seed: 1234",
                   "device copy 4.30 TB/s", "matmul 788 TFLOP/s", "## Notes", "4·B·H·S²·D",
                   "2·B·L·8·128·2", "an extra note", "![bench_prefill.png](bench_prefill.png)",
                   "expanded", "halved for causal"]:
        check(needle in md, f"markdown lacks {needle!r}")
    tabs = _tables(md)
    pre = tabs[R.GRID_TITLES["prefill"]]
    eq(pre[0], ["D", "S", "causal", "B x H", "FA2", "cuDNN", "flex", "attnc", "attnc / best peer", "reference",
                "PEERS.md FA2 / cuDNN / flex"], "prefill header")
    eq(len(pre), 2 + 3, "prefill rows")
    ncol = len(pre[0])
    for r in pre:
        eq(len(r), ncol, f"column count in {r}")
    eq(pre[2][:4], ["128", "4k", "no", "4x16"], "row prefix")
    eq(pre[2][4:7], ["336.0", "611.0", "error: BackendCompilerFailed: out of / resource 'shared'"], "cells")
    eq(pre[2][7:9], ["700.0", "1.15x vs cuDNN"], "attnc + ratio")
    check(pre[2][9].startswith("n/a (import attnc"), pre[2][9])
    eq(pre[2][10], "336 / 611 / 349", "PEERS numbers")
    eq(pre[3][4], "WRONG (err=3.1e-01; rel L2 err 3.1e-01 > 0.02)", "wrong cell")
    eq(pre[3][8], "n/a", "ratio n/a")
    eq(pre[4][:3], ["64", "16k", "yes"], "causal row")
    check(pre[4][4].startswith("error: xxx") and pre[4][4].endswith("..."), pre[4][4])
    det = tabs[R.GRID_TITLES["prefill"] + " [details]"]
    eq(det[2][4], "1.636 ms, err 3.1e-03, 1st call 0.4 s", "detail cell")
    eq(det[3][4], "WRONG, err 3.1e-01, 1st call 0.2 s", "detail wrong")
    eq(det[2][6], "error", "detail error")
    dec = tabs[R.GRID_TITLES["decode"]]
    eq(dec[0][:2], ["B", "L"], "decode header")
    eq(dec[2][:7], ["1", "128k", "2.59", "2.95 (expanded)", "2.00", "3.50", "1.19x vs cuDNN"], "decode row")
    eq(dec[2][-1], "2.59 / 2.95", "decode PEERS")
    ew = tabs[R.GRID_TITLES["elementwise"]]
    eq(ew[0], ["op", "eager", "compile", "attnc", "attnc / best peer", "PEERS.md"], "elementwise header")
    eq(ew[2][1:5], ["1.50", "3.06", "n/a (attnc.silu_and_mul missing)", "n/a"], "silu row")
    eq(ew[3][-2:], ["1.18x vs eager", "eager 2.55, compile 1.90"], "rms row")
    eq(dec[2][7], "n/a", "single-reason n/a column shows plain n/a")
    check("- reference: n/a in every row: attnc.reference_attention missing" in md, "common n/a note")
    check("- attnc: n/a in every row" not in md, "attnc differs per row: no common note")
    # every row n/a for one reason: plain n/a cells + one note under the table
    allna = fake_results()
    for g in allna["grids"].values():
        for row in g["rows"]:
            row["cells"]["attnc"] = R.na_cell("import attnc: ModuleNotFoundError: No module named 'attnc'")
    md3 = R.render_markdown(allna)
    t3 = _tables(md3)[R.GRID_TITLES["prefill"]]
    eq([r[7] for r in t3[2:]], ["n/a"] * 3, "attnc cells plain n/a")
    eq([r[8] for r in t3[2:]], ["n/a"] * 3, "ratio cells n/a when attnc is")
    eq(md3.count("- attnc: n/a in every row: import attnc: ModuleNotFoundError: No module named 'attnc'"), 3,
       "one note per grid")
    # a subset of grids renders only those; a ceilings error renders as text
    sub = fake_results()
    del sub["grids"]["prefill"], sub["grids"]["elementwise"]
    sub["ceilings"] = {"error": "OutOfMemoryError: CUDA out of memory"}
    md2 = R.render_markdown(sub)
    check(R.GRID_TITLES["prefill"] not in md2 and R.GRID_TITLES["decode"] in md2, "subset")
    check("ceilings: error: OutOfMemoryError" in md2, "ceiling error")


@test
def test_summary_text():
    s = R.summary_text(fake_results())
    lines = s.splitlines()
    check(lines[0].startswith("ceilings: copy 4.30 TB/s, matmul 788 TFLOP/s"), lines[0])
    check(any(ln.startswith("== prefill (TFLOP/s), 120 s") for ln in lines), s)
    row = next(ln for ln in lines if ln.startswith("D=128 S=4k non-causal"))
    for tok in ("336.0", "611.0", "error", "700.0", "n/a", "1.15x"):
        check(tok in row, f"{tok!r} not in {row!r}")
    row = next(ln for ln in lines if ln.startswith("B=1 L=128k"))
    check("2.95*" in row and "1.19x" in row, row)
    check(lines[-1] == "total 180 s", lines[-1])


@test
def test_compare_imports_without_torch_and_writes_outputs():
    import importlib

    had_torch = "torch" in sys.modules
    compare = importlib.import_module("compare")
    if not had_torch:
        check("torch" not in sys.modules, "importing compare must not import torch")
    a = compare.parse_args([])
    eq(a.grid_list, ["prefill", "decode", "elementwise"], "default grids")
    eq((a.warmup, a.reps, a.rounds), (3, 40, 5), "default reps (>= 20 timed) over 5 rounds")
    check(a.out.endswith(os.path.join("bench", "RESULTS.md")), a.out)
    a = compare.parse_args(["--grids", "decode", "--quick", "--seed", "7", "--out", "/tmp/x.md"])
    eq((a.grid_list, a.warmup, a.reps, a.rounds, a.seed, a.out), (["decode"], 2, 5, 1, 7, "/tmp/x.md"),
       "flags")
    with tempfile.TemporaryDirectory() as td:
        res = fake_results()
        args = compare.parse_args(["--out", os.path.join(td, "md", "RESULTS.md"), "--no-plots"])
        old = os.environ.get("OUT")
        os.environ["OUT"] = os.path.join(td, "envout")
        try:
            compare.write_outputs(res, args)
        finally:
            if old is None:
                del os.environ["OUT"]
            else:
                os.environ["OUT"] = old
        md = open(os.path.join(td, "md", "RESULTS.md"), encoding="utf-8").read()
        eq(md, open(os.path.join(td, "envout", "RESULTS.md"), encoding="utf-8").read(), "$OUT copy")
        j = json.load(open(os.path.join(td, "envout", "results.json")))
        eq(j["meta"]["seed"], 1234, "json")
        check("## Notes" in md, "notes")


@test
def test_interleaved_rounds_share_a_drifting_clock():
    """Two identical implementations on a card that slows down call after call
    (heat, power cap): timed back to back (one round) the second one looks
    slower; in rotated rounds their medians agree, and the drift shows as spread."""
    import compare

    eq(compare.round_orders(["a", "b", "c"], 4), [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"],
                                                 ["a", "b", "c"]], "rotations")
    eq(compare.split_reps(40, 5), [8] * 5, "even split")
    eq(compare.split_reps(7, 3), [3, 2, 2], "uneven split")
    clock = {"calls": 0}

    def fake_time_calls(runners, warmup, reps, timer="events"):
        out = []
        for _ in range(warmup):
            clock["calls"] += 1
        for _ in range(reps):
            clock["calls"] += 1
            out.append(runners[0]() * (1.0 + 0.001 * clock["calls"]))  # 0.1% slower per call
        return out

    real = compare.time_calls
    compare.time_calls = fake_time_calls
    try:
        for rounds, want_close in ((1, False), (4, True)):
            clock["calls"] = 0
            args = compare.parse_args(["--reps", "40", "--rounds", str(rounds), "--warmup", "2"])
            ready = {name: ([lambda: 1.0], 1e-3, "", 0.1) for name in ("same1", "same2")}
            cells = compare.time_row(ready, lambda ms: 1.0 / ms, args)
            a, b = cells["same1"]["ms"], cells["same2"]["ms"]
            rel = abs(a - b) / a
            if want_close:
                check(rel < 0.005, f"rotated rounds: medians {a:.4f} vs {b:.4f}")
                check(cells["same1"]["spread"] > 0.01, f"spread {cells['same1']['spread']}")
            else:
                check(rel > 0.03, f"back to back: medians {a:.4f} vs {b:.4f} should differ by the drift")
                eq(cells["same1"]["spread"], 0.0, "one round: no spread")
        # A failing timer makes an error cell for that implementation only.
        def boom(*_a, **_k):
            raise RuntimeError("launch failed")

        compare.time_calls = lambda runners, *a, **k: (boom() if runners[0]() < 0 else
                                                        fake_time_calls(runners, *a, **k))
        args = compare.parse_args(["--reps", "4", "--rounds", "2"])
        cells = compare.time_row({"ok": ([lambda: 1.0], 1e-3, "", 0.1), "bad": ([lambda: -1.0], 1e-3, "", 0.1)},
                                 lambda ms: 1.0 / ms, args)
        eq((cells["ok"]["status"], cells["bad"]["status"]), ("ok", "error"), "timing error cell")
        check("launch failed" in cells["bad"]["note"], cells["bad"]["note"])
        check("spread" in R.cell_detail(cells["ok"]), R.cell_detail(cells["ok"]))
    finally:
        compare.time_calls = real


@test
def test_error_reason_uses_sdpa_warnings():
    import compare
    import types

    w = lambda m: types.SimpleNamespace(message=m)  # noqa: E731
    wl = [w("Memory efficient kernel not used because: (Triggered internally at /pytorch/aten/x.cpp:1.)"),
          w("Flash attention kernel not used because: (Triggered internally at /pytorch/aten/x.cpp:2.)"),
          w("Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query dtype: float "
            "(Triggered internally at /pytorch/aten/x.cpp:3.)")]
    r = compare._reason_with_warnings(RuntimeError("No available kernel.  Aborting execution."), wl)
    eq(r, "RuntimeError: No available kernel. Aborting execution. / Expected query, key and value to all "
          "be of dtype: {Half, BFloat16}. Got Query dtype: float", "reason")
    eq(compare._reason_with_warnings(ValueError("bad"), []), "ValueError: bad", "no warnings")


@test
def test_attnc_hooks_without_attnc():
    # Decode is n/a here (no torch, or no attnc.decode).
    for kind in ("decode",):
        try:
            H.attnc_impl(kind, q=None, k=None, v=None, causal=False, scale=1.0, x=None, r=None, w=None, eps=1e-6)
            raise AssertionError(f"attnc_impl({kind!r}) must raise NotAvailable")
        except H.NotAvailable as e:
            check("attnc" in str(e) or "decode" in str(e), str(e))
    # The fused elementwise kernels exist: the hook hands back a launcher
    # (built without touching the tensors), or n/a when attnc cannot import.
    for kind in ("silu_and_mul", "add_rms_norm"):
        try:
            fn = H.attnc_impl(kind, x=None, r=None, w=None, eps=1e-6)
            check(callable(fn), f"attnc_impl({kind!r}) returns a callable")
        except H.NotAvailable as e:
            check("import attnc" in str(e), str(e))
    try:
        H.reference_impl("silu_and_mul", x=None)
        raise AssertionError("reference for elementwise must be n/a")
    except H.NotAvailable:
        pass
    # with a fake attnc module: the hook returns a callable that calls attnc.attention
    import types

    fake = types.ModuleType("attnc")
    calls = []
    fake.attention = lambda q, k, v, causal, scale: calls.append((q, k, v, causal, scale)) or "O"
    sys.modules["attnc"] = fake
    try:
        fn = H.attnc_impl("prefill", q=1, k=2, v=3, causal=True, scale=0.5)
        eq(calls, [], "hook must not launch at setup")
        eq(fn(), "O", "hook result")
        eq(calls, [(1, 2, 3, True, 0.5)], "hook args")
        # ATTNC_BENCH_ARCH picks the kernels' target (the portable path).
        archs = []
        fake.attention = lambda q, k, v, causal, scale, arch=None: archs.append(arch) or "O"
        os.environ["ATTNC_BENCH_ARCH"] = "sm_80"
        try:
            H.attnc_impl("prefill", q=1, k=2, v=3, causal=False, scale=1.0)()
        finally:
            del os.environ["ATTNC_BENCH_ARCH"]
        eq(archs, ["sm_80"], "ATTNC_BENCH_ARCH reaches attnc.attention")
        try:
            H.attnc_impl("silu_and_mul", x=1)
            raise AssertionError("missing attnc.silu_and_mul must be NotAvailable")
        except H.NotAvailable as e:
            eq(str(e), "attnc.silu_and_mul missing", "missing fn reason")
        try:
            H.attnc_impl("decode", q=1, k=2, v=3, causal=False, scale=1.0)
            raise AssertionError("missing attnc.decode must be NotAvailable")
        except H.NotAvailable as e:
            eq(str(e), "attnc.decode missing", "missing decode reason")
        try:
            H.reference_impl("decode", q=1, k=2, v=3, causal=False, scale=1.0)
            raise AssertionError("missing reference_attention must be NotAvailable")
        except H.NotAvailable:
            pass
    finally:
        del sys.modules["attnc"]


@test
def test_plots_if_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("    (matplotlib not installed here: plots not checked)")
        return
    with tempfile.TemporaryDirectory() as td:
        names = R.plot_results(fake_results(), td)
        eq(names, ["bench_prefill.png", "bench_decode.png", "bench_elementwise.png"], "plot names")
        check(len(names) <= 3, "at most 3 PNGs")
        for n in names:
            with open(os.path.join(td, n), "rb") as f:
                eq(f.read(8), b"\x89PNG\r\n\x1a\n", f"{n} is a PNG")


def main():
    for fn in TESTS:
        try:
            fn()
            print(f"PASS {fn.__name__}")
        except Exception:  # noqa: BLE001
            FAILURES.append(fn.__name__)
            print(f"FAIL {fn.__name__}")
            traceback.print_exc()
    print(f"{len(TESTS) - len(FAILURES)}/{len(TESTS)} passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
