#!/usr/bin/env python3
"""GPU tests of the Python binding (ctest label gpu).

attnc.attention on real CUDA tensors against a float64 reference: BSHD and
transposed-BHSD inputs, GQA, causal with Sq != Skv, window + softcap, LSE,
fully masked rows, attention sinks (eager and under torch.compile), varlen
batches (attnc.attention_varlen, random lengths with 0 and 1) and varlen
over a paged cache (block_table, seqused_k; pages of 1 to 256 rows); outputs
checked for NaN/Inf; the error paths that need a
GPU (a CPU tensor, a kernel that is not bundled). Fresh random inputs each
run. Exits 77 with "skipped: no CUDA device" without torch or a GPU. Needs
the kernels of gpu_specs.json in $ATTNC_CACHE_DIR (scripts/gpu-prepare.sh).
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
from gpu_sinks import random_sinks  # noqa: E402

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    if ok:
        passed += 1
    else:
        failed += 1


def reference(q, k, v, causal, window, softcap, sinks=None):
    """float64 attention on BSHD tensors; returns (o, lse) with masked rows
    0/-inf (with sinks: 0/sink, the sink a column of value zero)."""
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))  # B H S D
    hq, hk = qd.shape[1], kd.shape[1]
    kd = kd.repeat_interleave(hq // hk, dim=1)
    vd = vd.repeat_interleave(hq // hk, dim=1)
    s = qd @ kd.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    sq, skv = q.shape[1], k.shape[1]
    i = torch.arange(sq, device=q.device)[:, None]
    j = torch.arange(skv, device=q.device)[None, :]
    diag = i + skv - sq
    keep = torch.ones(sq, skv, dtype=torch.bool, device=q.device)
    left, right = window if window else (-1, -1)
    if causal:
        right = 0
    if right >= 0:
        keep &= j <= diag + right
    if left >= 0:
        keep &= j >= diag - left
    s = s.masked_fill(~keep, float("-inf"))
    if sinks is not None:  # one more column per head, value 0
        col = sinks.double()[None, :, None, None].expand(*s.shape[:3], 1)
        s = torch.cat([s, col], dim=-1)
        vd = torch.cat([vd, vd.new_zeros(*vd.shape[:2], 1, vd.shape[3])], dim=2)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    o = (p @ vd).transpose(1, 2)
    return o, lse


def case(name, b, sq, skv, hq, hk, d, dtype, causal=False, window=None,
         softcap=None, bhsd=False, sinks=False, compiled=False):
    g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    def make(s, h):
        if bhsd:  # BHSD storage, passed as a BSHD view
            return torch.randn(b, h, s, d, device="cuda", dtype=dtype, generator=g).transpose(1, 2)
        return torch.randn(b, s, h, d, device="cuda", dtype=dtype, generator=g)
    q, k, v = make(sq, hq), make(skv, hk), make(skv, hk)
    # Sinks near the rows' LSE, and far above it every third head.
    s = None
    if sinks:
        s = random_sinks(torch, hq, g)
    def run(q, k, v, s):
        return attnc.attention(q, k, v, causal=causal, window=window,
                               softcap=softcap, return_lse=True, sinks=s)
    if compiled:
        run = torch.compile(run, fullgraph=True)
    try:
        o, lse = run(q, k, v, s)
        torch.cuda.synchronize()
    except attnc.AttncError as e:
        check(name, False, str(e))
        return
    ro, rlse = reference(q, k, v, causal, window, softcap, s)
    finite = bool(torch.isfinite(o).all())
    rel = float((o.double() - ro).norm() / ro.norm().clamp_min(1e-300))
    # Rows without keys: O = 0 and LSE = -inf, or the head's sink.
    diag = torch.arange(sq, device=q.device)[:, None] + skv - sq
    visible = torch.arange(skv, device=q.device)[None, :] <= diag
    nokeys = ~visible.any(-1) if causal else torch.zeros(sq, dtype=torch.bool, device=q.device)
    masked = nokeys[None, None, :].expand_as(rlse)
    empty_lse = float("-inf") if s is None else s.double()[None, :, None].expand_as(rlse)[masked]
    lse_ok = bool((lse[masked].double() == empty_lse).all()) and bool(
        (o.transpose(1, 2)[masked] == 0).all())
    masked = masked | torch.isinf(rlse)
    lse_err = float((lse[~masked].double() - rlse[~masked]).abs().max()) if (~masked).any() else 0.0
    check(name, finite and rel <= 1e-2 and lse_ok and lse_err <= 1e-3,
          f"rel L2 {rel:.2e}, LSE max err {lse_err:.2e}, masked rows {int(masked.sum())}")


case("GQA 8/2 D128 bf16 BSHD causal Sq=Skv=777", 2, 777, 777, 8, 2, 128, torch.bfloat16, causal=True)
case("MQA 4/1 D64 fp16 BHSD view, Sq=100 Skv=1000", 1, 100, 1000, 4, 1, 64, torch.float16, bhsd=True)
case("causal Sq=300 > Skv=120: masked rows, D64", 1, 300, 120, 2, 2, 64, torch.bfloat16, causal=True)
case("window (64, 0) + softcap 20, D128", 1, 513, 513, 4, 4, 128, torch.bfloat16, window=(64, 0), softcap=20.0)
case("sinks, GQA 8/2 D128 bf16 causal Sq=300 > Skv=200 (rows without keys)", 2, 300, 200, 8, 2, 128,
     torch.bfloat16, causal=True, sinks=True)
case("sinks, D64 fp16 BHSD view, Sq=100 Skv=1000", 1, 100, 1000, 6, 6, 64, torch.float16, bhsd=True,
     sinks=True)
case("sinks under torch.compile(fullgraph=True), GQA 8/2 D128 causal", 1, 300, 200, 8, 2, 128,
     torch.bfloat16, causal=True, sinks=True, compiled=True)

def varlen_case(name, b, max_q, max_k, hq, hk, d, dtype, causal=False,
                window=None, softcap=None, sinks=False, compiled=False,
                keys_minus_queries=None):
    """attnc.attention_varlen on packed sequences with random lengths (one 0
    and one 1 among them) against reference() per sequence."""
    g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    lens_q = torch.randint(0, max_q + 1, (b,), generator=g, device="cuda").tolist()
    lens_k = torch.randint(0, max_k + 1, (b,), generator=g, device="cuda").tolist()
    zero, one = torch.randperm(b, generator=g, device="cuda")[:2].tolist()
    lens_q[zero], lens_q[one] = 0, 1
    lens_k[one], lens_k[zero] = 0, 1
    if keys_minus_queries is not None:
        lens_k = [max(0, n + keys_minus_queries) for n in lens_q]
    cu_q = torch.tensor([0] + lens_q, device="cuda").cumsum(0).to(torch.int32)
    cu_k = torch.tensor([0] + lens_k, device="cuda").cumsum(0).to(torch.int32)
    tq, tk = int(cu_q[-1]), int(cu_k[-1])
    q = torch.randn(tq, hq, d, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(tk, hk, d, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(tk, hk, d, device="cuda", dtype=dtype, generator=g)
    s = None
    if sinks:
        s = random_sinks(torch, hq, g)
    def run(q, k, v, cu_q, cu_k, s):
        return attnc.attention_varlen(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k),
                                      causal=causal, window=window, softcap=softcap,
                                      return_lse=True, sinks=s)
    if compiled:
        run = torch.compile(run, fullgraph=True)
    try:
        o, lse = run(q, k, v, cu_q, cu_k, s)
        torch.cuda.synchronize()
    except attnc.AttncError as e:
        check(name, False, str(e))
        return
    check_sequences(name, o, lse, cu_q, lens_q, lens_k,
                    lambda i, q0, q1: reference(
                        q[None, q0:q1], k[None, int(cu_k[i]):int(cu_k[i + 1])],
                        v[None, int(cu_k[i]):int(cu_k[i + 1])], causal, window,
                        softcap, s))


def check_sequences(name, o, lse, cu_q, lens_q, lens_k, reference_of):
    """A packed result against the float64 reference sequence by sequence
    (reference_of(i, q0, q1) -> (o, lse) of sequence i, rows q0..q1 of the
    packed queries): finite outputs, rows without keys exactly as the
    reference, worst rel L2 <= 1e-2 and LSE error <= 1e-3."""
    ok, worst_rel, worst_lse, detail = True, 0.0, 0.0, ""
    for i in range(len(lens_q)):
        q0, q1 = int(cu_q[i]), int(cu_q[i + 1])
        if q1 == q0:
            continue
        ro, rlse = reference_of(i, q0, q1)
        so, slse = o[q0:q1].double(), lse[:, q0:q1].double()
        ro, rlse = ro[0], rlse[0]
        finite = bool(torch.isfinite(so).all())
        rel = float((so - ro).norm() / ro.norm().clamp_min(1e-300)) if ro.norm() > 0 else float(so.abs().max())
        masked = torch.isinf(rlse)
        lse_err = float((slse[~masked] - rlse[~masked]).abs().max()) if (~masked).any() else 0.0
        masked_ok = bool((slse[masked] == rlse[masked]).all())
        worst_rel, worst_lse = max(worst_rel, rel), max(worst_lse, lse_err)
        if not (finite and masked_ok):
            ok, detail = False, f"sequence {i}: finite {finite}, masked rows {masked_ok}; "
    ok = ok and worst_rel <= 1e-2 and worst_lse <= 1e-3
    check(name, ok, detail + f"lengths q/k {list(zip(lens_q, lens_k))}, worst rel L2 "
          f"{worst_rel:.2e}, LSE err {worst_lse:.2e}")


# Varlen prefill (FlashAttention's varlen contract): random lengths with 0
# and 1, each sequence against float64 on its own.
varlen_case("varlen, GQA 8/2 D128 bf16 causal, B=5", 5, 400, 500, 8, 2, 128, torch.bfloat16,
            causal=True)
varlen_case("varlen, D64 fp16 window (32, 0), Skv = Sq + 17, B=4", 4, 300, 0, 4, 4, 64,
            torch.float16, window=(32, 0), keys_minus_queries=17)
varlen_case("varlen, sinks GQA 4/2 D128 causal (rows without keys), B=5", 5, 300, 200, 4, 2, 128,
            torch.bfloat16, causal=True, sinks=True)
varlen_case("varlen under torch.compile(fullgraph=True), GQA 8/2 D128 causal", 3, 200, 200, 8, 2,
            128, torch.bfloat16, causal=True, compiled=True)

def paged_case(name, b, max_q, max_prefix, hq, hk, d, dtype, page_size, layout="NHD",
               causal=False, window=None, sinks=False):
    """attnc.attention_varlen over a paged cache (block_table, seqused_k):
    each sequence's keys are a random prefix (cached) plus its queries
    (chunked prefill; lengths 0 and 1 among both), scattered over shuffled
    pages among spare random pages; block-table entries past a sequence's
    pages point far outside the cache. Checked per sequence against
    reference() on the packed keys."""
    g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    lens_q = torch.randint(0, max_q + 1, (b,), generator=g, device="cuda").tolist()
    prefix = torch.randint(0, max_prefix + 1, (b,), generator=g, device="cuda").tolist()
    zero, one = torch.randperm(b, generator=g, device="cuda")[:2].tolist()
    lens_q[zero], lens_q[one], prefix[zero], prefix[one] = 0, 1, 1, 0
    lens_k = [p + n for p, n in zip(prefix, lens_q)]
    cu_q = torch.tensor([0] + lens_q, device="cuda").cumsum(0).to(torch.int32)
    tq = int(cu_q[-1])
    q = torch.randn(tq, hq, d, device="cuda", dtype=dtype, generator=g)
    keys = [torch.randn(n, hk, d, device="cuda", dtype=dtype, generator=g) for n in lens_k]
    vals = [torch.randn(n, hk, d, device="cuda", dtype=dtype, generator=g) for n in lens_k]
    blocks = [(n + page_size - 1) // page_size for n in lens_k]
    max_blocks = max(blocks) + 1
    pages = 2 * sum(blocks) + 3
    order = torch.randperm(pages, generator=g, device="cuda").tolist()
    shape = (pages, page_size, hk, d) if layout == "NHD" else (pages, hk, page_size, d)
    kc = torch.randn(*shape, device="cuda", dtype=dtype, generator=g)
    vc = torch.randn(*shape, device="cuda", dtype=dtype, generator=g)
    table = torch.full((b, max_blocks), 1 << 30, dtype=torch.int32)
    at = 0
    for i in range(b):
        for blk in range(blocks[i]):
            page = order[at]
            at += 1
            table[i, blk] = page
            r0, r1 = blk * page_size, min(lens_k[i], (blk + 1) * page_size)
            for cache, src in ((kc, keys[i]), (vc, vals[i])):
                if layout == "NHD":
                    cache[page, :r1 - r0] = src[r0:r1]
                else:
                    cache[page, :, :r1 - r0] = src[r0:r1].transpose(0, 1)
    table = table.cuda()
    seqused = torch.tensor(lens_k, dtype=torch.int32, device="cuda")
    s = random_sinks(torch, hq, g) if sinks else None
    try:
        o, lse = attnc.attention_varlen(q, kc, vc, cu_q, None, max(lens_q), max(lens_k),
                                        block_table=table, seqused_k=seqused, layout=layout,
                                        causal=causal, window=window, return_lse=True,
                                        sinks=s)
        torch.cuda.synchronize()
    except attnc.AttncError as e:
        check(name, False, str(e))
        return
    check_sequences(name, o, lse, cu_q, lens_q, lens_k,
                    lambda i, q0, q1: reference(q[None, q0:q1], keys[i][None],
                                                vals[i][None], causal, window, None, s))


# Paged prefill (vLLM's varlen call over a paged cache): pages of 16 and 48
# rows (several per KV tile, by TMA), 256 (several tiles per page), 1 (the
# mma.sync kernel), NHD and HND caches.
paged_case("paged 16 NHD, GQA 8/2 D128 bf16 causal chunked prefill, B=6", 6, 300, 700, 8, 2,
           128, torch.bfloat16, 16, causal=True)
paged_case("paged 256 HND, D64 fp16 window (32, 0), B=4", 4, 200, 600, 4, 4, 64,
           torch.float16, 256, layout="HND", window=(32, 0))
paged_case("paged 48 NHD, sinks GQA 4/2 D128 causal, B=5", 5, 150, 400, 4, 2, 128,
           torch.bfloat16, 48, causal=True, sinks=True)
paged_case("paged 1 NHD (mma.sync), GQA 8/2 D128 bf16 causal, B=3", 3, 100, 150, 8, 2, 128,
           torch.bfloat16, 1, causal=True)

# Error paths that need a GPU.
x = torch.randn(1, 16, 8, 128, device="cuda", dtype=torch.bfloat16)
kv = torch.randn(1, 16, 2, 128, device="cuda", dtype=torch.bfloat16)
for what, bad in (("bf16 sinks", torch.zeros(8, device="cuda", dtype=torch.bfloat16)),
                  ("sinks of the KV heads", torch.zeros(2, device="cuda")),
                  ("CPU sinks", torch.zeros(8)),
                  ("strided sinks", torch.zeros(16, device="cuda")[::2])):
    try:
        attnc.attention(x, kv, kv, causal=True, sinks=bad)
        check(what + " are rejected", False, "no error")
    except attnc.AttncError as e:
        check(what + " are rejected", "sinks" in str(e), str(e))
try:
    attnc.attention(torch.randn(1, 8, 2, 64, dtype=torch.bfloat16),
                    torch.randn(1, 8, 2, 64, dtype=torch.bfloat16),
                    torch.randn(1, 8, 2, 64, dtype=torch.bfloat16))
    check("CPU tensors are rejected", False, "no error")
except attnc.AttncError as e:
    check("CPU tensors are rejected", "cuda" in str(e).lower(), str(e))
if attnc.jit_info():
    # 3 heads: never bundled; the JIT compiler builds it on its first call.
    case("a kernel never bundled, compiled on first use (JIT)", 1, 77, 77, 3,
         3, 64, torch.bfloat16, causal=True)
else:
    try:
        x = torch.randn(1, 16, 3, 64, device="cuda", dtype=torch.bfloat16)  # 3 heads: never bundled
        attnc.attention(x, x, x)
        check("a kernel that is not bundled is a clear error", False, "no error")
    except attnc.AttncError as e:
        check("a kernel that is not bundled is a clear error",
              "attnc bundle" in str(e) and "JIT compiler" in str(e), str(e)[:300])

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
