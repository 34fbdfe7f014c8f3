#!/usr/bin/env python3
"""Model of the wgmma KV loop's warp-specialised schedules, kv-sync=producer,
pingpong and tma (TileToWGMMA.cpp, emitKVLoop): the producer
warpgroup's and every consumer warp's sequence of mbarrier and named-barrier
operations, run under random and adversarial interleavings (and of the
asynchronous cp.async arrivals), checking that

  - no interleaving deadlocks;
  - a consumer reads tile t of a ring only once every producer thread's
    copy of t has landed in its stage (and Q before the first tile);
  - the producer copies tile t into a stage only once every consumer warp
    released the tile the stage held before (its wgmma reads completed);
  - no mbarrier phase receives more arrivals than its count;
  - pingpong: every named-barrier phase completes with exactly the 4 warps
    of its warpgroup waiting and the 4 warps of the warpgroup before it
    arriving (warpgroup 0's first phase: its own arrivals), so the
    warpgroups take turns in order 0, 1, .., W-1, 0, ..; no warpgroup issues
    wgmma while another one's turn is open; every barrier ends with no
    arrivals pending.

Semantics modelled (PTX ISA): mbarrier as in mbarrier_protocol_sim.py
(init count, arrive, phase parity; cp.async.mbarrier.arrive.noinc arrives
once the thread's earlier cp.async landed). A named barrier (bar.sync /
bar.arrive id, 256) counts arriving threads, not phases: bar.arrive adds
its warp's 32 and goes on, bar.sync adds 32 and waits; at 256 the barrier
completes, releases its waiters and starts counting from 0 again. The
model counts warps (8 = 256 threads).

Actors: 2 producer threads stand for the producer warpgroup's 128 copiers
(the full barriers count copiers), 4 warps per consumer warpgroup (the
empty barriers count consumer warps). tma: one producer thread; its
mbarrier.arrive.expect_tx arrives at once (the full barriers count that one
arrival) and raises the phase's pending bytes, which the copy's completion,
later and asynchronously, pays off: the phase completes when both are done.
The programs below mirror emitKVLoop; keep the two in step.

Persistent CTAs (TileToWGMMA.cpp emitPersistent; bench/NOTES-hopper.md,
2026-12-01/02): a CTA takes several work items in turn; tile
t of every item sits in ring stage t mod S and each stage's barrier phases
run on across items (ring_schedule), Q sits behind a full/empty barrier
pair (phase = item), each item's last V is released for the next item's
tiles, and the turns run on across items (warpgroup 0 syncs once more at
the end). The model found that last point of the release: without it the
second item deadlocks.
Usage: producer_protocol_sim.py [--mutate NAME]   (exit 0: all checks pass)
       producer_protocol_sim.py --mutations      (exit 0: every mutation of
                                                   the protocol is caught)
"""
import argparse
import random
import sys

WARPS_PER_GROUP = 4
PRODUCERS = 2


