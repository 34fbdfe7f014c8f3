//===- MMAOperands.cpp - copies, fragments, mma.sync (sm_80) --------------===//
//
// The mma.sync mapping's per-thread ids, the copies of Q, K and V tiles
// (cp.async into padded rows, or partial loads), their A and B fragments,
// and Q·Kᵀ / P·V as mma.sync.m16n8k16.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/MMAEmitter.h"

#include <limits>

using namespace mlir;
using namespace attnc;
using namespace attnc::mma;

Value MMAEmitter::loadPair(Value view, Value batch, Value head, Value seqRow,
                           Value col, Type elt) {
  auto pairT = VectorType::get({2}, elt);
  Value seq = memref::DimOp::create(b, loc, view, 2);
  Value inside =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, seqRow, seq);
  auto ifOp = scf::IfOp::create(
      b, loc, inside,
      [&](OpBuilder &tb, Location l) {
        Value v = vector::LoadOp::create(tb, l, pairT, view,
                                         ValueRange{batch, head, seqRow, col},
                                         false, llvm::MaybeAlign(4));
        scf::YieldOp::create(tb, l, v);
      },
      [&](OpBuilder &eb, Location l) {
        Value zero = arith::ConstantOp::create(
            eb, l, DenseElementsAttr::get(pairT, eb.getZeroAttr(elt)));
        scf::YieldOp::create(eb, l, zero);
      });
  return ifOp.getResult(0);
}

/// d = a·b + c with mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: nvvm's
/// op directly, since nvgpu.mma.sync does not lower bf16. bf16 pairs travel
/// as i32, f16 pairs as vector<2xf16>, as PTX's operand types require.
Value MMAEmitter::mma16816(Value a, Value bFrag, Value c) {
  Type elt = cast<VectorType>(a.getType()).getElementType();
  bool bf16 = elt.isBF16();
  auto operands = [&](Value frag, int64_t n) {
    SmallVector<Value> regs;
    for (int64_t i = 0; i < n; ++i) {
      Value pair = row2(frag, i);
      regs.push_back(
          bf16 ? Value(LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair))
               : pair);
    }
    return regs;
  };
  SmallVector<Value> cRegs;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t col = 0; col < 2; ++col)
      cRegs.push_back(elem(c, r, col));
  Type f32 = b.getF32Type();
  auto resT =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  NVVM::MMATypes ptx = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  Value d = NVVM::MmaOp::create(
      b, loc, resT, operands(a, 4), operands(bFrag, 2), cRegs, {16, 8, 16},
      std::nullopt, std::nullopt, std::array<NVVM::MMATypes, 2>{ptx, ptx},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> out;
  for (int64_t i = 0; i < 4; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, d, i));
  return vector::FromElementsOp::create(b, loc, VectorType::get({2, 2}, f32),
                                        out);
}

MMAEmitter::LaneIndices MMAEmitter::laneIndices(Value tid) {
  LaneIndices ix;
  ix.lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  Value warp = arith::DivUIOp::create(b, loc, tid, idx(32));
  ix.g = arith::DivUIOp::create(b, loc, ix.lane, idx(4));
  ix.t4 = arith::RemUIOp::create(b, loc, ix.lane, idx(4));
  ix.rowWarp = warp;
  ix.keyWarp = idx(0);
  if (keyWarps > 1) {
    ix.rowWarp = arith::RemUIOp::create(b, loc, warp, idx(rowWarps));
    ix.keyWarp = arith::DivUIOp::create(b, loc, warp, idx(rowWarps));
  }
  ix.rowInTile =
      add(arith::MulIOp::create(b, loc, ix.rowWarp, idx(16 * mTiles)), ix.g);
  return ix;
}

