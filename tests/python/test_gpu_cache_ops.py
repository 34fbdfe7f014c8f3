#!/usr/bin/env python3
"""GPU tests of attnc.kv_append and attnc.merge_state through the binding.

kv_append: tokens appended at a random slot mapping (with -1 padding) into a
NaN-filled NHD cache equal the rows written by plain indexing; untouched
slots stay NaN; decode over the appended cache equals a float64 reference.
merge_state: attention over a prefix and a suffix merged equals attention
over their concatenation (one suffix empty: its LSE is -inf). Exits 77
without torch or a GPU. Needs the kernels of gpu_decode_specs.json in
$ATTNC_CACHE_DIR (scripts/gpu-prepare.sh).
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

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
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    passed += ok
    failed += not ok


def reference(q, k, v):
    """q [Hq, D], k/v [L, Hkv, D] -> o [Hq, D], lse [Hq] in float64."""
    hq, d = q.shape
    hk = k.shape[1]
    qd, kd, vd = q.double(), k.double(), v.double()
    kd = kd.repeat_interleave(hq // hk, dim=1)
    vd = vd.repeat_interleave(hq // hk, dim=1)
    s = torch.einsum("hd,lhd->hl", qd, kd) / math.sqrt(d)
    if s.shape[1] == 0:
        return torch.zeros_like(qd), torch.full((hq,), -math.inf, dtype=torch.float64, device=q.device)
    lse = torch.logsumexp(s, dim=1)
    return torch.einsum("hl,lhd->hd", torch.exp(s - lse[:, None]), vd), lse


g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
hq, hk, d, page = 32, 8, 128, 16

# --- kv_append -------------------------------------------------------------
lens = [45, 3, 130]
pages = sum((n + page - 1) // page for n in lens) + 2
perm = torch.randperm(pages, device="cuda", generator=g)
table = torch.zeros((len(lens), max((n + page - 1) // page for n in lens)),
                    dtype=torch.int32, device="cuda")
at = 0
for i, n in enumerate(lens):
    nb = (n + page - 1) // page
    table[i, :nb] = perm[at:at + nb].to(torch.int32)
    at += nb
kc = torch.full((pages, page, hk, d), float("nan"), dtype=torch.bfloat16, device="cuda")
vc = torch.full_like(kc, float("nan"))
ks = [torch.randn(n, hk, d, device="cuda", dtype=torch.bfloat16, generator=g) for n in lens]
vs = [torch.randn(n, hk, d, device="cuda", dtype=torch.bfloat16, generator=g) for n in lens]
slots = []
for i, n in enumerate(lens):
    for j in range(n):
        slots.append(int(table[i, j // page]) * page + j % page)
key = torch.cat(ks)
value = torch.cat(vs)
# Two padding tokens (slot -1) whose rows are NaN, in the middle.
key = torch.cat([key[:5], torch.full((2, hk, d), float("nan"), dtype=key.dtype, device="cuda"), key[5:]])
value = torch.cat([value[:5], torch.full((2, hk, d), float("nan"), dtype=value.dtype, device="cuda"), value[5:]])
slots = slots[:5] + [-1, -1] + slots[5:]
slot_t = torch.tensor(slots, dtype=torch.int64, device="cuda")
try:
    attnc.kv_append(key, value, kc, vc, slot_t)
    torch.cuda.synchronize()
    valid = slot_t >= 0
    flat_k = kc.view(-1, hk, d)
    flat_v = vc.view(-1, hk, d)
    same = torch.equal(flat_k[slot_t[valid]], key[valid]) and torch.equal(
        flat_v[slot_t[valid]], value[valid])
    untouched = torch.ones(pages * page, dtype=torch.bool, device="cuda")
    untouched[slot_t[valid]] = False
    still_nan = bool(torch.isnan(flat_k[untouched].float()).all())
    check("kv_append: rows at their slots, padding skipped", same and still_nan,
          "rows equal %s, untouched slots still NaN %s" % (same, still_nan))
    q = torch.randn(len(lens), 1, hq, d, device="cuda", dtype=torch.bfloat16, generator=g)
    lens_t = torch.tensor(lens, dtype=torch.int32, device="cuda")
    o = attnc.decode(q, kc, vc, table, lens_t, max_kv_len=max(lens))
    torch.cuda.synchronize()
    worst = 0.0
    for i in range(len(lens)):
        ref, _ = reference(q[i, 0], ks[i], vs[i])
        err = (o[i, 0].double() - ref).norm() / ref.norm()
        worst = max(worst, float(err))
    check("kv_append then decode == float64 over the rows",
          worst <= 1e-2 and bool(torch.isfinite(o.float()).all()), "rel L2 %.2e" % worst)
except attnc.AttncError as e:
    check("kv_append", False, str(e))

# --- merge_state -----------------------------------------------------------
prefix, suffix = 300, [40, 0, 700]
b = len(suffix)
q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16, generator=g)
ks = [torch.randn(prefix + n, hk, d, device="cuda", dtype=torch.bfloat16, generator=g) for n in suffix]
vs = [torch.randn(prefix + n, hk, d, device="cuda", dtype=torch.bfloat16, generator=g) for n in suffix]
o_a = torch.empty_like(q)
o_b = torch.empty_like(q)
lse_a = torch.empty(b, hq, 1, dtype=torch.float32, device="cuda")
lse_b = torch.empty_like(lse_a)
for i in range(b):
    oa, la = reference(q[i, 0], ks[i][:prefix], vs[i][:prefix])
    ob, lb = reference(q[i, 0], ks[i][prefix:], vs[i][prefix:])
    o_a[i, 0], lse_a[i, :, 0] = oa.to(q.dtype), la.float()
    o_b[i, 0], lse_b[i, :, 0] = ob.to(q.dtype), lb.float()
try:
    o, lse = attnc.merge_state(o_a, lse_a, o_b, lse_b)
    torch.cuda.synchronize()
    worst = lse_err = 0.0
    for i in range(b):
        ref, lref = reference(q[i, 0], ks[i], vs[i])
        worst = max(worst, float((o[i, 0].double() - ref).norm() / ref.norm()))
        lse_err = max(lse_err, float((lse[i, :, 0].double() - lref).abs().max()))
    finite = bool(torch.isfinite(o.float()).all()) and bool(torch.isfinite(lse).all())
    check("merge_state(prefix, suffix) == attention over both", worst <= 1e-2
          and lse_err <= 1e-3 and finite,
          "rel L2 %.2e, LSE err %.2e, finite %s" % (worst, lse_err, finite))
except attnc.AttncError as e:
    check("merge_state", False, str(e))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
