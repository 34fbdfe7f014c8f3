#!/usr/bin/env python3
"""How evenly persistent blocks share the attention work (a model, no GPU).

Each work item (query tile, head, batch) costs its KV tiles plus a fixed
cost per item, in units of one KV tile (~1.53 us at D128 on the H200,
bench/NOTES-hopper.md, 2026-12-01: a block per tile pays ~5.8 us = 3.8 tiles
once; a persistent block overlaps most of it, ~0.7 tiles assumed). The
makespan is the busiest SM's total. Compared:
  tiles    one block per item, the hardware handing the next item to the
           first free SM (launch order: the query tile fastest, causal
           longest first)
  stride   persistent, block c takes items c, c + G, ...
  pairs    persistent, block c takes item pairs (2p, 2p + 1), p = c, c + G,
           ..., items 2j and 2j + 1 of a head being query tiles j and
           Q - 1 - j (TileToWGMMA.cpp emitPersistent)
Usage: bench/persistent_balance.py [--sms 132] [--block-m 128]
"""
import argparse
import heapq


def lengths(q_tiles, causal):
    """KV tiles of program-0 id p (causal: id 0 is the last, longest tile;
    block_n = block_m, seq_q = seq_kv)."""
    return [(q_tiles - p) if causal else q_tiles for p in range(q_tiles)]


def tiles_grid(q_tiles, hb, causal, sms, fixed):
    free = [(0.0, i) for i in range(sms)]
    for _ in range(hb):
        for n in lengths(q_tiles, causal):
            t, i = heapq.heappop(free)
            heapq.heappush(free, (t + n + fixed, i))
    return max(t for t, _ in free)


def stride(q_tiles, hb, causal, sms, fixed):
    busy = [0.0] * sms
    ls = lengths(q_tiles, causal)
    for w in range(q_tiles * hb):
        busy[w % sms] += ls[w % q_tiles] + fixed
    return max(busy)


def pairs(q_tiles, hb, causal, sms, fixed):
    busy = [0.0] * sms
    ls = lengths(q_tiles, causal)
    items = q_tiles * hb
    for w in range(items):
        p = w // 2
        r = w % q_tiles
        tile = r // 2 if r % 2 == 0 else q_tiles - 1 - r // 2
        busy[p % sms] += ls[tile] + fixed
    return max(busy)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--block-m", type=int, default=128)
    ap.add_argument("--fixed-tiles", type=float, default=3.8)
    ap.add_argument("--fixed-persistent", type=float, default=0.7)
    a = ap.parse_args()
    print(f"{'cell':<22}{'mean':>8}{'tiles':>8}{'stride':>8}{'pairs':>8}"
          "   (makespan in KV tiles)")
    for s, b, h in [(1024, 16, 16), (2048, 8, 16), (4096, 4, 16),
                    (8192, 2, 16), (16384, 1, 16), (4096, 4, 32),
                    (16384, 1, 32), (4096, 1, 8)]:
        q = s // a.block_m
        for causal in (False, True):
            mean = sum(lengths(q, causal)) * b * h / a.sms
            name = f"S{s} B{b} H{h}{' causal' if causal else ''}"
            print(f"{name:<22}{mean:8.0f}"
                  f"{tiles_grid(q, b * h, causal, a.sms, a.fixed_tiles):8.0f}"
                  f"{stride(q, b * h, causal, a.sms, a.fixed_persistent):8.0f}"
                  f"{pairs(q, b * h, causal, a.sms, a.fixed_persistent):8.0f}")


if __name__ == "__main__":
    main()