class MBarrier:
    def __init__(self, count):
        self.count = count
        self.pending = count
        self.tx = 0  # bytes expected and not yet landed (expect_tx)
        self.phase = 0

    def _complete(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def arrive(self, what, expect_tx=0):
        if self.pending <= 0:
            raise AssertionError(f"over-arrival on {what}")
        self.tx += expect_tx
        self.pending -= 1
        self._complete()

    def complete_tx(self, what, nbytes):
        if self.tx < nbytes:
            raise AssertionError(f"{what}: bytes landed on a phase that "
                                 f"did not expect them")
        self.tx -= nbytes
        self._complete()

    def passes(self, parity):
        return (self.phase & 1) != parity


class NamedBarrier:
    """bar.sync / bar.arrive with a thread count of 2 warpgroups."""

    def __init__(self, name, count):
        self.name, self.count = name, count
        self.arrived = []  # (actor, kind) of the open phase
        self.phase = 0
        self.history = []  # per completed phase: its arrivals

    def add(self, actor, kind):
        self.arrived.append((actor, kind))
        if len(self.arrived) == self.count:
            self.history.append(self.arrived)
            self.arrived = []
            self.phase += 1


def ring_schedule(items, S, mutate):
    """Where each KV tile of a CTA's items goes, as the wgmma mapping emits
    it: tile t of an item sits in stage t mod S (the stage from the KV
    loop's counter alone; TileToWGMMA.cpp emitKVLoop), and its barrier phase
    is that stage's use count so far, the earlier items' uses included
    (the carried ringPhases: per stage the parity of its uses and whether
    it was used). Per item a list of (g, stage, use): g numbers the CTA's
    tiles in order (the data's identity), use is the stage's use index.
    Mutations: phases-reset forgets the earlier items' uses in the parities,
    used-reset forgets that a stage was used (no empty wait before its
    first use in a later item)."""
    uses = [0] * S
    out = []
    g = 0
    for n in items:
        tiles = []
        for t in range(n):
            s = t % S
            use = uses[s]
            if mutate == "phases-reset":
                use = t // S
            elif mutate == "used-reset" and t < S:
                use = uses[s] & 1  # the parity kept, "first use" assumed
            tiles.append((g, s, use))
            uses[s] += 1
            g += 1
        out.append(tiles)
    return out


def producer_program(items, S, mutate, persistent=False):
    """items: the KV tile count of each work item the CTA takes in turn (one
    item unless persistent); ring_schedule places their tiles."""
    ops = [("cta_barrier", "init")]
    q = 0  # the Qs loaded so far: an item without tiles loads none
    for n, tiles in zip(items, ring_schedule(items, S, mutate)):
        if n == 0:
            if not persistent:
                return ops
            continue
        # Persistent: the CTA's q-th Q only once every consumer warp is done
        # with the one before (Q empty, phase q - 1).
        if q >= 1 and mutate != "q-empty-skip":
            ops.append(("wait", "Qempty", 0, (q - 1) & 1, ("qrefill", "Q", q)))
        ops.append(("copy", "Q", q))
        q += 1
        for g, s, use in tiles:
            for x in "KV":
                if use >= 1 and not (mutate == "used-reset" and
                                     g - tiles[0][0] < S):
                    parity = (use + 1) & 1
                    if mutate == "empty-parity":
                        parity ^= 1
                    ops.append(("wait", x + "empty", s, parity,
                                ("refill", x, g)))
                ops.append(("copy", x, g, s))
    return ops


def consumer_program(items, S, groups, group, pingpong, mutate,
                     persistent=False):
    """One item: the last warpgroup does not pass its last turn, so every
    named barrier ends balanced. Persistent (several items, the design of
    bench/NOTES-hopper.md "Persistent CTAs"): the turns run on across items
    (warpgroup 0's first arrival once, before the first item), every turn
    is passed on, and after the last item warpgroup 0 takes one more
    bar.sync, which the last warpgroup's final hand-off completes; each
    warp arrives on Q empty once its item's last wgmma completed."""
    ops = [("cta_barrier", "init")]
    if not persistent and items[0] == 0:
        return ops
    nxt = (group + 1) % groups

    def turn(reads, last=False):
        # bar.sync (wait for my turn), the wgmmas, bar.arrive (the next
        # warpgroup's turn).
        c = []
        if pingpong:
            c.append(("bar_sync", group))
        c += [("issue", group, reads), ("issued", group)]
        passes = persistent or not (last and group == groups - 1)
        if mutate == "last-arrive":
            passes = True
        if mutate == "no-turn-end" and t_of[0] == 1:
            passes = False
        if pingpong and passes:
            c.append(("bar_arrive", nxt))
        return c

    if pingpong and group == 0 and mutate != "no-first-turn":
        ops.append(("bar_arrive", 0))
    t_of = [0]
    q = 0
    for i, (n, tiles) in enumerate(zip(items,
                                       ring_schedule(items, S, mutate))):
        if mutate == "restart-turns" and i >= 1 and pingpong and group == 0:
            ops.append(("bar_arrive", 0))
        if n == 0:  # O = 0, LSE = -inf: no Q, no tile, no turn
            continue
        # The CTA's q-th Q: full phase q.
        ops.append(("wait", "Qfull", 0, q & 1, ("data", "Q", q)))
        for t, (g, s, use) in enumerate(tiles):
            t_of[0] = t
            ops.append(("wait", "Kfull", s, use & 1, ("data", "K", g)))
            if t > 0:
                gp, sp, usep = tiles[t - 1]
                ops.append(("wait", "Vfull", sp, usep & 1,
                            ("data", "V", gp)))
            reads = [("Q", q), ("K", g)] + ([("V", g - 1)] if t > 0 else [])
            ops += turn(reads)
            ops.append(("release", "K", g, s))  # after wgmma.wait_group 1
            if t > 0 and mutate != "skip-v-release":
                ops.append(("release", "V", g - 1, sp))  # after wait_group 0
        # Persistent: every Q·Kᵀ of the item was waited for in its loop, so
        # Q is released before the epilogue's P·V (TileToWGMMA.cpp).
        if persistent:
            ops.append(("release", "Q", q, 0))
        q += 1
        g, s, use = tiles[-1]
        ops.append(("wait", "Vfull", s, use & 1, ("data", "V", g)))
        ops += turn([("V", g)], last=True)
        # Persistent: the next item's tiles refill this stage, so the item's
        # last V is released too (one item: nobody refills it).
        if persistent and mutate != "keep-last-v":
            ops.append(("release", "V", g, s))  # after wait_group 0
    if persistent and pingpong and group == 0 and \
            mutate != "no-final-sync":
        ops.append(("bar_sync", 0))  # the last warpgroup's final hand-off
    return ops


def run(items, S, groups, pingpong, rng, policy, mutate, tma=False,
        persistent=False):
    """items: a CTA's work items (their KV tile counts); one unless
    persistent."""
    consumers = groups * WARPS_PER_GROUP
    producers = 1 if tma else PRODUCERS
    full = 1 if tma else PRODUCERS
    if mutate == "full-count+1":
        full += 1
    bars = {"Qfull": [MBarrier(full)], "Qempty": [MBarrier(consumers)]}
    for x in "KV":
        bars[x + "full"] = [MBarrier(full) for _ in range(S)]
        count = consumers + (1 if mutate == "empty-count+1" else 0)
        bars[x + "empty"] = [MBarrier(count) for _ in range(S)]
    named = [NamedBarrier(f"B{g}", 2 * WARPS_PER_GROUP) for g in range(groups)]
    actors = ([("P", i) for i in range(producers)] +
              [("C", i) for i in range(consumers)])
    progs = [producer_program(items, S, mutate, persistent) if kind == "P"
             else consumer_program(items, S, groups, i // WARPS_PER_GROUP,
                                   pingpong, mutate, persistent)
             for kind, i in actors]
    pc = [0] * len(actors)
    asyncq = [[] for _ in actors]  # a producer's pending copies, FIFO
    placed = {}  # (x, t) -> the stage tile t was copied into
    landed = {}  # (x, t) -> producers whose copy landed
    released = {}  # (x, t) -> consumer warps that released it
    holds = {}  # (x, stage) -> tile copied there last
    in_flight = {}  # (x, t) -> consumer warps whose reads are running
    waiting = {}  # actor -> (barrier, phase) of a pending bar.sync
    turn_open = {}  # group -> warps inside their turn
    turns_of = [0] * len(actors)  # a consumer warp's turns so far
    done = {}  # global turn k * groups + group -> warps done issuing
    cta = set()

    def runnable(a):
        if a in waiting:
            nb, phase = waiting[a]
            return named[nb].phase > phase
        if pc[a] >= len(progs[a]):
            return False
        op = progs[a][pc[a]]
        if op[0] == "wait":
            return bars[op[1]][op[2]].passes(op[3])
        if op[0] == "cta_barrier":
            return len(cta) == len(actors) or a not in cta
        return True

    steps = 0
    while True:
        steps += 1
        if steps > 5_000_000:
            raise AssertionError("livelock")
        ready = [a for a in range(len(actors)) if runnable(a)]
        pend = [a for a in range(len(actors)) if asyncq[a]]
        if not ready and not pend:
            if all(pc[a] >= len(progs[a]) for a in range(len(actors))):
                break
            stuck = {a: progs[a][pc[a]] for a in range(len(actors))
                     if pc[a] < len(progs[a])}
            raise AssertionError(f"deadlock: {stuck}")
        choices = [("t", a) for a in ready] + [("a", a) for a in pend]
        if policy == "producer-first":
            first = [c for c in choices if actors[c[1]][0] == "P"]
            choices = first or choices
        elif policy == "consumers-first":
            first = [c for c in choices if actors[c[1]][0] == "C"]
            choices = first or choices
        elif policy == "late-async":
            first = [c for c in choices if c[0] == "t"]
            choices = first or choices
        kind, a = rng.choice(choices)
        if kind == "a":
            x, t, s = asyncq[a].pop(0)
            landed.setdefault((x, t), set()).add(a)
            bar = bars["Qfull"][0] if x == "Q" else bars[x + "full"][s]
            if tma:  # the box bytes pay off the expect_tx
                bar.complete_tx(f"{x}full", 1)
            else:  # cp.async.mbarrier.arrive.noinc
                bar.arrive(f"{x}full")
            continue
        if a in waiting:  # a bar.sync whose phase completed
            del waiting[a]
            continue
        op = progs[a][pc[a]]
        if op[0] == "cta_barrier":
            if a not in cta:
                cta.add(a)
                if len(cta) < len(actors):
                    continue
            pc[a] += 1
            continue
        pc[a] += 1
        if op[0] == "wait":
            _, _, s, _, (what, x, t) = op
            if what == "data":
                if len(landed.get((x, t), ())) != producers:
                    raise AssertionError(f"warp {a} passed {x}full for tile "
                                         f"{t} before every copy landed")
                if holds.get((x, s)) != t:
                    raise AssertionError(f"{x} stage {s} holds "
                                         f"{holds.get((x, s))}, not {t}")
            elif what == "qrefill":
                if len(released.get(("Q", t - 1), ())) != consumers:
                    raise AssertionError(f"producer loads Q of item {t} "
                                         f"before every consumer warp was "
                                         f"done with item {t - 1}'s")
            elif holds.get((x, s)) != t and ((x, s) not in holds or len(
                    released.get((x, holds[(x, s)]), ())) != consumers):
                raise AssertionError(f"producer refills {x} stage {s} with "
                                     f"tile {t} before every consumer warp "
                                     f"released tile {holds.get((x, s))}")
        elif op[0] == "copy":
            x, t = op[1], op[2]
            s = op[3] if x != "Q" else 0
            if x == "Q":  # one buffer: item t over item t - 1's
                if t >= 1 and len(released.get(("Q", t - 1), ())) != \
                        consumers:
                    raise AssertionError(f"copy of Q for item {t} over item "
                                         f"{t - 1}'s still in use")
                holds[("Q", 0)] = t
            else:
                prev = holds.get((x, s))
                if prev == t:  # another producer thread's share of t
                    prev = None
                if prev is not None and \
                        len(released.get((x, prev), ())) != consumers:
                    raise AssertionError(f"copy of {x} tile {t} over tile "
                                         f"{prev} still in use")
                if prev is not None and in_flight.get((x, prev)):
                    raise AssertionError(f"copy of {x} tile {t} under "
                                         f"running reads of tile {prev}")
                holds[(x, s)] = t
            placed[(x, t)] = s
            if tma:  # arrive.expect_tx first, then the copy in flight
                bar = bars["Qfull"][0] if x == "Q" else bars[x + "full"][s]
                bar.arrive(f"{x}full", expect_tx=0 if mutate == "no-expect-tx"
                           else 1)
            asyncq[a].append((x, t, s))
        elif op[0] == "issue":
            _, group, reads = op
            for g, warps in turn_open.items():
                if g != group and warps and pingpong:
                    raise AssertionError(f"warpgroup {group} issues wgmma "
                                         f"inside warpgroup {g}'s turn")
            # The warp's k-th turn is the (k * groups + group)-th of the
            # block: every earlier one is over.
            turn = turns_of[a] * groups + group
            if pingpong and any(done.get(e, 0) != WARPS_PER_GROUP
                                for e in range(turn)):
                raise AssertionError(f"warpgroup {group} takes turn {turn} "
                                     f"before the earlier ones ended")
            turn_open[group] = turn_open.get(group, 0) + 1
            for x, t in reads:
                held = holds.get((x, placed.get((x, t))))
                if held != t:
                    raise AssertionError(f"warp {a} reads {x} tile {t} from "
                                         f"a stage that holds {held}")
                in_flight.setdefault((x, t), set()).add(a)
        elif op[0] == "issued":
            turn_open[op[1]] -= 1
            turn = turns_of[a] * groups + op[1]
            done[turn] = done.get(turn, 0) + 1
            turns_of[a] += 1
        elif op[0] == "release":
            _, x, t, stage = op
            in_flight.get((x, t), set()).discard(a)
            released.setdefault((x, t), set()).add(a)
            bars[x + "empty"][stage].arrive(f"{x}empty[{stage}]")
        elif op[0] == "bar_arrive":
            named[op[1]].add(a, "arrive")
        elif op[0] == "bar_sync":
            nb = named[op[1]]
            phase = nb.phase
            nb.add(a, "sync")
            if nb.phase == phase:  # not completed by this warp: wait
                waiting[a] = (op[1], phase)
    if not pingpong:
        return
    for g, nb in enumerate(named):
        if nb.arrived:
            raise AssertionError(f"{nb.name} ends with {len(nb.arrived)} "
                                 f"warps' arrivals pending")
        for k, phase in enumerate(nb.history):
            group_of = lambda a: (a - producers) // WARPS_PER_GROUP
            syncs = sorted(group_of(x) for x, kind in phase if kind == "sync")
            arrives = sorted(group_of(x) for x, kind in phase
                             if kind == "arrive")
            before = g if k == 0 and g == 0 else (g - 1) % groups
            if syncs != [g] * WARPS_PER_GROUP or \
                    arrives != [before] * WARPS_PER_GROUP:
                raise AssertionError(f"{nb.name} phase {k}: waits of "
                                     f"{syncs}, arrivals of {arrives}")


MUTATIONS = ["empty-parity", "empty-count+1", "skip-v-release",
             "no-first-turn", "last-arrive", "no-turn-end", "full-count+1",
             "no-expect-tx", "q-empty-skip", "restart-turns", "no-final-sync",
             "keep-last-v", "phases-reset", "used-reset"]


def cases(seeds, persistent_first=False):
    """Every (items, S, groups, pingpong, policy, tma, persistent) run."""
    if persistent_first:
        yield from persistent_cases(seeds)
    for mode in ("producer", "pingpong", "tma"):
        for groups in (2, 3):
            for S in (2, 3, 4):
                for n in (0, 1, 2, 3, 5, 9, 33):
                    for policy in ("uniform", "producer-first",
                                   "consumers-first", "late-async"):
                        for _ in range(seeds if n < 33 else 1):
                            yield ([n], S, groups, mode != "producer", policy,
                                   mode == "tma", False)
    if not persistent_first:
        yield from persistent_cases(seeds)


def persistent_cases(seeds):
    # Persistent CTAs (tma, several work items per CTA, as the wgmma
    # mapping's persistent option emits them: TileToWGMMA.cpp
    # emitPersistent; items without tiles load no Q; odd tile counts leave
    # the stages' phases apart).
    for groups in (2, 3):
        for S in (2, 3, 4):
            for items in ([1, 1], [3, 0, 5], [0, 2], [4, 1, 1, 6], [9, 2],
                          [2, 2, 2, 0], [0, 0, 3, 0, 1], [1, 3, 2, 5, 1]):
                for policy in ("uniform", "producer-first", "consumers-first",
                               "late-async"):
                    for _ in range(seeds):
                        yield (items, S, groups, True, policy, True, True)


def describe(case):
    items, S, groups, pingpong, policy, tma, persistent = case
    mode = ("persistent" if persistent else
            "tma" if tma else "pingpong" if pingpong else "producer")
    return f"{mode} groups={groups} S={S} items={items} {policy}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mutate", default="", choices=[""] + MUTATIONS)
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--mutations", action="store_true",
                    help="check that every mutation fails the model (each "
                         "run until its first failure); exit 1 if one never "
                         "does")
    args = ap.parse_args()
    if args.mutations:
        survivors = []
        for m in MUTATIONS:
            rng = random.Random(4321)
            caught = None
            for case in cases(1, persistent_first=True):
                items, S, groups, pingpong, policy, tma, persistent = case
                try:
                    run(items, S, groups, pingpong, rng, policy, m, tma=tma,
                        persistent=persistent)
                except AssertionError as e:
                    caught = f"{describe(case)}: {str(e)[:120]}"
                    break
            print(f"mutation {m}: " + (f"fails, {caught}" if caught
                                        else "NOT caught"))
            if not caught:
                survivors.append(m)
        return 1 if survivors else 0
    rng = random.Random(4321)
    runs = failures = 0
    for case in cases(args.seeds):
        items, S, groups, pingpong, policy, tma, persistent = case
        runs += 1
        try:
            run(items, S, groups, pingpong, rng, policy, args.mutate, tma=tma,
                persistent=persistent)
        except AssertionError as e:
            failures += 1
            if failures <= 3:
                print(f"FAIL {describe(case)}: {e}")
    print(f"{runs} runs, {failures} failed"
          + (f" (mutation {args.mutate})" if args.mutate else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
