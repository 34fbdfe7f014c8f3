"""Result cells, attnc/best-peer ratios, the RESULTS.md writer, the stdout summary
and the PNG plots for bench/compare.py.

Pure Python except plot_results(), which imports matplotlib (Agg) lazily.
The results object is plain JSON-able data:

results = {
  "meta":     {"date", "device", "driver", "torch", "triton", "cuda", "cudnn", "command",
               "seed", "layout", "timing", "warmup", "reps", ...},
  "ceilings": {"copy_tbs", "copy_ms", "copy_bytes", "matmul_tflops", "matmul_ms"}  (or {"error": str}),
  "grids":    {"prefill" | "decode" | "elementwise":
                  {"elapsed_s": float, "rows": [{"key": [...], "label": str, "params": {...},
                                                 "cells": {column: cell}}]}},
  "total_elapsed_s": float,
}
cell = {"status": "ok" | "na" | "error" | "wrong", "value": float | None (TFLOP/s or TB/s),
        "ms": float | None, "err": float | None (relative L2), "note": str,
        "first_call_s": float | None}
"""

import math

import bench_grids as G

ATTNC = "attnc"
REFERENCE = "reference"

GRID_SPEC = {
    "prefill": {"peers": G.PREFILL_PEERS, "unit": "TFLOP/s", "fmt": "{:.1f}", "reference": True},
    "decode": {"peers": G.DECODE_PEERS, "unit": "TB/s", "fmt": "{:.2f}", "reference": True},
    "elementwise": {"peers": G.ELEMENTWISE_PEERS, "unit": "TB/s", "fmt": "{:.2f}", "reference": False},
}


# ------------------------------------------------------------------ cells
def ok_cell(value, ms, err=None, note="", first_call_s=None, spread=None):
    """spread: (max - min) of the round medians over the median time (None: one round)."""
    return {"status": "ok", "value": float(value), "ms": float(ms),
            "err": None if err is None else float(err), "note": note, "first_call_s": first_call_s,
            "spread": None if spread is None else float(spread)}


def na_cell(reason):
    return {"status": "na", "value": None, "ms": None, "err": None, "note": str(reason),
            "first_call_s": None}


def error_cell(reason):
    return {"status": "error", "value": None, "ms": None, "err": None, "note": str(reason),
            "first_call_s": None}


def wrong_cell(err, reason="", first_call_s=None):
    return {"status": "wrong", "value": None, "ms": None,
            "err": None if err is None else float(err), "note": str(reason),
            "first_call_s": first_call_s}


def short_reason(text, limit=90):
    """One line, no markdown table breakers, at most `limit` characters."""
    line = " ".join(str(text).split())
    line = line.replace("|", "/").replace("`", "'")
    if len(line) > limit:
        line = line[: limit - 3].rstrip() + "..."
    return line


def exc_reason(e, limit=90):
    msg = str(e).strip().splitlines()
    first = next((m for m in msg if m.strip()), "")
    return short_reason(f"{type(e).__name__}: {first}" if first else type(e).__name__, limit)


def _fmt_err(err):
    if err is None:
        return "?"
    if isinstance(err, float) and (math.isnan(err) or math.isinf(err)):
        return str(err)
    return f"{err:.1e}"


def cell_text(cell, fmt="{:.1f}"):
    """Markdown text of one cell."""
    st = cell["status"]
    if st == "ok":
        text = fmt.format(cell["value"])
        if cell.get("note"):
            text += f" ({short_reason(cell['note'], 40)})"
        return text
    if st == "na":
        return f"n/a ({short_reason(cell['note'])})" if cell.get("note") else "n/a"
    if st == "error":
        return f"error: {short_reason(cell['note'])}"
    if st == "wrong":
        text = f"WRONG (err={_fmt_err(cell.get('err'))})"
        if cell.get("note"):
            text = f"WRONG (err={_fmt_err(cell.get('err'))}; {short_reason(cell['note'], 50)})"
        return text
    raise ValueError(f"bad cell status {st!r}")


def cell_short(cell, fmt="{:.1f}"):
    """Compact text for the stdout summary."""
    st = cell["status"]
    if st == "ok":
        return fmt.format(cell["value"]) + ("*" if cell.get("note") else "")
    return {"na": "n/a", "error": "error", "wrong": "WRONG"}[st]


