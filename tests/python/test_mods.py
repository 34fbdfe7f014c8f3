#!/usr/bin/env python3
"""attnc.mods: Python score/mask mods traced into attn IR (ctest label unit).

For FlexAttention-style mods (ALiBi, relative bias, soft-cap through tanh,
causal, sliding window, prefix-LM, document masks from index arithmetic):
1. the traced region, run by a small interpreter of its arith/math ops on
   random indices and scores, equals the mod called on plain Python
   numbers (so the trace records what the function computes: operand
   order, integer division, conversions);
2. the whole kernel function verifies and compiles to PTX for sm_90a and
   sm_80 with `attnc emit` (argv[1]: the attnc binary), and ptxas accepts
   it when present (argv[2]);
3. what cannot be traced (if/and/or on traced values, booleans in
   arithmetic, a float index) is a TraceError.
Captured tensors (slopes, document ids, bias tables a mod indexes) are
checked the same way on fake tensors that hold their values (the
interpreter reads them for tensor.extract and applies the casts), their IR
contract (captures after sinks, every region taking every capture, order
of first use), their errors, and what attnc.attention passes to the launch
(over a stand-in runtime: no libattnc.so, torch or GPU).
Fresh random points each run (the seed is printed).
"""
import contextlib
import gc
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import types
import weakref

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "python"))
import attnc.mods as m  # noqa: E402

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail
                                                 else ""))
    if ok:
        passed += 1
    else:
        failed += 1


def expect(name, ok, detail=""):
    """check() that shows the detail (IR text) only on failure."""
    check(name, ok, "" if ok else "\n" + detail)


def c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_rem(a, b):
    return a - b * c_div(a, b)


def f32(x):
    import struct
    return struct.unpack("f", struct.pack("f", x))[0]


