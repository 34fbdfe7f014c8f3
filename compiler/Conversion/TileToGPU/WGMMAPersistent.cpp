//===- WGMMAPersistent.cpp - persistent blocks, stream-K (sm_90a) ---------===//
//
// The wgmma mapping's persistent grid: blocks that loop over work items in
// each role (producer, consumers), and the stream-K tail whose pieces merge
// their partial softmax states through a workspace.
//
//===----------------------------------------------------------------------===//
#include "attnc/abi/Workspace.h"
#include "compiler/Conversion/TileToGPU/WGMMAEmitter.h"

using namespace mlir;
using namespace attnc;
using namespace attnc::wgmma;

scf::ForOp wgmma::itemInvariantKVLoop(func::FuncOp kernel,
                                      tile::LaunchAttr launch) {
  Block &body = kernel.getBody().front();
  Operation *firstPid = nullptr;
  scf::ForOp loop;
  for (Operation &op : body) {
    if (!firstPid && isa<tile::ProgramIdOp>(op))
      firstPid = &op;
    if (auto f = dyn_cast<scf::ForOp>(op)) {
      if (loop)
        return {};
      loop = f;
    }
  }
  if (!loop || !firstPid)
    return {};
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lb || *lb != 0 || !step || *step != launch.getBlockN())
    return {};
  Value ub = loop.getUpperBound();
  if (Operation *def = ub.getDefiningOp())
    return def->getBlock() == &body && def->isBeforeInBlock(firstPid)
               ? loop
               : scf::ForOp();
  return cast<BlockArgument>(ub).getOwner() == &body ? loop : scf::ForOp();
}

