#!/usr/bin/env python3
"""GPU numerics of score/mask mods from Python (ctest label gpu).

attnc.attention(score_mod=, mask_mod=) on CUDA tensors against a float64
reference that applies the same bias and mask with torch: ALiBi with
per-head slopes computed from h, a relative-position bias, soft-cap through
tanh, document masking, prefix-LM, a sliding window as a mask, and a mask
that leaves whole rows without a key (O = 0, LSE = -inf, no NaN), and
the last two with attention sinks (those rows: O = 0, LSE = the sink).
Mods with captured tensors: ALiBi from a random slopes tensor [H], a
per-head bias tensor, a relative-position table [H, 2S-1], document masking
from random document ids [B, S] with causal (also with their key ranges,
and as causal plus ranges alone, no mod), a bool mask tensor with empty
rows, and all of them at once with sinks; causal and a two-sided window
written as mask_mods (tiles narrowed and run unmasked by the compiler's
interval evaluation); varlen (attnc.attention_varlen) with captured
slopes and per-sequence document ids; each runs twice, the second time
with new tensors bound to the same variables (the same kernel must read
them). Fresh random inputs each run; outputs poisoned with NaN before the
launch; NaN/Inf checked.

`--write-specs FILE` writes the cases' kernel specs (attnc.mods.bundle_spec,
sm_90a) for scripts/gpu-prepare.sh to bundle; that needs neither torch nor
a GPU (mods.tensor_like stands in for the captured tensors: the trace
depends only on their dtypes and ranks, so the specs' IR is the launch's).
Exits 77 with "skipped: ..." without torch or a GPU.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "python"))
import attnc.mods as mods  # noqa: E402
from gpu_sinks import random_sinks  # noqa: E402

LN2 = math.log(2.0)


def alibi(s, b, h, i, j):
    # slope 2^-(h+1)/2 per head, as exp((h + 1) * -ln2 / 2)
    return s - mods.exp((h + 1) * (-LN2 / 2)) * mods.abs(i - j)


def relative(s, b, h, i, j):
    return s + 0.01 * (j - i)


def softcap20(s, b, h, i, j):
    return 20.0 * mods.tanh(s / 20.0)


def documents(b, h, i, j):
    return (i // 97 == j // 97) & (j <= i)


def prefix_lm(b, h, i, j):
    return (j < 64) | (j <= i)


def window100(b, h, i, j):
    return (j <= i) & (i - j < 100)


def rows_without_keys(b, h, i, j):
    return (i % 7 != 3) & (j <= i)


def causal_mod(b, h, i, j):
    return j <= i


def window_both(b, h, i, j):
    return (i - j <= 64) & (j - i <= 16)


# Captured tensors: module globals the mods below index, bound per case
# (run() binds random tensors, --write-specs stand-ins).
SLOPES = HEAD_BIAS = REL = DOC_IDS = KEEP = None
REL_S = 777  # the relative-position case's sequence (not a multiple of 64)


def alibi_slopes(s, b, h, i, j):
    return s - SLOPES[h] * mods.abs(i - j)


def head_bias(s, b, h, i, j):
    return s + HEAD_BIAS[h]


def relative_table(s, b, h, i, j):
    return s + REL[h, i - j + (REL_S - 1)]


def doc_ids(b, h, i, j):
    return DOC_IDS[b, i] == DOC_IDS[b, j]


def keep_tensor(b, h, i, j):
    return KEEP[h, i, j]


def alibi_and_bias(s, b, h, i, j):
    return s - SLOPES[h] * mods.abs(i - j) + HEAD_BIAS[h]


def causal_documents(b, h, i, j):
    return (DOC_IDS[b, i] == DOC_IDS[b, j]) & (j <= i)


# name, score_mod, mask_mod, heads, kv_heads, head_dim, dtype, batch, seq,
# torch references of the bias (of h, i, j) and the mask (of i, j)
CASES = [
    ("ALiBi, causal flag, GQA 8/2 D128", alibi, None, 8, 2, 128, "bf16", 2,
     777, True),
    ("relative bias + documents of 97, D64 fp16", relative, documents, 4, 4,
     64, "fp16", 1, 1000, False),
    ("soft-cap 20 via tanh + prefix-LM 64, D128", softcap20, prefix_lm, 4, 1,
     128, "bf16", 1, 513, False),
    ("sliding window 100 as a mask, D128", None, window100, 8, 8, 128, "bf16",
     1, 900, False),
    # Masks the compiler's interval evaluation understands: KV tiles
    # narrowed, interior tiles unmasked.
    ("causal as a mask_mod, GQA 8/2 D128", None, causal_mod, 8, 2, 128,
     "bf16", 2, 1111, False),
    ("window (64 left, 16 right) as a mask_mod, D64", None, window_both, 4,
     4, 64, "bf16", 1, 999, False),
    ("rows without keys (i % 7 == 3), D64", None, rows_without_keys, 2, 2, 64,
     "bf16", 1, 300, False),
    # Attention sinks merged after the mods (a row without keys: O = 0,
    # LSE = the head's sink).
    ("ALiBi + rows without keys with sinks, GQA 8/2 D64", alibi,
     rows_without_keys, 8, 2, 64, "bf16", 2, 333, False),
    ("captures: ALiBi with a random slopes tensor [H], causal flag, GQA 8/2 "
     "D128", alibi_slopes, None, 8, 2, 128, "bf16", 2, 555, True),
    ("captures: per-head bias tensor [H] (bf16), D64 fp16", head_bias, None,
     4, 4, 64, "fp16", 1, 400, False),
    ("captures: relative-position table [H, 2S-1], GQA 8/2 D128",
     relative_table, None, 8, 2, 128, "bf16", 1, REL_S, False),
    ("captures: documents from random doc ids [B, S] + causal flag, D128",
     None, doc_ids, 4, 2, 128, "bf16", 3, 700, True),
    # The documents' key ranges: the KV tiles of other documents skipped.
    ("captures: documents from random doc ids [B, S] + causal flag, with "
     "kv_bounds, D128", None, doc_ids, 4, 2, 128, "bf16", 3, 700, True),
    # Documents as the causal flag plus the documents' ranges, no mod.
    ("ranges: documents as causal + kv_bounds alone, with kv_bounds, GQA "
     "8/2 D128", None, None, 8, 2, 128, "bf16", 2, 2049, True),
    ("captures: bool mask tensor [H, S, S] with rows without keys, D64",
     None, keep_tensor, 4, 4, 64, "bf16", 1, 300, False),
    ("captures: ALiBi slopes + head bias, documents + causal in the mask, "
     "with sinks, GQA 8/2 D64", alibi_and_bias, causal_documents, 8, 2, 64,
     "bf16", 2, 333, False),
]

# Per case, the globals its mods capture: name -> (dtype, shape of
# (batch, seq, heads)).
CAPTURES = {
    alibi_slopes: {"SLOPES": ("float32", lambda b, s, h: (h,))},
    head_bias: {"HEAD_BIAS": ("bfloat16", lambda b, s, h: (h,))},
    relative_table: {"REL": ("float32", lambda b, s, h: (h, 2 * s - 1))},
    doc_ids: {"DOC_IDS": ("int32", lambda b, s, h: (b, s))},
    keep_tensor: {"KEEP": ("bool", lambda b, s, h: (h, s, s))},
    alibi_and_bias: {"SLOPES": ("float32", lambda b, s, h: (h,)),
                     "HEAD_BIAS": ("bfloat16", lambda b, s, h: (h,))},
    causal_documents: {"DOC_IDS": ("int32", lambda b, s, h: (b, s))},
}


def captured(case):
    """{global name: (dtype, shape)} of the tensors a case's mods index."""
    (name, score, mask, hq, _hk, _d, _dt, b, s, _causal) = case
    out = {}
    if name.startswith("ranges:"):  # the documents the ranges come from
        out["DOC_IDS"] = ("int32", (b, s))
    for fn in (score, mask):
        for name, (dtype, shape) in CAPTURES.get(fn, {}).items():
            out[name] = (dtype, shape(b, s, hq))
    return out


