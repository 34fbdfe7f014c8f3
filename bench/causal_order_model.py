#!/usr/bin/env python3
"""A list-scheduling model of the causal prefill grid's tail (bench/NOTES.md,
2026-12-04): every query tile costs its KV tiles plus a constant and starts
on the first free slot (blocks resident on the GPU), in one of three orders.
Prints each order's makespan over the ideal (total work / slots)."""
import heapq


def makespan(costs, slots):
    free = [0.0] * slots
    for c in costs:
        heapq.heappush(free, heapq.heappop(free) + c)
    return max(free)


def main():
    block_m, block_n = 128, 64
    for seq, heads in ((4096, 64), (16384, 16)):  # B*H: B4 H16, B1 H16
        tiles = seq // block_m
        cost = lambda m, c: (m + 1) * block_m / block_n + c
        for slots in (132, 264):
            for c in (0, 2):
                orders = {
                    "per head, longest first":
                        [cost(m, c) for h in range(heads) for m in reversed(range(tiles))],
                    "per head, shortest first (FA2)":
                        [cost(m, c) for h in range(heads) for m in range(tiles)],
                    "longest first over all heads (dim0_major)":
                        [cost(m, c) for m in reversed(range(tiles)) for h in range(heads)],
                }
                ideal = sum(orders["per head, shortest first (FA2)"]) / slots
                cells = ", ".join(f"{name} {makespan(o, slots) / ideal:.3f}"
                                  for name, o in orders.items())
                print(f"S{seq} slots {slots} constant {c}: {cells}")


if __name__ == "__main__":
    main()
