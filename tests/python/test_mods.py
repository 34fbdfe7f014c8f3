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
Fresh random points each run (the seed is printed).
"""
import math
import os
import random
import re
import subprocess
import sys
import tempfile

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
      "arith.index_cast": int, "arith.sitofp": float}


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
        if op in ("arith.cmpf", "arith.cmpi"):
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
    ]
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
                detail = r.stderr.strip().splitlines()[-1:] if not ok else []
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
    check("bundle_spec with sinks says so in the spec and the IR",
          with_sinks.get("sinks") is True
          and "sinks(%sinks : tensor<8xf32>)" in with_sinks["custom_ir"])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "specs.json")
        with open(path, "w") as f:
            json.dump({"specs": [spec, with_sinks]}, f)
        r = subprocess.run([attnc_bin, "bundle", "--no-cubin", "--specs",
                            path, "-o", os.path.join(tmp, "cache")],
                           capture_output=True, text=True)
        check("attnc bundle compiles bundle_spec's spec",
              r.returncode == 0 and "2 of 2 specs" in r.stdout,
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
    if len(sys.argv) > 1:
        compiles(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
        bundles(sys.argv[1])
    else:
        print("note: no attnc binary given; the compile cases did not run")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