def has_sinks(name):
    return "with sinks" in name


def has_kv_bounds(name):
    return "with kv_bounds" in name


# Varlen with mods (attnc.attention_varlen): ALiBi from a slopes tensor
# and documents from per-sequence ids [B, max_len] (b is the sequence, i
# and j positions within it), causal, GQA 8/2 D128.
VARLEN = dict(heads=8, kv_heads=2, head_dim=128, batch=5, max_len=700)


def varlen_spec():
    globals()["SLOPES"] = mods.tensor_like("float32", (VARLEN["heads"],))
    globals()["DOC_IDS"] = mods.tensor_like(
        "int32", (VARLEN["batch"], VARLEN["max_len"]))
    return mods.bundle_spec(heads=VARLEN["heads"],
                            kv_heads=VARLEN["kv_heads"],
                            head_dim=VARLEN["head_dim"], arch="sm_90a",
                            causal=True, return_lse=True,
                            score_mod=alibi_slopes, mask_mod=doc_ids,
                            varlen=True)


def specs():
    out = [varlen_spec()]
    for case in CASES:
        (name, score, mask, hq, hk, d, dtype, _b, _s, causal) = case
        for var, (cdtype, shape) in captured(case).items():
            globals()[var] = mods.tensor_like(cdtype, shape)
        out.append(mods.bundle_spec(heads=hq, kv_heads=hk, head_dim=d,
                                    dtype=dtype, arch="sm_90a", causal=causal,
                                    return_lse=True, score_mod=score,
                                    mask_mod=mask, sinks=has_sinks(name),
                                    kv_bounds=has_kv_bounds(name)))
    return out