def cell_detail(cell):
    st = cell["status"]
    parts = []
    if cell.get("ms") is not None:
        parts.append(f"{cell['ms']:.3f} ms")
    if cell.get("spread") is not None:
        parts.append(f"spread {100 * cell['spread']:.1f}%")
    if cell.get("err") is not None:
        parts.append(f"err {_fmt_err(cell['err'])}")
    if cell.get("first_call_s") is not None:
        parts.append(f"1st call {cell['first_call_s']:.1f} s")
    if st != "ok" and not parts:
        return {"na": "n/a", "error": "error", "wrong": "WRONG"}[st]
    if st == "wrong":
        parts.insert(0, "WRONG")
    return ", ".join(parts) if parts else "-"


# ------------------------------------------------------------------ ratios
def best_peer(cells, peers):
    """(name, value) of the fastest peer whose cell is ok, or (None, None)."""
    best = (None, None)
    for p in peers:
        c = cells.get(p)
        if c and c["status"] == "ok" and c["value"] is not None:
            if best[1] is None or c["value"] > best[1]:
                best = (p, c["value"])
    return best


def attnc_ratio(cells, peers):
    """attnc's value / best peer's value, or None when either is missing."""
    a = cells.get(ATTNC)
    name, val = best_peer(cells, peers)
    if not a or a["status"] != "ok" or val is None or val <= 0:
        return None
    return a["value"] / val


def ratio_text(cells, peers):
    a = cells.get(ATTNC)
    name, val = best_peer(cells, peers)
    if not a or a["status"] != "ok":
        return "n/a"
    if val is None:
        return "n/a (no peer)"
    return f"{a['value'] / val:.2f}x vs {name}"


# ------------------------------------------------------------------ markdown
def _row_prefix(grid, row):
    p = row["params"]
    if grid == "prefill":
        return [str(p["D"]), G.size_label(p["S"]), "yes" if p["causal"] else "no", f"{p['B']}x{p['H']}"]
    if grid == "decode":
        return [str(p["B"]), G.size_label(p["L"])]
    return [row["label"]]


def _prefix_header(grid):
    if grid == "prefill":
        return ["D", "S", "causal", "B x H"]
    if grid == "decode":
        return ["B", "L"]
    return ["op"]


def _peers_md_text(grid, row):
    p = row["params"]
    if grid == "prefill":
        v = G.PEERS_PREFILL.get((p["D"], p["S"], p["causal"]))
        return " / ".join(str(x) for x in v) if v else "-"
    if grid == "decode":
        v = G.PEERS_DECODE.get((p["B"], p["L"]))
        return " / ".join(f"{x:.2f}" for x in v) if v else "-"
    v = G.PEERS_ELEMENTWISE.get((p["op"], p["T"], p["N"]))
    return ", ".join(f"{k} {x:.2f}" for k, x in v.items()) if v else "-"


def _peers_md_header(grid):
    if grid == "prefill":
        return "PEERS.md FA2 / cuDNN / flex"
    if grid == "decode":
        return "PEERS.md FA2 / cuDNN"
    return "PEERS.md"


def _columns(grid):
    spec = GRID_SPEC[grid]
    cols = list(spec["peers"]) + [ATTNC]
    return cols


def _md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return out


def common_na_reason(rows, col):
    """The n/a reason when every row's cell of `col` is n/a for the same reason, else None."""
    reasons = set()
    for row in rows:
        c = row["cells"].get(col)
        if not c or c["status"] != "na":
            return None
        reasons.add(c.get("note") or "")
    return reasons.pop() if len(reasons) == 1 and rows else None


def grid_table(grid, gres):
    """The grid's markdown table; a column that is n/a in every row for one reason shows
    plain "n/a" and the reason once, under the table."""
    spec = GRID_SPEC[grid]
    cols = _columns(grid) + ([REFERENCE] if spec["reference"] else [])
    common = {c: common_na_reason(gres["rows"], c) for c in cols}
    header = _prefix_header(grid) + _columns(grid) + ["attnc / best peer"]
    if spec["reference"]:
        header.append(REFERENCE)
    header.append(_peers_md_header(grid))

    def text(cells, c):
        if common[c] is not None:
            return "n/a"
        return cell_text(cells.get(c, na_cell("not run")), spec["fmt"])

    rows = []
    for row in gres["rows"]:
        cells = row["cells"]
        r = _row_prefix(grid, row)
        r += [text(cells, c) for c in _columns(grid)]
        r.append(ratio_text(cells, spec["peers"]))
        if spec["reference"]:
            r.append(text(cells, REFERENCE))
        r.append(_peers_md_text(grid, row))
        rows.append(r)
    out = _md_table(header, rows)
    notes = [f"- {c}: n/a in every row: {short_reason(common[c]) or 'not available'}"
             for c in cols if common[c] is not None]
    if notes:
        out += [""] + notes
    return out