// The stream-K fixup (emitPersistent). The workspace holds one u32 flag per
// (block, consumer warpgroup), padded to 256 bytes, then per (block,
// warpgroup) a slot of D/8 + 1 chunks of 128 x 16 bytes: chunk q holds each
// thread's n8 tile q of O (unnormalised, f32), the last one its rows' m and
// l, thread t at 16 t (abi::streamKWorkspaceLayout, attnc/abi). A
// block has at most one piece that does not start its item (the first of
// its tail), so the block's slot is that piece's. The piece's warpgroup
// writes it, meets at its barrier, and its first thread publishes the flag
// with a release store; in the block with the item's first piece every
// thread polls each later slot's flag (acquire loads) until its warp has
// seen it set, the warpgroup meets, its first thread clears the flag for
// the next launch, and every thread folds the slot into its registers with
// the LSE weights (slots of blocks c + 1 .. the block of the item's last
// unit). Only a later block's first piece is ever waited for, so blocks
// cannot wait in a cycle (and a later block not yet resident gets an SM
// when an earlier one exits).
Value WGMMAEmitter::emitStreamKFixup(tile::FinalizeOp fin) {
  const int64_t warpgroups = consumerThreads() / 128;
  Frags accF = frags[fin.getAcc()], mF = frags[fin.getMax()],
        lF = frags[fin.getSum()];
  const int64_t n8 = int64_t(accF.regs.size()), chunks = n8 + 1;
  Type i64T = b.getI64Type(), f32 = b.getF32Type();
  auto v4 = VectorType::get({4}, f32);
  auto c2x2 = cast<VectorType>(accF.regs.front().getType());
  auto globalPtrT = LLVM::LLVMPointerType::get(b.getContext(), 1);
  auto toI64 = [&](Value v) {
    return arith::IndexCastUIOp::create(b, loc, i64T, v);
  };
  auto add64 = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y);
  };
  auto mul64 = [&](Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, i64(y));
  };
  Value tidO = gpu_emit::opaqueIndex(b, loc, tid);
  Value wgIdx = arith::DivUIOp::create(b, loc, tidO, idx(128));
  Value wg = toI64(wgIdx);
  Value inGroup = arith::RemUIOp::create(b, loc, tidO, idx(128));
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, inGroup, idx(0));
  Value grid64 = toI64(gpu::GridDimOp::create(b, loc, gpu::Dimension::x));
  Value base = LLVM::PtrToIntOp::create(b, loc, i64T, workspace);
  Value flagBytes = arith::AndIOp::create(
      b, loc,
      add64(mul64(grid64, abi::kStreamKFlagBytes * warpgroups),
            i64(abi::kWorkspaceAlign - 1)),
      i64(-abi::kWorkspaceAlign));
  auto slotOf = [&](Value block64) {
    return add64(mul64(block64, warpgroups), wg);
  };
  auto flagAt = [&](Value block64) {
    return add64(base, mul64(slotOf(block64), abi::kStreamKFlagBytes));
  };
  Value threadOffset = mul64(toI64(inGroup), abi::kStreamKThreadBytes);
  auto chunkAt = [&](Value block64, int64_t q) -> Value {
    Value at =
        add64(add64(base, flagBytes),
              add64(mul64(slotOf(block64), chunks * abi::kStreamKChunkBytes),
                    add64(i64(q * abi::kStreamKChunkBytes), threadOffset)));
    return LLVM::IntToPtrOp::create(b, loc, globalPtrT, at);
  };
  Value epilogueBarrier = arith::IndexCastOp::create(
      b, loc, b.getI32Type(), add(wgIdx, 1 + warpgroups));
  Value wgThreads = LLVM::ConstantOp::create(b, loc, b.getI32Type(), 128);
  auto inlineAsm = [&](ValueRange operands, StringRef text,
                       StringRef constraints) {
    gpu_emit::inlinePtx(b, loc, TypeRange{}, operands, text, constraints);
  };
  // Non-aligned (see emitTmaStore), with a memory clobber.
  auto syncWarpgroup = [&] {
    inlineAsm({epilogueBarrier, wgThreads}, "barrier.sync $0, $1;",
              "r,r,~{memory}");
  };
  Value block64 = arith::ExtUIOp::create(b, loc, i64T, blockId32);
  Value starts =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, pieceLo, idx(0));
  Value ends = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, pieceHi,
                                     itemKVTiles);
  Value notStarts = arith::XOrIOp::create(
      b, loc, starts, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));

  // A piece after the item's first: its partial into the block's slot.
  gpu_emit::emitIfThen(b, loc, notStarts, [&] {
    for (int64_t q = 0; q < n8; ++q)
      LLVM::StoreOp::create(
          b, loc,
          vector::ShuffleOp::create(b, loc, row2(accF.regs[q], 0),
                                    row2(accF.regs[q], 1),
                                    ArrayRef<int64_t>{0, 1, 2, 3}),
          chunkAt(block64, q), /*alignment=*/16);
    Value stats = vector::FromElementsOp::create(
        b, loc, v4, ValueRange{mF.regs[0], mF.regs[1], lF.regs[0], lF.regs[1]});
    LLVM::StoreOp::create(b, loc, stats, chunkAt(block64, n8),
                          /*alignment=*/16);
    syncWarpgroup();
    gpu_emit::emitIfThen(b, loc, first, [&] {
      inlineAsm({flagAt(block64),
                 arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1)},
                "st.release.gpu.global.u32 [$0], $1;", "l,r,~{memory}");
    });
  });

  // The item's first piece, when it does not end it: merge the others.
  SmallVector<Value> state;
  llvm::append_range(state, accF.regs);
  state.append({mF.regs[0], mF.regs[1], lF.regs[0], lF.regs[1]});
  Value merges = arith::AndIOp::create(
      b, loc, starts,
      arith::XOrIOp::create(
          b, loc, ends,
          arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
  auto ifOp = scf::IfOp::create(b, loc, TypeRange(ValueRange(state)), merges,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, state);
    b.setInsertionPointToStart(ifOp.thenBlock());
    // The block of the item's last unit u: blocks c < q_rem hold q + 1
    // units, the others q.
    Type i32 = b.getI32Type();
    auto c32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, loc, i32, v);
    };
    Value q1 = arith::AddIOp::create(b, loc, skUnits(), c32(1));
    Value u = arith::SubIOp::create(
        b, loc,
        arith::AddIOp::create(
            b, loc, itemFirstUnit,
            arith::IndexCastUIOp::create(b, loc, i32, itemKVTiles)),
        c32(1));
    Value big = arith::MulIOp::create(b, loc, skUnitsRem(), q1);
    Value lastBlock32 = arith::SelectOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, u, big),
        arith::DivUIOp::create(b, loc, u, q1),
        arith::AddIOp::create(
            b, loc, skUnitsRem(),
            arith::DivUIOp::create(
                b, loc, arith::SubIOp::create(b, loc, u, big),
                arith::MaxUIOp::create(b, loc, skUnits(), c32(1)))));
    Value lastBlock = arith::ExtUIOp::create(b, loc, i64T, lastBlock32);
    auto loop = scf::ForOp::create(b, loc, add64(block64, i64(1)),
                                   add64(lastBlock, i64(1)), i64(1), state);
    {
      OpBuilder::InsertionGuard lg(b);
      b.setInsertionPointToStart(loop.getBody());
      Value other = loop.getInductionVar();
      ValueRange cur = loop.getRegionIterArgs();
      // Every thread polls the flag (acquire) until the whole warp has
      // seen it set: a warp-uniform loop by the vote. (One thread's spin,
      // a divergent loop, takes the KV loop out of ptxas's uniform
      // datapath: 698 SASS instructions per tile against 617.)
      Value flag =
          LLVM::IntToPtrOp::create(b, loc, globalPtrT, Value(flagAt(other)));
      auto spin = scf::WhileOp::create(b, loc, TypeRange{}, ValueRange{});
      {
        OpBuilder::InsertionGuard sg(b);
        Block *before = b.createBlock(&spin.getBefore());
        auto ld = gpu_emit::inlinePtx(b, loc, b.getI32Type(), ValueRange{flag},
                                      "ld.acquire.gpu.global.u32 $0, [$1];",
                                      "=r,l,~{memory}");
        Value set = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ne, ld.getResult(0),
            arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
        Value all = NVVM::VoteSyncOp::create(
            b, loc, b.getI1Type(),
            LLVM::ConstantOp::create(b, loc, b.getI32Type(), -1), set,
            NVVM::VoteSyncKindAttr::get(b.getContext(),
                                        NVVM::VoteSyncKind::all));
        Value again = arith::XOrIOp::create(
            b, loc, all,
            arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
        scf::ConditionOp::create(b, loc, again, ValueRange{});
        b.createBlock(&spin.getAfter());
        scf::YieldOp::create(b, loc);
      }
      // Every warp has seen it: the first thread clears it for the next
      // launch.
      syncWarpgroup();
      gpu_emit::emitIfThen(b, loc, first, [&] {
        inlineAsm({flagAt(other),
                   arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0)},
                  "st.relaxed.gpu.global.u32 [$0], $1;", "l,r,~{memory}");
      });
      auto load = [&](int64_t q) -> Value {
        return LLVM::LoadOp::create(b, loc, v4, chunkAt(other, q),
                                    /*alignment=*/16, /*isVolatile=*/true);
      };
      Value stats = load(n8);
      auto lane4 = [&](Value v, int64_t i) {
        return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i});
      };
      SmallVector<Value> next(cur.begin(), cur.end());
      Value wMine[2], wOther[2];
      for (int64_t r = 0; r < 2; ++r) {
        Value mMine = cur[n8 + r], mOther = lane4(stats, r);
        gpu_emit::StateMerge merge(b, loc, {mMine, mOther});
        wMine[r] = merge.weight(mMine);
        wOther[r] = merge.weight(mOther);
        next[n8 + r] = merge.max();
        next[n8 + 2 + r] = arith::AddFOp::create(
            b, loc, arith::MulFOp::create(b, loc, cur[n8 + 2 + r], wMine[r]),
            arith::MulFOp::create(b, loc, lane4(stats, 2 + r), wOther[r]));
      }
      auto pairT = VectorType::get({2}, f32);
      for (int64_t q = 0; q < n8; ++q) {
        Value theirs = load(q); // row 0: c0, c1; row 1: c0, c1
        SmallVector<Value> rows;
        for (int64_t r = 0; r < 2; ++r) {
          Value mine = arith::MulFOp::create(
              b, loc, row2(cur[q], r),
              vector::BroadcastOp::create(b, loc, pairT, wMine[r]));
          Value theirRow = vector::ShuffleOp::create(
              b, loc, theirs, theirs, ArrayRef<int64_t>{2 * r, 2 * r + 1});
          Value other = arith::MulFOp::create(
              b, loc, theirRow,
              vector::BroadcastOp::create(b, loc, pairT, wOther[r]));
          rows.push_back(arith::AddFOp::create(b, loc, mine, other));
        }
        next[q] = gpu_emit::fromRows(b, loc, c2x2, rows);
      }
      scf::YieldOp::create(b, loc, next);
    }
    scf::YieldOp::create(b, loc, loop.getResults());
  }
  ValueRange merged = ifOp.getResults();
  frags[fin.getAcc()] = {Frags::C, SmallVector<Value>(merged.take_front(n8))};
  frags[fin.getMax()] = {mF.kind, {merged[n8], merged[n8 + 1]}};
  frags[fin.getSum()] = {lF.kind, {merged[n8 + 2], merged[n8 + 3]}};
  return starts;
}