if len(sys.argv) == 3 and sys.argv[1] == "--write-specs":
    with open(sys.argv[2], "w") as f:
        json.dump({"specs": specs()}, f, indent=1)
    sys.exit(0)

try:
    import torch
except ImportError:
    print("skipped: no CUDA device (torch is not installed)")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: no CUDA device")
    sys.exit(77)

import attnc  # noqa: E402

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail
                                                 else ""))
    if ok:
        passed += 1
    else:
        failed += 1


def torch_bias(name, s, h, i, j):
    """The score mods in float64 torch (s: [B, H, Sq, Skv], h: [H, 1, 1])."""
    if name.startswith("captures: ALiBi"):
        s = s - SLOPES.double()[:, None, None] * (i - j).abs()
        if "head bias" in name:
            s = s + HEAD_BIAS.double()[:, None, None]
        return s
    if name.startswith("captures: per-head bias"):
        return s + HEAD_BIAS.double()[:, None, None]
    if name.startswith("captures: relative-position"):
        return s + REL.double()[:, (i - j).long() + (REL_S - 1)]
    if name.startswith("ALiBi"):
        return s - torch.exp((h + 1) * (-LN2 / 2)) * (i - j).abs()
    if name.startswith("relative"):
        return s + 0.01 * (j - i)
    if name.startswith("soft-cap"):
        return 20.0 * torch.tanh(s / 20.0)
    return s