def detail_table(grid, gres):
    spec = GRID_SPEC[grid]
    cols = _columns(grid) + ([REFERENCE] if spec["reference"] else [])
    header = _prefix_header(grid) + cols
    rows = []
    for row in gres["rows"]:
        r = _row_prefix(grid, row)
        r += [cell_detail(row["cells"].get(c, na_cell("not run"))) for c in cols]
        rows.append(r)
    return _md_table(header, rows)


GRID_TITLES = {
    "prefill": "Prefill forward (bf16), TFLOP/s",
    "decode": "Decode (bf16, one query token, 32 q heads / 8 KV heads, D=128), TB/s of K+V read",
    "elementwise": "Fused elementwise (bf16), TB/s of minimal traffic",
}


def _fmt_opt(x, fmt):
    return "?" if x is None else fmt.format(x)


def render_markdown(results, plots=()):
    meta = results.get("meta", {})
    ceil = results.get("ceilings", {})
    L = ["# attnc side-by-side benchmark results", ""]
    L.append(f"- date: {meta.get('date', '?')}")
    L.append(f"- device: {meta.get('device', '?')} ({meta.get('sm_count', '?')} SMs, "
             f"L2 {meta.get('l2_mb', '?')} MB)")
    L.append(f"- driver: {meta.get('driver', '?')}; CUDA (torch build): {meta.get('cuda', '?')}; "
             f"cuDNN: {meta.get('cudnn', '?')}")
    L.append(f"- torch {meta.get('torch', '?')}, triton {meta.get('triton', '?')}, "
             f"python {meta.get('python', '?')}")
    L.append(f"- command: `{meta.get('command', '?')}`")
    L.append(f"- seed: {meta.get('seed', '?')}; layout: {meta.get('layout', '?')}; "
             f"timing: {meta.get('timing', '?')}")
    if "error" in ceil:
        L.append(f"- ceilings: error: {short_reason(ceil['error'])}")
    else:
        L.append(f"- ceilings measured in this run: device copy "
                 f"{_fmt_opt(ceil.get('copy_tbs'), '{:.2f}')} TB/s (read+write); "
                 f"bf16 8192^3 matmul {_fmt_opt(ceil.get('matmul_tflops'), '{:.0f}')} TFLOP/s "
                 f"(PEERS.md: {G.PEERS_CEILINGS['copy_tbs']} TB/s, {G.PEERS_CEILINGS['matmul_tflops']} TFLOP/s)")
    if results.get("total_elapsed_s") is not None:
        L.append(f"- total elapsed: {results['total_elapsed_s']:.0f} s")
    L.append("")
    for grid in G.GRID_NAMES:
        gres = results.get("grids", {}).get(grid)
        if gres is None:
            continue
        el = gres.get("elapsed_s")
        L.append(f"## {GRID_TITLES[grid]}")
        L.append("")
        if el is not None:
            L.append(f"Grid elapsed: {el:.0f} s.")
            L.append("")
        L += grid_table(grid, gres)
        L.append("")
        L.append("<details><summary>median time, relative L2 error vs fp32 reference, first-call time "
                 "(includes compilation)</summary>")
        L.append("")
        L += detail_table(grid, gres)
        L.append("")
        L.append("</details>")
        L.append("")
    if plots:
        L.append("## Plots")
        L.append("")
        for p in plots:
            L.append(f"![{p}]({p})")
        L.append("")
    L += notes_section(results)
    return "\n".join(L) + "\n"


