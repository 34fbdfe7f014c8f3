#!/usr/bin/env python3
"""Model of the wgmma KV loop's kv-sync=mbarrier protocol (TileToWGMMA.cpp,
emitKVLoop): every thread's sequence of mbarrier operations, run under
random and adversarial interleavings of the threads and of the asynchronous
cp.async arrivals, checking that

  - no interleaving deadlocks (every try_wait.parity loop eventually passes),
  - a wait on full[s] for tile t passes only once every thread's copies of
    tile t have landed in stage s (and nothing newer was copied there),
  - a copy of tile t into stage s starts only once every thread released
    tile t - S (its wgmma reads of it completed),
  - no mbarrier phase ever receives more arrivals than its count.

mbarrier semantics modelled (PTX ISA, mbarrier): init(count) sets the
pending count to count, phase 0; an arrive decrements the pending count and,
at 0, completes the phase (phase + 1, pending = count);
cp.async.mbarrier.arrive.noinc is such an arrive, performed asynchronously
once all prior cp.async of the thread completed (without .noinc the pending
count is incremented first, so the net effect is 0: not an arrival);
try_wait.parity p passes when the current phase's parity differs from p
(phase p, or one of its parity, has completed).

The per-thread schedule below mirrors emitKVLoop; keep the two in step.
Usage: mbarrier_protocol_sim.py [--mutate NAME]   (exit 0: all checks pass)

The actors below stand for the arrivals each barrier counts: threads for
the full barriers (every thread's cp.async.mbarrier.arrive.noinc), warps for
the empty ones (lane 0 of each warp arrives after the warp-aligned
wgmma.wait_group, so the warp's lanes are past their reads together). The
protocol is the same for either count.
"""
import argparse
import random
import sys


class Barrier:
    def __init__(self, count):
        self.count = count
        self.pending = count
        self.phase = 0

    def arrive(self, what):
        if self.pending <= 0:
            raise AssertionError(f"over-arrival on {what}")
        self.pending -= 1
        if self.pending == 0:
            self.phase += 1
            self.pending = self.count

    def passes(self, parity):
        return (self.phase & 1) != parity