def torch_mask(name, i, j, causal):
    """The mask ([B or 1, H or 1, Sq, Skv]) of a case (i: [Sq, 1], j: [1,
    Skv])."""
    keep = torch.ones_like(i + j, dtype=torch.bool)[None, None]
    if causal:
        keep = keep & (j <= i)
    if name.startswith("captures:") or name.startswith("ranges:"):
        if "documents" in name:  # [B, Sq, 1] == [B, 1, Skv]
            d = DOC_IDS.long()
            keep = keep & (d[:, :, None] == d[:, None, :])[:, None]
            if "in the mask" in name:
                keep = keep & (j <= i)
        if "bool mask" in name:
            keep = keep & KEEP[None]
        return keep
    if "documents" in name:
        keep &= (i // 97 == j // 97) & (j <= i)
    if "prefix-LM" in name:
        keep &= (j < 64) | (j <= i)
    if "sliding" in name:
        keep &= (j <= i) & (i - j < 100)
    if "rows without keys" in name:  # (also the sinks case)
        keep &= (i % 7 != 3) & (j <= i)
    if "causal as a mask_mod" in name:
        keep &= j <= i
    if "window (64 left, 16 right)" in name:
        keep &= (i - j <= 64) & (j - i <= 16)
    return keep


def bind_captures(case, g):
    """Binds fresh random tensors to the globals the case's mods index."""
    for var, (dtype, shape) in captured(case).items():
        if var == "DOC_IDS":  # random document boundaries per batch row
            b, s = shape
            starts = torch.rand(b, s, device="cuda", generator=g) < 0.01
            starts[:, 0] = False
            t = starts.int().cumsum(1, dtype=torch.int32)
        elif var == "KEEP":  # 85% kept; some rows keep nothing
            t = torch.rand(*shape, device="cuda", generator=g) < 0.85
            t[:, 5::37, :] = False
        elif var == "SLOPES":
            t = torch.rand(*shape, device="cuda", generator=g) * 0.5
        else:
            t = torch.randn(*shape, device="cuda", generator=g).to(
                getattr(torch, dtype))
        globals()[var] = t


def run(case, label=""):
    (name, score, mask, hq, hk, d, dtype, b, s, causal) = case
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
    g = torch.Generator(device="cuda").manual_seed(
        int.from_bytes(os.urandom(4), "little"))
    bind_captures(case, g)
    q = torch.randn(b, s, hq, d, device="cuda", dtype=tdt, generator=g)
    k = torch.randn(b, s, hk, d, device="cuda", dtype=tdt, generator=g)
    v = torch.randn(b, s, hk, d, device="cuda", dtype=tdt, generator=g)
    sinks = None
    if has_sinks(name):  # near the rows' LSE, far above it every third head
        sinks = random_sinks(torch, hq, g)
    # Poison: o and lse are allocated by attention(); NaN-filled blocks of
    # their sizes freed just before are what the caching allocator hands
    # out, so an element the kernel does not write shows as NaN.
    poison = (torch.full_like(q, float("nan")),
              torch.full((b, hq, s), float("nan"), device="cuda"))
    del poison
    try:
        # (Ranges alone: each row's whole document, and-ed with causal.)
        bounds = (mods.document_kv_bounds(
            DOC_IDS, causal=causal and not name.startswith("ranges:"))
                  if has_kv_bounds(name) else None)
        o, lse = attnc.attention(q, k, v, causal=causal, return_lse=True,
                                 score_mod=score, mask_mod=mask, sinks=sinks,
                                 kv_bounds=bounds)
        torch.cuda.synchronize()
    except attnc.AttncError as e:
        check(name + label, False, str(e))
        return
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))
    kd = kd.repeat_interleave(hq // hk, dim=1)
    vd = vd.repeat_interleave(hq // hk, dim=1)
    sc = qd @ kd.transpose(-1, -2) / math.sqrt(d)
    i = torch.arange(s, device="cuda", dtype=torch.float64)[:, None]
    j = torch.arange(s, device="cuda", dtype=torch.float64)[None, :]
    h = torch.arange(hq, device="cuda", dtype=torch.float64)[:, None, None]
    sc = torch_bias(name, sc, h, i, j)
    ii, jj = i.long(), j.long()
    keep = torch_mask(name, ii, jj, causal).expand_as(sc)
    sc = sc.masked_fill(~keep, float("-inf"))
    empty = ~keep.any(-1)  # [B, H, Sq]: rows without keys
    if sinks is not None:  # one more column per head, of value zero
        col = sinks.double()[None, :, None, None].expand(*sc.shape[:3], 1)
        sc = torch.cat([sc, col], dim=-1)
        vd = torch.cat([vd, vd.new_zeros(*vd.shape[:2], 1, d)], dim=2)
    rlse = torch.logsumexp(sc, dim=-1)
    p = torch.exp(sc - rlse[..., None]).nan_to_num(0.0)
    ro = (p @ vd).transpose(1, 2)
    finite = bool(torch.isfinite(o).all()) and not bool(lse.isnan().any())
    rel = float((o.double() - ro).norm() / ro.norm().clamp_min(1e-300))
    masked = empty
    want_lse = (torch.full_like(rlse, float("-inf")) if sinks is None else
                sinks.double()[None, :, None].expand_as(rlse))
    masked_ok = bool((lse[masked].double() == want_lse[masked]).all()) and \
        bool((o.transpose(1, 2)[masked] == 0).all())
    lse_err = float((lse[~masked].double() - rlse[~masked]).abs().max())
    check(name + label, finite and rel <= 1e-2 and masked_ok
          and lse_err <= 1e-3,
          "rel L2 %.2e, LSE max err %.2e, masked rows %d, non-finite %s" %
          (rel, lse_err, int(masked.sum()), not finite))


def run_varlen():
    """Packed sequences (random lengths, one 0 and one 1) with the
    captured slopes and per-sequence document ids, against float64 per
    sequence."""
    hq, hk, d = VARLEN["heads"], VARLEN["kv_heads"], VARLEN["head_dim"]
    nseq, max_len = VARLEN["batch"], VARLEN["max_len"]
    name = ("varlen: ALiBi slopes [H] + documents from per-sequence ids "
            "[B, S], causal, GQA 8/2 D128, %d sequences" % nseq)
    g = torch.Generator(device="cuda").manual_seed(
        int.from_bytes(os.urandom(4), "little"))
    lens = torch.randint(2, max_len + 1, (nseq,), generator=g,
                         device="cuda").tolist()
    lens[1], lens[3] = 0, 1
    lens[0] = max_len
    starts = [0]
    for n in lens:
        starts.append(starts[-1] + n)
    total = starts[-1]
    cu = torch.tensor(starts, dtype=torch.int32, device="cuda")
    bind_captures(("captures: documents", None, doc_ids, hq, hk, d, "bf16",
                   nseq, max_len, True), g)
    bind_captures(("", alibi_slopes, None, hq, hk, d, "bf16", nseq, max_len,
                   True), g)
    q = torch.randn(total, hq, d, device="cuda", dtype=torch.bfloat16,
                    generator=g)
    k = torch.randn(total, hk, d, device="cuda", dtype=torch.bfloat16,
                    generator=g)
    v = torch.randn(total, hk, d, device="cuda", dtype=torch.bfloat16,
                    generator=g)
    poison = (torch.full_like(q, float("nan")),
              torch.full((hq, total), float("nan"), device="cuda"))
    del poison
    try:
        o, lse = attnc.attention_varlen(q, k, v, cu, cu, max_len, max_len,
                                        causal=True, return_lse=True,
                                        score_mod=alibi_slopes,
                                        mask_mod=doc_ids)
        torch.cuda.synchronize()
    except attnc.AttncError as e:
        check(name, False, str(e))
        return
    worst, lse_err, ok = 0.0, 0.0, True
    for b, n in enumerate(lens):
        if n == 0:
            continue
        rows = slice(starts[b], starts[b] + n)
        qd = q[rows].double().transpose(0, 1)  # [H, n, D]
        kd = k[rows].double().transpose(0, 1).repeat_interleave(hq // hk, 0)
        vd = v[rows].double().transpose(0, 1).repeat_interleave(hq // hk, 0)
        sc = qd @ kd.transpose(-1, -2) / math.sqrt(d)
        i = torch.arange(n, device="cuda")[:, None]
        j = torch.arange(n, device="cuda")[None, :]
        sc = sc - SLOPES.double()[:, None, None] * (i - j).abs()
        doc = DOC_IDS[b, :n].long()
        keep = (j <= i) & (doc[:, None] == doc[None, :])
        sc = sc.masked_fill(~keep, float("-inf"))
        rlse = torch.logsumexp(sc, -1)
        ro = (torch.exp(sc - rlse[..., None]) @ vd).transpose(0, 1)
        got = o[rows].double()
        worst = max(worst, float((got - ro).norm() / ro.norm()))
        lse_err = max(lse_err, float((lse[:, rows].double() - rlse)
                                     .abs().max()))
        ok &= bool(torch.isfinite(got).all())
    check(name, ok and worst <= 1e-2 and lse_err <= 1e-3,
          "lengths %s, worst rel L2 %.2e, LSE max err %.2e"
          % (lens, worst, lse_err))


from attnc import _attention  # noqa: E402

run_varlen()
for c in CASES:
    run(c)
    if captured(c):  # the same kernel with new tensors in its variables
        plans = dict(_attention._plans)
        run(c, " (again, new tensors)")
        check(c[0] + ": the second call reused the first's launch plan "
              "(no new trace or kernel lookup)",
              len(_attention._plans) == len(plans) and all(
                  _attention._plans.get(key) is plan
                  for key, plan in plans.items()),
              "%d plans before, %d after" % (len(plans),
                                             len(_attention._plans)))
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