def notes_section(results):
    meta = results.get("meta", {})
    tol = meta.get("tolerance", G.RELATIVE_L2_TOL)
    n = [
        "## Notes",
        "",
        "- Prefill FLOPs = 4·B·H·S²·D, halved for causal (PEERS.md's convention; softmax not counted). "
        "B = 16384 // S, H = 2048 // D, so every row has 16k tokens and 2048 channels.",
        "- Decode metric: TB/s of K+V bytes read, 2·B·L·8·128·2 bytes over the median time "
        "(minimal traffic: each K/V element read once; Q and O not counted). A cell marked "
        "\"(expanded)\" means the backend rejected GQA (enable_gqa=True), so K/V were expanded to 32 "
        "heads with repeat_interleave outside the timed region; that kernel really reads 4x the bytes, "
        "but the number shown still uses the minimal K+V bytes.",
        "- Elementwise metric: TB/s of minimal traffic. silu_and_mul: read x (T·2I) once + write out "
        "(T·I) once, out = silu(x[:, :I]) * x[:, I:]. add+rms_norm: read x, r (T·N) and w (N), write "
        "y and residual (T·N); residual = x + r (bf16), y = rms_norm(residual)·w, eps 1e-6. "
        "\"eager\" = plain torch ops (F.rms_norm when present), \"compile\" = torch.compile of the same function.",
        f"- Layout: tensors are allocated {meta.get('layout', '?')}; for SDPA and flex they are passed as "
        "BHSD views (transpose(1, 2), no copy). attnc and reference hooks receive the BSHD tensors.",
        "- Peers: FA2 = SDPA under sdpa_kernel(SDPBackend.FLASH_ATTENTION); cuDNN = SDPA under "
        "sdpa_kernel(SDPBackend.CUDNN_ATTENTION) (one backend allowed, so no silent fallback); "
        "flex = torch.compile(flex_attention, dynamic=False), compiled once per shape (first-call time "
        "in the details tables); prefill: causal via create_block_mask(q_idx >= kv_idx), non-causal "
        "block_mask=None; decode: enable_gqa=True with an explicit all-true block mask from "
        "create_block_mask (with block_mask=None, torch 2.11's flex decode ran 25x slower at B=1 L=128k: "
        "4.6 ms vs 0.19 ms on the H200, 2026-11-29).",
        f"- Correctness before timing: every implementation's output is checked for NaN/Inf over the "
        f"whole output and by relative L2 error ‖out − ref‖/‖ref‖ ≤ {tol:g} against a float32 "
        "reference (math SDPA on fp32-upcast inputs, TF32 off) on a sample of (batch, head) pairs "
        "(prefill: first and last batch × 4 heads, all S query rows; decode: first, middle and last "
        "batch, all heads; elementwise: the full output). A failing cell reads WRONG (err=...) and is not timed.",
        f"- Timing: {meta.get('timing', '?')}. Inputs are rotated among several sets when one set "
        "(inputs + outputs) is smaller than 4x L2; with the current grids every set is larger, so one "
        "set is used (smallest: decode B=1 L=128k, 537 MB of K+V).",
        "- Ceilings: the device copy counts bytes read + written; a read-mostly kernel (decode, "
        "silu_and_mul reads 2 bytes per byte written) can exceed it, since HBM streams reads alone faster "
        "than a 1:1 read/write mix (H200 datasheet peak: 4.8 TB/s).",
        "- Inputs: torch.randn (bf16, fresh per run; seed above), never zeros.",
        "- attnc column: bench/attnc_hook.py attnc_impl(kind, **problem) (imports python/attnc); "
        "reference column: attnc.reference_attention (the NVRTC standard-attention kernel). "
        "\"n/a (reason)\" where not available. Ratio = attnc / fastest correct peer of the row.",
        "- PEERS.md columns repeat the numbers recorded on 2026-11-29 (same card type) for comparison; "
        "they are not from this run.",
    ]
    extra = meta.get("notes") or []
    n += [f"- {x}" for x in extra]
    n.append("")
    return n