def program(n, S, mutate):
    """The ops of one thread (emitKVLoop's order), as tuples."""
    ops = [("cta_barrier", "init")]  # mbarrier.init by thread 0, bar.sync
    if n == 0:  # lb >= ub: the guarded loop is skipped
        return ops

    def copy(x, t):
        c = []
        if t >= S:  # the stage held tile t - S: wait for its release
            parity = (t // S + 1) & 1
            if mutate == "empty-parity":
                parity = (t // S) & 1
            c.append(("wait", x + "empty", t % S, parity, ("refill", x, t)))
        c.append(("copy", x, t))
        return c

    for i in range(S - 1):  # prologue
        ops += copy("K", i)
        if i >= 1:
            ops += copy("V", i - 1)
    for t in range(n):
        if t == 0:
            ops.append(("cta_barrier", "Q"))  # waitForCopies(0)
        ops.append(("wait", "Kfull", t % S, (t // S) & 1, ("data", "K", t)))
        if t > 0:
            ops.append(("wait", "Vfull", (t - 1) % S, ((t - 1) // S) & 1,
                        ("data", "V", t - 1)))
        ops += copy("K", t + S - 1)
        ops += copy("V", t + S - 2)
        ops.append(("read", "K", t))
        if t > 0:
            ops.append(("read", "V", t - 1))
        ops.append(("release", "K", t))
        if t > 0 and mutate != "skip-v-release":
            ops.append(("release", "V", t - 1))
    ops.append(("wait", "Vfull", (n - 1) % S, ((n - 1) // S) & 1,
                ("data", "V", n - 1)))
    ops.append(("read", "V", n - 1))
    return ops


def run(n, S, threads, rng, policy, mutate):
    count = threads + (1 if mutate == "count+1" else 0)
    bars = {k + s: [Barrier(count) for _ in range(S)]
            for k in "KV" for s in ("full", "empty")}
    progs = [program(n, S, mutate) for _ in range(threads)]
    pc = [0] * threads
    asyncq = [[] for _ in range(threads)]  # pending cp.async arrivals, FIFO
    issued = {}  # (x, tile) -> threads that issued its copy
    landed = {}  # (x, tile) -> threads whose copy of it landed
    released = {}  # (x, tile) -> threads that released it
    stage = {}  # (x, stage) -> tiles written there, in order
    cta = {}  # name -> threads arrived
    last_read = {}  # (x, tile) -> reads done

    def runnable(i):
        if pc[i] >= len(progs[i]):
            return False
        op = progs[i][pc[i]]
        if op[0] == "wait":
            return bars[op[1]][op[2]].passes(op[3])
        if op[0] == "cta_barrier":
            return len(cta.get(op[1], ())) == threads or i not in cta.get(
                op[1], ())
        return True

    steps = 0
    while True:
        steps += 1
        if steps > 10_000_000:
            raise AssertionError("livelock")
        # A CTA barrier releases when every thread arrived.
        ready = [i for i in range(threads) if runnable(i)]
        pend = [i for i in range(threads) if asyncq[i]]
        if not ready and not pend:
            if all(pc[i] >= len(progs[i]) for i in range(threads)):
                return
            stuck = {i: progs[i][pc[i]] for i in range(threads)
                     if pc[i] < len(progs[i])}
            raise AssertionError(f"deadlock: {stuck}")
        # Policies: uniform; warpgroup 0 runs ahead; async arrivals as late
        # as possible.
        choices = [("t", i) for i in ready] + [("a", i) for i in pend]
        if policy == "wg0-first":
            first = [c for c in choices if c[0] == "t" and c[1] < threads // 2]
            choices = first or choices
        elif policy == "late-async":
            first = [c for c in choices if c[0] == "t"]
            choices = first or choices
        kind, i = rng.choice(choices)
        if kind == "a":
            x, t, s = asyncq[i].pop(0)
            landed.setdefault((x, t), set()).add(i)
            if mutate != "inc-arrive":  # .noinc: the arrival counts
                bars[x + "full"][s].arrive(f"{x}full[{s}]")
            continue
        op = progs[i][pc[i]]
        if op[0] == "cta_barrier":
            arrived = cta.setdefault(op[1], set())
            if i not in arrived:
                arrived.add(i)
                if len(arrived) < threads:
                    continue  # blocked until everyone arrives
            pc[i] += 1
            continue
        pc[i] += 1
        if op[0] == "wait":
            _, _, s, _, (what, x, t) = op
            if what == "data":  # full: every thread's copy of t landed
                if len(landed.get((x, t), ())) != threads:
                    raise AssertionError(
                        f"thread {i} passed {x}full[{s}] for tile {t} "
                        f"before every copy landed")
                if stage[(x, s)][-1] != t:
                    raise AssertionError(f"{x} stage {s} holds "
                                         f"{stage[(x, s)][-1]}, not {t}")
            else:  # empty: every thread released t - S
                if len(released.get((x, t - S), ())) != threads:
                    raise AssertionError(
                        f"thread {i} refills {x} stage {s} with tile {t} "
                        f"before every thread released tile {t - S}")
        elif op[0] == "copy":
            _, x, t = op
            s = t % S
            if t >= S and len(released.get((x, t - S), ())) != threads:
                raise AssertionError(f"copy of {x} tile {t} over tile "
                                     f"{t - S} still in use")
            issued.setdefault((x, t), set()).add(i)
            if not stage.get((x, s)) or stage[(x, s)][-1] != t:
                stage.setdefault((x, s), []).append(t)
            asyncq[i].append((x, t, s))
        elif op[0] == "read":
            _, x, t = op
            s = t % S
            if stage[(x, s)][-1] != t or issued.get((x, t + S)):
                raise AssertionError(f"thread {i} reads {x} tile {t} from a "
                                     f"stage being overwritten")
            last_read[(x, t)] = last_read.get((x, t), 0) + 1
        elif op[0] == "release":
            _, x, t = op
            released.setdefault((x, t), set()).add(i)
            bars[x + "empty"][t % S].arrive(f"{x}empty[{t % S}]")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mutate", default="",
                    choices=["", "empty-parity", "count+1", "inc-arrive",
                             "skip-v-release"])
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args()
    rng = random.Random(1234)
    failures = 0
    runs = 0
    for S in (2, 3, 4):
        for n in (0, 1, 2, 3, 4, 5, 7, 64):
            for policy in ("uniform", "wg0-first", "late-async"):
                for _ in range(args.seeds if n < 64 else 3):
                    runs += 1
                    try:
                        run(n, S, 4, rng, policy, args.mutate)
                    except AssertionError as e:
                        failures += 1
                        if failures <= 3:
                            print(f"FAIL S={S} tiles={n} {policy}: {e}")
    print(f"{runs} runs, {failures} failed"
          + (f" (mutation {args.mutate})" if args.mutate else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