void MMAEmitter::setUp() {
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  LaneIndices ix = laneIndices(tid);
  lane = ix.lane;
  g = ix.g;
  t4 = ix.t4;
  rowWarp = ix.rowWarp;
  keyWarp = ix.keyWarp;
  keyOffset =
      arith::MulIOp::create(b, loc, keyWarp, idx(keySlice(launch.getBlockN())));
  isFirstKeyWarp =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, keyWarp, idx(0));
  rowInTile = ix.rowInTile;
  // ldmatrix: lane L gives the address of row L % 8 of 8x8 matrix L / 8.
  Value ldMatrix = arith::DivUIOp::create(b, loc, lane, idx(8));
  ldRow = arith::RemUIOp::create(b, loc, lane, idx(8));
  ldLow = arith::RemUIOp::create(b, loc, ldMatrix, idx(2));
  ldHigh = arith::DivUIOp::create(b, loc, ldMatrix, idx(2));
}

LogicalResult MMAEmitter::emitRowLoad(tile::LoadOp op) {
  auto t = op.getResult().getType();
  Type elt = t.getElementType();
  Value view = map.lookup(op.getSource());
  Value batch = map.lookup(op.getBatch()), head = map.lookup(op.getHead());
  Value q0 = map.lookup(op.getRow());
  Value col0 = arith::MulIOp::create(b, loc, t4, idx(2));
  if (op.getLength() || op.isPaged())
    return op.emitError("the mma.sync mapping reads query rows from plain "
                        "views only");
  // A partial result to merge: C layout / row statistics.
  bool merged =
      llvm::all_of(op->getUsers(), llvm::IsaPred<tile::LseAccumulateOp>);
  if (elt.isF32() || merged)
    return emitPartialLoad(op, view, batch, head, q0, col0);
  if (qInSmem || qStagedOnce) { // staged like K/V
    if (nextStage >= buffers.size())
      return op.emitError("more staged tiles than workgroup buffers");
    Value buf = buffers[nextStage++];
    issueStage(op, buf, map.lookup(op.getRow()), /*barrier=*/false);
    frags[op.getResult()] = {Frags::Staged, {buf}};
    if (qStagedOnce) // into registers before the KV loop (emitFor)
      pendingQ.push_back({op.getResult(), buf});
    return success();
  }
  Frags f{Frags::A, {}};
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    Value r0 = add(q0, rowOf(mt, 0)), r1 = add(q0, rowOf(mt, 1));
    for (int64_t kk = 0; kk < t.getDimSize(1) / 16; ++kk) {
      Value c = add(col0, kk * 16), c8 = add(col0, kk * 16 + 8);
      f.regs.push_back(fromRows(VectorType::get({4, 2}, elt),
                                {loadPair(view, batch, head, r0, c, elt),
                                 loadPair(view, batch, head, r1, c, elt),
                                 loadPair(view, batch, head, r0, c8, elt),
                                 loadPair(view, batch, head, r1, c8, elt)}));
    }
  }
  frags[op.getResult()] = std::move(f);
  return success();
}

void MMAEmitter::loadPendingQ() {
  if (pendingQ.empty())
    return;
  SmallVector<Value> bufs;
  for (auto [value, buf] : pendingQ)
    bufs.push_back(buf);
  waitForStaged(bufs);
  for (auto [value, buf] : pendingQ) {
    auto t = cast<RankedTensorType>(value.getType());
    Frags staged = frags[value], f{Frags::A, {}};
    for (int64_t mt = 0; mt < mTiles; ++mt)
      for (int64_t kk = 0; kk < t.getDimSize(1) / 16; ++kk)
        f.regs.push_back(aFragment(staged, mt, kk, t.getElementType()));
    frags[value] = std::move(f);
  }
  pendingQ.clear();
}

Value MMAEmitter::aFragment(const Frags &a, int64_t mt, int64_t kk, Type elt) {
  if (a.kind == Frags::A)
    return a.regs[mt * (a.regs.size() / mTiles) + kk];
  // ldmatrix.x4 of a row-major 16x16 block: matrices (rows +0/+8) x
  // (columns +0/+8) are exactly the A registers (g, g+8, g col+8, ...).
  Value r =
      add(add(arith::SubIOp::create(b, loc, rowInTile, g), ldRow), 16 * mt);
  r = add(r, arith::MulIOp::create(b, loc, ldLow, idx(8)));
  return nvgpu::LdMatrixOp::create(
      b, loc, VectorType::get({4, 2}, elt), a.regs[0],
      smemAt(r, arith::MulIOp::create(b, loc, ldHigh, idx(8)), kk * 16), false,
      4);
}