# ------------------------------------------------------------------ stdout summary
def summary_text(results):
    out = []
    ceil = results.get("ceilings", {})
    if "error" not in ceil:
        out.append(f"ceilings: copy {_fmt_opt(ceil.get('copy_tbs'), '{:.2f}')} TB/s, "
                   f"matmul {_fmt_opt(ceil.get('matmul_tflops'), '{:.0f}')} TFLOP/s")
    for grid in G.GRID_NAMES:
        gres = results.get("grids", {}).get(grid)
        if gres is None:
            continue
        spec = GRID_SPEC[grid]
        cols = _columns(grid) + ([REFERENCE] if spec["reference"] else [])
        el = gres.get("elapsed_s")
        out.append(f"== {grid} ({spec['unit']}){'' if el is None else f', {el:.0f} s'}")
        width = 34
        out.append(f"{'':<{width}}" + "".join(f"{c:>10}" for c in cols) + f"{'attnc/best':>12}")
        for row in gres["rows"]:
            cells = row["cells"]
            r = attnc_ratio(cells, spec["peers"])
            line = f"{row['label'][:width]:<{width}}"
            line += "".join(f"{cell_short(cells.get(c, na_cell('')), spec['fmt']):>10}" for c in cols)
            line += f"{'n/a' if r is None else f'{r:.2f}x':>12}"
            out.append(line)
    if results.get("total_elapsed_s") is not None:
        out.append(f"total {results['total_elapsed_s']:.0f} s")
    return "\n".join(out)


# ------------------------------------------------------------------ plots
PLOT_NAMES = {"prefill": "bench_prefill.png", "decode": "bench_decode.png",
              "elementwise": "bench_elementwise.png"}


def plot_results(results, out_dir):
    """Write up to 3 PNGs into out_dir; returns their file names (relative to out_dir)."""
    import os

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    grids = results.get("grids", {})
    ceil = results.get("ceilings", {})
    colors = {"FA2": "tab:blue", "cuDNN": "tab:green", "flex": "tab:orange", "attnc": "tab:red",
              "reference": "tab:gray", "eager": "tab:blue", "compile": "tab:orange"}

    if "prefill" in grids:
        rows = grids["prefill"]["rows"]
        Ds = sorted({r["params"]["D"] for r in rows})
        fig, axes = plt.subplots(1, len(Ds), figsize=(5 * len(Ds), 4), squeeze=False)
        for ax, D in zip(axes[0], Ds):
            for col in _columns("prefill") + [REFERENCE]:
                for causal in (False, True):
                    pts = sorted((r["params"]["S"], r["cells"][col]["value"]) for r in rows
                                 if r["params"]["D"] == D and r["params"]["causal"] == causal
                                 and col in r["cells"] and r["cells"][col]["status"] == "ok")
                    if not pts:
                        continue
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="s" if causal else "o",
                            linestyle="--" if causal else "-", color=colors.get(col),
                            label=f"{col} {'causal' if causal else 'non-causal'}")
            if ceil.get("matmul_tflops"):
                ax.axhline(ceil["matmul_tflops"], color="k", linewidth=0.8, linestyle=":",
                           label="bf16 matmul ceiling")
            ax.set_xscale("log", base=2)
            Ss = sorted({r["params"]["S"] for r in rows if r["params"]["D"] == D})
            ax.set_xticks(Ss)
            ax.set_xticklabels([G.size_label(s) for s in Ss])
            ax.set_xlabel("S")
            ax.set_ylabel("TFLOP/s")
            ax.set_ylim(bottom=0)
            ax.set_title(f"prefill D={D}")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        name = PLOT_NAMES["prefill"]
        fig.savefig(os.path.join(out_dir, name), dpi=110)
        plt.close(fig)
        written.append(name)

    for grid in ("decode", "elementwise"):
        if grid not in grids:
            continue
        rows = grids[grid]["rows"]
        cols = _columns(grid) + ([REFERENCE] if GRID_SPEC[grid]["reference"] else [])
        fig, ax = plt.subplots(figsize=(max(6, 2.2 * len(rows)), 4))
        width = 0.8 / len(cols)
        for j, col in enumerate(cols):
            xs, ys = [], []
            for i, r in enumerate(rows):
                c = r["cells"].get(col)
                if c and c["status"] == "ok":
                    xs.append(i + (j - (len(cols) - 1) / 2) * width)
                    ys.append(c["value"])
            if xs:
                ax.bar(xs, ys, width=width, color=colors.get(col), label=col)
        if ceil.get("copy_tbs"):
            ax.axhline(ceil["copy_tbs"], color="k", linewidth=0.8, linestyle=":",
                       label="device copy ceiling")
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([r["label"] for r in rows], fontsize=8)
        ax.set_ylabel("TB/s")
        ax.set_title(GRID_TITLES[grid], fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        name = PLOT_NAMES[grid]
        fig.savefig(os.path.join(out_dir, name), dpi=110)
        plt.close(fig)
        written.append(name)
    return written
