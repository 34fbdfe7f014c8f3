#!/usr/bin/env python3
"""CPU tests of attnc's PyTorch custom ops (python/attnc/torch_ops.py): no
GPU and no libattnc.so.

- every op is registered in torch.ops.attnc with the schema's mutations
  (kv_append writes the caches, fused_add_rms_norm_inplace its inputs, ...);
- the fake kernels give the outputs' shapes, dtypes and strides on meta
  tensors and under FakeTensorMode (CUDA fake tensors), through the public
  functions, and reject what the real launch would reject;
- torch.compile(fullgraph=True) of a function calling the public functions
  traces them as torch.ops.attnc calls (no graph break) and gives what eager
  gives, in-place ops included;
- torch.library.opcheck of every op.

The last two need a real kernel behind each op: the launch functions the
ops call (attnc._attention.launch, ...) are replaced here by CPU stand-ins
that allocate their outputs as the real launches do (torch.empty_like of
the same tensor) and write a value computed with torch, so the tests check
the registration (schemas, fake kernels, mutations), not the kernels'
numerics (tests/python/test_gpu_torch_ops.py does that on a GPU).

Exits 77 with "skipped: ..." without torch. Plain script, no pytest; the
last line is "N passed, N failed".
"""

import contextlib
import math
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "python"))

try:
    import torch
except ImportError:
    print("skipped: torch is not installed")
    sys.exit(77)

import attnc  # noqa: E402
from attnc import _attention, _cache_ops, _decode, _rows, _varlen  # noqa: E402

TESTS = []
BF = torch.bfloat16


def test(fn):
    TESTS.append(fn)
    return fn


def expect_attnc_error(fn, fragment):
    try:
        fn()
    except attnc.AttncError as e:
        assert fragment in str(e), "%r not in %r" % (fragment, str(e))
        return
    raise AssertionError("no AttncError (expected %r)" % fragment)


# --- CPU stand-ins for the launches ------------------------------------------


def attention_ref(q, k, v, causal=False, window=None, softcap=None,
                  scale=None, return_lse=False, arch=None, block_m=0,
                  block_n=0, score_mod=None, mask_mod=None, sinks=None,
                  kv_bounds=None):
    """float64 attention ([B, S, H, D]); no mask options beyond causal."""
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))
    group = qd.shape[1] // kd.shape[1]
    kd = kd.repeat_interleave(group, 1)
    vd = vd.repeat_interleave(group, 1)
    s = qd @ kd.transpose(-1, -2) * (scale or 1 / math.sqrt(q.shape[-1]))
    if causal:
        sq, skv = q.shape[1], k.shape[1]
        keep = (torch.arange(skv)[None, :]
                <= torch.arange(sq)[:, None] + skv - sq)
        s = s.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(s, -1)
    o = torch.empty_like(q)
    o.copy_((torch.softmax(s, -1).nan_to_num(0.0) @ vd).transpose(1, 2))
    if return_lse:
        return o, lse.float()
    return o


def decode_ref(q, k_cache, v_cache, block_table, kv_lens, max_kv_len=None,
               layout="NHD", causal=False, window=None, softcap=None,
               scale=None, return_lse=False, max_q_len=None, num_splits=0,
               workspace=None, arch=None, block_n=0, sinks=None):
    """A stand-in: o = 2 q (in the layout the real launch allocates),
    lse = kv_lens, the workspace's first byte written (it is mutable)."""
    q2 = _decode._relayout_q(q)[0]
    o = torch.empty_like(q2)
    o.copy_(q2 * 2)
    if workspace is not None:
        workspace[:1] = 7
    if return_lse:
        b, s, h, _ = q.shape
        lse = torch.empty((b, h, s), dtype=torch.float32, device=q.device)
        lse.copy_(kv_lens.float()[:, None, None].expand(b, h, s))
        return o, lse
    return o


def kv_append_ref(key, value, k_cache, v_cache, slot_mapping, layout="NHD",
                  arch=None):
    assert layout == "NHD"
    keep = slot_mapping >= 0
    k_cache.view(-1, *k_cache.shape[2:])[slot_mapping[keep]] = key[keep]
    v_cache.view(-1, *v_cache.shape[2:])[slot_mapping[keep]] = value[keep]
    return k_cache, v_cache


