//===- WGMMAKVLoop.cpp - the KV loop and its rings (sm_90a) ---------------===//
//
// The wgmma mapping's KV loop: the K/V rings (cp.async or TMA, CTA barriers
// or mbarriers, a producer warpgroup), Q·Kᵀ and P·V overlapped with the
// softmax, ping-pong turns between consumer warpgroups.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/WGMMAEmitter.h"

#include "attnc/abi/TensorMaps.h"

using namespace mlir;
using namespace attnc;
using namespace attnc::wgmma;

/// The attention KV loop as the wgmma schedule takes it: K and V staged at
/// the induction variable, S = Q·Kᵀ with Q from before the loop, the
/// softmax ops, and last O = P·V + rescale(O, α) yielded.
namespace {
struct KVLoop {
  tile::LoadOp k, v;
  tile::DotOp qk, pv;
  tile::RescaleOp rescale;
  unsigned accArg; // the iter arg that carries O
};
} // namespace

static FailureOr<KVLoop> matchKVLoop(scf::ForOp op) {
  KVLoop m;
  Operation *last = op.getBody()->getTerminator()->getPrevNode();
  auto pv = dyn_cast_or_null<tile::DotOp>(last);
  if (!pv || pv.getTransposeB() || !pv.getAcc() || !pv->hasOneUse())
    return failure();
  m.pv = pv;
  m.rescale = pv.getAcc().getDefiningOp<tile::RescaleOp>();
  auto arg = dyn_cast<BlockArgument>(m.rescale ? m.rescale.getAcc() : Value());
  if (!m.rescale || !m.rescale->hasOneUse() || !arg ||
      arg.getOwner() != op.getBody() || !arg.hasOneUse() ||
      arg.getArgNumber() == 0)
    return failure();
  m.accArg = arg.getArgNumber() - 1;
  if (op.getBody()->getTerminator()->getOperand(m.accArg) != pv.getResult())
    return failure();
  for (auto dot : op.getBody()->getOps<tile::DotOp>())
    if (dot != pv && dot.getTransposeB() && !dot.getAcc() &&
        op.isDefinedOutsideOfLoop(dot.getLhs()))
      m.qk = dot;
  SmallVector<tile::LoadOp> staged = gpu_emit::prefetchableLoads(op);
  if (!m.qk || staged.size() != 2)
    return failure();
  m.k = m.qk.getRhs().getDefiningOp<tile::LoadOp>();
  m.v = pv.getRhs().getDefiningOp<tile::LoadOp>();
  if (!m.k || !m.v || !llvm::is_contained(staged, m.k) ||
      !llvm::is_contained(staged, m.v) || m.k == m.v)
    return failure();
  return m;
}

LogicalResult WGMMAEmitter::emitFor(scf::ForOp op) {
  if (failed(matchKVLoop(op)))
    return op.emitError("the wgmma mapping expects the attention KV loop "
                        "(K and V tiles, Q·Kᵀ, softmax, then P·V into the "
                        "rescaled accumulator)");
  return emitKVLoop(op);
}

