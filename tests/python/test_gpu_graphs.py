#!/usr/bin/env python3
"""attnc's kernels captured in CUDA graphs (torch.cuda.CUDAGraph), on a GPU.

Each case captures one attnc call on static buffers after an eager warm-up
(which loads the kernel), then replays it several times with fresh random
data copied into the static inputs. Before each replay the outputs (and,
for in-place ops, what the op must not touch) are poisoned with NaN; after
it they are compared with an eager call on the same data and with a
float64 reference (relative L2), and checked for NaN/Inf.

- prefill attention (GQA, causal, LSE), captured on the warm-up's stream
  and on torch.cuda.graph's own stream (a persistent kernel's stream-K
  workspace is then allocated inside the capture);
- varlen prefill (packed sequences; each replay packs new lengths, one of
  them 0, into the captured cu_seqlens);
- decode on a paged cache with a preallocated workspace and max_kv_len from
  the caller: nothing on the path may synchronise (a sync inside a capture
  is an error; torch's sync debug mode checks the eager call too). Each
  replay draws new lengths and a new block table; one replay pads the batch
  with a sequence of length 0, as a server replaying a graph captured for a
  larger batch does;
- kv_append (in place; padding slots skipped), merge_state,
  fused_add_rms_norm (out of place and in place), silu_and_mul and
  rotary_embedding.

Exits 77 with "skipped: ..." without torch or a GPU. Needs the kernels of
gpu_torch_specs.json in $ATTNC_CACHE_DIR (scripts/gpu-prepare.sh bundles
them); ATTNC_LIBRARY as for the other GPU tests. The last line is
"N passed, N failed".
"""
import math
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "python"))

try:
    import torch
except ImportError:
    print("skipped: no CUDA device (torch is not installed)")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: no CUDA device")
    sys.exit(77)

import attnc  # noqa: E402

BF = torch.bfloat16
NAN = float("nan")
REPLAYS = 3
passed = failed = 0
gen = torch.Generator(device="cuda").manual_seed(
    int.from_bytes(os.urandom(4), "little"))


def check(name, ok, detail=""):
    global passed, failed
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail
                                                 else ""))
    passed += bool(ok)
    failed += not ok


def randn(*shape, scale=1.0):
    return torch.randn(*shape, device="cuda", dtype=BF, generator=gen) * scale


def rel_l2(got, ref):
    got, ref = got.double(), ref.double()
    return float((got - ref).norm() / ref.norm().clamp_min(1e-300))


def finite(*ts):
    return all(bool(torch.isfinite(t.float()).all()) for t in ts)