/// A tile of the program's rows that tile.lse_accumulate merges (a split-KV
/// partial O in f32, a finished bf16/f16 output) in the C layout of n8
/// tiles in f32, or its [R] LSE as row statistics; rows past the end are 0
/// (LSE -inf: they weigh nothing).
LogicalResult MMAEmitter::emitPartialLoad(tile::LoadOp op, Value view,
                                          Value batch, Value head, Value q0,
                                          Value col0) {
  auto t = op.getResult().getType();
  Type f32 = b.getF32Type();
  Value seq = memref::DimOp::create(b, loc, view, 2);
  SmallVector<Value> rows; // [mt][2]
  for (int64_t mt = 0; mt < mTiles; ++mt)
    for (int64_t r = 0; r < 2; ++r)
      rows.push_back(add(q0, rowOf(mt, r)));
  if (t.getRank() == 1) {
    Frags f{Frags::RowStat, {}};
    for (Value r : rows) {
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, seq);
      auto ifOp = scf::IfOp::create(
          b, loc, inside,
          [&](OpBuilder &tb, Location l) {
            Value v =
                memref::LoadOp::create(tb, l, view, ValueRange{batch, head, r});
            scf::YieldOp::create(tb, l, v);
          },
          [&](OpBuilder &eb, Location l) {
            scf::YieldOp::create(
                eb, l,
                ValueRange{
                    f32Const(eb, l, -std::numeric_limits<float>::infinity())});
          });
      f.regs.push_back(ifOp.getResult(0));
    }
    frags[op.getResult()] = std::move(f);
    return success();
  }
  Frags f{Frags::C, {}};
  Type elt = t.getElementType();
  auto pair = [&](Value r, Value c) -> Value {
    Value v = loadPair(view, batch, head, r, c, elt);
    return elt.isF32() ? v
                       : Value(arith::ExtFOp::create(
                             b, loc, VectorType::get({2}, f32), v));
  };
  for (int64_t mt = 0; mt < mTiles; ++mt)
    for (int64_t nt = 0; nt < t.getDimSize(1) / 8; ++nt) {
      Value c = add(col0, nt * 8);
      f.regs.push_back(
          fromRows(VectorType::get({2, 2}, f32),
                   {pair(rows[2 * mt], c), pair(rows[2 * mt + 1], c)}));
    }
  frags[op.getResult()] = std::move(f);
  return success();
}

/// Issues the cp.async copies of tile `row` of a staged load into `buf`
/// (nothing when `row` is past the loop's end) and commits them as a group.
void MMAEmitter::issueStage(tile::LoadOp op, Value buf, Value row,
                            bool barrier) {
  auto t = op.getResult().getType();
  // Unrolled whole-tile copies (one base address per tile) where they
  // measure faster: the decode split kernel (its KV loop 685 -> 500 SASS
  // instructions, issue-bound) and prefill at head dim <= 64 (D64 +8%).
  // At D128 and D256 the same copies make prefill 4-8% slower on the H200
  // (A/B; bench/NOTES.md, "unrolled copies slowed the D128 prefill",
  // 2026-12-03), so those keep the loop over the chunks.
  bool unroll = qStagedOnce || t.getDimSize(1) <= kUnrollCopiesMaxDim;
  gpu_emit::stageRows(
      b, loc, map.lookup(op.getSource()), map.lookup(op.getBatch()),
      map.lookup(op.getHead()), row, buf, t.getDimSize(0), t.getDimSize(1), tid,
      blockThreads, /*async=*/true, barrier,
      /*commit=*/true, op.getLength() ? map.lookup(op.getLength()) : Value(),
      op.isPaged() ? map.lookup(op.getBlockTable()) : Value(),
      pageAhead.lookup(op), swizzle, unroll);
  groupOf[buf] = committedGroups++;
}

Value MMAEmitter::stageView(Value buf, Value stage) {
  auto t = cast<MemRefType>(buf.getType());
  SmallVector<OpFoldResult> offsets = {stage, b.getIndexAttr(0),
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                     b.getIndexAttr(t.getDimSize(1)),
                                     b.getIndexAttr(t.getDimSize(2))};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  auto viewT = memref::SubViewOp::inferRankReducedResultType(
      {t.getDimSize(1), t.getDimSize(2)}, t, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, viewT, buf, offsets, sizes, strides);
}

