#!/usr/bin/env python3
"""attnc's PyTorch custom ops (torch.ops.attnc.*) on a GPU.

- torch.library.opcheck of every op on CUDA tensors: the schema (mutations
  declared, nothing else written), the fake kernel against the real
  outputs' shapes, dtypes and strides, and the op under AOT dispatch with
  dynamic shapes;
- torch.compile(fullgraph=True) (inductor) of a small decoder step built on
  the public functions (add+RMSNorm, RoPE in place, kv_append into a paged
  cache, decode with a preallocated workspace, prefill attention, SiLU*mul,
  the in-place add+RMSNorm): no graph break (fullgraph would raise), every
  attnc op in the traced graph, and the compiled results, in-place writes
  included, equal to eager's and to float64 references.

Fresh random inputs (opcheck compares runs of an op, so its tensors hold
no NaN; the compiled step's outputs are checked for NaN/Inf). Exits 77
with "skipped: ..." without torch or a GPU. Needs the kernels of
gpu_torch_specs.json in $ATTNC_CACHE_DIR (scripts/gpu-prepare.sh). The
last line is "N passed, N failed".
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
import attnc.torch_ops  # noqa: E402  (registers torch.ops.attnc.*)

BF = torch.bfloat16
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


# --- opcheck ------------------------------------------------------------------


def opcheck_cases():
    """(name, op, args) for every op, at shapes whose kernels are bundled."""
    ops = torch.ops.attnc
    q, k, v = randn(2, 97, 8, 128), randn(2, 97, 2, 128), randn(2, 97, 2, 128)
    hq, hk, d, page, max_kv = 32, 8, 128, 16, 300
    blocks = (max_kv + page - 1) // page
    pages = 2 * blocks + 3
    kc, vc = randn(pages, page, hk, d), randn(pages, page, hk, d)
    table = torch.randperm(pages, device="cuda", generator=gen)[
        :2 * blocks].view(2, blocks).to(torch.int32)
    lens = torch.tensor([max_kv, 77], dtype=torch.int32, device="cuda")
    dq = randn(2, 1, hq, d)
    ws = attnc.decode_workspace(dq, kc, table, max_kv_len=max_kv)
    key, value = randn(9, 8, 128), randn(9, 8, 128)
    cache8 = randn(4, 16, 8, 128)
    slots = torch.tensor([0, 17, -1, 63, 5, -1, 40, 41, 2], device="cuda")
    o_a, o_b = randn(3, 1, 32, 128), randn(3, 1, 32, 128)
    lse_a = torch.randn(3, 32, 1, device="cuda", generator=gen)
    lse_b = torch.randn(3, 32, 1, device="cuda", generator=gen)
    xs = randn(5, 2 * 14336)
    xg = randn(5, 2 * 4096)
    x, r, w = randn(7, 4096), randn(7, 4096), 1 + 0.1 * randn(4096)
    inv = 10000.0 ** (-torch.arange(0, 128, 2, device="cuda",
                                    dtype=torch.float64) / 128)
    ang = torch.arange(2048, device="cuda", dtype=torch.float64)[:, None] * inv
    cos_sin = torch.cat([ang.cos(), ang.sin()], -1).to(BF)
    pos = torch.randint(0, 2048, (11,), device="cuda", generator=gen)
    return [
        ("attention causal + LSE", ops.attention,
         (q, k, v, True, -1, -1, None, None, True, None, 0, 0)),
        ("attention causal", ops.attention,
         (q, k, v, True, -1, -1, None, None, False, None, 0, 0)),
        ("decode + LSE, workspace", ops.decode,
         (dq, kc, vc, table, lens, max_kv, "NHD", False, -1, -1, None, None,
          True, None, 0, ws, None, 0)),
        ("decode, no workspace", ops.decode,
         (dq, kc, vc, table, lens, max_kv, "NHD", False, -1, -1, None, None,
          False, None, 0, None, None, 0)),
        ("kv_append", ops.kv_append,
         (key, value, cache8, cache8.clone(), slots, "NHD", None)),
        ("merge_state + LSE", ops.merge_state,
         (o_a, lse_a, o_b, lse_b, True, None)),
        ("merge_state", ops.merge_state, (o_a, lse_a, o_b, lse_b, False, None)),
        ("silu_and_mul", ops.silu_and_mul, (xs, None)),
        ("silu_and_mul_out", ops.silu_and_mul_out,
         (randn(5, 14336), xs, None)),
        ("gelu_and_mul", ops.gelu_and_mul, (xg, None)),
        ("gelu_and_mul_out", ops.gelu_and_mul_out,
         (randn(5, 4096), xg, None)),
        ("fused_add_rms_norm", ops.fused_add_rms_norm, (x, r, w, 1e-6, None)),
        ("fused_add_rms_norm_inplace", ops.fused_add_rms_norm_inplace,
         (x.clone(), r.clone(), w, 1e-6, None)),
        ("fused_add_rms_norm_out", ops.fused_add_rms_norm_out,
         (randn(7, 4096), randn(7, 4096), x, r, w, 1e-6, None)),
        ("rotary_embedding", ops.rotary_embedding,
         (pos, randn(11, 32 * 128), randn(11, 8 * 128), 128, cos_sin, True,
          None)),
    ]


covered = set()
for name, op, args in opcheck_cases():
    covered.add(op._qualified_op_name.split("::")[1])
    try:
        result = torch.library.opcheck(op, args)
        bad = {t: r for t, r in result.items() if r != "SUCCESS"}
        check("opcheck " + name, not bad, str(bad) if bad else
              ", ".join(sorted(result)))
    except Exception:
        check("opcheck " + name, False, traceback.format_exc(limit=4))
check("opcheck covers every op", covered == set(attnc.torch_ops.OPS),
      "missing %s" % sorted(set(attnc.torch_ops.OPS) - covered))


# --- torch.compile ------------------------------------------------------------


HQ, HK, D, PAGE, HIDDEN = 32, 8, 128, 16, 4096


def step(x, res, w, qkv, pos, cos_sin, kc, vc, slots, table, lens, ws,
         pq, pk, pv):
    """A decode step on attnc's public functions, and one prefill call."""
    y, h = attnc.fused_add_rms_norm(x, res, w, 1e-6)
    t = qkv.shape[0]
    q = qkv[:, :HQ * D]
    k = qkv[:, HQ * D:(HQ + HK) * D]
    v = qkv[:, (HQ + HK) * D:]
    attnc.rotary_embedding(pos, q, k, D, cos_sin)
    attnc.kv_append(k.view(t, HK, D), v.view(t, HK, D), kc, vc, slots)
    o = attnc.decode(q.view(t, 1, HQ, D), kc, vc, table, lens,
                     max_kv_len=512, workspace=ws)
    po = attnc.attention(pq, pk, pv, causal=True)
    g = attnc.silu_and_mul(torch.cat([y, y, y, y, y, y, y], -1))
    attnc.fused_add_rms_norm(x, res, w, 1e-6, inplace=True)
    return y, h, o, po, g


