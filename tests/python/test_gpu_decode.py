#!/usr/bin/env python3
"""GPU tests of attnc.decode (paged split-KV decode) through the binding.

Random block tables over a shuffled page pool, ragged lengths that are not
multiples of the page size, NHD and HND pages, q_len 2 with causal, against
a float64 reference on the gathered cache; outputs checked for NaN/Inf.
Exits 77 without torch or a GPU. Needs the kernels of gpu_decode_specs.json
in $ATTNC_CACHE_DIR (scripts/gpu-prepare.sh).
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
from attnc._capi import Context, DecodeSpec  # noqa: E402

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    passed += ok
    failed += not ok


def case(name, lens, hq, hk, d, page, dtype, layout="NHD", q_len=1, causal=False,
         sinks=False):
    g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    b = len(lens)
    blocks = [(n + page - 1) // page for n in lens]
    pages = sum(blocks) + 3
    perm = torch.randperm(pages, device="cuda", generator=g).to(torch.int32)
    table = torch.full((b, max(max(blocks), 1)), 0, dtype=torch.int32, device="cuda")
    at = 0
    for i, nb in enumerate(blocks):
        table[i, :nb] = perm[at:at + nb]
        at += nb
    shape = (pages, page, hk, d) if layout == "NHD" else (pages, hk, page, d)
    kc = torch.randn(*shape, device="cuda", dtype=dtype, generator=g)
    vc = torch.randn(*shape, device="cuda", dtype=dtype, generator=g)
    q = torch.randn(b, q_len, hq, d, device="cuda", dtype=dtype, generator=g)
    lens_t = torch.tensor(lens, dtype=torch.int32, device="cuda")
    # Sinks near the rows' LSE, and far above it every third head.
    sk = None
    if sinks:
        sk = 2 * torch.randn(hq, device="cuda", generator=g) + 2
        sk[2::3] += 10
    try:
        o, lse = attnc.decode(q, kc, vc, table, lens_t, max_kv_len=max(lens),
                              layout=layout, causal=causal, return_lse=True,
                              sinks=sk)
        torch.cuda.synchronize()
    except attnc.AttncError as e:
        check(name, False, str(e))
        return
    worst = 0.0
    finite = bool(torch.isfinite(o).all())
    lse_err = 0.0
    for i, n in enumerate(lens):
        idx = torch.arange(n, device="cuda")
        pg = table[i, idx // page].long()
        slot = idx % page
        if layout == "NHD":
            k, v = kc[pg, slot], vc[pg, slot]  # [n, hk, d]
        else:
            k, v = kc[pg, :, slot], vc[pg, :, slot]
        k = k.double().transpose(0, 1).repeat_interleave(hq // hk, dim=0)
        v = v.double().transpose(0, 1).repeat_interleave(hq // hk, dim=0)
        qd = q[i].double().transpose(0, 1)  # [hq, q_len, d]
        s = qd @ k.transpose(-1, -2) / math.sqrt(d)
        if causal:
            r = torch.arange(q_len, device="cuda")[:, None]
            j = torch.arange(n, device="cuda")[None, :]
            s = s.masked_fill(j > r + n - q_len, float("-inf"))
        if sk is not None:  # one more column per head, of value 0
            s = torch.cat([s, sk.double()[:, None, None].expand(hq, q_len, 1)], -1)
            v = torch.cat([v, v.new_zeros(hq, 1, d)], 1)
        rl = torch.logsumexp(s, dim=-1)
        ro = (torch.exp(s - rl[..., None]).nan_to_num(0.0) @ v).transpose(0, 1)
        rel = float((o[i].double() - ro).norm() / ro.norm().clamp_min(1e-300))
        worst = max(worst, rel)
        lse_err = max(lse_err, float((lse[i].double() - rl).abs().max()))
    check(name, finite and worst <= 1e-2 and lse_err <= 1e-3,
          f"worst rel L2 {worst:.2e}, LSE max err {lse_err:.2e}")


# With --tuned (a child process of the plain run: $ATTNC_TUNING_DB is read
# when the context is created), decode under a small tuning database that
# names a block_n of 32 and a split count for the first case's spec: the
# launch gets the database's kernel and splits, and the numbers still match.
TUNED_SPEC = DecodeSpec(heads=32, kv_heads=8, head_dim=128, page_size=16,
                        has_lse=True, dtype="bf16", arch="sm_90a")
if "--tuned" in sys.argv:
    import json
    import tempfile
    with tempfile.TemporaryDirectory() as empty:
        # The runtime's spec key, from the missing-kernel error of an
        # empty cache (the form the database's records name).
        # With the JIT compiler the probe compiles instead: the key is then
        # the spec its cache entry records.
        probe = Context(cache_dir=empty)
        try:
            probe.get_decode_kernel(TUNED_SPEC)
            (entry,) = [p for p in os.listdir(empty) if len(p) == 32]
            with open(os.path.join(empty, entry, "meta.json")) as f:
                key = json.load(f)["spec"]
        except attnc.AttncError as e:
            key = str(e).split("no compiled kernel for spec ")[1].split()[0]
            key = key.strip("'\",;()")
        finally:
            probe.close()
    gpu = torch.cuda.get_device_name(0)
    db = os.path.join(tempfile.mkdtemp(), "tuning.json")
    with open(db, "w") as f:
        json.dump({"version": 1, "records": [
            {"gpu": gpu, "arch": "sm_90a", "spec": key, "ms": 1.0,
             "bucket": "decode b<=4 kv<=8192", "tuning": {"block_n": 32},
             "splits": 3},
            {"gpu": gpu, "arch": "sm_90a", "spec": key, "ms": 1.0,
             "bucket": "decode b<=2 kv<=1024", "tuning": {"block_n": 32}}]},
            f)
    os.environ["ATTNC_TUNING_DB"] = db
    os.environ["ATTNC_LOG_TUNING"] = "1"  # the choice and why, on stderr
    launched = []
    plain_launch = Context.launch_decode

    def spy(self, kernel, args, stream=0):
        launched.append((kernel, args.num_splits))
        return plain_launch(self, kernel, args, stream)

    Context.launch_decode = spy
    ctx = attnc._attention.context(0)  # reads $ATTNC_TUNING_DB
    import dataclasses
    tuned = ctx.get_decode_kernel(dataclasses.replace(TUNED_SPEC, block_n=32))
    default = ctx.get_decode_kernel(TUNED_SPEC)
    check("tuned: the database names the spec", key is not None and tuned != default,
          "key %r on %r" % (key, gpu))
    case("tuned: block_n 32, 3 splits (b<=4 kv<=8192)", [1, 1000, 4097], 32, 8, 128, 16,
         torch.bfloat16)
    check("tuned: launched the database's kernel and 3 splits",
          launched[-1:] == [(tuned, 3)], str(launched))
    case("tuned: block_n 32, runtime's splits (b<=2 kv<=1024)", [5, 900], 32, 8, 128, 16,
         torch.bfloat16)
    check("tuned: launched the database's kernel, splits 0",
          launched[-1:] == [(tuned, 0)], str(launched))
    case("tuned: no entry (b<=4 kv<=2048)", [3, 1500, 2000], 32, 8, 128, 16, torch.bfloat16)
    check("tuned: no entry launched the default kernel",
          launched[-1:] == [(default, 0)], str(launched))
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)

case("NHD page 16, GQA 32/8 D128 bf16, ragged", [1, 1000, 4097], 32, 8, 128, 16, torch.bfloat16)
case("HND page 64, MQA 8/1 D64 fp16", [63, 65, 2000], 8, 1, 64, 64, torch.float16, layout="HND")
case("q_len 2, causal, GQA 8/2 D128", [2, 300], 8, 2, 128, 16, torch.bfloat16, q_len=2, causal=True)
case("sinks, GQA 64/8 D64 (gpt-oss), ragged with an empty sequence", [0, 300, 5000], 64, 8, 64, 16,
     torch.bfloat16, sinks=True)

try:
    x = torch.randn(1, 1, 32, 128, device="cuda", dtype=torch.bfloat16)
    c = torch.randn(4, 16, 8, 128, device="cuda", dtype=torch.bfloat16)
    attnc.decode(x, c, c, torch.zeros(1, 4, dtype=torch.int64, device="cuda"),
                 torch.ones(1, dtype=torch.int32, device="cuda"))
    check("an int64 block table is rejected", False, "no error")
except attnc.AttncError as e:
    check("an int64 block table is rejected", "int32" in str(e), str(e))

# A caller's workspace is not silently replaced: too small is an error that
# says how much is needed; decode_workspace's size works; and the second
# call of a spec (its kernel remembered) gives the same result as the first.
x = torch.randn(1, 1, 32, 128, device="cuda", dtype=torch.bfloat16)
c = torch.randn(64, 16, 8, 128, device="cuda", dtype=torch.bfloat16)
table = torch.arange(64, dtype=torch.int32, device="cuda").view(1, 64)
lens_t = torch.full((1,), 1000, dtype=torch.int32, device="cuda")
try:
    attnc.decode(x, c, c, table, lens_t, max_kv_len=1000,
                 workspace=torch.empty(256, dtype=torch.uint8, device="cuda"))
    check("a too-small workspace is an error", False, "no error")
except attnc.AttncError as e:
    check("a too-small workspace is an error", "workspace has 256" in str(e), str(e))
ws = attnc.decode_workspace(x, c, table, max_kv_len=1000)
first = attnc.decode(x, c, c, table, lens_t, max_kv_len=1000, workspace=ws)
again = attnc.decode(x, c, c, table, lens_t, max_kv_len=1000, workspace=ws)
torch.cuda.synchronize()
check("a remembered kernel gives the same result",
      bool(torch.isfinite(first).all()) and torch.equal(first, again))

# The tuning database's choice, in a child process (see --tuned above).
import subprocess  # noqa: E402
child = subprocess.run([sys.executable, __file__, "--tuned"], capture_output=True, text=True,
                       timeout=300)
print(child.stdout + child.stderr, end="")
check("tuned child process", child.returncode == 0, "exit %d" % child.returncode)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
