"""attnc's fused elementwise kernels through the Python binding, on a GPU.

Run by scripts/gpu-run.sh with ATTNC_LIBRARY and ATTNC_CACHE_DIR pointing at
the staged library and bundle (bench/row_specs.json's kernels). Fresh random
inputs, outputs poisoned with NaN, float64 references, relative L2 error.
Exits 77 without torch or a CUDA device.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))


def rel_l2(got, ref):
    got, ref = got.double(), ref.double()
    return float((got - ref).norm() / ref.norm())


def main():
    try:
        import torch
    except ImportError:
        print("skipped: no torch")
        return 77
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    import attnc

    failures = 0

    def report(name, err, finite, tol=1e-2):
        nonlocal failures
        ok = finite and err <= tol
        failures += not ok
        print("%s %-44s rel L2 %.2e%s" % ("PASS" if ok else "FAIL", name, err,
                                          "" if finite else "  NON-FINITE"))

    bf = torch.bfloat16
    # silu_and_mul, [2, 32, 2*14336] (leading dims flattened).
    x = torch.randn(2, 32, 2 * 14336, device="cuda", dtype=bf) * 2
    out = torch.full((2, 32, 14336), float("nan"), device="cuda", dtype=bf)
    attnc.silu_and_mul(x, out)
    xd = x.double()
    ref = torch.nn.functional.silu(xd[..., :14336]) * xd[..., 14336:]
    torch.cuda.synchronize()
    report("silu_and_mul 64 x 2*14336", rel_l2(out, ref),
           bool(torch.isfinite(out).all()))

    # fused_add_rms_norm, out of place and in place.
    for inplace in (False, True):
        x = torch.randn(100, 4096, device="cuda", dtype=bf)
        r = torch.randn(100, 4096, device="cuda", dtype=bf) * 3
        w = 1 + 0.1 * torch.randn(4096, device="cuda", dtype=bf)
        h_ref = (x.double() + r.double()).to(bf).double()
        y_ref = h_ref * torch.rsqrt(h_ref.pow(2).mean(-1, keepdim=True) + 1e-6) \
            * w.double()
        y, h = attnc.fused_add_rms_norm(x, r, w, 1e-6, inplace=inplace)
        torch.cuda.synchronize()
        name = "fused_add_rms_norm 100 x 4096%s" % (" in place" if inplace
                                                    else "")
        report(name + " (y)", rel_l2(y, y_ref), bool(torch.isfinite(y).all()))
        report(name + " (residual)", rel_l2(h, h_ref),
               bool(torch.isfinite(h).all()))
        if inplace and (y.data_ptr() != x.data_ptr()
                        or h.data_ptr() != r.data_ptr()):
            print("FAIL in place did not write into x and residual")
            failures += 1

    # rotary_embedding (vLLM's), in place: NeoX with i64 positions on a
    # fused qkv tensor's views; GPT-J, partial rotary, i32 positions.
    def rope_ref(pos, x, hs, cache, neox):
        rot = cache.shape[-1]
        t = x.double().view(x.shape[0], -1, hs).clone()
        c = cache.double()[pos.long()]
        cos, sin = c[:, None, :rot // 2], c[:, None, rot // 2:]
        if neox:
            a, b = t[..., :rot // 2].clone(), t[..., rot // 2:rot].clone()
            t[..., :rot // 2] = a * cos - b * sin
            t[..., rot // 2:rot] = b * cos + a * sin
        else:
            a, b = t[..., 0:rot:2].clone(), t[..., 1:rot:2].clone()
            t[..., 0:rot:2] = a * cos - b * sin
            t[..., 1:rot:2] = b * cos + a * sin
        return t.view(x.shape[0], -1)

    for neox, rot, pdt in ((True, 128, torch.int64), (False, 64, torch.int32)):
        tokens, hs = 300, 128
        inv = 10000.0 ** (-torch.arange(0, rot, 2, device="cuda",
                                        dtype=torch.float64) / rot)
        ang = torch.arange(8192, device="cuda", dtype=torch.float64)[:, None] \
            * inv[None, :]
        cache = torch.cat([ang.cos(), ang.sin()], -1).to(bf)
        qkv = torch.randn(tokens, (32 + 2 * 8) * hs, device="cuda", dtype=bf)
        q, k = qkv[:, :32 * hs], qkv[:, 32 * hs:40 * hs]
        pos = torch.randint(0, 8192, (tokens,), device="cuda", dtype=pdt)
        q_ref, k_ref = rope_ref(pos, q, hs, cache, neox), \
            rope_ref(pos, k, hs, cache, neox)
        v_before = qkv[:, 40 * hs:].clone()
        attnc.rotary_embedding(pos, q, k, hs, cache, is_neox=neox)
        torch.cuda.synchronize()
        name = "rotary_embedding %s rot %d %s" % ("neox" if neox else "gptj",
                                                   rot, pdt)
        report(name + " (q)", rel_l2(q, q_ref), bool(torch.isfinite(q).all()))
        report(name + " (k)", rel_l2(k, k_ref), bool(torch.isfinite(k).all()))
        if not torch.equal(qkv[:, 40 * hs:], v_before):
            print("FAIL %s wrote into v" % name)
            failures += 1

    # A clear error for a bad argument.
    try:
        attnc.silu_and_mul(torch.randn(4, 2 * 14336 + 2, device="cuda",
                                       dtype=bf))
        print("FAIL odd row length accepted")
        failures += 1
    except attnc.AttncError as e:
        print("PASS error for a bad row length: %s" % e)
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