def step_inputs():
    b = 4
    blocks = 512 // PAGE
    pages = b * blocks + 2
    kc, vc = randn(pages, PAGE, HK, D), randn(pages, PAGE, HK, D)
    table = torch.randperm(pages, device="cuda", generator=gen)[
        :b * blocks].view(b, blocks).to(torch.int32)
    lens = torch.tensor([512, 1, 300, 77], dtype=torch.int32, device="cuda")
    # Each sequence's new token goes to position lens - 1.
    slots = torch.stack([table[i, (n - 1) // PAGE].long() * PAGE
                         + (n - 1) % PAGE for i, n in enumerate(lens.tolist())])
    inv = 10000.0 ** (-torch.arange(0, D, 2, device="cuda",
                                    dtype=torch.float64) / D)
    ang = torch.arange(1024, device="cuda", dtype=torch.float64)[:, None] * inv
    cos_sin = torch.cat([ang.cos(), ang.sin()], -1).to(BF)
    pos = (lens - 1).long()
    ws = attnc.decode_workspace(randn(b, 1, HQ, D), kc, table, max_kv_len=512)
    return [randn(b, HIDDEN), randn(b, HIDDEN, scale=3),
            1 + 0.1 * randn(HIDDEN), randn(b, (HQ + 2 * HK) * D), pos,
            cos_sin, kc, vc, slots, table, lens, ws, randn(2, 150, 8, 128),
            randn(2, 150, 2, 128), randn(2, 150, 2, 128)]


def compile_case():
    graphs = []

    def recording(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    inputs = step_inputs()
    eager_in = [t.clone() for t in inputs]
    want = step(*eager_in)
    # The traced graph: every attnc call a torch.ops.attnc node.
    torch._dynamo.reset()
    traced_in = [t.clone() for t in inputs]
    torch.compile(step, fullgraph=True, backend=recording)(*traced_in)
    targets = {str(n.target) for g in graphs for n in g.graph.nodes
               if n.op == "call_function"}
    names = ("fused_add_rms_norm", "rotary_embedding", "kv_append", "decode",
             "attention", "silu_and_mul", "fused_add_rms_norm_inplace")
    missing = [n for n in names if "attnc.%s.default" % n not in targets
               and "attnc.%s" % n not in targets]
    check("torch.compile(fullgraph=True) traces one graph with every attnc "
          "op", len(graphs) == 1 and not missing,
          "%d graphs, missing %s" % (len(graphs), missing))
    # Inductor: the same results as eager, in-place writes included.
    torch._dynamo.reset()
    compiled_in = [t.clone() for t in inputs]
    got = torch.compile(step, fullgraph=True)(*compiled_in)
    torch.cuda.synchronize()
    names = ("y", "h", "decode o", "prefill o", "silu_and_mul")
    errs = {n: rel_l2(a, b) for n, a, b in zip(names, got, want)}
    written = {"x (in place)": rel_l2(compiled_in[0], eager_in[0]),
               "residual (in place)": rel_l2(compiled_in[1], eager_in[1]),
               "qkv (rope in place)": rel_l2(compiled_in[3], eager_in[3]),
               "k_cache": rel_l2(compiled_in[6], eager_in[6]),
               "v_cache": rel_l2(compiled_in[7], eager_in[7])}
    ok = (finite(*got) and all(e <= 1e-3 for e in errs.values())
          and all(e <= 1e-3 for e in written.values()))
    check("inductor-compiled step == eager", ok, ", ".join(
        "%s %.1e" % kv for kv in list(errs.items()) + list(written.items())))
    # Eager against float64: the prefill and add+RMSNorm outputs.
    x, res, w = inputs[0].double(), inputs[1].double(), inputs[2].double()
    hd = (x + res).to(BF).double()
    yd = hd * torch.rsqrt(hd.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    pq, pk, pv = (t.double().transpose(1, 2) for t in inputs[12:15])
    pk, pv = pk.repeat_interleave(4, 1), pv.repeat_interleave(4, 1)
    s = pq @ pk.transpose(-1, -2) / math.sqrt(128)
    s = s.masked_fill(torch.ones(150, 150, dtype=torch.bool,
                                 device="cuda").triu(1), float("-inf"))
    pod = (torch.softmax(s, -1) @ pv).transpose(1, 2)
    errs = {"y": rel_l2(got[0], yd), "h": rel_l2(got[1], hd),
            "prefill o": rel_l2(got[3], pod)}
    check("compiled step vs float64", all(e <= 1e-2 for e in errs.values()),
          ", ".join("%s %.1e" % kv for kv in errs.items()))


try:
    compile_case()
except Exception:
    check("torch.compile of a decoder step", False,
          traceback.format_exc(limit=8))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
