"""Attention-sink logits for the GPU tests (test_gpu_binding, test_gpu_mods).

random_sinks(torch, heads, generator): one float32 logit per query head on
the GPU, near the rows' LSE and far above it every third head, with head
0's moved to a float that does not survive a trip through the log2 domain
((x * log2 e) * ln 2 != x in float32, as for about 15% of floats): a kernel
computing a keyless row's LSE that way fails every run, not by chance.
"""


def random_sinks(torch, heads, generator):
    sinks = 2 * torch.randn(heads, device="cuda", generator=generator) + 2
    sinks[2::3] += 10
    log2e = torch.tensor(1.4426950408889634, dtype=torch.float32,
                         device=sinks.device)
    ln2 = torch.tensor(0.6931471805599453, dtype=torch.float32,
                       device=sinks.device)
    # Candidates above the sink (whole ranges round-trip exactly): the
    # first one that does not.
    cand = sinks[0] + torch.linspace(0, 4, 65536, device=sinks.device)
    off = ((cand * log2e) * ln2 != cand).nonzero()
    sinks[0] = cand[off[0, 0]]
    return sinks