Value WGMMAEmitter::advanceRingPhases(Value tiles) {
  // Stage s held tiles s, s + S, ... of the item: ceil((tiles - s) / S) of
  // them, none when tiles <= s.
  const int64_t S = kvStages;
  Value phases = ringPhases;
  for (int64_t s = 0; s < S; ++s) {
    Value uses = arith::DivUIOp::create(b, loc, add(tiles, S - 1 - s), idx(S));
    Value flip = arith::ShLIOp::create(
        b, loc, arith::AndIOp::create(b, loc, uses, idx(1)), idx(s));
    Value used = arith::SelectOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, tiles, idx(s)),
        idx(int64_t(1) << (kStageUsedBit + s)), idx(0));
    phases = arith::OrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, phases, flip), used);
  }
  return phases;
}

// Persistent blocks: work item w = (query tile, head, batch) with the
// query tile fastest (as a grid of one block per tile launches them, so the
// blocks at work together read few heads' K/V: L2 keeps them); block c
// takes the pairs of items below (long and short together). The walk from the
// first program id to the return is emitted once per role inside a loop over
// the items, each role carrying the rings' per-stage phases and the Q loads
// so far (both compute the same tile counts, so their parities agree).
// tests/unit/producer_protocol_sim.py models the protocol (persistent
// mode).
LogicalResult WGMMAEmitter::emitPersistent() {
  startWalk();
  Block &ops = kernel.getBody().front();
  auto itemStart = llvm::find_if(
      ops, [](Operation &op) { return isa<tile::ProgramIdOp>(op); });
  if (itemStart == ops.end())
    return kernel.emitError("persistent blocks need a program id");
  // Views and tile constants: once per block.
  for (Operation &op : llvm::make_range(ops.begin(), itemStart))
    if (failed(emitOp(op)))
      return failure();
  int64_t heads = ShapedType::kDynamic;
  kernel.walk([&](tile::LoadOp load) {
    if (gpu_emit::isRowOwnedLoad(load))
      heads = cast<MemRefType>(load.getSource().getType()).getDimSize(1);
  });
  Value seqQ = paramArg("seq_q"), batch = paramArg("batch");
  if (!seqQ || !batch || ShapedType::isDynamic(heads))
    return kernel.emitError("persistent blocks need the seq_q and batch "
                            "parameters and a static head count");
  // The item loop counts in 32 bits (the runtime bounds the items below
  // 2^31): its values stay live across every KV loop, beside the
  // accumulators.
  Type i32 = b.getI32Type();
  auto c32 = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  auto to32 = [&](Value v) {
    return arith::IndexCastUIOp::create(b, loc, i32, v);
  };
  auto toIdx = [&](Value v) {
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
  };
  auto trunc32 = [&](Value v) {
    return arith::TruncIOp::create(b, loc, i32, v);
  };
  initBarriers(/*fullArrivals=*/1); // TMA: one expect_tx per phase
  if (streamK) {
    streamKLoop = itemInvariantKVLoop(kernel, launch);
    if (!streamKLoop)
      return kernel.emitError("the stream-K tail needs a KV loop whose "
                              "bounds are the same for every work item");
  }

  // Block c takes the item pairs (2p, 2p + 1) for p = c, c + G, ... (G =
  // gridDim.x), and inside a head item 2j is program 0 id j, item 2j + 1
  // id Q - 1 - j (Q query tiles): causal, a pair is one long and one short
  // tile (about Q + 1 KV tiles together), so equal pair counts balance the
  // blocks (a plain stride by G puts like lengths together: 1.5x the mean
  // at S16k, bench/NOTES-hopper.md). Its item count: 2 per pair, less the
  // last pair's second item when it is past the end.
  auto add32 = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y);
  };
  auto sub32 = [&](Value x, Value y) {
    return arith::SubIOp::create(b, loc, x, y);
  };
  auto mul32 = [&](Value x, Value y) {
    return arith::MulIOp::create(b, loc, x, y);
  };
  auto cmp32 = [&](arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  };
  // One role's loop over the block's items. Each role computes the item
  // count and walk itself, after the role split: values live across
  // setmaxnreg are spilled (the producer keeps 24 registers).
  auto itemLoop = [&](Walk role) -> LogicalResult {
    walk = role;
    Value qTiles = arith::CeilDivUIOp::create(b, loc, trunc32(seqQ),
                                              c32(launch.getBlockM()));
    Value items = arith::MulIOp::create(
        b, loc, arith::MulIOp::create(b, loc, qTiles, c32(heads)),
        trunc32(batch));
    Value block = to32(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x));
    Value grid = to32(gpu::GridDimOp::create(b, loc, gpu::Dimension::x));
    Value myItems, whole, tailStart, tailEnd, firstTailItem;
    if (!streamK) {
      Value pairs = arith::CeilDivUIOp::create(b, loc, items, c32(2));
      Value mine = arith::SelectOp::create(
          b, loc, cmp32(arith::CmpIPredicate::ult, block, pairs),
          arith::CeilDivUIOp::create(b, loc, sub32(pairs, block), grid),
          c32(0));
      Value lastSecond =
          add32(mul32(add32(block, mul32(grid, sub32(mine, c32(1)))), c32(2)),
                c32(1));
      myItems = arith::SelectOp::create(
          b, loc, cmp32(arith::CmpIPredicate::eq, mine, c32(0)), c32(0),
          sub32(mul32(mine, c32(2)),
                arith::ExtUIOp::create(
                    b, loc, i32,
                    cmp32(arith::CmpIPredicate::uge, lastSecond, items))));
    } else {
      // Every item has the same KV tiles (T): block c takes the whole items
      // c, c + G, ... of the full rounds, and the tail's items are cut into
      // pieces along the keys: as units (item, tile) in order, block c
      // takes units [s, e), s = c·q + min(c, q_rem), so that every block
      // ends within a tile of the others instead of some running one item
      // more (bench/NOTES-hopper.md, "the stream-K tail", 2026-12-03). The
      // runtime computes the schedule (StreamKSchedule; without a workspace
      // it has no tail and block c takes one whole item more when c <
      // round_rem): every value below comes from parameters and the block
      // index by 32-bit multiplies, adds and selects, so that ptxas keeps
      // the KV loop's bounds, counter and wgmma descriptors in the uniform
      // datapath (divisions, 64-bit ones especially, take them out: 640
      // SASS instructions per tile against 617).
      Value rem1 = arith::ExtUIOp::create(
          b, loc, i32, cmp32(arith::CmpIPredicate::ult, block, skRoundRem()));
      whole = add32(skRounds(), rem1);
      Value extra = arith::ExtUIOp::create(
          b, loc, i32, cmp32(arith::CmpIPredicate::ult, block, skUnitsRem()));
      tailStart = add32(mul32(block, skUnits()),
                        arith::MinUIOp::create(b, loc, block, skUnitsRem()));
      tailEnd = add32(tailStart, add32(skUnits(), extra));
      Value first = divideByTiles(tailStart);
      Value pieces = arith::SelectOp::create(
          b, loc, cmp32(arith::CmpIPredicate::ult, tailStart, tailEnd),
          add32(sub32(divideByTiles(sub32(tailEnd, c32(1))), first), c32(1)),
          c32(0));
      firstTailItem = first;
      myItems = add32(whole, pieces);
      blockId32 = block;
    }
    auto loop = scf::ForOp::create(b, loc, c32(0), myItems, c32(1),
                                   ValueRange{c32(0), c32(0)});
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value k = loop.getInductionVar();
    ringPhases = toIdx(loop.getRegionIterArgs()[0]);
    qItems = toIdx(loop.getRegionIterArgs()[1]);
    Value w;
    if (!streamK) {
      Value pair =
          add32(block, mul32(grid, arith::ShRUIOp::create(b, loc, k, c32(1))));
      w = add32(mul32(pair, c32(2)), arith::AndIOp::create(b, loc, k, c32(1)));
    } else {
      // Piece k: whole item c + G·k, or the tail's item j = s / T + p (p =
      // k - whole) from tile max(s - j·T, 0) to min(e - j·T, T).
      Value isWhole = cmp32(arith::CmpIPredicate::ult, k, whole);
      Value j = add32(firstTailItem, sub32(k, whole));
      w = arith::SelectOp::create(b, loc, isWhole, add32(block, mul32(grid, k)),
                                  add32(mul32(skRounds(), grid), j));
      Value tiles = skTiles();
      Value jFirst = mul32(j, tiles);
      Value lo =
          sub32(arith::MaxUIOp::create(b, loc, tailStart, jFirst), jFirst);
      Value hi =
          sub32(arith::MinUIOp::create(b, loc, tailEnd, add32(jFirst, tiles)),
                jFirst);
      pieceLo = toIdx(arith::SelectOp::create(b, loc, isWhole, c32(0), lo));
      pieceHi = toIdx(arith::SelectOp::create(b, loc, isWhole, tiles, hi));
      itemKVTiles = toIdx(tiles);
      itemFirstUnit = jFirst;
    }
    Value r = arith::RemUIOp::create(b, loc, w, qTiles);
    Value rest = arith::DivUIOp::create(b, loc, w, qTiles);
    Value j = arith::ShRUIOp::create(b, loc, r, c32(1));
    Value odd = cmp32(arith::CmpIPredicate::ne,
                      arith::AndIOp::create(b, loc, r, c32(1)), c32(0));
    Value tileId = arith::SelectOp::create(b, loc, odd,
                                           sub32(sub32(qTiles, c32(1)), j), j);
    Value pid[3] = {toIdx(tileId),
                    toIdx(arith::RemUIOp::create(b, loc, rest, c32(heads))),
                    toIdx(arith::DivUIOp::create(b, loc, rest, c32(heads)))};
    nextStage = 0;
    itemTiles = {};
    scf::IfOp epilogueIf; // stream-K: the epilogue of pieces that start
    for (Operation &op : llvm::make_range(itemStart, ops.end())) {
      loc = op.getLoc();
      if (auto p = dyn_cast<tile::ProgramIdOp>(op)) {
        map.map(p.getResult(), pid[p.getDim()]);
        continue;
      }
      if (isa<func::ReturnOp>(op))
        continue;
      // The producer keeps the scalar ops, Q's load and the KV loop.
      bool tileOp =
          isa<tile::StoreOp>(op) ||
          llvm::any_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>);
      if (role == Walk::Producer && tileOp &&
          !isa<scf::ForOp, tile::LoadOp>(op))
        continue;
      if (streamK && role == Walk::Consumer && isa<tile::FinalizeOp>(op)) {
        Value starts = emitStreamKFixup(cast<tile::FinalizeOp>(op));
        epilogueIf = scf::IfOp::create(b, loc, TypeRange{}, starts,
                                       /*withElseRegion=*/false);
        b.setInsertionPoint(epilogueIf.thenBlock()->getTerminator());
      }
      if (failed(emitOp(op)))
        return failure();
    }
    if (epilogueIf)
      b.setInsertionPointAfter(epilogueIf);
    if (!itemTiles)
      return kernel.emitError("persistent blocks need the attention KV loop");
    Value hadTiles = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                           itemTiles, idx(0));
    scf::YieldOp::create(
        b, loc,
        ValueRange{to32(advanceRingPhases(itemTiles)),
                   to32(add(qItems, arith::SelectOp::create(b, loc, hadTiles,
                                                            idx(1), idx(0))))});
    return success();
  };

  const int64_t threads = consumerThreads();
  RegisterSplit regs = registerSplit(threads, /*tma=*/true);
  Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                           tid, idx(threads));
  roleSplit = scf::IfOp::create(b, loc, TypeRange{}, isProducer,
                                /*withElseRegion=*/true);
  LogicalResult result = success();
  {
    // The producer: its one elected thread issues every item's copies.
    OpBuilder::InsertionGuard pg(b);
    b.setInsertionPoint(roleSplit.thenBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, loc, regs.producer,
                                   NVVM::SetMaxRegisterAction::decrease);
    Value elected = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                          idx(threads));
    gpu_emit::emitIfThen(b, loc, elected,
                         [&] { result = itemLoop(Walk::Producer); });
  }
  if (failed(result))
    return failure();
  {
    // The consumers: warpgroup 0 takes the first turn once, turns run on
    // across the items, and warpgroup 0 takes the last warpgroup's final
    // hand-off after its last item, so every named barrier ends balanced.
    OpBuilder::InsertionGuard cg(b);
    b.setInsertionPoint(roleSplit.elseBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, loc, regs.consumer,
                                   NVVM::SetMaxRegisterAction::increase);
    Value turnThreads =
        LLVM::ConstantOp::create(b, loc, b.getI32Type(), 2 * 128);
    Value group0 = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::DivUIOp::create(b, loc, tid, idx(128)), idx(0));
    gpu_emit::emitIfThen(b, loc, group0, [&] {
      NVVM::BarrierArriveOp::create(b, loc, turnBarrierOf(), turnThreads);
    });
    if (failed(itemLoop(Walk::Consumer)))
      return failure();
    // After the loop from a fresh (opaque) tid: the predicate above, kept
    // live across the item loop, would be spilled (epilogue=tma, D128: 4 B).
    Value tidAfter = gpu_emit::opaqueIndex(b, loc, tid);
    group0 = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::DivUIOp::create(b, loc, tidAfter, idx(128)), idx(0));
    // epilogue=tma: the block's last O store has read the staging buffer
    // before the block exits (its first thread per warpgroup committed it).
    if (oTensorMap) {
      Value firstOfGroup = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq,
          arith::RemUIOp::create(b, loc, tidAfter, idx(128)), idx(0));
      gpu_emit::emitIfThen(b, loc, firstOfGroup, [&] {
        NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, b.getUnitAttr());
      });
    }
    gpu_emit::emitIfThen(b, loc, group0, [&] {
      NVVM::BarrierOp::create(b, loc, TypeRange{}, turnBarrierOf(), turnThreads,
                              NVVM::BarrierReductionAttr(), Value());
    });
  }
  b.setInsertionPointAfter(roleSplit);
  gpu::ReturnOp::create(b, loc);
  return success();
}