def merge_ref(o_a, lse_a, o_b, lse_b, return_lse=True, arch=None):
    lse = torch.logaddexp(lse_a, lse_b)
    wa = torch.exp(lse_a - lse).transpose(1, 2)[..., None]
    wb = torch.exp(lse_b - lse).transpose(1, 2)[..., None]
    o = torch.empty_like(o_a)
    o.copy_(o_a.float() * wa + o_b.float() * wb)
    if return_lse:
        out_lse = torch.empty(lse.shape, dtype=torch.float32)
        out_lse.copy_(lse)
        return o, out_lse
    return o


def gated_ref(name, op, x, out, arch):
    d = x.shape[-1] // 2
    gate, up = x[..., :d].float(), x[..., d:].float()
    act = (torch.nn.functional.silu(gate) if op == "silu_mul"
           else torch.nn.functional.gelu(gate, approximate="tanh"))
    if out is None:
        out = torch.empty(tuple(x.shape[:-1]) + (d,), dtype=x.dtype)
    out.copy_(act * up)
    return out


def rms_ref(x, residual, weight, eps=1e-6, out=None, residual_out=None,
            inplace=False, arch=None):
    if inplace:
        out, residual_out = x, residual
    h = x.float() + residual.float()
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * weight.float()
    out = torch.empty_like(x) if out is None else out
    residual_out = torch.empty_like(x) if residual_out is None else residual_out
    out.copy_(y)
    residual_out.copy_(h)
    return out, residual_out


