#!/usr/bin/env python3
"""GPU numerics of score/mask mods from Python (ctest label gpu).

attnc.attention(score_mod=, mask_mod=) on CUDA tensors against a float64
reference that applies the same bias and mask with torch: ALiBi with
per-head slopes computed from h, a relative-position bias, soft-cap through
tanh, document masking, prefix-LM, a sliding window as a mask, and a mask
that leaves whole rows without a key (O = 0, LSE = -inf, no NaN), and
the last two with attention sinks (those rows: O = 0, LSE = the sink). Fresh
random inputs each run; NaN/Inf checked.

`--write-specs FILE` writes the cases' kernel specs (attnc.mods.bundle_spec,
sm_90a) for scripts/gpu-prepare.sh to bundle; that needs neither torch nor
a GPU. Exits 77 with "skipped: ..." without torch or a GPU.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "python"))
import attnc.mods as mods  # noqa: E402

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
    ("rows without keys (i % 7 == 3), D64", None, rows_without_keys, 2, 2, 64,
     "bf16", 1, 300, False),
    # Attention sinks merged after the mods (a row without keys: O = 0,
    # LSE = the head's sink).
    ("ALiBi + rows without keys with sinks, GQA 8/2 D64", alibi,
     rows_without_keys, 8, 2, 64, "bf16", 2, 333, False),
]


def has_sinks(name):
    return "with sinks" in name


def specs():
    out = []
    for (name, score, mask, hq, hk, d, dtype, _b, _s, causal) in CASES:
        out.append(mods.bundle_spec(heads=hq, kv_heads=hk, head_dim=d,
                                    dtype=dtype, arch="sm_90a", causal=causal,
                                    return_lse=True, score_mod=score,
                                    mask_mod=mask, sinks=has_sinks(name)))
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
    """The score mods in float64 torch (s: [H, Sq, Skv], h: [H, 1, 1])."""
    if name.startswith("ALiBi"):
        return s - torch.exp((h + 1) * (-LN2 / 2)) * (i - j).abs()
    if name.startswith("relative"):
        return s + 0.01 * (j - i)
    if name.startswith("soft-cap"):
        return 20.0 * torch.tanh(s / 20.0)
    return s


def torch_mask(name, i, j, causal):
    keep = torch.ones_like(i + j, dtype=torch.bool)
    if causal:
        keep &= j <= i
    if "documents" in name:
        keep &= (i // 97 == j // 97) & (j <= i)
    if "prefix-LM" in name:
        keep &= (j < 64) | (j <= i)
    if "sliding" in name:
        keep &= (j <= i) & (i - j < 100)
    if "rows without keys" in name:  # (also the sinks case)
        keep &= (i % 7 != 3) & (j <= i)
    return keep


def run(case):
    (name, score, mask, hq, hk, d, dtype, b, s, causal) = case
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
    g = torch.Generator(device="cuda").manual_seed(
        int.from_bytes(os.urandom(4), "little"))
    q = torch.randn(b, s, hq, d, device="cuda", dtype=tdt, generator=g)
    k = torch.randn(b, s, hk, d, device="cuda", dtype=tdt, generator=g)
    v = torch.randn(b, s, hk, d, device="cuda", dtype=tdt, generator=g)
    sinks = None
    if has_sinks(name):  # near the rows' LSE, far above it every third head
        sinks = 2 * torch.randn(hq, device="cuda", generator=g) + 2
        sinks[2::3] += 10
    try:
        o, lse = attnc.attention(q, k, v, causal=causal, return_lse=True,
                                 score_mod=score, mask_mod=mask, sinks=sinks)
        torch.cuda.synchronize()
    except attnc.AttncError as e:
        check(name, False, str(e))
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
    keep = torch_mask(name, ii, jj, causal)
    sc = sc.masked_fill(~keep, float("-inf"))
    empty = ~keep.any(-1)  # [Sq]: rows without keys
    if sinks is not None:  # one more column per head, of value zero
        col = sinks.double()[None, :, None, None].expand(*sc.shape[:3], 1)
        sc = torch.cat([sc, col], dim=-1)
        vd = torch.cat([vd, vd.new_zeros(*vd.shape[:2], 1, d)], dim=2)
    rlse = torch.logsumexp(sc, dim=-1)
    p = torch.exp(sc - rlse[..., None]).nan_to_num(0.0)
    ro = (p @ vd).transpose(1, 2)
    finite = bool(torch.isfinite(o).all())
    rel = float((o.double() - ro).norm() / ro.norm().clamp_min(1e-300))
    masked = empty[None, None, :].expand_as(rlse)
    want_lse = (torch.full_like(rlse, float("-inf")) if sinks is None else
                sinks.double()[None, :, None].expand_as(rlse))
    masked_ok = bool((lse[masked].double() == want_lse[masked]).all()) and \
        bool((o.transpose(1, 2)[masked] == 0).all())
    lse_err = float((lse[~masked].double() - rlse[~masked]).abs().max())
    check(name, finite and rel <= 1e-2 and masked_ok and lse_err <= 1e-3,
          "rel L2 %.2e, LSE max err %.2e, masked rows %d, non-finite %s" %
          (rel, lse_err, int(masked.sum()), not finite))


for c in CASES:
    run(c)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