PRED = {"olt": lambda a, b: a < b, "ole": lambda a, b: a <= b,
        "ogt": lambda a, b: a > b, "oge": lambda a, b: a >= b,
        "oeq": lambda a, b: a == b, "une": lambda a, b: a != b,
        "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b,
        "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
        "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}
BIN = {"arith.addf": lambda a, b: a + b, "arith.subf": lambda a, b: a - b,
       "arith.mulf": lambda a, b: a * b, "arith.divf": lambda a, b: a / b,
       "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
       "arith.muli": lambda a, b: a * b, "arith.divsi": c_div,
       "arith.remsi": c_rem, "arith.andi": lambda a, b: a and b,
       "arith.ori": lambda a, b: a or b, "arith.xori": lambda a, b: a != b,
       "arith.maximumf": max, "arith.minimumf": min, "arith.maxsi": max,
       "arith.minsi": min}
UN = {"math.exp": math.exp, "math.log": math.log, "math.tanh": math.tanh,
      "math.sqrt": math.sqrt, "math.absf": abs, "arith.negf": lambda a: -a,
      "arith.index_cast": int, "arith.sitofp": float, "arith.extf": float,
      # i8 -> i32: tensor.extract of an i8 gives its bit pattern (0..255).
      "arith.extui": lambda a: a,
      "arith.extsi": lambda a: a - 256 * (a >= 128)}


class FakeTensor:
    """A tensor for attnc.mods (data_ptr, dtype, shape, stride) that holds
    its values: indexing it with ints gives the element as torch would
    (what the mod computes on plain numbers), raw() its stored bits as the
    kernel's tensor.extract reads them (i8 kinds: 0..255)."""

    _next = 0x7F0000000000

    def __init__(self, dtype, shape, values, stride=None, device=None):
        self.dtype, self.shape = dtype, tuple(shape)
        if stride is None:
            stride, n = [], 1
            for size in reversed(self.shape):
                stride.insert(0, n)
                n *= size
        self._stride = tuple(stride)
        self.values = values  # flat, indexed through the strides
        self.device = device if device is not None else CUDA0
        self._data = FakeTensor._next
        FakeTensor._next += 1 << 24

    def stride(self):
        return self._stride

    def data_ptr(self):
        return self._data

    def is_contiguous(self):
        n, want = 1, []
        for size in reversed(self.shape):
            want.insert(0, n)
            n *= size
        return self._stride == tuple(want)

    def dim(self):
        return len(self.shape)

    def _offset(self, key):
        key = key if isinstance(key, tuple) else (key,)
        assert len(key) == len(self.shape), (key, self.shape)
        offset = 0
        for x, size, st in zip(key, self.shape, self._stride):
            x = x.__index__()
            assert 0 <= x < size, (key, self.shape)
            offset += x * st
        return offset

    def __getitem__(self, key):
        return self.values[self._offset(key)]

    def raw(self, key):
        v = self.values[self._offset(key)]
        if self.dtype in ("torch.int8", "torch.uint8", "torch.bool"):
            return int(v) & 0xFF
        return v


class FakeDevice:
    def __init__(self, type_, index=None):
        self.type, self.index = type_, index

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (
            self.type, self.index)


CUDA0 = FakeDevice("cuda", 0)


def fake(rng, dtype, shape, lo, hi, stride=None):
    """A FakeTensor of random values in [lo, hi] (ints for integer
    dtypes; floats that bf16 and f16 hold exactly)."""
    n = 1
    for size in shape:
        n *= size
    if stride is not None:
        n = 1 + sum((size - 1) * st for size, st in zip(shape, stride))
    if dtype == "torch.bool":
        values = [rng.random() < 0.5 for _ in range(n)]
    elif dtype.startswith("torch.int") or dtype == "torch.uint8":
        values = [rng.randint(lo, hi) for _ in range(n)]
    else:
        values = [rng.randint(int(lo * 8), int(hi * 8)) / 8.0
                  for _ in range(n)]
    return FakeTensor(dtype, shape, values, stride)


def interpret(region, env):
    """Runs a region's block (text from attnc.mods) on `env` (name -> value)
    and returns what it yields."""
    for line in region.splitlines()[1:]:
        line = line.strip()
        if line.startswith("attn.yield"):
            return env[line.split()[1]]
        lhs, rhs = [x.strip() for x in line.split("=", 1)]
        op = rhs.split()[0]
        if op == "arith.constant":
            text = rhs.split()[1]
            v = {"true": True, "false": False}.get(text)
            if v is None:
                v = float(text) if ("." in text or "e" in text) else int(text)
            env[lhs] = v
            continue
        args = re.findall(r"%[\w]+", rhs)
        if op == "tensor.extract":
            env[lhs] = env[args[0]].raw(tuple(env[a] for a in args[1:]))
        elif op in ("arith.extui", "arith.extsi"):
            assert rhs.endswith(": i8 to i32"), rhs
            env[lhs] = UN[op](env[args[0]])
        elif op in ("arith.cmpf", "arith.cmpi"):
            pred = rhs.split()[1].rstrip(",")
            env[lhs] = PRED[pred](env[args[0]], env[args[1]])
        elif op == "arith.select":
            env[lhs] = env[args[1]] if env[args[0]] else env[args[2]]
        elif op in BIN:
            env[lhs] = BIN[op](env[args[0]], env[args[1]])
        elif op in UN:
            env[lhs] = UN[op](env[args[0]])
        else:
            raise AssertionError("no interpretation of " + op)
    raise AssertionError("no attn.yield")


def close(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b)
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


SLOPE = 0.0625
SCORE_MODS = {
    "alibi": lambda s, b, h, i, j: s - SLOPE * (h + 1) * m.abs(i - j),
    "relative bias, rsub and rdiv": lambda s, b, h, i, j:
        s + 2.0 / (1 + m.abs(j - i)) - (3 - h),
    "soft-cap 30 through tanh": lambda s, b, h, i, j: 30.0 * m.tanh(s / 30),
    "clamped through where/maximum/minimum": lambda s, b, h, i, j:
        m.where(s > 4.0, m.minimum(s, 8.0), m.maximum(s, -8.0)),
    "exp, log and sqrt": lambda s, b, h, i, j:
        m.log(m.exp(s * 0.25) + m.sqrt(m.to_float(j) + 1.0)),
    "negation and a per-batch offset": lambda s, b, h, i, j: -s + b * 0.5,
}
MASK_MODS = {
    "causal": lambda b, h, i, j: j <= i,
    "sliding window 37": lambda b, h, i, j: (j <= i) & (i - j < 37),
    "prefix-LM (prefix 24)": lambda b, h, i, j: (j < 24) | (j <= i),
    "documents of 100 tokens": lambda b, h, i, j: i // 100 == j // 100,
    "every third key, heads alternate": lambda b, h, i, j:
        (j % 3 != 0) | (h % 2 == 0),
    "all keys": lambda b, h, i, j: True,
}


def semantics(rng):
    for name, fn in SCORE_MODS.items():
        region = m.score_region(fn)
        ok = True
        for _ in range(200):
            b, h, i, j = (rng.randrange(4), rng.randrange(16),
                          rng.randrange(5000), rng.randrange(5000))
            s = rng.uniform(-20, 20)
            want = fn(s, b, h, i, j)
            got = interpret(region, {"%s": s, "%b": b, "%h": h, "%i": i,
                                     "%j": j})
            ok &= close(want, got)
        check("score mod traces what it computes: " + name, ok)
    for name, fn in MASK_MODS.items():
        region = m.mask_region(fn)
        ok = True
        for _ in range(200):
            b, h, i, j = (rng.randrange(4), rng.randrange(16),
                          rng.randrange(5000), rng.randrange(5000))
            ok &= close(bool(fn(b, h, i, j)),
                        interpret(region, {"%b": b, "%h": h, "%i": i,
                                           "%j": j}))
        check("mask mod traces what it computes: " + name, ok)
    # ~ is logical negation on traced booleans (on Python's bools it is
    # bitwise: ~True == -2), so its expectation is written out.
    region = m.mask_region(lambda b, h, i, j: ~((j % 3 == 0) & (h % 2 == 1)))
    ok = True
    for _ in range(200):
        b, h, i, j = (rng.randrange(4), rng.randrange(16),
                      rng.randrange(5000), rng.randrange(5000))
        want = not (j % 3 == 0 and h % 2 == 1)
        ok &= interpret(region, {"%b": b, "%h": h, "%i": i, "%j": j}) == want
    check("~ negates a traced mask", ok)


# --- captured tensors --------------------------------------------------------

CB, CH, CS = 3, 8, 61  # batch, heads, sequence of the capture cases

# Module globals a mod captures (a global, not a closure variable): set by
# capture_tensors().
DOC_IDS = None


def capture_tensors(rng):
    """Fresh tensors of every supported dtype for the capture cases."""
    global DOC_IDS
    starts = sorted(rng.sample(range(1, CS), 5))
    doc = []
    for _ in range(CB):  # non-decreasing document ids per batch row
        cuts = sorted(rng.sample(range(1, CS), rng.randrange(1, 6)))
        doc += [sum(1 for c in cuts if c <= i) for i in range(CS)]
    DOC_IDS = FakeTensor("torch.int32", (CB, CS), doc)
    return dict(
        slopes=fake(rng, "torch.float32", (CH,), -2, 2),
        head_bias=fake(rng, "torch.bfloat16", (CH,), -4, 4),
        rel=fake(rng, "torch.float16", (CH, 2 * CS - 1), -3, 3),
        keep=fake(rng, "torch.bool", (CS, CS), 0, 1),
        u8=fake(rng, "torch.uint8", (CH, CS), 0, 255),
        i8=fake(rng, "torch.int8", (CH,), -128, 127),
        prefix=fake(rng, "torch.int64", (CB,), 0, CS),
        # A transposed [S, H] view of a [H, S] table: strides (1, S).
        key_bias=fake(rng, "torch.float32", (CS, CH), -1, 1,
                      stride=(1, CS)),
        starts=starts)


def capture_mods(t):
    """(name, score_mod, mask_mod) over the tensors of capture_tensors()
    (closure variables, a global, a default argument, a helper)."""
    slopes, head_bias, rel, keep = (t["slopes"], t["head_bias"], t["rel"],
                                    t["keep"])
    u8, i8, prefix, key_bias = t["u8"], t["i8"], t["prefix"], t["key_bias"]

    def rel_bias(h, i, j):  # a helper the mod calls reads the table
        return rel[h, i - j + (CS - 1)]

    def scaled(s, b, h, i, j, scale=i8):  # a default argument
        return s + scale[h] * 0.5

    return [
        ("ALiBi from a slopes tensor [H] (f32)",
         lambda s, b, h, i, j: s - slopes[h] * m.abs(i - j), None),
        ("per-head bias [H] (bf16)",
         lambda s, b, h, i, j: s + head_bias[h], None),
        ("relative-position table [H, 2S-1] (f16) through a helper",
         lambda s, b, h, i, j: s + rel_bias(h, i, j), None),
        ("int8 per-head offsets (sign extended), a default argument",
         scaled, None),
        ("a transposed [S, H] bias (strides 1, S) and a constant index",
         lambda s, b, h, i, j: s * slopes[2] + key_bias[j, h], None),
        ("documents from doc ids [B, S] (i32, a global)", None,
         lambda b, h, i, j: DOC_IDS[b, i] == DOC_IDS[b, j]),
        ("documents + causal", None,
         lambda b, h, i, j: (DOC_IDS[b, i] == DOC_IDS[b, j]) & (j <= i)),
        ("a bool mask tensor [S, S]", None, lambda b, h, i, j: keep[i, j]),
        ("uint8 threshold (zero extended)", None,
         lambda b, h, i, j: u8[h, j] >= 128),
        ("int64 prefix lengths per batch", None,
         lambda b, h, i, j: (j < prefix[b]) | (j <= i)),
        ("relative table + ALiBi with a document mask over a bool mask",
         lambda s, b, h, i, j: s + rel[h, i - j + CS - 1] - slopes[h] * (
             i - j),
         lambda b, h, i, j: (DOC_IDS[b, i] == DOC_IDS[b, j]) & keep[i, j]
         & (slopes[h] > -1.5)),
    ]


def capture_semantics(rng):
    """Each trace, interpreted with its tensors, equals the mod called on
    plain numbers (which indexes the same tensors)."""
    t = capture_tensors(rng)
    for name, score, mask in capture_mods(t):
        trace = m.trace_mods(score, mask)
        tensors = trace.current()
        ok = tensors is not None and len(tensors) == len(trace.captures)
        env0 = {"%" + c.name: x for c, x in zip(trace.captures,
                                                tensors or [])}
        for _ in range(300 if ok else 0):
            b, h, i, j = (rng.randrange(CB), rng.randrange(CH),
                          rng.randrange(CS), rng.randrange(CS))
            sc = rng.uniform(-20, 20)
            if score is not None:
                env = dict(env0, **{"%s": sc, "%b": b, "%h": h, "%i": i,
                                    "%j": j})
                ok &= close(score(sc, b, h, i, j),
                            interpret(trace.score, env))
            if mask is not None:
                env = dict(env0, **{"%b": b, "%h": h, "%i": i, "%j": j})
                ok &= close(bool(mask(b, h, i, j)),
                            interpret(trace.mask, env))
        check("captured tensors trace what the mod computes: " + name, ok,
              "" if ok else "captures %s" % (trace.captures,))


def capture_contract(rng):
    t = capture_tensors(rng)
    slopes, rel, keep = t["slopes"], t["rel"], t["keep"]

    def score(s, b, h, i, j):
        return s + rel[h, i - j + CS - 1] - slopes[h] * m.abs(i - j)

    def mask(b, h, i, j):  # slopes again: the same capture
        return (DOC_IDS[b, i] == DOC_IDS[b, j]) & keep[i, j] & (
            slopes[h] > 0.0)

    ir = m.attention_ir(heads=8, kv_heads=2, head_dim=128, causal=True,
                        sinks=True, return_lse=True, score_mod=score,
                        mask_mod=mask)
    types_ = ("tensor<?x?xf16>, tensor<?xf32>, tensor<?x?xi32>, "
              "tensor<?x?xi8>")
    expect("captures come after sinks and before the attributes, in the "
          "order of first use (score first)",
          " sinks(%sinks : tensor<8xf32>) captures(%arg_c0, %arg_c1, %arg_c2, %arg_c3 : "
          + types_ + ") {causal}" in ir, ir)
    expect("the function takes the captures after q, k, v and sinks",
          ("%sinks: tensor<8xf32>, %arg_c0: tensor<?x?xf16>, %arg_c1: "
           "tensor<?xf32>, %arg_c2: tensor<?x?xi32>, %arg_c3: tensor<?x?xi8>) -> "
           "(") in ir.splitlines()[0], ir.splitlines()[0])
    headers = [line for line in ir.splitlines() if "^bb0(" in line]
    want_tail = (", %c0: tensor<?x?xf16>, %c1: tensor<?xf32>, %c2: "
                 "tensor<?x?xi32>, %c3: tensor<?x?xi8>):")
    expect("every region takes every capture, in the same order",
          len(headers) == 2 and all(h.endswith(want_tail) for h in headers)
          and headers[0].strip().startswith("^bb0(%s: f32, %b: index, %h: "
                                            "index, %i: index, %j: index, "
                                            "%c0")
          and headers[1].strip().startswith("^bb0(%b: index, %h: index, %i:"
                                            " index, %j: index, %c0"),
          " | ".join(headers))
    mask_body = ir.split("mask {", 1)[1]
    expect("a region reads a capture it shares with the other by its number",
          "tensor.extract %c1[%h] : tensor<?xf32>" in mask_body
          and "tensor.extract %c2[%b, %i] : tensor<?x?xi32>" in mask_body
          and "tensor.extract %c3[%i, %j] : tensor<?x?xi8>" in mask_body,
          mask_body)
    expect("a captured element is read once per region however often the "
          "mod indexes it",
          m.score_region(lambda s, b, h, i, j: s * slopes[h] + slopes[h])
          .count("tensor.extract") == 1)
    # The element conversions of every dtype.
    conversions = {
        "torch.float32": [": tensor<?xf32>\n", "arith.addf"],
        "torch.float16": [": tensor<?xf16>", ": f16 to f32"],
        "torch.bfloat16": [": tensor<?xbf16>", ": bf16 to f32"],
        "torch.int32": [": tensor<?xi32>", ": i32 to index"],
        "torch.int64": [": tensor<?xi64>", ": i64 to index"],
        "torch.int8": [": tensor<?xi8>", "arith.extsi", ": i8 to i32",
                       ": i32 to index"],
        "torch.uint8": [": tensor<?xi8>", "arith.extui", ": i8 to i32",
                        ": i32 to index"],
        "torch.bool": [": tensor<?xi8>", "arith.extui", ": i8 to i32",
                       "arith.cmpi ne"],
    }
    for dtype, wanted in conversions.items():
        x = FakeTensor(dtype, (4,), [1] * 4)
        if dtype == "torch.bool":
            region = m.mask_region(lambda b, h, i, j: x[h])
        elif dtype.startswith("torch.float") or dtype == "torch.bfloat16":
            region = m.score_region(lambda s, b, h, i, j: s + x[h])
        else:
            region = m.mask_region(lambda b, h, i, j: j < x[h])
        expect("%s is read as %s" % (dtype, ", ".join(w.strip()
                                                      for w in wanted)),
              all(w in region for w in wanted), region)
    # The trace is the key: values and shapes are not in it; dtypes are.
    again = m.attention_ir(heads=8, kv_heads=2, head_dim=128, causal=True,
                           sinks=True, return_lse=True, score_mod=score,
                           mask_mod=mask)
    t2 = capture_tensors(random.Random(rng.random()))
    slopes, keep = t2["slopes"], t2["keep"]
    rel = fake(rng, "torch.float16", (CH, 77), -1, 1)
    other_values = m.attention_ir(heads=8, kv_heads=2, head_dim=128,
                                  causal=True, sinks=True, return_lse=True,
                                  score_mod=score, mask_mod=mask)
    rel = fake(rng, "torch.float32", (CH, 77), -1, 1)
    other_dtype = m.attention_ir(heads=8, kv_heads=2, head_dim=128,
                                 causal=True, sinks=True, return_lse=True,
                                 score_mod=score, mask_mod=mask)
    expect("tracing again, or with other values and shapes, gives the same "
          "IR; another dtype another", ir == again == other_values
          and other_dtype != ir)
    slopes, rel = m.tensor_like("float32", (1,)), m.tensor_like(
        "torch.float16", (1, 1))
    keep = m.tensor_like("bool", (2, 2))
    saved = DOC_IDS
    globals()["DOC_IDS"] = m.tensor_like("int32", (1, 1))
    try:
        standing_in = m.attention_ir(heads=8, kv_heads=2, head_dim=128,
                                     causal=True, sinks=True,
                                     return_lse=True, score_mod=score,
                                     mask_mod=mask)
    finally:
        globals()["DOC_IDS"] = saved
    expect("tensor_like stands in for a tensor of its dtype and rank",
          standing_in == ir)
    plain = m.score_region(lambda s, b, h, i, j: s + 1.0)
    expect("a mod without captures keeps its block arguments",
          plain.splitlines()[0] == "  ^bb0(%s: f32, %b: index, %h: index, "
          "%i: index, %j: index):" and "captures" not in m.attention_ir(
              heads=4, kv_heads=4, head_dim=64,
              score_mod=lambda s, b, h, i, j: s + 1.0), plain)
    unused = fake(rng, "torch.float32", (4,), 0, 1)

    def reads_unused(s, b, h, i, j):
        return s if unused is not None else -s

    trace = m.trace_mods(reads_unused)
    expect("a tensor the mod reads but does not index is no capture",
          trace.captures == () and "captures" not in m.attention_ir(
              heads=4, kv_heads=4, head_dim=64, score_mod=reads_unused))
    # current(): what a launch passes, read again on every call.
    box = fake(rng, "torch.float32", (CH,), 0, 1)

    def boxed(s, b, h, i, j):
        return s + box[h]

    trace = m.trace_mods(boxed)
    first = trace.current()
    box = fake(rng, "torch.float32", (CH + 5,), 0, 1)
    second = trace.current()
    box = fake(rng, "torch.int32", (CH,), 0, 1)
    third = trace.current()
    box = fake(rng, "torch.float32", (2, CH), 0, 1)
    fourth = trace.current()
    expect("current() gives the tensor a variable holds now, None once its "
          "dtype or rank changes",
          first is not None and second is not None
          and first[0] is not second[0] and second[0].shape == (CH + 5,)
          and third is None and fourth is None)


def capture_errors():
    def raises(fn):
        try:
            fn()
        except m.TraceError as e:
            return str(e)
        return None

    f64 = FakeTensor("torch.float64", (8,), [0.0] * 8)
    i16 = FakeTensor("torch.int16", (8,), [0] * 8)
    t2 = FakeTensor("torch.float32", (8, 8), [0.0] * 64)
    t1 = FakeTensor("torch.float32", (8,), [0.0] * 8)
    t5 = FakeTensor("torch.float32", (1,) * 5, [0.0])
    table = {"t": t1}
    cases = [
        ("a float64 tensor", lambda: m.score_region(
            lambda s, b, h, i, j: s + f64[h]), ["float64", "float32"]),
        ("an int16 tensor", lambda: m.mask_region(
            lambda b, h, i, j: j < i16[h]), ["int16", "int32"]),
        ("too few indices", lambda: m.score_region(
            lambda s, b, h, i, j: s + t2[h]),
         ["2 dimensions", "indexed with 1"]),
        ("too many indices", lambda: m.score_region(
            lambda s, b, h, i, j: s + t1[h, i]),
         ["1 dimension", "indexed with 2"]),
        ("a slice", lambda: m.score_region(
            lambda s, b, h, i, j: s + t2[h, :]), ["slice"]),
        ("a negative index", lambda: m.score_region(
            lambda s, b, h, i, j: s + t1[-1]), ["negative", "-1"]),
        ("a float as an index", lambda: m.score_region(
            lambda s, b, h, i, j: s + t1[s]), ["f32"]),
        ("a boolean as an index", lambda: m.score_region(
            lambda s, b, h, i, j: s + t1[i < j]), ["boolean"]),
        ("a rank-5 tensor", lambda: m.score_region(
            lambda s, b, h, i, j: s + t5[0, 0, 0, 0, h]), ["5 dimensions"]),
        ("arithmetic on a captured tensor", lambda: m.score_region(
            lambda s, b, h, i, j: s + (t1 * 2)[h]), ["only be indexed"]),
        ("a traced index into a tensor in a dict", lambda: m.score_region(
            lambda s, b, h, i, j: s + table["t"][h]), ["captured"]),
    ]
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = (
        FakeTensor("torch.float32", (4,), [0.0] * 4) for _ in range(9))
    cases.append(("nine captured tensors", lambda: m.score_region(
        lambda s, b, h, i, j: s + a0[h] + a1[h] + a2[h] + a3[h] + a4[h]
        + a5[h] + a6[h] + a7[h] + a8[h]), ["more than 8"]))
    cases.append(("nine captured tensors over two mods", lambda: m.trace_mods(
        lambda s, b, h, i, j: s + a0[h] + a1[h] + a2[h] + a3[h] + a4[h],
        lambda b, h, i, j: (a5[h] + a6[h] + a7[h] + a8[h]) > 0.0),
        ["more than 8"]))
    for name, fn, fragments in cases:
        e = raises(fn)
        check("captures: %s is a TraceError" % name,
              e is not None and all(f in e for f in fragments),
              e or "no error")
    ok = raises(lambda: m.score_region(
        lambda s, b, h, i, j: s + a0[h] + a1[h] + a2[h] + a3[h] + a4[h]
        + a5[h] + a6[h] + a7[h])) is None
    check("captures: eight captured tensors trace", ok)


@contextlib.contextmanager
def stand_in_runtime(varlens=None):
    """attnc.attention over stand-ins for torch, the runtime's context and
    libattnc.so: yields (lookups, launches), the custom_ir of every kernel
    lookup and the captures of every launch as
    (data, dtype, rank, shape, stride). varlens: a list that gets each
    lookup's (varlen, batch, seq_q, seq_kv) and each launch's
    (cu_seqlens_q, cu_seqlens_k, varlen_batch, max_seqlen_q,
    max_seqlen_k, q's shape, lse's shape)."""
    from attnc import _attention

    lookups, launches = [], []
    varlens = [] if varlens is None else varlens

    class Context:
        _handle = 1

        def get_kernel_for(self, spec, batch, seq_q, seq_kv):
            lookups.append(spec.custom_ir)
            varlens.append((spec.varlen, batch, seq_q, seq_kv))
            return 42

        def workspace_size(self, kernel, *descs, sinks=0, captures=None):
            return 0

    class Library:
        def attnc_attention_launch(self, ctx, kernel, args, stream):
            a = args._obj
            launches.append([
                (c.data, c.dtype.decode(), c.rank, tuple(c.shape[:c.rank]),
                 tuple(c.stride[:c.rank]))
                for c in (a.captures[:a.num_captures]
                          if a.num_captures else [])])
            varlens.append((a.cu_seqlens_q, a.cu_seqlens_k, a.varlen_batch,
                            a.max_seqlen_q, a.max_seqlen_k,
                            tuple(a.q.shape), tuple(a.lse.shape)))
            return 0

    torch = types.ModuleType("torch")
    torch.float32 = "torch.float32"
    torch.int32 = "torch.int32"
    torch.Tensor = FakeTensor
    torch.empty_like = lambda t: FakeTensor(t.dtype, t.shape, [], t.stride(),
                                            t.device)
    torch.empty = lambda shape, dtype, device: FakeTensor(dtype, shape, [],
                                                          None, device)
    torch.cuda = types.SimpleNamespace(
        device=lambda d: contextlib.nullcontext(),
        get_device_capability=lambda d: (9, 0),
        current_stream=lambda d: types.SimpleNamespace(cuda_stream=0))
    ctx = Context()
    saved = (sys.modules.get("torch"), _attention.context, _attention.lib,
             dict(_attention._contexts), dict(_attention._plans))
    sys.modules["torch"] = torch
    _attention.context = lambda index: ctx
    _attention._contexts[0] = ctx
    _attention.lib = lambda: Library()
    _attention._plans.clear()
    try:
        yield lookups, launches
    finally:
        if saved[0] is None:
            del sys.modules["torch"]
        else:
            sys.modules["torch"] = saved[0]
        _attention.context, _attention.lib = saved[1], saved[2]
        _attention._contexts.clear()
        _attention._contexts.update(saved[3])
        _attention._plans.clear()
        _attention._plans.update(saved[4])


def capture_launch(rng):
    """What attnc.attention passes for captured tensors: the tensors the
    mods' variables hold at each call, in trace order, with their shapes
    and strides; no new trace or kernel lookup while dtypes and ranks stay;
    a clear error for a tensor on another device."""
    global DOC_IDS
    import attnc

    def qkv():
        return tuple(FakeTensor("torch.bfloat16", shape, [])
                     for shape in ((CB, CS, 8, 64), (CB, CS, 2, 64),
                                   (CB, CS, 2, 64)))

    def make():
        slopes = fake(rng, "torch.float32", (8,), -1, 1)

        def alibi(s, b, h, i, j):
            return s - slopes[h] * m.abs(i - j)

        def docs(b, h, i, j):  # slopes again: one capture
            return (DOC_IDS[b, i] == DOC_IDS[b, j]) & (slopes[h] > -5.0)

        def set_slopes(t):
            nonlocal slopes
            slopes = t

        return alibi, docs, set_slopes, lambda: slopes

    def desc(t, dtype):
        return (t.data_ptr(), dtype, len(t.shape), t.shape, t.stride())

    capture_tensors(rng)  # sets DOC_IDS
    saved_doc = DOC_IDS
    alibi, docs, set_slopes, slopes = make()
    q, k, v = qkv()
    try:
        with stand_in_runtime() as (lookups, launches):
            attnc.attention(q, k, v, causal=True, score_mod=alibi,
                            mask_mod=docs)
            want_ir = m.attention_ir(heads=8, kv_heads=2, head_dim=64,
                                     causal=True, score_mod=alibi,
                                     mask_mod=docs)
            first = [desc(slopes(), "f32"), desc(DOC_IDS, "i32")]
            expect("the first call looks up the kernel of the mods' trace, "
                   "captures included",
                   lookups == [want_ir] and "captures(%arg_c0, %arg_c1 : "
                   "tensor<?xf32>, tensor<?x?xi32>)" in want_ir,
                   "\n".join(lookups))
            expect("the launch passes the captured tensors in trace order "
                   "(one capture for a tensor both mods read)",
                   launches == [first], repr(launches))
            attnc.attention(q, k, v, causal=True, score_mod=alibi,
                            mask_mod=docs)
            # Another tensor in the closure variable: same dtype and rank,
            # another size and a stride of 2.
            wide = fake(rng, "torch.float32", (12,), -1, 1, stride=(2,))
            set_slopes(wide)
            attnc.attention(q, k, v, causal=True, score_mod=alibi,
                            mask_mod=docs)
            expect("a repeated call and a rebound closure variable reuse the "
                   "plan; the launch gets the tensor the variable holds now",
                   len(lookups) == 1 and launches[1] == first
                   and launches[2] == [(wide.data_ptr(), "f32", 1, (12,),
                                        (2,)), first[1]], repr(launches))
            DOC_IDS = fake(rng, "torch.int64", (CB, CS), 0, 3)
            attnc.attention(q, k, v, causal=True, score_mod=alibi,
                            mask_mod=docs)
            expect("a global rebound to another dtype is traced again: "
                   "another kernel, its dtype at the launch",
                   len(lookups) == 2 and "tensor<?x?xi64>" in lookups[1]
                   and launches[3][1] == desc(DOC_IDS, "i64"),
                   repr(launches[3:]))
            DOC_IDS = FakeTensor("torch.int64", (CB, CS), [0] * CB * CS,
                                 device=FakeDevice("cuda", 1))
            try:
                attnc.attention(q, k, v, causal=True, score_mod=alibi,
                                mask_mod=docs)
                message = None
            except attnc.AttncError as e:
                message = str(e)
            check("a captured tensor on another device is an error naming "
                  "it", message is not None and "'DOC_IDS'" in message
                  and "cuda:1" in message and "cuda:0" in message,
                  message or "no error")
            DOC_IDS = saved_doc
            attnc.attention(q, k, v, causal=True)
            expect("a call without mods passes no captures",
                   launches[-1] == [], repr(launches[-1]))
            try:
                attnc.attention(q, k, v, causal=True, kv_bounds=object())
                message = None
            except attnc.AttncError as e:
                message = str(e)
            check("kv_bounds that are not an int32 [B, Sq, 2] tensor are an "
                  "error", message is not None and "kv_bounds must be an "
                  "int32 tensor" in message, message or "no error")
            # Ranges alone (documents as causal + ranges): a kernel whose IR
            # takes kv_bounds and has no mask region.
            bounds = FakeTensor("torch.int32", (CB, CS, 2),
                                [0] * (CB * CS * 2))
            before = len(lookups)
            attnc.attention(q, k, v, causal=True, kv_bounds=bounds)
            check("kv_bounds without mods: IR with kv_bounds, causal, no "
                  "regions", len(lookups) == before + 1
                  and "kv_bounds(%kv_bounds : tensor<?x?x2xi32>) {causal}"
                  in lookups[-1] and "mask {" not in lookups[-1]
                  and "score {" not in lookups[-1], "\n".join(lookups))
            # A mod made per call (a closure over this step's tensor): the
            # plan keeps neither the function nor its tensor once the
            # caller drops them, and one at the same address is not taken
            # for it.
            from attnc import _attention
            plans_before = len(_attention._plans)

            def per_call():
                bias = fake(rng, "torch.float32", (8,), -1, 1)
                alive = weakref.ref(bias)
                attnc.attention(q, k, v, score_mod=lambda s, b, h, i, j:
                                s + bias[h])
                return alive, bias.data_ptr()

            dead = []
            for _ in range(3):
                alive, address = per_call()
                gc.collect()
                dead.append(alive() is None)
            expect("a mod made per call does not keep its captured tensor "
                   "alive, and its plan goes with it",
                   all(dead) and len(_attention._plans) == plans_before,
                   "%r, %d plans (was %d)" % (dead, len(_attention._plans),
                                               plans_before))
            expect("each per-call mod launches with its own tensor",
                   len(launches[-1]) == 1 and launches[-1][0][0] == address,
                   repr(launches[-3:]))

            # A bound method (a new object at every attribute access) keeps
            # its plan while its object lives: traced and looked up once.
            class Documents:
                def mask(self, b, h, i, j):
                    return DOC_IDS[b, i] == DOC_IDS[b, j]

            docs_obj = Documents()
            before = len(lookups)
            for _ in range(5):
                attnc.attention(q, k, v, mask_mod=docs_obj.mask)
            expect("a bound-method mod is traced and looked up once over "
                   "five calls", len(lookups) == before + 1,
                   "%d lookups" % (len(lookups) - before))
            del docs_obj
            gc.collect()
            expect("its plan goes with its object",
                   len(_attention._plans) == plans_before,
                   "%d plans (was %d)" % (len(_attention._plans),
                                          plans_before))

            # A long-lived mod over many shapes: the plans stay bounded
            # (MAX_PLANS), none kept alive past the cache's clearing.
            saved_max = _attention._route.MAX_PLANS
            _attention._route.MAX_PLANS = 8
            try:
                for n in range(40):
                    qn, kn, vn = (FakeTensor("torch.bfloat16",
                                             (CB, 1 + n, hh, 64), [])
                                  for hh in (8, 2, 2))
                    attnc.attention(qn, kn, vn, score_mod=alibi)
                held = sum(len(keys) for keys in
                           _attention._mod_plan_keys.values())
                expect("a mod called at 40 shapes keeps at most MAX_PLANS "
                       "plans", len(_attention._plans) <= 8 and held <= 8,
                       "%d plans, %d keys held" % (len(_attention._plans),
                                                   held))
            finally:
                _attention._route.MAX_PLANS = saved_max
    finally:
        DOC_IDS = saved_doc


# Stand-ins for the tensors of the compiled capture cases (a trace depends
# only on their dtypes and ranks).
SLOPES = m.tensor_like("float32", (8,))
DOCS = m.tensor_like("int32", (2, 1000))
REL = m.tensor_like("bfloat16", (4, 2 * 257 - 1))
KEEP = m.tensor_like("bool", (257, 257))
HEAD_BIAS = m.tensor_like("float16", (8,))
PREFIX = m.tensor_like("int64", (2,))
SHIFT = m.tensor_like("int8", (8,))
BUCKET = m.tensor_like("uint8", (8, 4, 4))


def varlen_launch(rng):
    """attnc.attention_varlen with mods: the kernel of the mods' varlen
    trace (packed types, cu_seqlens, the captures), looked up at the
    sequences and longest lengths; each launch passes the cu_seqlens, the
    lengths, the packed [1, H, total, D] views, the [1, H, total_q] LSE
    and the captured tensors; the mods under tracing are refused."""
    import attnc

    slopes = fake(rng, "torch.float32", (8,), -1, 1)
    doc = fake(rng, "torch.int32", (3, 50), 0, 4)

    def alibi(s, b, h, i, j):
        return s - slopes[h] * m.abs(i - j)

    def docs(b, h, i, j):
        return doc[b, i] == doc[b, j]

    q = FakeTensor("torch.bfloat16", (100, 8, 64), [])
    k = FakeTensor("torch.bfloat16", (120, 2, 64), [])
    v = FakeTensor("torch.bfloat16", (120, 2, 64), [])
    cu_q = FakeTensor("torch.int32", (4,), [])
    cu_k = FakeTensor("torch.int32", (4,), [])
    seen = []
    with stand_in_runtime(seen) as (lookups, launches):
        for max_q in (40, 45):
            attnc.attention_varlen(q, k, v, cu_q, cu_k, max_q, 50,
                                   causal=True, return_lse=True,
                                   score_mod=alibi, mask_mod=docs)
        want = m.attention_ir(heads=8, kv_heads=2, head_dim=64, causal=True,
                              return_lse=True, score_mod=alibi,
                              mask_mod=docs, varlen=True)
        expect("varlen with mods looks up the kernel of the varlen trace "
               "once, at the sequences and the longest lengths",
               lookups == [want] and seen[0] == (True, 3, 40, 50)
               and "varlen(%cu_q, %cu_k : tensor<?xi32>, tensor<?xi32>) "
               "captures(%arg_c0, %arg_c1" in want
               and "-> tensor<?x8x64xbf16>, tensor<8x?xf32>" in want,
               "%s\n%s" % (seen, "\n".join(lookups)))
        launch = [x for x in seen if len(x) == 7]
        expect("each varlen launch passes the cu_seqlens, B, its longest "
               "lengths and the packed views",
               launch == [(cu_q.data_ptr(), cu_k.data_ptr(), 3, mq, 50,
                           (1, 8, 100, 64), (1, 8, 100, 1))
                          for mq in (40, 45)], repr(launch))
        expect("and the captured tensors",
               [len(c) for c in launches] == [2, 2]
               and launches[0][0][0] == slopes.data_ptr()
               and launches[0][1][0] == doc.data_ptr(), repr(launches))
        try:
            attnc.attention_varlen(q, k, v, cu_q, cu_k, 40, 50,
                                   mask_mod=docs, window=(8, 8),
                                   return_lse=False)
            refused = False
        except attnc.AttncError:
            refused = True
        expect("another option is another kernel (no error)",
               not refused and len(lookups) == 2)


def capture_compile_cases():
    """`attnc emit` cases whose mods capture tensors: every dtype, ranks 1
    to 3, with sinks, LSE, GQA, a window and both head dims."""
    return [
        ("captures: ALiBi slopes [H] f32 + documents from ids [B, S] i32, "
         "causal, GQA 8/2 D128", dict(
             heads=8, kv_heads=2, head_dim=128, causal=True,
             score_mod=lambda s, b, h, i, j: s - SLOPES[h] * m.abs(i - j),
             mask_mod=lambda b, h, i, j: DOCS[b, i] == DOCS[b, j])),
        ("captures: relative table [H, 2S-1] bf16 + bool mask [S, S] with "
         "sinks, D64 fp16, LSE", dict(
             heads=4, kv_heads=4, head_dim=64, dtype="fp16",
             return_lse=True, sinks=True,
             score_mod=lambda s, b, h, i, j: s + REL[h, i - j + 256],
             mask_mod=lambda b, h, i, j: KEEP[i, j] & (j <= i))),
        ("captures: f16 head bias, int64 prefixes, int8 shifts, uint8 "
         "buckets [H, 4, 4], causal window (64, -1), GQA 8/1 D128", dict(
             heads=8, kv_heads=1, head_dim=128, causal=True, window=(64, -1),
             score_mod=lambda s, b, h, i, j: s + HEAD_BIAS[h]
             + SHIFT[h] * 0.125 + BUCKET[h, i % 4, j % 4] * 0.01,
             mask_mod=lambda b, h, i, j: (j < PREFIX[b]) | (j <= i))),
    ]


def compiles(attnc_bin, ptxas):
    cases = [
        ("ALiBi + causal, GQA 8/2 D128", dict(
            heads=8, kv_heads=2, head_dim=128, causal=True,
            score_mod=SCORE_MODS["alibi"])),
        ("documents + sliding window as mods, D64 fp16, LSE", dict(
            heads=4, kv_heads=4, head_dim=64, dtype="fp16", return_lse=True,
            mask_mod=lambda b, h, i, j: MASK_MODS["documents of 100 tokens"](
                b, h, i, j) & MASK_MODS["sliding window 37"](b, h, i, j))),
        ("soft-cap mod + prefix-LM mask, causal window (64, -1)", dict(
            heads=4, kv_heads=1, head_dim=128, causal=True, window=(64, -1),
            score_mod=SCORE_MODS["soft-cap 30 through tanh"],
            mask_mod=MASK_MODS["prefix-LM (prefix 24)"])),
        ("ALiBi + documents with attention sinks, GQA 8/2 D64, LSE", dict(
            heads=8, kv_heads=2, head_dim=64, return_lse=True, sinks=True,
            score_mod=SCORE_MODS["alibi"],
            mask_mod=MASK_MODS["documents of 100 tokens"])),
        ("varlen: ALiBi slopes [H] + documents from per-sequence ids "
         "[B, S], causal GQA 8/2 D128, LSE, sinks", dict(
             heads=8, kv_heads=2, head_dim=128, causal=True, varlen=True,
             return_lse=True, sinks=True,
             score_mod=lambda s, b, h, i, j: s - SLOPES[h] * m.abs(i - j),
             mask_mod=lambda b, h, i, j: DOCS[b, i] == DOCS[b, j])),
    ] + capture_compile_cases()
    with tempfile.TemporaryDirectory() as tmp:
        for name, kw in cases:
            path = os.path.join(tmp, "mod.mlir")
            with open(path, "w") as f:
                f.write(m.attention_ir(**kw))
            for arch in ("sm_90a", "sm_80"):
                ptx = os.path.join(tmp, "mod.ptx")
                r = subprocess.run([attnc_bin, "emit", "--emit", "ptx",
                                    "--arch", arch, path, "-o", ptx],
                                   capture_output=True, text=True)
                ok = r.returncode == 0
                errors = [line for line in r.stderr.splitlines()
                          if "error" in line]
                detail = (errors or r.stderr.strip().splitlines())[-1:] \
                    if not ok else []
                if ok and ptxas and os.path.exists(ptxas):
                    p = subprocess.run([ptxas, "-arch=" + arch, ptx, "-o",
                                        os.devnull], capture_output=True,
                                       text=True)
                    ok = p.returncode == 0
                    detail = p.stderr.strip().splitlines()[-1:]
                check("compiles for %s: %s" % (arch, name), ok,
                      " ".join(detail))


def bundles(attnc_bin):
    """bundle_spec's dict is a spec `attnc bundle` compiles (with sinks
    too: the spec and its IR must agree on them)."""
    import json
    spec = m.bundle_spec(heads=8, kv_heads=2, head_dim=64, causal=True,
                         window=(32, -1), return_lse=True,
                         score_mod=SCORE_MODS["alibi"],
                         mask_mod=MASK_MODS["documents of 100 tokens"])
    with_sinks = m.bundle_spec(heads=8, kv_heads=2, head_dim=64,
                               causal=True, sinks=True,
                               score_mod=SCORE_MODS["alibi"])
    with_captures = m.bundle_spec(
        heads=8, kv_heads=2, head_dim=64, causal=True, sinks=True,
        score_mod=lambda s, b, h, i, j: s - SLOPES[h] * m.abs(i - j),
        mask_mod=lambda b, h, i, j: DOCS[b, i] == DOCS[b, j])
    check("bundle_spec with captures puts them in the IR after the sinks",
          "sinks(%sinks : tensor<8xf32>) captures(%arg_c0, %arg_c1 : tensor<?xf32>,"
          " tensor<?x?xi32>)" in with_captures["custom_ir"])
    check("bundle_spec with sinks says so in the spec and the IR",
          with_sinks.get("sinks") is True
          and "sinks(%sinks : tensor<8xf32>)" in with_sinks["custom_ir"])
    with_bounds = m.bundle_spec(
        heads=8, kv_heads=2, head_dim=64, causal=True, sinks=True,
        mask_mod=lambda b, h, i, j: DOCS[b, i] == DOCS[b, j], kv_bounds=True)
    check("bundle_spec with kv_bounds: the function takes them after the "
          "sinks, the op after the sinks and before the captures",
          "%sinks: tensor<8xf32>, %kv_bounds: tensor<?x?x2xi32>, %arg_c0"
          in with_bounds["custom_ir"] and "sinks(%sinks : tensor<8xf32>) "
          "kv_bounds(%kv_bounds : tensor<?x?x2xi32>) captures(%arg_c0"
          in with_bounds["custom_ir"], with_bounds["custom_ir"])
    varlen = m.bundle_spec(
        heads=8, kv_heads=2, head_dim=64, causal=True, varlen=True,
        mask_mod=lambda b, h, i, j: DOCS[b, i] == DOCS[b, j])
    check("bundle_spec with varlen says so in the spec and the IR",
          varlen.get("varlen") is True and "varlen(%cu_q, %cu_k" in
          varlen["custom_ir"], varlen["custom_ir"])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "specs.json")
        with open(path, "w") as f:
            json.dump({"specs": [spec, with_sinks, with_captures,
                                 with_bounds, varlen]}, f)
        r = subprocess.run([attnc_bin, "bundle", "--no-cubin", "--specs",
                            path, "-o", os.path.join(tmp, "cache")],
                           capture_output=True, text=True)
        check("attnc bundle compiles bundle_spec's spec",
              r.returncode == 0 and "5 of 5 specs" in r.stdout,
              (r.stdout + r.stderr).strip().splitlines()[-1:][0]
              if (r.stdout + r.stderr).strip() else "")