def rope_ref(positions, query, key, head_size, cos_sin_cache, is_neox=True,
             arch=None):
    """NeoX rotation of every head's first rotary_dim columns, in place."""
    rot = cos_sin_cache.shape[-1]
    cs = cos_sin_cache.float()[positions.long()]
    cos, sin = cs[:, None, :rot // 2], cs[:, None, rot // 2:]
    for t in (query, key):
        heads = t.view(t.shape[0], -1, head_size)
        a = heads[..., :rot // 2].float()
        b = heads[..., rot // 2:rot].float()
        heads[..., :rot // 2] = (a * cos - b * sin).to(t.dtype)
        heads[..., rot // 2:rot] = (b * cos + a * sin).to(t.dtype)
    return query, key


def varlen_ref(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
               max_seqlen_k, causal=False, window=None, softcap=None,
               scale=None, return_lse=False, arch=None, block_m=0, block_n=0,
               sinks=None):
    """A stand-in: attention_ref per sequence of the packed [total, H, D]
    tensors; lse [H, total_q]."""
    o = torch.empty_like(q)
    o.zero_()
    lse = torch.full((q.shape[1], q.shape[0]), float("-inf"))
    for b in range(cu_seqlens_q.shape[0] - 1):
        qs, qe = int(cu_seqlens_q[b]), int(cu_seqlens_q[b + 1])
        ks, ke = int(cu_seqlens_k[b]), int(cu_seqlens_k[b + 1])
        if qe == qs:
            continue
        ob, lb = attention_ref(q[qs:qe][None], k[ks:ke][None],
                               v[ks:ke][None], causal=causal, scale=scale,
                               return_lse=True)
        o[qs:qe] = ob[0]
        lse[:, qs:qe] = lb[0]
    return (o, lse) if return_lse else o


def paged_varlen_ref(q, k_cache, v_cache, cu_seqlens_q, block_table,
                     seqused_k, max_seqlen_q, max_seqlen_k, layout="NHD",
                     causal=False, window=None, softcap=None, scale=None,
                     return_lse=False, arch=None, block_m=0, block_n=0,
                     sinks=None):
    """A stand-in: each sequence's keys gathered from its pages (NHD),
    then attention_ref."""
    assert layout == "NHD"
    page = k_cache.shape[1]
    o = torch.empty_like(q)
    o.zero_()
    lse = torch.full((q.shape[1], q.shape[0]), float("-inf"))
    for b in range(cu_seqlens_q.shape[0] - 1):
        qs, qe = int(cu_seqlens_q[b]), int(cu_seqlens_q[b + 1])
        n = int(seqused_k[b])
        rows = [int(block_table[b, j // page]) * page + j % page
                for j in range(n)]
        k = k_cache.reshape(-1, *k_cache.shape[2:])[rows]
        v = v_cache.reshape(-1, *v_cache.shape[2:])[rows]
        if qe == qs:
            continue
        ob, lb = attention_ref(q[qs:qe][None], k[None], v[None],
                               causal=causal, scale=scale, return_lse=True)
        o[qs:qe] = ob[0]
        lse[:, qs:qe] = lb[0]
    return (o, lse) if return_lse else o


@contextlib.contextmanager
def cpu_launches():
    """The ops' launch functions replaced by the stand-ins above."""
    patches = [(_attention, "launch", attention_ref),
               (_varlen, "launch", varlen_ref),
               (_varlen, "launch_paged", paged_varlen_ref),
               (_decode, "launch", decode_ref),
               (_cache_ops, "launch_kv_append", kv_append_ref),
               (_cache_ops, "launch_merge_state", merge_ref),
               (_rows, "_gated", gated_ref),
               (_rows, "launch_add_rms_norm", rms_ref),
               (_rows, "launch_rotary_embedding", rope_ref)]
    saved = [(m, n, getattr(m, n)) for m, n, _ in patches]
    for m, n, f in patches:
        setattr(m, n, f)
    try:
        yield
    finally:
        for m, n, f in saved:
            setattr(m, n, f)


# --- inputs --------------------------------------------------------------------


def qkv(device="cpu", b=2, sq=16, skv=24, h=4, hk=2, d=32, bhsd=False):
    def make(s, heads):
        if bhsd:
            return torch.randn(b, heads, s, d, dtype=BF,
                               device=device).transpose(1, 2)
        return torch.randn(b, s, heads, d, dtype=BF, device=device)
    return make(sq, h), make(skv, hk), make(skv, hk)


def paged(device="cpu", b=2, q_len=1, h=4, hk=2, d=32, page=4, pages=12):
    q = torch.randn(b, q_len, h, d, dtype=BF, device=device)
    kc = torch.randn(pages, page, hk, d, dtype=BF, device=device)
    vc = torch.randn_like(kc)
    table = torch.arange(pages, dtype=torch.int32,
                         device=device)[:b * 4].view(b, 4)
    lens = torch.tensor([5, 13][:b], dtype=torch.int32, device=device)
    return q, kc, vc, table, lens


# --- registration --------------------------------------------------------------


MUTATED = {
    "attention": set(), "attention_varlen": set(),
    "attention_varlen_paged": set(), "decode": {"workspace"},
    "kv_append": {"k_cache", "v_cache"}, "merge_state": set(),
    "silu_and_mul": set(), "silu_and_mul_out": {"out"},
    "gelu_and_mul": set(), "gelu_and_mul_out": {"out"},
    "fused_add_rms_norm": set(),
    "fused_add_rms_norm_inplace": {"x", "residual"},
    "fused_add_rms_norm_out": {"out", "residual_out"},
    "rotary_embedding": {"query", "key"},
}


@test
def every_op_is_registered_with_its_mutations():
    from attnc import torch_ops
    assert set(torch_ops.OPS) == set(MUTATED), torch_ops.OPS
    for name, mutated in MUTATED.items():
        schema = getattr(torch.ops.attnc, name).default._schema
        written = {a.name for a in schema.arguments
                   if a.alias_info is not None and a.alias_info.is_write}
        assert written == mutated, (name, written, str(schema))
        # No op returns an alias of an input.
        assert all(r.alias_info is None for r in schema.returns), schema


@test
def import_attnc_registers_nothing_until_torch_is_used():
    import subprocess
    code = ("import sys, attnc\n"
            "assert 'attnc.torch_ops' not in sys.modules\n"
            "import torch\n"
            "assert not hasattr(torch.ops.attnc, 'attention')\n"
            "q = torch.empty(1, 4, 2, 64, dtype=torch.bfloat16, "
            "device='meta')\n"
            "attnc.attention(q, q, q)\n"
            "assert 'attnc.torch_ops' in sys.modules\n"
            "assert hasattr(torch.ops.attnc, 'attention')\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(
        os.path.dirname(__file__), "..", "..", "python"))
    r = subprocess.run([sys.executable, "-c", code], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


# --- fake kernels on meta tensors ---------------------------------------------


@test
def attention_fake_shapes_dtypes_strides():
    for bhsd in (False, True):
        q, k, v = qkv("meta", bhsd=bhsd)
        o, lse = attnc.attention(q, k, v, causal=True, return_lse=True)
        assert o.shape == q.shape and o.dtype == q.dtype, o
        assert o.stride() == torch.empty_like(q).stride() == q.stride(), (
            o.stride(), q.stride())
        assert lse.shape == (2, 4, 16) and lse.dtype == torch.float32
        assert lse.stride() == (64, 16, 1), lse.stride()
        o = attnc.attention(q, k, v, window=(8, None), softcap=30.0)
        assert isinstance(o, torch.Tensor) and o.shape == q.shape
    q, k, v = qkv("meta")
    expect_attnc_error(lambda: attnc.attention(q.float(), k.float(),
                                               v.float()),
                       "q has dtype torch.float32")
    expect_attnc_error(lambda: attnc.attention(q, k[:1], v[:1]),
                       "batch differs")
    expect_attnc_error(lambda: attnc.attention(q, k, v, window=(1, 2, 3)),
                       "window must be (left, right)")


def packed(device="cpu", lens_q=(5, 0, 1, 9), lens_k=(7, 3, 0, 9), h=4,
           hk=2, d=32):
    cu = [[0], [0]]
    for lq, lk in zip(lens_q, lens_k):
        cu[0].append(cu[0][-1] + lq)
        cu[1].append(cu[1][-1] + lk)
    q = torch.randn(cu[0][-1], h, d, dtype=BF, device=device)
    k = torch.randn(cu[1][-1], hk, d, dtype=BF, device=device)
    cuq, cuk = (torch.tensor(c, dtype=torch.int32, device=device) for c in cu)
    return (q, k, torch.randn_like(k), cuq, cuk, max(lens_q), max(lens_k))


@test
def attention_varlen_fake_shapes():
    q, k, v, cuq, cuk, mq, mk = packed("meta")
    o, lse = attnc.attention_varlen(q, k, v, cuq, cuk, mq, mk, causal=True,
                                    return_lse=True)
    assert o.shape == q.shape and o.dtype == q.dtype, o
    assert lse.shape == (4, 15) and lse.dtype == torch.float32, lse.shape
    o = attnc.attention_varlen(q, k, v, cuq, cuk, mq, mk, window=(8, None))
    assert isinstance(o, torch.Tensor) and o.shape == q.shape
    expect_attnc_error(lambda: attnc.attention_varlen(
        q[None], k, v, cuq, cuk, mq, mk), "expected 3 dims")
    expect_attnc_error(lambda: attnc.attention_varlen(
        q, k, v, cuq.long(), cuk, mq, mk), "1-D torch.int32")
    expect_attnc_error(lambda: attnc.attention_varlen(
        q, k, v, cuq, cuk[:-1], mq, mk), "cu_seqlens_k 4")


def paged_packed(device="cpu", lens_q=(5, 0, 1, 3), lens_k=(9, 3, 1, 3),
                 h=4, hk=2, d=32, page=4):
    """Packed queries and an NHD cache [pages, page, hk, d] holding each
    sequence's keys in shuffled pages."""
    cu = [0]
    for lq in lens_q:
        cu.append(cu[-1] + lq)
    blocks = [(n + page - 1) // page for n in lens_k]
    pages = sum(blocks) + 2
    order = torch.randperm(pages).tolist()
    table = torch.zeros(len(lens_k), max(blocks), dtype=torch.int32)
    at = 0
    for b, n in enumerate(blocks):
        for j in range(n):
            table[b, j] = order[at]
            at += 1
    q = torch.randn(cu[-1], h, d, dtype=BF, device=device)
    kc = torch.randn(pages, page, hk, d, dtype=BF, device=device)
    return (q, kc, torch.randn_like(kc),
            torch.tensor(cu, dtype=torch.int32, device=device),
            table.to(device), torch.tensor(lens_k, dtype=torch.int32,
                                           device=device),
            max(lens_q), max(lens_k))


@test
def attention_varlen_paged_fake_shapes():
    q, kc, vc, cuq, table, lens, mq, mk = paged_packed("meta")
    o, lse = attnc.attention_varlen(q, kc, vc, cuq, None, mq, mk,
                                    block_table=table, seqused_k=lens,
                                    causal=True, return_lse=True)
    assert o.shape == q.shape and o.dtype == q.dtype, o
    assert lse.shape == (4, 9) and lse.dtype == torch.float32, lse.shape
    expect_attnc_error(lambda: attnc.attention_varlen(
        q, kc, vc, cuq, None, mq, mk, block_table=table[:, :1].long(),
        seqused_k=lens), "block_table must be")
    expect_attnc_error(lambda: attnc.attention_varlen(
        q, kc, vc, cuq, None, mq, 1000, block_table=table, seqused_k=lens),
        "max_seqlen_k is 1000")


def compile_fullgraph(fn, *args):
    """fn compiled with fullgraph=True and run on args: its result and the
    call targets of its graph (exactly one graph: no break)."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    got = torch.compile(fn, fullgraph=True, backend=backend)(*args)
    assert len(graphs) == 1, len(graphs)
    return got, {str(n.target) for n in graphs[0].graph.nodes
                 if n.op == "call_function"}


@test
def compile_fullgraph_traces_attention_varlen_paged():
    # A paged varlen call is one torch.ops.attnc.attention_varlen_paged
    # node, with eager's results.
    def step(q, kc, vc, cuq, table, lens):
        o, lse = attnc.attention_varlen(q, kc, vc, cuq, None, 5, 9,
                                        block_table=table, seqused_k=lens,
                                        causal=True, return_lse=True)
        return o * 2, lse

    with cpu_launches():
        args = paged_packed()[:6]
        want = step(*args)
        got, targets = compile_fullgraph(step, *args)
    assert any("attention_varlen_paged" in t for t in targets), \
        sorted(targets)
    for a, b in zip(got, want):
        assert torch.equal(a, b), (a, b)


@test
def decode_fake_shapes_and_the_q_relayout():
    q, kc, vc, table, lens = paged("meta")
    o, lse = attnc.decode(q, kc, vc, table, lens, max_kv_len=13,
                          return_lse=True)
    assert o.shape == q.shape and o.stride() == q.stride(), o.stride()
    assert lse.shape == (2, 4, 1) and lse.dtype == torch.float32
    # q_len 2 from a contiguous [B, S, H, D] q: the kernel reads a copy in
    # [B, H, S, D] order, and o is allocated like that copy.
    q, kc, vc, table, lens = paged("meta", q_len=2)
    o = attnc.decode(q, kc, vc, table, lens, max_kv_len=13, causal=True)
    b, s, h, d = q.shape
    assert o.shape == q.shape
    assert o.stride() == (h * s * d, d, s * d, 1), o.stride()
    ws = torch.empty(1 << 16, dtype=torch.uint8, device="meta")
    o = attnc.decode(q, kc, vc, table, lens, max_kv_len=13, workspace=ws)
    assert o.shape == q.shape


@test
def cache_ops_fake_shapes():
    o_a = torch.empty(2, 3, 4, 32, dtype=BF, device="meta")
    lse_a = torch.empty(2, 4, 3, dtype=torch.float32, device="meta")
    o, lse = attnc.merge_state(o_a, lse_a, o_a, lse_a)
    assert o.shape == o_a.shape and o.dtype == BF
    assert lse.shape == (2, 4, 3) and lse.dtype == torch.float32
    o = attnc.merge_state(o_a, lse_a, o_a, lse_a, return_lse=False)
    assert isinstance(o, torch.Tensor) and o.shape == o_a.shape
    key = torch.empty(5, 2, 32, dtype=BF, device="meta")
    kc = torch.empty(8, 4, 2, 32, dtype=BF, device="meta")
    slots = torch.empty(5, dtype=torch.int64, device="meta")
    out = attnc.kv_append(key, key, kc, kc, slots)
    assert out[0] is kc and out[1] is kc
    assert attnc.paged_kv_append is attnc.kv_append


@test
def row_ops_fake_shapes():
    x = torch.empty(3, 5, 2 * 48, dtype=BF, device="meta")
    for fn in (attnc.silu_and_mul, attnc.gelu_and_mul):
        y = fn(x)
        assert y.shape == (3, 5, 48) and y.dtype == BF, y.shape
        assert y.is_contiguous()
        out = torch.empty(3, 5, 48, dtype=BF, device="meta")
        assert fn(x, out) is out
        expect_attnc_error(lambda: fn(x[..., 1:]), "must be even")
    x = torch.empty(7, 64, dtype=BF, device="meta")
    w = torch.empty(64, dtype=BF, device="meta")
    y, h = attnc.fused_add_rms_norm(x, x.clone(), w)
    assert y.shape == h.shape == x.shape and y.dtype == BF
    r = torch.empty_like(x)
    y, h = attnc.fused_add_rms_norm(x, r, w, inplace=True)
    assert y is x and h is r
    y, h = attnc.add_rms_norm(x, r, w)
    assert y.shape == x.shape
    pos = torch.empty(7, dtype=torch.int64, device="meta")
    cache = torch.empty(100, 16, dtype=BF, device="meta")
    qq, kk = attnc.rotary_embedding(pos, x, r, 16, cache)
    assert qq is x and kk is r


@test
def fake_tensor_mode_with_cuda_fake_tensors():
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    with FakeTensorMode():
        q, k, v = qkv("cuda", bhsd=True)
        o, lse = attnc.attention(q, k, v, return_lse=True)
        assert isinstance(o, FakeTensor) and o.device.type == "cuda"
        assert o.stride() == q.stride() and lse.shape == (2, 4, 16)
        x = torch.empty(4, 2 * 64, dtype=BF, device="cuda")
        assert attnc.silu_and_mul(x).shape == (4, 64)


# --- torch.compile and opcheck with the CPU stand-ins -------------------------


def block(x, r, w, q, k, v, pos, cos_sin, key, kc, vc, slots):
    """A small decoder step of attnc ops (in place ones included)."""
    y, h = attnc.fused_add_rms_norm(x, r, w, 1e-6)
    attnc.rotary_embedding(pos, q.view(q.shape[0] * q.shape[1], -1),
                           k.view(k.shape[0] * k.shape[1], -1), 32, cos_sin)
    o, lse = attnc.attention(q, k, v, causal=True, return_lse=True)
    attnc.kv_append(key, key, kc, vc, slots)
    g = attnc.silu_and_mul(torch.cat([y, y], -1))
    attnc.fused_add_rms_norm(x, r, w, 1e-6, inplace=True)
    return g * 2, h, o + 1, lse


def block_inputs():
    torch.manual_seed(1)
    x, r = torch.randn(6, 64, dtype=BF), torch.randn(6, 64, dtype=BF)
    w = torch.randn(64, dtype=BF)
    q, k, v = qkv(b=1, sq=8, skv=8, h=4, hk=2, d=32)
    pos = torch.arange(8)
    ang = torch.arange(16)[:, None] * 0.1 * torch.arange(1, 9)[None, :]
    cos_sin = torch.cat([ang.cos(), ang.sin()], -1).to(BF)
    key = torch.randn(3, 2, 32, dtype=BF)
    kc = torch.zeros(4, 4, 2, 32, dtype=BF)
    vc = torch.zeros_like(kc)
    slots = torch.tensor([5, -1, 9])
    return [x, r, w, q, k, v, pos, cos_sin, key, kc, vc, slots]


@test
def compile_fullgraph_traces_attnc_ops():
    with cpu_launches():
        eager_in = block_inputs()
        compiled_in = [t.clone() for t in eager_in]
        want = block(*eager_in)
        got, targets = compile_fullgraph(block, *compiled_in)
    for name in ("attention", "fused_add_rms_norm", "rotary_embedding",
                 "kv_append", "silu_and_mul", "fused_add_rms_norm_inplace"):
        assert "attnc.%s.default" % name in targets or \
            "attnc.%s" % name in targets, (name, sorted(targets))
    for a, b in zip(got, want):
        assert torch.equal(a, b), (a, b)
    # The in-place ops wrote the compiled call's inputs as eager's.
    for a, b in zip(compiled_in, eager_in):
        assert torch.equal(a, b)
    assert not torch.equal(compiled_in[0], block_inputs()[0])  # x written


@test
def compile_fullgraph_traces_attention_varlen():
    # A varlen call (max lengths as Python ints, cu_seqlens as tensors) is
    # one torch.ops.attnc.attention_varlen node, with eager's results.
    def step(q, k, v, cuq, cuk):
        o, lse = attnc.attention_varlen(q, k, v, cuq, cuk, 9, 9, causal=True,
                                        return_lse=True)
        return o * 2, lse

    with cpu_launches():
        q, k, v, cuq, cuk, _, _ = packed()
        want = step(q, k, v, cuq, cuk)
        got, targets = compile_fullgraph(step, q, k, v, cuq, cuk)
    assert "attnc.attention_varlen.default" in targets or \
        "attnc.attention_varlen" in targets, sorted(targets)
    for a, b in zip(got, want):
        assert torch.equal(a, b), (a, b)


@test
def opcheck_every_op():
    from torch.library import opcheck
    ops = torch.ops.attnc
    q, k, v = qkv()
    dq, kc, vc, table, lens = paged()
    dq2 = paged(q_len=2)[0]
    o_a = torch.randn(2, 3, 4, 32, dtype=BF)
    lse_a = torch.randn(2, 4, 3)
    key = torch.randn(5, 2, 32, dtype=BF)
    slots = torch.tensor([0, 7, -1, 3, 40])
    x = torch.randn(6, 2 * 64, dtype=BF)
    xr, r = torch.randn(6, 64, dtype=BF), torch.randn(6, 64, dtype=BF)
    w = torch.randn(64, dtype=BF)
    pos = torch.tensor([0, 3, 1, 2, 9, 4])
    ang = torch.arange(16)[:, None] * 0.1 * torch.arange(1, 9)[None, :]
    cos_sin = torch.cat([ang.cos(), ang.sin()], -1).to(BF)
    cases = [
        (ops.attention, (q, k, v, True, -1, -1, None, None, True, None, 0,
                         0)),
        (ops.attention, (q, k, v, False, -1, -1, None, None, False, None, 0,
                         0)),
        (ops.attention_varlen, (*packed(), True, -1, -1, None, None, True,
                                None, 0, 0)),
        (ops.attention_varlen, (*packed(), False, -1, -1, None, None, False,
                                None, 0, 0)),
        (ops.attention_varlen_paged, (*paged_packed(), "NHD", True, -1,
                                      -1, None, None, True, None, 0, 0)),
        (ops.attention_varlen_paged, (*paged_packed(), "NHD", False, -1,
                                      -1, None, None, False, None, 0, 0)),
        (ops.decode, (dq, kc, vc, table, lens, 13, "NHD", False, -1, -1,
                      None, None, True, None, 0,
                      torch.zeros(256, dtype=torch.uint8), None, 0)),
        (ops.decode, (dq2, kc, vc, table, lens, None, "NHD", True, -1, -1,
                      None, None, False, None, 0, None, None, 0)),
        (ops.kv_append, (key, key, kc.clone(), vc.clone(), slots, "NHD",
                         None)),
        (ops.merge_state, (o_a, lse_a, o_a.clone(), lse_a.clone(), True,
                           None)),
        (ops.silu_and_mul, (x, None)),
        (ops.silu_and_mul_out, (torch.empty(6, 64, dtype=BF), x, None)),
        (ops.gelu_and_mul, (x, None)),
        (ops.gelu_and_mul_out, (torch.empty(6, 64, dtype=BF), x, None)),
        (ops.fused_add_rms_norm, (xr, r, w, 1e-6, None)),
        (ops.fused_add_rms_norm_inplace, (xr.clone(), r.clone(), w, 1e-6,
                                          None)),
        (ops.fused_add_rms_norm_out, (torch.empty_like(xr),
                                      torch.empty_like(xr), xr, r, w, 1e-6,
                                      None)),
        (ops.rotary_embedding, (pos, torch.randn(6, 4 * 16, dtype=BF),
                                torch.randn(6, 2 * 16, dtype=BF), 16,
                                cos_sin, True, None)),
    ]
    seen = set()
    with cpu_launches():
        for op, args in cases:
            seen.add(op._qualified_op_name.split("::")[1])
            opcheck(op, args)
    assert seen == set(MUTATED), set(MUTATED) - seen


# --- runner --------------------------------------------------------------------


def main():
    passed = failed = 0
    for fn in TESTS:
        try:
            fn()
        except Exception:
            failed += 1
            print("FAIL %s\n%s" % (fn.__name__, traceback.format_exc()))
        else:
            passed += 1
            print("PASS %s" % fn.__name__)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