/// Copies tile j + S - 1 of each ring into the stage tile j - 1 held (past
/// the end: the current row again, never read, so that every iteration
/// commits the same number of groups).
void MMAEmitter::issueNext() {
  Value iv = ringLoop.getInductionVar();
  Value next = stepsAhead(iv, ringDepth() - 1, ringLoop.getStep());
  Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, next,
                                     ringLoop.getUpperBound());
  Value row = arith::SelectOp::create(b, loc, more, next, iv);
  for (Ring &r : rings)
    issueStage(r.load, r.next, row, /*barrier=*/false);
  nextIssued = true;
}

LogicalResult MMAEmitter::emitStage(tile::LoadOp op) {
  for (Ring &r : rings)
    if (r.load == op) { // copied an iteration ahead
      frags[op.getResult()] = {Frags::Staged, {r.current}};
      return success();
    }
  if (nextStage >= buffers.size())
    return op.emitError("more staged tiles than workgroup buffers");
  Value buf = buffers[nextStage++];
  // cp.async, waited for at the first use: V's copy runs under QKᵀ and the
  // softmax.
  issueStage(op, buf, map.lookup(op.getRow()), /*barrier=*/true);
  frags[op.getResult()] = {Frags::Staged, {buf}};
  return success();
}

LogicalResult MMAEmitter::emitDot(tile::DotOp op) {
  auto lhsIt = frags.find(op.getLhs()), rhsIt = frags.find(op.getRhs());
  if (lhsIt == frags.end() ||
      (lhsIt->second.kind != Frags::A &&
       !(lhsIt->second.kind == Frags::Staged && op.getTransposeB())) ||
      rhsIt == frags.end() || rhsIt->second.kind != Frags::Staged)
    return op.emitError("mma.sync dot expects A fragments and a staged rhs");
  const Frags &a = lhsIt->second;
  Value smem = rhsIt->second.regs[0];
  bool synced = a.kind == Frags::Staged ? waitForStaged({a.regs[0], smem})
                                        : waitForStaged({smem});
  if (!rings.empty() && !nextIssued) {
    // The first wait of the iteration: past its barrier every warp is done
    // with iteration j - 1, so its stages take the copies of j + 1.
    if (!synced)
      gpu::BarrierOp::create(b, loc);
    issueNext();
  }
  Type elt = cast<MemRefType>(smem.getType()).getElementType();
  auto rt = op.getResult().getType();
  // With key warps, each computes on its slice of the tile's keys: the
  // columns of S (QKᵀ) or the rows of V (P·V).
  int64_t n8 = rt.getDimSize(1) / 8;
  int64_t k16 = op.getLhs().getType().getDimSize(1) / 16;
  if (op.getTransposeB())
    n8 = keySlice(n8 * 8) / 8;
  else
    k16 = keySlice(k16 * 16) / 16;
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  auto bT = VectorType::get({2, 2}, elt);
  auto x4T = VectorType::get({4, 2}, elt);
  SmallVector<Value> c; // [mt][n8]
  if (op.getAcc())
    c = frags[op.getAcc()].regs;
  else
    c.assign(mTiles * n8, arith::ConstantOp::create(
                              b, loc, DenseElementsAttr::get(cT, 0.0f)));
  // Each ldmatrix.x4 covers two k16 steps (QKᵀ) or two n8 tiles (P·V).
  if (op.getTransposeB() ? k16 % 2 : n8 % 2)
    return op.emitError("mma.sync dot needs a head dim that is a multiple "
                        "of 32");
  // One ldmatrix.x4 gives four 8x8 matrices: two B fragments, each used by
  // every m16 tile of the warp.
  auto bPair = [&](Value ld, int64_t which) {
    return fromRows(bT, {row2(ld, 2 * which), row2(ld, 2 * which + 1)});
  };
  if (op.getTransposeB()) {
    // K stored [key][d] is B(k = d, n = key) in column order: plain
    // ldmatrix; matrices (k16 chunk kk, +8 cols), (kk + 1, +8 cols).
    for (int64_t kk = 0; kk < k16; kk += 2) {
      SmallVector<Value> aPair; // [mt][2]
      for (int64_t mt = 0; mt < mTiles; ++mt)
        for (int64_t k = kk; k < kk + 2; ++k)
          aPair.push_back(aFragment(a, mt, k, elt));
      for (int64_t nt = 0; nt < n8; ++nt) {
        Value r = add(add(ldRow, nt * 8), keyOffset);
        Value colLane = add(arith::MulIOp::create(b, loc, ldHigh, idx(16)),
                            arith::MulIOp::create(b, loc, ldLow, idx(8)));
        Value ld = nvgpu::LdMatrixOp::create(
            b, loc, x4T, smem, smemAt(r, colLane, kk * 16), false, 4);
        // k16 step kk for every m16 tile, then kk + 1: consecutive
        // mma.syncs accumulate into different registers.
        for (int64_t k = 0; k < 2; ++k)
          for (int64_t mt = 0; mt < mTiles; ++mt) {
            Value &acc = c[mt * n8 + nt];
            acc = mma16816(aPair[2 * mt + k], bPair(ld, k), acc);
          }
      }
    }
  } else {
    // V stored [key][d] is B(k = key, n = d) in row order: ldmatrix.trans;
    // matrices (keys +0 / +8) x (n8 tiles dn / dn + 1).
    for (int64_t kk = 0; kk < k16; ++kk)
      for (int64_t dn = 0; dn < n8; dn += 2) {
        Value r = add(add(add(ldRow, kk * 16), keyOffset),
                      arith::MulIOp::create(b, loc, ldLow, idx(8)));
        Value ld = nvgpu::LdMatrixOp::create(
            b, loc, x4T, smem,
            smemAt(r, arith::MulIOp::create(b, loc, ldHigh, idx(8)), dn * 8),
            true, 4);
        for (int64_t mt = 0; mt < mTiles; ++mt) {
          Value aFrag = aFragment(a, mt, kk, elt);
          c[mt * n8 + dn] = mma16816(aFrag, bPair(ld, 0), c[mt * n8 + dn]);
          c[mt * n8 + dn + 1] =
              mma16816(aFrag, bPair(ld, 1), c[mt * n8 + dn + 1]);
        }
      }
  }
  frags[op.getResult()] = {Frags::C, std::move(c)};
  return success();
}