def errors():
    def raises(fn, *args):
        try:
            fn(*args)
        except m.TraceError as e:
            return str(e)
        return None

    e = raises(m.mask_region, lambda b, h, i, j: j <= i and i < 5)
    check("'and' on traced values is an error naming where",
          e is not None and "where" in e, e or "no error")
    e = raises(m.score_region,
               lambda s, b, h, i, j: s if i > j else 0.0)
    check("'if' on a traced value is an error", e is not None, e or "")
    e = raises(m.score_region, lambda s, b, h, i, j: s + (i < j))
    check("a boolean in arithmetic is an error", e is not None, e or "")
    e = raises(m.mask_region, lambda b, h, i, j: i // 2.5 < j)
    check("a float with an index is an error", e is not None, e or "")
    e = raises(m.mask_region, lambda b, h, i, j: i - j)
    check("a mask mod must give a boolean", e is not None, e or "")


def main():
    seed = int(os.environ.get("ATTNC_TEST_SEED", random.randrange(1 << 32)))
    print("seed %d (ATTNC_TEST_SEED=%d replays it)" % (seed, seed))
    semantics(random.Random(seed))
    errors()
    capture_semantics(random.Random(seed))
    capture_contract(random.Random(seed))
    capture_errors()
    capture_launch(random.Random(seed))
    varlen_launch(random.Random(seed))
    if len(sys.argv) > 1:
        compiles(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
        bundles(sys.argv[1])
    else:
        print("note: no attnc binary given; the compile cases did not run")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