// The schedule (S = kvStages, tile j of the loop):
//   prologue  copy K_0 .. K_{S-2} and V_0 .. V_{S-3}, one group per tile
//   iter j    wait for K_j and V_{j-1}; barrier (every warpgroup is past
//             iteration j-1, so K_{j-1} and V_{j-2} are free); copy K_{j+S-1}
//             and V_{j+S-2} into their stages; issue QKᵀ_j, then
//             P_{j-1}·V_{j-1} into O; wait for QKᵀ_j only; score and softmax of
//             tile j under the P·V wgmma; wait for it; O = α_j · O; P_j stays
//             in registers
//   epilogue  O += P_last · V_last
// so the softmax of a tile runs while the tensor cores do the previous
// tile's P·V (FlashAttention-3's intra-warpgroup overlap), and the copies
// of K and V run S - 1 tiles ahead. The first tile is peeled (no P·V
// before it), and the whole loop is skipped when it has no tile (fully
// masked rows keep O = 0, m = -inf, l = 0).
// kv-sync=mbarrier replaces the per-tile wait + CTA barrier: iteration j
// waits on the full barriers of K_j and V_{j-1} (every thread's copies
// landed), and each copy into a stage first waits on that stage's empty
// barrier (every thread released the tile it held); K_j is released after
// the wait for QKᵀ_j, V_{j-1} after the wait for P·V. No commit groups
// for the rings then (Q keeps its own); tests/unit/mbarrier_protocol_sim.py
// models the protocol.
LogicalResult WGMMAEmitter::emitKVLoop(scf::ForOp op) {
  KVLoop kv = *matchKVLoop(op);
  const int64_t S = kvStages;
  if (nextStage + 2 > buffers.size())
    return op.emitError("more staged tiles than workgroup buffers");
  // The frame carves the rings in the order of the loads.
  bool kFirst = kv.k->isBeforeInBlock(kv.v);
  Value kRing = buffers[nextStage + (kFirst ? 0 : 1)];
  Value vRing = buffers[nextStage + (kFirst ? 1 : 0)];
  nextStage += 2;
  Value qBuf = frags[kv.qk.getLhs()].regs[0];
  int64_t n = kv.qk.getResult().getType().getDimSize(1);
  int64_t d = cast<MemRefType>(qBuf.getType()).getDimSize(1);
  int64_t keys = kv.v.getResult().getType().getDimSize(0);
  int64_t kStageBytes = n * d * 2, vStageBytes = keys * d * 2;

  Value lb = map.lookup(op.getLowerBound()),
        ub = map.lookup(op.getUpperBound());
  Value step = map.lookup(op.getStep());
  // A stream-K piece runs tiles [pieceLo, pieceHi) of the loop.
  if (pieceLo && walk != Walk::Whole) {
    Value first = add(lb, arith::MulIOp::create(b, loc, pieceLo, step));
    ub = arith::MinUIOp::create(
        b, loc, ub, add(lb, arith::MulIOp::create(b, loc, pieceHi, step)));
    lb = first;
  }
  auto tileRow = [&](Value t) { // lb + t · step
    return add(lb, arith::MulIOp::create(b, loc, t, step));
  };
  // Tile t of the loop sits in stage t mod S of each ring, also in a
  // persistent block's later items: the stage (and so every wgmma
  // descriptor) derives from the loop counter alone, which ptxas keeps in
  // the uniform datapath. (Counting slots across items instead, stage
  // (base + t) mod S, makes ptxas rebuild each descriptor per thread, R2UR
  // before every HGMMA: 633 SASS instructions per tile against 555;
  // bench/NOTES-hopper.md, "persistent CTAs", 2026-12-01.) Only the barrier
  // waits read what the earlier items left (ringPhases).
  const bool itemWalk = walk != Walk::Whole;
  auto stageOf = [&](Value t) {
    return arith::RemUIOp::create(b, loc, t, idx(S));
  };
  // Persistent: bit `bit0` + stage of ringPhases, as an index 0 or 1.
  auto ringPhaseBit = [&](Value t, int64_t bit0) -> Value {
    Value at = add(stageOf(t), bit0);
    return arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, ringPhases, at), idx(1));
  };
  auto stageBytes = [&](Value stage, int64_t bytes) {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                      mul(stage, bytes));
  };
  // With mbarriers: 4·S objects, [full K, empty K, full V, empty V] x
  // stage. full[s] completes when every thread's copies into stage s
  // landed (one cp.async.mbarrier.arrive.noinc per thread: .noinc makes the
  // async arrival count against the init count, = threads); empty[s] when
  // every warp's wgmma reads of it completed (one mbarrier.arrive per warp,
  // by lane 0 after the warp's wgmma wait; init count = warps). Stage s
  // holds tiles s, s + S, ...: tile t's use is phase t / S, so its parity
  // is (t / S) & 1, and refilling it waits for the phase before, the
  // parity (t / S + 1) & 1 (for t >= S only: a fresh barrier would pass a
  // wait for parity 1 anyway, but t < S needs no wait).
  // They live in the frame's scratch bytes after the K/V rings, inside the
  // dynamic shared memory: a static workgroup attribution would be laid out
  // after the dynamic-memory symbol, i.e. on top of Q's first row (the hang
  // of the first kv-sync=mbarrier attempt, bench/NOTES-hopper.md).
  // kv-sync=producer/pingpong: the producer warpgroup's 128 threads copy
  // (Q too, on a full barrier of its own after the rings' objects) and
  // arrive on the full barriers; the consumers only wait and release.
  const int64_t threads = consumerThreads();
  const int64_t copiers = producer ? kProducerThreads : threads;
  // kv-sync=tma: one thread's arrive.expect_tx per phase; the bytes of the
  // tile's TMA copies complete it.
  const bool tma = !tensorMaps.empty();
  const int64_t fullArrivals = tma ? 1 : copiers;
  Value copier = tid; // this thread's index among the copiers
  if (mbarriers && !persistent)
    barBase = scratchAddress(oStagingBytes);
  auto sharedPtrT = LLVM::LLVMPointerType::get(b.getContext(), 3);
  auto asParity = [&](Value phase) -> Value { // phase & 1 as i32
    return arith::IndexCastOp::create(
        b, loc, b.getI32Type(), arith::AndIOp::create(b, loc, phase, idx(1)));
  };
  // Tile t is its stage's use t / S of the loop (+ the earlier items'
  // uses, persistent): the phase its full barrier completes.
  auto parityOf = [&](Value t, int64_t phaseOffset) -> Value {
    Value phase = add(arith::DivUIOp::create(b, loc, t, idx(S)), phaseOffset);
    if (itemWalk)
      phase = add(phase, ringPhaseBit(t, 0));
    return asParity(phase);
  };
  // A try_wait.parity loop (the op's inline PTX spins until the phase
  // completed), with CUTLASS's suspend-time hint of 10 ms.
  auto waitBarrier = [&](Value addr, Value parity) {
    NVVM::MBarrierTryWaitParityOp::create(
        b, loc, addr, parity,
        LLVM::ConstantOp::create(b, loc, b.getI32Type(), 0x989680));
  };
  // full: one arrival per copying thread (its own copies); empty: one per
  // consumer warp. (Persistent: once per block, before the role split.)
  if (mbarriers && !persistent)
    initBarriers(fullArrivals);
  // Before tile t (K or V) goes into its stage: every consumer warp
  // released the tile the stage held (t - S, or an earlier item's;
  // nothing to wait for before the stage's first use).
  auto emptyWait = [&](bool isK, Value t) {
    Value reused =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, t, idx(S));
    if (itemWalk)
      reused = arith::OrIOp::create(
          b, loc, reused,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                ringPhaseBit(t, kStageUsedBit), idx(0)));
    gpu_emit::emitIfThen(b, loc, reused, [&] {
      waitBarrier(barrierAt(isK ? kEmptyK : kEmptyV, stageOf(t)),
                  parityOf(t, 1));
    });
  };
  // kv-sync=tma: the TMA copies of rows [row, row + R) of `load`'s view
  // (one box of 64 columns x R rows per column block, 128-byte swizzle:
  // the layout the descriptors read) into `buf` (+ `offset` bytes: a ring
  // stage), completing on `bar`, which first expects their bytes. Rows past
  // the sequence end read as zeros (the tensor map's bounds).
  // A varlen kernel's views start at their sequence's first row (their
  // offset, in rows of the view's row stride); the tensor maps address the
  // whole packed tensor, so the box coordinates add that row. Rows past the
  // sequence's end are then the next sequence's (or the tensor's last
  // rows): Q rows past it are never stored, K's are masked by tile.score
  // and V's weighted by P = 0.
  const bool varlen = gpu_emit::isVarlenKernel(kernel);
  auto firstRowOf = [&](tile::LoadOp load) -> Value {
    return viewFirstRow(map.lookup(load.getSource()));
  };
  // A paged cache's tile (tensor map [pages, H, page_size, D]) goes in
  // boxes of abi::pagedBoxRows rows, each inside one page: box i's rows
  // [row + iR, row + (i+1)R) are rows (row + iR) mod page_size of page
  // table[batch, (row + iR) / page_size], landing iR rows down the stage
  // (whole 8-row swizzle atoms, so the boxes tile it as one box would).
  // Rows past the sequence's end read the last page's rows (masked by
  // tile.score, V's weighted by P = 0), so no table entry past the
  // sequence's is read.
  auto pagedBox = [&](tile::LoadOp load, Value r) -> std::pair<Value, Value> {
    int64_t page = cast<MemRefType>(load.getSource().getType()).getDimSize(2);
    int64_t rows = load.getResult().getType().getDimSize(0);
    int64_t boxRows = abi::pagedBoxRows(page, rows);
    Value seqEnd = arith::MaxSIOp::create(
        b, loc,
        arith::SubIOp::create(b, loc, map.lookup(load.getLength()), idx(1)),
        idx(0));
    Value clamped = arith::MinSIOp::create(b, loc, r, seqEnd);
    Value pageIdx = memref::LoadOp::create(
        b, loc, map.lookup(load.getBlockTable()),
        ValueRange{map.lookup(load.getBatch()),
                   arith::DivUIOp::create(b, loc, clamped, idx(page))});
    // The clamped row's box: r's own (r is a multiple of boxRows) while
    // inside the sequence.
    Value inPage = arith::RemUIOp::create(b, loc, clamped, idx(page));
    Value boxStart = arith::SubIOp::create(
        b, loc, inPage, arith::RemUIOp::create(b, loc, inPage, idx(boxRows)));
    return {boxStart,
            arith::IndexCastOp::create(b, loc, b.getIndexType(), pageIdx)};
  };
  auto tmaTile = [&](tile::LoadOp load, Value buf, Value row, Value offset,
                     Value bar, Value tensorMap) {
    if (varlen && !load.isPaged())
      row = add(row, firstRowOf(load));
    auto tt = load.getResult().getType();
    int64_t rows = tt.getDimSize(0), dim = tt.getDimSize(1);
    NVVM::MBarrierArriveExpectTxOp::create(
        b, loc, Type(), bar,
        LLVM::ConstantOp::create(b, loc, b.getI32Type(), rows * dim * 2),
        NVVM::MemScopeKind::CTA, /*relaxed=*/false, Value());
    Value base = arith::IndexCastOp::create(
        b, loc, b.getI64Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf));
    if (offset)
      base = arith::AddIOp::create(b, loc, base, offset);
    auto asI32 = [&](Value v) {
      return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
    };
    // The whole tile in one box (per column block), or boxes of
    // abi::pagedBoxRows rows of one page each: a loop over the boxes, the
    // page looked up as each is issued. (With 4 boxes or more per tile,
    // pages of 32 rows or fewer at block_n 128, ptxas computes the
    // consumers' P·V descriptors in vector registers: D128 655 SASS
    // instructions per KV tile against 621, unrolled boxes or not.)
    auto clusterPtrT = LLVM::LLVMPointerType::get(b.getContext(), 7);
    auto issueBox = [&](Value boxRow, Value outer, Value at) {
      Value coords[] = {Value(), asI32(boxRow),
                        asI32(map.lookup(load.getHead())), asI32(outer)};
      for (int64_t block = 0; block < dim / wgmma::kSwizzleElems; ++block) {
        Value dst = LLVM::IntToPtrOp::create(
            b, loc, sharedPtrT,
            arith::AddIOp::create(b, loc, at,
                                  i64(block * rows * wgmma::kSwizzleBytes))
                .getResult());
        coords[0] = LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                             block * wgmma::kSwizzleElems);
        NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
            b, loc, LLVM::AddrSpaceCastOp::create(b, loc, clusterPtrT, dst),
            tensorMap, ValueRange(coords), bar, ValueRange{}, Value(), Value(),
            NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false,
            NVVM::CTAGroupKindAttr(), Value());
      }
    };
    if (!load.isPaged()) {
      issueBox(row, map.lookup(load.getBatch()), base);
      return;
    }
    const int64_t boxRows = abi::pagedBoxRows(
        cast<MemRefType>(load.getSource().getType()).getDimSize(2), rows);
    scf::ForOp::create(
        b, loc, idx(0), idx(rows), idx(boxRows), ValueRange{},
        [&](OpBuilder &lb, Location l, Value first, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          auto [boxRow, page] = pagedBox(load, add(row, first));
          Value at = arith::AddIOp::create(
              b, loc, base,
              arith::IndexCastOp::create(
                  b, loc, b.getI64Type(),
                  arith::MulIOp::create(b, loc, first,
                                        idx(wgmma::kSwizzleBytes))));
          issueBox(boxRow, page, at);
          scf::YieldOp::create(b, l);
        });
  };
  // Copies of tile t (K or V) into its stage, nothing past the loop's end.
  // With mbarriers: first wait until every thread has released the tile
  // the stage held (t - S), then arrive on the stage's full barrier when
  // this thread's copies land.
  auto copyTile = [&](tile::LoadOp load, Value ring, Value t) {
    Value row = tileRow(t);
    Value live =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, ub);
    bool isK = load == kv.k;
    if (mbarriers)
      emptyWait(isK, t);
    issueStage(load, ring, row, copier, copiers, stageOf(t), live);
    if (mbarriers)
      NVVM::CpAsyncMBarrierArriveOp::create(
          b, loc, barrierAt(isK ? kFullK : kFullV, stageOf(t)),
          /*noinc=*/true);
  };
  // Before wgmma reads tile t of a ring: its copies have landed (every
  // thread's), and the async proxy sees them.
  auto waitTile = [&](bool isK, Value t) {
    waitBarrier(barrierAt(isK ? kFullK : kFullV, stageOf(t)), parityOf(t, 0));
  };
  auto fenceProxy = [&]() {
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
  };
  // One arrive per warp, by lane 0: it follows the warp-aligned
  // wgmma.wait_group, so every lane of the warp is past its reads (32x
  // fewer shared-memory atomics on one word than an arrive per thread).
  Value laneZero;
  if (mbarriers)
    laneZero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, idx(0));
  auto release = [&](bool isK, Value t) {
    Value addr = barrierAt(isK ? kEmptyK : kEmptyV, stageOf(t));
    gpu_emit::emitIfThen(b, loc, laneZero, [&] {
      NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(), addr, Value());
    });
  };

  // kv-sync=pingpong: consumer warpgroup w issues its wgmmas between a
  // bar.sync on named barrier 1 + w and a bar.arrive on the next
  // warpgroup's (both counting the two warpgroups' 256 threads), so the
  // warpgroups take turns on the tensor cores and each one's softmax runs
  // under the other's GEMMs (FlashAttention-3's ping-pong). Warpgroup 0
  // arrives once on its own barrier first, to go first; the last
  // warpgroup does not arrive after its last turn, so every barrier ends
  // with as many arrivals as waits.
  const int64_t consumerGroups = threads / 128;
  Value turnBarrier, nextBarrier, notLastGroup;
  if (pingPong) {
    Value wg = arith::DivUIOp::create(b, loc, tid, idx(128));
    auto asI32 = [&](Value v) {
      return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
    };
    turnBarrier = asI32(add(wg, 1));
    nextBarrier = asI32(add(
        arith::RemUIOp::create(b, loc, add(wg, 1), idx(consumerGroups)), 1));
    notLastGroup = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, wg,
                                         idx(consumerGroups - 1));
  }
  Value turnThreads = LLVM::ConstantOp::create(b, loc, b.getI32Type(), 2 * 128);
  auto takeTurn = [&]() {
    if (pingPong)
      NVVM::BarrierOp::create(b, loc, TypeRange{}, turnBarrier, turnThreads,
                              NVVM::BarrierReductionAttr(), Value());
  };
  auto passTurn = [&](bool last) {
    if (!pingPong)
      return;
    if (!last) {
      NVVM::BarrierArriveOp::create(b, loc, nextBarrier, turnThreads);
      return;
    }
    gpu_emit::emitIfThen(b, loc, notLastGroup, [&] {
      NVVM::BarrierArriveOp::create(b, loc, nextBarrier, turnThreads);
    });
  };

  // The loop state: the tile loop's iter args, then P of the previous tile.
  SmallVector<std::pair<Frags::Kind, size_t>> shapes;
  SmallVector<Value> inits;
  for (Value v : op.getInitArgs()) {
    const Frags &f = frags[v];
    shapes.push_back({f.kind, f.regs.size()});
    llvm::append_range(inits, f.regs);
  }
  size_t stateRegs = inits.size();
  auto unflatten = [&](ValueRange flat, ValueRange tileValues) {
    size_t at = 0;
    for (auto [i, v] : llvm::enumerate(tileValues)) {
      auto [kind, count] = shapes[i];
      frags[v] = {kind, SmallVector<Value>(flat.slice(at, count))};
      at += count;
    }
  };
  auto yielded = [&]() { // after a body: the new state, O before its P·V
    SmallVector<Value> out;
    for (auto [i, v] :
         llvm::enumerate(op.getBody()->getTerminator()->getOperands()))
      llvm::append_range(out, i == kv.accArg
                                  ? frags[kv.rescale.getResult()].regs
                                  : frags[v].regs);
    return out;
  };

  // One iteration at `iv` with the state `state` (the P of the previous
  // tile after the tile loop's iter args, or none on the first).
  // A stream-K piece's loop counts tiles (t from 1) and derives the key
  // position from them: counting positions from its dynamic first key
  // takes the loop's counter and wgmma descriptors out of ptxas's uniform
  // datapath (654 SASS instructions per tile against 616).
  const bool countTiles = bool(pieceLo) && walk != Walk::Whole;
  auto body = [&](Value at, ValueRange state, bool first) -> LogicalResult {
    Value iv = countTiles ? tileRow(at) : at;
    map.map(op.getInductionVar(), iv);
    unflatten(state.take_front(stateRegs), op.getRegionIterArgs());
    SmallVector<Value> pPrev(state.drop_front(stateRegs));
    Value t = countTiles
                  ? at
                  : Value(arith::DivUIOp::create(
                        b, loc, arith::SubIOp::create(b, loc, iv, lb), step));
    Value oAcc;
    for (Operation &nested : op.getBody()->without_terminator()) {
      loc = nested.getLoc();
      if (&nested == kv.k || &nested == kv.v || &nested == kv.rescale)
        continue;
      if (&nested == kv.qk) {
        if (mbarriers) {
          // Q: the producer's full barrier, or its own commit group of
          // every thread's copies.
          // (Persistent: the block's qItems-th Q, parity qItems & 1.)
          if (first && producer)
            waitBarrier(
                qFullBarrier(),
                itemWalk ? asParity(qItems)
                         : LLVM::ConstantOp::create(b, loc, b.getI32Type(), 0));
          else if (first)
            waitForCopies(0);
          waitTile(/*isK=*/true, t);
          if (!first)
            waitTile(/*isK=*/false, arith::SubIOp::create(b, loc, t, idx(1)));
          fenceProxy();
          if (!producer) { // the tiles S - 1 ahead, by every thread
            copyTile(kv.k, kRing, add(t, S - 1));
            copyTile(kv.v, vRing, add(t, S - 2));
          }
        } else { // kv-sync=barrier: cp.async groups, no mbarriers
          waitForCopies(S - 2);
          copyTile(kv.k, kRing, add(t, S - 1));
          copyTile(kv.v, vRing, add(t, S - 2));
          commitGroup();
        }
        takeTurn();
        Value s =
            issueQK(qBuf, kRing, stageBytes(stageOf(t), kStageBytes), n, d);
        if (!first) {
          Value prev = arith::SubIOp::create(b, loc, t, idx(1));
          oAcc =
              issuePV(pPrev, vRing, stageBytes(stageOf(prev), vStageBytes),
                      keys, frags[op.getRegionIterArgs()[kv.accArg]].regs, d);
        }
        passTurn(/*last=*/false);
        waitWGMMA(first ? 0 : 1); // QKᵀ_j; P·V_{j-1} runs on
        if (mbarriers)
          release(/*isK=*/true, t);
        frags[kv.qk.getResult()] = {Frags::C, unpack(s, n / 2)};
        continue;
      }
      if (&nested == kv.pv) {
        // TMA schedule: the wait for P·V_{j-1} (and V_{j-1}'s release) goes
        // where O is first read, inside each arm of the rescale's vote
        // branch, not after the softmax in its basic block. ptxas schedules
        // a wgmma.wait_group near the top of its block, so in the softmax's
        // block it would run before the first exponential and the softmax
        // of tile j would not overlap P·V_{j-1}; in the arms it stays after
        // the softmax. Same SASS size and uniform datapath at D128/D256,
        // +7-8% at D128 (H200; bench/NOTES-hopper.md, "the P·V wait after
        // the softmax it overlaps", 2026-12-06). Without the branch
        // (D < 128) it is emitted before the multiplies. The cp.async
        // schedules keep the wait before the branch (not measured; D256
        // causal pingpong spills 8 B with it in the arms).
        auto awaitPV = [&] {
          waitWGMMA(0);
          if (mbarriers)
            release(/*isK=*/false, arith::SubIOp::create(b, loc, t, idx(1)));
        };
        if (!first) {
          if (!tma)
            awaitPV();
          frags[kv.rescale.getAcc()] = {Frags::C, unpack(oAcc, d / 2)};
        }
        loc = kv.rescale.getLoc();
        if (failed(emitRescale(kv.rescale,
                               first || !tma ? function_ref<void()>()
                                             : function_ref<void()>(awaitPV))))
          return failure();
        continue;
      }
      if (failed(emitOp(nested)))
        return failure();
    }
    return success();
  };

  Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lb, ub);
  // The loop's tiles, 0 without one (persistent: what advances the rings'
  // phases).
  auto tileCount = [&] {
    return arith::SelectOp::create(
        b, loc, any,
        arith::CeilDivUIOp::create(b, loc,
                                   arith::SubIOp::create(b, loc, ub, lb), step),
        idx(0));
  };
  // The producer's copies: Q, then every tile of the loop in order, K then
  // V: by TMA from the one elected thread, or each producer thread's share
  // by cp.async. Persistent: this is the elected thread's walk, and the
  // block's previous Q must have been read (Q's empty barrier) first.
  auto emitProducerCopies = [&] {
    Value who = any;
    if (tma && !itemWalk)
      who = arith::AndIOp::create(
          b, loc, any,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, copier,
                                idx(0)));
    gpu_emit::emitIfThen(b, loc, who, [&] {
      if (tma) {
        if (itemWalk) {
          Value reused = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                               qItems, idx(0));
          gpu_emit::emitIfThen(b, loc, reused, [&] {
            waitBarrier(qEmptyBarrier(), asParity(arith::SubIOp::create(
                                             b, loc, qItems, idx(1))));
          });
        }
        tmaTile(qLoad, qBuf, qRow, Value(), qFullBarrier(), tensorMaps[0]);
      } else {
        issueStage(qLoad, qBuf, qRow, copier, copiers);
        NVVM::CpAsyncMBarrierArriveOp::create(b, loc, qFullBarrier(),
                                              /*noinc=*/true);
      }
      Value tiles = arith::CeilDivUIOp::create(
          b, loc, arith::SubIOp::create(b, loc, ub, lb), step);
      scf::ForOp::create(
          b, loc, idx(0), tiles, idx(1), ValueRange{},
          [&](OpBuilder &fb, Location fl, Value t, ValueRange) {
            OpBuilder::InsertionGuard fg(b);
            b.setInsertionPoint(fb.getInsertionBlock(), fb.getInsertionPoint());
            for (bool isK : {true, false}) {
              tile::LoadOp load = isK ? kv.k : kv.v;
              Value ring = isK ? kRing : vRing;
              if (!tma) {
                copyTile(load, ring, t);
                continue;
              }
              Value stage = stageOf(t);
              emptyWait(isK, t);
              tmaTile(load, ring, tileRow(t),
                      stageBytes(stage, isK ? kStageBytes : vStageBytes),
                      barrierAt(isK ? kFullK : kFullV, stage),
                      tensorMaps[isK ? 1 : 2]);
            }
            scf::YieldOp::create(b, fl);
          });
      if (!tma) {      // nothing waits for the copies' groups: finish them
        commitGroup(); // before the thread exits
        NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
      }
    });
  };
  if (walk == Walk::Producer) { // persistent: the loads are all it has
    emitProducerCopies();
    itemTiles = tileCount();
    return success();
  }
  if (producer && !itemWalk) {
    // The block splits by warpgroup: the producer (the last one) copies Q
    // and every K/V tile of the loop in order, each into its stage once the
    // consumers released it; the consumers run the loop below and the rest
    // of the kernel (the walk goes on inside their branch). setmaxnreg
    // moves registers from the producer to the consumers.
    RegisterSplit regs = registerSplit(threads, tma);
    Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                             tid, idx(threads));
    roleSplit = scf::IfOp::create(b, loc, TypeRange{}, isProducer,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard pg(b);
      b.setInsertionPoint(roleSplit.thenBlock()->getTerminator());
      NVVM::SetMaxRegisterOp::create(b, loc, regs.producer,
                                     NVVM::SetMaxRegisterAction::decrease);
      copier = arith::SubIOp::create(b, loc, tid, idx(threads));
      emitProducerCopies();
    }
    b.setInsertionPoint(roleSplit.elseBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, loc, regs.consumer,
                                   NVVM::SetMaxRegisterAction::increase);
  }
  auto guard = scf::IfOp::create(b, loc, TypeRange(ValueRange(inits)), any,
                                 /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(guard.elseBlock());
    if (!producer)
      NVVM::CpAsyncWaitGroupOp::create(b, loc, 0); // Q's copy
    scf::YieldOp::create(b, loc, inits);

    b.setInsertionPointToStart(guard.thenBlock());
    // Warpgroup 0 takes the first turn (persistent: once per block).
    if (pingPong && !itemWalk) {
      Value first = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq,
          arith::DivUIOp::create(b, loc, tid, idx(128)), idx(0));
      gpu_emit::emitIfThen(b, loc, first, [&] {
        NVVM::BarrierArriveOp::create(b, loc, turnBarrier, turnThreads);
      });
    }
    // Prologue: tiles 0 .. S-2 of K and 0 .. S-3 of V, one group each
    // (the producer's loop instead, when there is one).
    for (int64_t i = 0; !producer && i + 1 < S; ++i) {
      copyTile(kv.k, kRing, idx(i));
      if (i >= 1)
        copyTile(kv.v, vRing, idx(i - 1));
      if (!mbarriers)
        commitGroup();
    }
    if (failed(body(countTiles ? idx(0) : lb, inits, /*first=*/true)))
      return failure();
    SmallVector<Value> state = yielded();
    llvm::append_range(state, frags[kv.pv.getLhs()].regs);
    auto loop =
        countTiles
            ? scf::ForOp::create(
                  b, loc, idx(1),
                  arith::CeilDivUIOp::create(
                      b, loc, arith::SubIOp::create(b, loc, ub, lb), step),
                  idx(1), state)
            : scf::ForOp::create(b, loc, add(lb, step), ub, step, state);
    {
      OpBuilder::InsertionGuard lg(b);
      b.setInsertionPointToStart(loop.getBody());
      if (failed(body(loop.getInductionVar(), loop.getRegionIterArgs(),
                      /*first=*/false)))
        return failure();
      SmallVector<Value> next = yielded();
      llvm::append_range(next, frags[kv.pv.getLhs()].regs);
      scf::YieldOp::create(b, loc, next);
    }
    // Epilogue: O += P_last · V_last.
    unflatten(ValueRange(loop.getResults()).take_front(stateRegs),
              op.getResults());
    SmallVector<Value> pLast(
        ValueRange(loop.getResults()).drop_front(stateRegs));
    Value tLast = arith::DivUIOp::create(
        b, loc,
        arith::SubIOp::create(b, loc, arith::SubIOp::create(b, loc, ub, lb),
                              idx(1)),
        step);
    // Persistent: every Q·Kᵀ of the item has been waited for, so Q may be
    // overwritten by the next item's (released here rather than at the
    // last tile's wait: a compare in the loop and its bound cost the
    // consumers registers, and the epilogue still covers the next Q's
    // load). Every thread arrives, not lane 0 of each warp: with the
    // lane-0 arrive (a branch or a predicate) ptxas keeps the next items'
    // KV loop out of the uniform datapath (its counter, stages and every
    // wgmma descriptor in vector registers, R2UR before each HGMMA: D64
    // 619 SASS instructions per tile against 561).
    if (itemWalk)
      NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(), qEmptyBarrier(),
                                     Value());
    if (mbarriers) {
      waitTile(/*isK=*/false, tLast);
      fenceProxy();
    } else {
      waitForCopies(0);
    }
    takeTurn();
    Value o = issuePV(pLast, vRing, stageBytes(stageOf(tLast), vStageBytes),
                      keys, frags[op.getResult(kv.accArg)].regs, d);
    // Persistent: turns run on across items, and the next item's producer
    // refills this V stage.
    passTurn(/*last=*/!itemWalk);
    waitWGMMA(0);
    if (itemWalk)
      release(/*isK=*/false, tLast);
    frags[op.getResult(kv.accArg)] = {Frags::C, unpack(o, d / 2)};
    if (mbarriers && !producer) { // the copies past the end (zero bytes)
      commitGroup(); // are not waited for by anyone: finish them before the
      NVVM::CpAsyncWaitGroupOp::create(b, loc, 0); // block exits
    }
    SmallVector<Value> results;
    for (Value r : op.getResults())
      llvm::append_range(results, frags[r].regs);
    scf::YieldOp::create(b, loc, results);
  }
  unflatten(guard.getResults(), op.getResults());
  if (itemWalk)
    itemTiles = tileCount();
  return success();
}