LogicalResult MMAEmitter::emitScore(tile::ScoreOp op) {
  Value q0 = map.lookup(op.getQ0()), k0 = map.lookup(op.getK0());
  // With positionsInBranch, the lane's rows and columns, where a tile's
  // masks (or a score_mod) read them, come from a thread index LLVM cannot
  // see through (gpu_emit::opaqueIndex), derived again in each branch that
  // reads them. Derived from setUp's, they are loop-invariant 64-bit
  // values that live across the whole KV loop for the few tiles that need
  // them (a sequence's last, the causal diagonal): at D128 with 128x64
  // tiles (255 registers) ptxas spilled 8-40 B around the loop. Here they
  // cost a few integer instructions in the masked branch; the unmasked one
  // reads no positions.
  LaneIndices lanes{lane, g, t4, rowWarp, keyWarp, rowInTile};
  // The warp's slice starts at k0 + keyOffset, for the masks too.
  Value sliceK0 = keyWarps == 1 ? k0 : add(k0, keyOffset);
  IRMapping sliceMap = map;
  sliceMap.map(op.getK0(), sliceK0);
  Value col0;
  if (!positionsInBranch)
    col0 = add(sliceK0, arith::MulIOp::create(b, loc, t4, idx(2)));
  return math().score(
      op, sliceMap, launch.getBlockM(),
      [&](int64_t mt, int64_t r) {
        return add(q0, add(lanes.rowInTile, 16 * mt + 8 * r));
      },
      [&] {
        if (!positionsInBranch)
          return col0;
        lanes = laneIndices(gpu_emit::opaqueIndex(b, loc, tid));
        return add(sliceK0, arith::MulIOp::create(b, loc, lanes.t4, idx(2)));
      });
}