def capture(fn, warmup_stream=True):
    """(graph, fn's outputs in the graph's memory): fn run once eagerly on
    a side stream (loads its kernels), then captured. With warmup_stream
    the capture runs on that stream too; otherwise on torch.cuda.graph's
    own capture stream."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    if warmup_stream:
        with torch.cuda.graph(g, stream=side):
            out = fn()
    else:
        with torch.cuda.graph(g):
            out = fn()
    torch.cuda.synchronize()
    return g, out


def run_case(name, fn):
    try:
        fn()
    except Exception:  # a failed capture or launch is a failed case
        check(name, False, traceback.format_exc(limit=6))


# --- references -------------------------------------------------------------


def attention_ref(q, k, v, causal):
    """float64 (o [B, S, H, D], lse [B, H, S]) of BSHD tensors."""
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))
    group = qd.shape[1] // kd.shape[1]
    kd = kd.repeat_interleave(group, 1)
    vd = vd.repeat_interleave(group, 1)
    s = qd @ kd.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        sq, skv = q.shape[1], k.shape[1]
        i = torch.arange(sq, device="cuda")[:, None]
        j = torch.arange(skv, device="cuda")[None, :]
        s = s.masked_fill(j > i + skv - sq, float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return (p @ vd).transpose(1, 2), lse


def paged_ref(q, kc, vc, table, lens, page):
    """float64 decode of q [B, 1, H, D] over NHD pages; per sequence
    (o [1, H, D], lse [H, 1]), None for a sequence of length 0."""
    out = []
    for b, n in enumerate(lens.tolist()):
        if n == 0:
            out.append(None)
            continue
        idx = torch.arange(n, device="cuda")
        pages = table[b, idx // page].long()
        k = kc[pages, idx % page].transpose(0, 1).unsqueeze(0)  # [1, Hk, n, D]
        v = vc[pages, idx % page].transpose(0, 1).unsqueeze(0)
        o, lse = attention_ref(q[b:b + 1], k.transpose(1, 2),
                               v.transpose(1, 2), False)
        out.append((o[0], lse[0]))
    return out


# --- prefill attention ------------------------------------------------------


def prefill(warmup_stream):
    b, s, hq, hk, d = 2, 333, 8, 2, 128
    q, k, v = randn(b, s, hq, d), randn(b, s, hk, d), randn(b, s, hk, d)
    g, (o, lse) = capture(
        lambda: attnc.attention(q, k, v, causal=True, return_lse=True),
        warmup_stream)
    name = "prefill GQA 8/2 D128 causal S=333 (%s)" % (
        "capture on the warm-up stream" if warmup_stream
        else "capture on torch.cuda.graph's stream")
    for i in range(REPLAYS):
        q.copy_(randn(b, s, hq, d))
        k.copy_(randn(b, s, hk, d))
        v.copy_(randn(b, s, hk, d))
        o.fill_(NAN)
        lse.fill_(NAN)
        g.replay()
        torch.cuda.synchronize()
        eo, _ = attnc.attention(q, k, v, causal=True, return_lse=True)
        ro, rlse = attention_ref(q, k, v, True)
        torch.cuda.synchronize()
        err, err_eager = rel_l2(o, ro), rel_l2(o, eo)
        lse_err = float((lse.double() - rlse).abs().max())
        ok = (finite(o, lse) and err <= 1e-2 and err_eager <= 1e-3
              and lse_err <= 1e-3)
        check("%s replay %d" % (name, i), ok,
              "rel L2 %.2e vs float64, %.2e vs eager (bitwise %s), LSE err "
              "%.2e" % (err, err_eager, torch.equal(o, eo), lse_err))


run_case("prefill", lambda: prefill(True))
run_case("prefill, fresh capture stream", lambda: prefill(False))


# --- varlen prefill -------------------------------------------------------


def varlen():
    """Packed sequences captured once; each replay packs new lengths (one
    of them 0, within the captured max_seqlen) into the same buffers."""
    nseq, max_len, hq, hk, d = 5, 400, 8, 2, 128
    total = nseq * max_len
    q, k, v = randn(total, hq, d), randn(total, hk, d), randn(total, hk, d)
    cu = torch.zeros(nseq + 1, dtype=torch.int32, device="cuda")

    def draw():
        lens = torch.randint(1, max_len + 1, (nseq,), generator=gen,
                             device="cuda")
        lens[int(torch.randint(0, nseq, (1,), generator=gen,
                               device="cuda"))] = 0
        cu[1:] = lens.cumsum(0).to(torch.int32)
        return [int(x) for x in lens.tolist()]

    draw()
    g, (o, lse) = capture(lambda: attnc.attention_varlen(
        q, k, v, cu, cu, max_len, max_len, causal=True, return_lse=True))
    name = "varlen GQA 8/2 D128 causal, 5 sequences up to %d" % max_len
    for i in range(REPLAYS):
        lens = draw()
        q.copy_(randn(total, hq, d))
        k.copy_(randn(total, hk, d))
        v.copy_(randn(total, hk, d))
        o.fill_(NAN)
        lse.fill_(NAN)
        g.replay()
        torch.cuda.synchronize()
        eo, else_ = attnc.attention_varlen(q, k, v, cu, cu, max_len, max_len,
                                           causal=True, return_lse=True)
        torch.cuda.synchronize()
        errs, start, ok = [], 0, True
        for n in lens:
            rows = slice(start, start + n)
            start += n
            if n == 0:
                continue
            ro, rlse = attention_ref(q[None, rows], k[None, rows],
                                     v[None, rows], True)
            errs.append(rel_l2(o[rows], ro[0]))
            lse_err = float((lse[:, rows].double() - rlse[0]).abs().max())
            ok &= (finite(o[rows], lse[:, rows]) and errs[-1] <= 1e-2
                   and lse_err <= 1e-3)
        used = slice(0, start)
        err_eager = rel_l2(o[used], eo[used])
        ok &= err_eager <= 1e-3 and torch.equal(lse[:, used], else_[:, used])
        check("%s replay %d" % (name, i), ok,
              "lengths %s, worst rel L2 %.2e vs float64, %.2e vs eager"
              % (lens, max(errs), err_eager))


run_case("varlen", varlen)


# --- decode -----------------------------------------------------------------


def decode():
    b, hq, hk, d, page, max_kv = 4, 32, 8, 128, 16, 1000
    blocks = (max_kv + page - 1) // page
    pages = b * blocks + 5
    kc, vc = randn(pages, page, hk, d), randn(pages, page, hk, d)
    q = randn(b, 1, hq, d)
    table = torch.zeros(b, blocks, dtype=torch.int32, device="cuda")
    lens = torch.zeros(b, dtype=torch.int32, device="cuda")
    ws = attnc.decode_workspace(q, kc, table, max_kv_len=max_kv)

    def call():
        return attnc.decode(q, kc, vc, table, lens, max_kv_len=max_kv,
                            workspace=ws, return_lse=True)

    # The eager call must not synchronise (sync debug mode "error" raises
    # on a synchronising torch call); without max_kv_len it must (reading
    # kv_lens): the check can tell the two apart.
    lens.fill_(max_kv)
    torch.cuda.set_sync_debug_mode("error")
    try:
        call()
        no_sync = True
    except RuntimeError as e:
        no_sync = False
        detail = str(e)[:200]
    try:
        attnc.decode(q, kc, vc, table, lens, workspace=ws, return_lse=True)
        detector = False
    except RuntimeError:
        detector = True
    finally:
        torch.cuda.set_sync_debug_mode("default")
    check("decode with max_kv_len and a workspace does not synchronise",
          no_sync and detector,
          "sync detector %s" % ("works" if detector else "saw no sync")
          if no_sync else detail)

    g, (o, lse) = capture(call)
    for i in range(REPLAYS + 1):
        padded = i == REPLAYS  # the last replay: 3 sequences + 1 padding
        new_lens = torch.randint(1, max_kv + 1, (b,), device="cuda",
                                 generator=gen).to(torch.int32)
        new_lens[0] = max_kv
        if padded:
            new_lens[b - 1] = 0
        perm = torch.randperm(pages, device="cuda",
                              generator=gen)[:b * blocks]
        table.copy_(perm.view(b, blocks).to(torch.int32))
        lens.copy_(new_lens)
        q.copy_(randn(b, 1, hq, d))
        o.fill_(NAN)
        lse.fill_(NAN)
        g.replay()
        torch.cuda.synchronize()
        eo, _ = call()
        refs = paged_ref(q, kc, vc, table, lens, page)
        torch.cuda.synchronize()
        worst = worst_eager = lse_err = 0.0
        real = [i for i, r in enumerate(refs) if r is not None]
        for j in real:
            ro, rlse = refs[j]
            worst = max(worst, rel_l2(o[j], ro))
            worst_eager = max(worst_eager, rel_l2(o[j], eo[j]))
            lse_err = max(lse_err, float((lse[j].double() - rlse).abs().max()))
        ok = (finite(o[real], lse[real]) and worst <= 1e-2
              and worst_eager <= 1e-3 and lse_err <= 1e-3)
        check("decode B=4 GQA 32/8 D128 page 16 replay %d (lengths %s%s)"
              % (i, new_lens.tolist(), ", last one padding" if padded else ""),
              ok, "worst rel L2 %.2e vs float64, %.2e vs eager, LSE err %.2e"
              % (worst, worst_eager, lse_err))


run_case("decode", decode)


# --- kv_append --------------------------------------------------------------


def kv_append():
    tokens, hk, d, page, pages = 37, 8, 128, 16, 12
    key, value = randn(tokens, hk, d), randn(tokens, hk, d)
    slots = torch.zeros(tokens, dtype=torch.int64, device="cuda")
    kc = torch.full((pages, page, hk, d), NAN, dtype=BF, device="cuda")
    vc = torch.full_like(kc, NAN)
    g, _ = capture(lambda: attnc.kv_append(key, value, kc, vc, slots))
    for i in range(REPLAYS):
        new = torch.randperm(pages * page, device="cuda", generator=gen)[:tokens]
        new[::5] = -1  # padding tokens write nothing
        slots.copy_(new)
        key.copy_(randn(tokens, hk, d))
        value.copy_(randn(tokens, hk, d))
        kc.fill_(NAN)
        vc.fill_(NAN)
        g.replay()
        ek = torch.full_like(kc, NAN)
        ev = torch.full_like(vc, NAN)
        attnc.kv_append(key, value, ek, ev, slots)
        torch.cuda.synchronize()
        valid = slots >= 0
        fk, fv = kc.view(-1, hk, d), vc.view(-1, hk, d)
        rows_ok = torch.equal(fk[slots[valid]], key[valid]) and torch.equal(
            fv[slots[valid]], value[valid])
        untouched = torch.ones(pages * page, dtype=torch.bool, device="cuda")
        untouched[slots[valid]] = False
        nan_ok = bool(torch.isnan(fk[untouched].float()).all()) and bool(
            torch.isnan(fv[untouched].float()).all())
        same = torch.equal(kc.nan_to_num(7.0), ek.nan_to_num(7.0)) and \
            torch.equal(vc.nan_to_num(7.0), ev.nan_to_num(7.0))
        check("kv_append 37 tokens 8x128 page 16 replay %d" % i,
              rows_ok and nan_ok and same,
              "rows at their slots %s, other slots untouched %s, equal to "
              "eager %s" % (rows_ok, nan_ok, same))


run_case("kv_append", kv_append)


# --- merge_state ------------------------------------------------------------


def merge_state():
    b, h, d, na, nb = 3, 32, 128, 200, 300
    q = randn(b, 1, h, d)
    ka, va, kb, vb = (randn(b, n, h, d) for n in (na, na, nb, nb))
    o_a, lse_a = (torch.empty(b, 1, h, d, dtype=BF, device="cuda"),
                  torch.empty(b, h, 1, device="cuda"))
    o_b, lse_b = torch.empty_like(o_a), torch.empty_like(lse_a)

    def fill_inputs():
        q.copy_(randn(b, 1, h, d))
        for t, n in ((ka, na), (va, na), (kb, nb), (vb, nb)):
            t.copy_(randn(b, n, h, d))
        ra, la = attention_ref(q, ka, va, False)
        rb, lb = attention_ref(q, kb, vb, False)
        o_a.copy_(ra)
        lse_a.copy_(la)
        o_b.copy_(rb)
        lse_b.copy_(lb)

    fill_inputs()
    g, (o, lse) = capture(lambda: attnc.merge_state(o_a, lse_a, o_b, lse_b))
    for i in range(REPLAYS):
        fill_inputs()
        o.fill_(NAN)
        lse.fill_(NAN)
        g.replay()
        eo, _ = attnc.merge_state(o_a, lse_a, o_b, lse_b)
        ro, rlse = attention_ref(q, torch.cat([ka, kb], 1),
                                 torch.cat([va, vb], 1), False)
        torch.cuda.synchronize()
        err, err_eager = rel_l2(o, ro), rel_l2(o, eo)
        lse_err = float((lse.double() - rlse).abs().max())
        check("merge_state 3 x 32 x 128 replay %d" % i,
              finite(o, lse) and err <= 1e-2 and err_eager <= 1e-3
              and lse_err <= 1e-3,
              "rel L2 %.2e vs float64, %.2e vs eager, LSE err %.2e"
              % (err, err_eager, lse_err))


run_case("merge_state", merge_state)


# --- row ops ----------------------------------------------------------------


def rms_ref(x, r, w, eps=1e-6):
    h = (x.double() + r.double()).to(BF).double()
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * w.double(), h


def add_rms_norm(inplace):
    rows, d = 50, 4096
    x, r, w = randn(rows, d), randn(rows, d, scale=3), 1 + 0.1 * randn(d)
    x0, r0 = x.clone(), r.clone()
    if inplace:
        g, _ = capture(lambda: attnc.fused_add_rms_norm(x, r, w, 1e-6,
                                                        inplace=True))
    else:
        g, (y, h) = capture(lambda: attnc.fused_add_rms_norm(x, r, w, 1e-6))
    name = "fused_add_rms_norm 50 x 4096%s" % (" in place" if inplace else "")
    for i in range(REPLAYS):
        x0.copy_(randn(rows, d))
        r0.copy_(randn(rows, d, scale=3))
        x.copy_(x0)
        r.copy_(r0)
        if not inplace:
            y.fill_(NAN)
            h.fill_(NAN)
        g.replay()
        ey, eh = attnc.fused_add_rms_norm(x0, r0, w, 1e-6)
        ry, rh = rms_ref(x0, r0, w)
        torch.cuda.synchronize()
        gy, gh = (x, r) if inplace else (y, h)
        err = max(rel_l2(gy, ry), rel_l2(gh, rh))
        err_eager = max(rel_l2(gy, ey), rel_l2(gh, eh))
        check("%s replay %d" % (name, i),
              finite(gy, gh) and err <= 1e-2 and err_eager <= 1e-3,
              "rel L2 %.2e vs float64, %.2e vs eager" % (err, err_eager))


def silu_and_mul():
    d = 14336
    x = randn(2, 9, 2 * d, scale=2)
    g, out = capture(lambda: attnc.silu_and_mul(x))
    for i in range(REPLAYS):
        x.copy_(randn(2, 9, 2 * d, scale=2))
        out.fill_(NAN)
        g.replay()
        eo = attnc.silu_and_mul(x)
        xd = x.double()
        ref = torch.nn.functional.silu(xd[..., :d]) * xd[..., d:]
        torch.cuda.synchronize()
        err, err_eager = rel_l2(out, ref), rel_l2(out, eo)
        check("silu_and_mul 18 x 2*14336 replay %d" % i,
              finite(out) and err <= 1e-2 and err_eager <= 1e-3,
              "rel L2 %.2e vs float64, %.2e vs eager" % (err, err_eager))


def rope():
    tokens, hs, hq, hk, rot = 45, 128, 32, 8, 128
    inv = 10000.0 ** (-torch.arange(0, rot, 2, device="cuda",
                                    dtype=torch.float64) / rot)
    ang = torch.arange(4096, device="cuda", dtype=torch.float64)[:, None] * inv
    cache = torch.cat([ang.cos(), ang.sin()], -1).to(BF)
    qkv = randn(tokens, (hq + 2 * hk) * hs)
    q, k = qkv[:, :hq * hs], qkv[:, hq * hs:(hq + hk) * hs]
    pos = torch.zeros(tokens, dtype=torch.int64, device="cuda")
    g, _ = capture(lambda: attnc.rotary_embedding(pos, q, k, hs, cache))

    def ref(p, x):
        t = x.double().view(tokens, -1, hs).clone()
        c = cache.double()[p]
        cos, sin = c[:, None, :rot // 2], c[:, None, rot // 2:]
        a, b = t[..., :rot // 2].clone(), t[..., rot // 2:].clone()
        t[..., :rot // 2] = a * cos - b * sin
        t[..., rot // 2:] = b * cos + a * sin
        return t.view(tokens, -1)

    for i in range(REPLAYS):
        start = randn(tokens, (hq + 2 * hk) * hs)
        pos.copy_(torch.randint(0, 4096, (tokens,), device="cuda",
                                generator=gen))
        qkv.copy_(start)
        # The v third stays as it was: poison it to see that it does.
        qkv[:, (hq + hk) * hs:] = NAN
        g.replay()
        eager = start.clone()
        attnc.rotary_embedding(pos, eager[:, :hq * hs],
                               eager[:, hq * hs:(hq + hk) * hs], hs, cache)
        rq, rk = ref(pos, start[:, :hq * hs]), ref(pos, start[:, hq * hs:
                                                              (hq + hk) * hs])
        torch.cuda.synchronize()
        err = max(rel_l2(q, rq), rel_l2(k, rk))
        err_eager = max(rel_l2(q, eager[:, :hq * hs]),
                        rel_l2(k, eager[:, hq * hs:(hq + hk) * hs]))
        v_kept = bool(torch.isnan(qkv[:, (hq + hk) * hs:].float()).all())
        check("rotary_embedding neox 45 tokens 32/8 x 128 replay %d" % i,
              finite(q, k) and err <= 1e-2 and err_eager <= 1e-3 and v_kept,
              "rel L2 %.2e vs float64, %.2e vs eager, v untouched %s"
              % (err, err_eager, v_kept))


run_case("fused_add_rms_norm", lambda: add_rms_norm(False))
run_case("fused_add_rms_norm in place", lambda: add_rms_norm(True))
run_case("silu_and_mul", silu_and_mul)
run_case("rotary_embedding", rope)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
