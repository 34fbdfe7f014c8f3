//===- FragmentMath.cpp - softmax arithmetic on accumulator fragments ----===//
//
// See FragmentMath.h. The code is the mma.sync mapping's; the wgmma mapping
// is its one-tile case (mTiles = 1).
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/FragmentMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace attnc;
using namespace attnc::gpu_emit;

Value FragmentMath::chainReduce(SmallVector<Value> xs, bool max) {
  Value acc = xs.front();
  for (Value x : ArrayRef<Value>(xs).drop_front())
    acc = max ? Value(arith::MaximumFOp::create(b, loc, acc, x))
              : Value(arith::AddFOp::create(b, loc, acc, x));
  return acc;
}

LogicalResult FragmentMath::score(tile::ScoreOp op, const IRMapping &map,
                                  int64_t blockM,
                                  function_ref<Value(int64_t, int64_t)> row,
                                  function_ref<Value()> col0) {
  const Frags &s = frags[op.getScores()];
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  int64_t n8 = int64_t(s.regs.size()) / mTiles;
  auto add = [&](Value x, int64_t y) -> Value {
    return y ? Value(arith::AddIOp::create(b, loc, x,
                                           gpu_emit::indexConst(b, loc, y)))
             : x;
  };
  // A plain score read only by softmax_update keeps the raw QKᵀ; the
  // update folds scale·log2(e) into its exponent (Frags::logScale): +1.3% /
  // +2.2% on mma.sync, +3.5% / +3% on wgmma (H200 A/B, D128 S4k,
  // non-causal / causal; bench/NOTES.md, "decode's launch structure,
  // causal sm_80", 2026-11-30).
  // Prefill only: decode (packed rows) is memory-bound.
  float scale = op.getScale().convertToFloat();
  bool defer = !op.getSoftcapAttr() && op.getScoreMod().empty() &&
               !op.getPacked() && scale > 0.f && op.getResult().hasOneUse() &&
               isa<tile::SoftmaxUpdateOp>(*op.getResult().getUsers().begin());
  // Most tiles are wholly visible: only boundary tiles pay for the masks.
  Value needsMasks = gpu_emit::tileNeedsMasks(b, loc, op, map, blockM, n8 * 8);
  auto scores = [&](OpBuilder &nb, Location l, bool masks) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
    SmallVector<Value> out;
    // Positions only where something reads them.
    const bool positions = masks || !op.getScoreMod().empty();
    Value c0 = positions ? col0() : Value();
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      Value rows[2] = {positions ? row(mt, 0) : Value(),
                       positions ? row(mt, 1) : Value()};
      // Each row's key range, loaded once for the tile.
      SmallVector<Value, 2> ranges[2];
      if (masks && op.getKvBounds())
        for (int64_t r = 0; r < 2; ++r) {
          auto [first, end] = gpu_emit::rowKeyRange(b, l, op, map, rows[r]);
          ranges[r] = {first, end};
        }
      for (int64_t nt = 0; nt < n8; ++nt) {
        Value reg = s.regs[mt * n8 + nt];
        SmallVector<Value> e;
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t c = 0; c < 2; ++c)
            e.push_back(gpu_emit::scoreElement(
                b, l, op, map, elem(reg, r, c), rows[r],
                positions ? add(c0, nt * 8 + c) : Value(), masks, defer,
                ranges[r]));
        out.push_back(vector::FromElementsOp::create(b, l, cT, e));
      }
    }
    scf::YieldOp::create(b, l, out);
  };
  auto ifOp = scf::IfOp::create(
      b, loc, needsMasks,
      [&](OpBuilder &tb, Location l) { scores(tb, l, true); },
      [&](OpBuilder &eb, Location l) { scores(eb, l, false); });
  frags[op.getResult()] = {Frags::C, SmallVector<Value>(ifOp.getResults()),
                           defer ? scale * gpu_emit::kLog2e : 0.f};
  return success();
}

LogicalResult FragmentMath::store(tile::StoreOp op, const IRMapping &map,
                                  Value t4,
                                  function_ref<Value(int64_t, int64_t)> row) {
  const Frags &v = frags[op.getValue()];
  Value view = map.lookup(op.getDest());
  Value batch = map.lookup(op.getBatch()), head = map.lookup(op.getHead());
  Value seq = memref::DimOp::create(b, loc, view, 2);
  Value col0 = arith::MulIOp::create(b, loc, t4, indexConst(b, loc, 2));
  int64_t perTile = int64_t(v.regs.size()) / mTiles;
  for (int64_t mt = 0; mt < mTiles; ++mt)
    for (int64_t r = 0; r < 2; ++r) {
      Value seqRow = row(mt, r);
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, seqRow, seq);
      if (v.kind == Frags::RowStat) // LSE: one lane of the quad writes a row
        inside = arith::AndIOp::create(
            b, loc, inside,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t4,
                                  indexConst(b, loc, 0)));
      emitIfThen(b, loc, inside, [&] {
        if (v.kind == Frags::RowStat) {
          memref::StoreOp::create(b, loc, v.regs[2 * mt + r], view,
                                  ValueRange{batch, head, seqRow});
        } else {
          for (int64_t dn = 0; dn < perTile; ++dn) {
            Value col = dn ? Value(arith::AddIOp::create(
                                 b, loc, col0, indexConst(b, loc, dn * 8)))
                           : col0;
            vector::StoreOp::create(b, loc, row2(v.regs[mt * perTile + dn], r),
                                    view, ValueRange{batch, head, seqRow, col},
                                    false, llvm::MaybeAlign(4));
          }
        }
      });
    }
  return success();
}

LogicalResult FragmentMath::softmaxUpdate(tile::SoftmaxUpdateOp op) {
  const Frags &t = frags[op.getScores()];
  const Frags &m = frags[op.getMax()], &l = frags[op.getSum()];
  Frags probs{Frags::C, {}}, newMax{Frags::RowStat, {}},
      newSum{Frags::RowStat, {}}, alpha{Frags::RowStat, {}};
  int64_t n8 = int64_t(t.regs.size()) / mTiles;
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  // Raw scores: scale·log2(e), applied to the max and in the exponent.
  Value logScale = t.logScale != 0.f ? f32Const(b, loc, t.logScale) : Value();
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    ArrayRef<Value> tiles = ArrayRef<Value>(t.regs).slice(mt * n8, n8);
    SmallVector<SmallVector<Value>> p(n8);
    for (int64_t r = 0; r < 2; ++r) {
      Value mOld = m.regs[2 * mt + r], lOld = l.regs[2 * mt + r];
      if (r == 1 && deadUpperRows) { // padding: nothing to compute
        Value zero = f32Const(b, loc, 0.f);
        for (int64_t nt = 0; nt < n8; ++nt)
          p[nt].append({zero, zero});
        newMax.regs.push_back(mOld);
        alpha.regs.push_back(f32Const(b, loc, 1.f));
        newSum.regs.push_back(lOld);
        continue;
      }
      // Max and sum as chains: balanced trees measure no faster and
      // raise register pressure (mma.sync 128x64 spills 92 B instead of
      // 60; bench/NOTES.md, "decode was L2-bound by its own shared-memory
      // padding", 2026-11-29).
      SmallVector<Value> row;
      for (Value reg : tiles)
        for (int64_t c = 0; c < 2; ++c)
          row.push_back(elem(reg, r, c));
      // Raw scores (logScale > 0): max(s)·c is max(s·c), rounding being
      // monotonic, so m is the same as with scaled scores.
      Value rowMax = quadReduce(chainReduce(row, /*max=*/true), true);
      if (logScale)
        rowMax = arith::MulFOp::create(b, loc, rowMax, logScale);
      Value mx = arith::MaximumFOp::create(b, loc, mOld, rowMax);
      // Threshold: keep mOld while mx - mOld <= threshold. Ordered, so a
      // row that has seen only -inf (NaN difference) or moves off -inf
      // (+inf) takes mx; a kept mOld is finite, and alpha below is exactly
      // 2^0 = 1.
      if (rescaleThreshold > 0.f) {
        Value growth = arith::SubFOp::create(b, loc, mx, mOld);
        Value keep =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, growth,
                                  f32Const(b, loc, rescaleThreshold));
        mx = arith::SelectOp::create(b, loc, keep, mOld, mx);
      }
      // The running state and the tile's merge (StateMerge): a row that has
      // seen only -inf keeps a 0 reference, so p = 0, never NaN.
      StateMerge merge = StateMerge::towards(b, loc, mx);
      Value ref = merge.reference();
      SmallVector<Value> exps;
      Value negRef = logScale ? arith::NegFOp::create(b, loc, ref) : Value();
      for (auto [i, s] : llvm::enumerate(row)) {
        Value x = logScale
                      ? Value(LLVM::FMAOp::create(b, loc, s, logScale, negRef))
                      : Value(arith::SubFOp::create(b, loc, s, ref));
        Value e = gpu_emit::exp2(b, loc, x);
        p[i / 2].push_back(e);
        exps.push_back(e);
      }
      Value sum = chainReduce(exps, /*max=*/false);
      Value a = merge.weight(mOld);
      newMax.regs.push_back(mx);
      alpha.regs.push_back(a);
      // Row sums stay per-lane partial sums (alpha scales them alike) until
      // tile.finalize reduces them over the quad: 4 shuffles less per tile.
      newSum.regs.push_back(arith::AddFOp::create(
          b, loc, arith::MulFOp::create(b, loc, a, lOld), sum));
    }
    for (auto &e : p) // e = row 0: c0, c1; row 1: c0, c1
      probs.regs.push_back(vector::FromElementsOp::create(b, loc, cT, e));
  }
  frags[op.getProbs()] = std::move(probs);
  frags[op.getNewMax()] = std::move(newMax);
  frags[op.getNewSum()] = std::move(newSum);
  frags[op.getAlpha()] = std::move(alpha);
  return success();
}

/// n8 tiles per m16 tile of O (head dim / 8) from which skipping a unit
/// rescale pays.
static constexpr int64_t kMinSkippedRescaleTiles = 16;

LogicalResult FragmentMath::rescale(tile::RescaleOp op,
                                    function_ref<void()> awaitAcc) {
  const Frags &acc = frags[op.getAcc()], &alpha = frags[op.getAlpha()];
  auto pairT = VectorType::get({2}, b.getF32Type());
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  int64_t perTile = int64_t(acc.regs.size()) / mTiles;
  auto scaled = [&]() {
    SmallVector<Value> out;
    for (int64_t mt = 0; mt < mTiles; ++mt) {
      Value scale[2] = {
          vector::BroadcastOp::create(b, loc, pairT, alpha.regs[2 * mt]),
          vector::BroadcastOp::create(b, loc, pairT, alpha.regs[2 * mt + 1])};
      for (Value reg : ArrayRef<Value>(acc.regs).slice(mt * perTile, perTile))
        out.push_back(fromRows(
            cT, {arith::MulFOp::create(b, loc, row2(reg, 0), scale[0]),
                 arith::MulFOp::create(b, loc, row2(reg, 1), scale[1])}));
    }
    return out;
  };
  // Below head dim 128 the vote and the branch cost more than the
  // multiplies they skip (H200: mma.sync D64 279 vs 292 TFLOP/s;
  // bench/NOTES.md, "decode was L2-bound by its own shared-memory padding",
  // 2026-11-29).
  if (!skipUnitRescale || perTile < kMinSkippedRescaleTiles) {
    if (awaitAcc)
      awaitAcc();
    frags[op.getResult()] = {Frags::C, scaled()};
    return success();
  }
  // alpha = 2^(m_old - m_new) is exactly 1 when a row's max did not grow
  // (most tiles, once the first few have set it), and O · 1 = O: when that
  // holds for every row of every lane, the warp skips the multiplies
  // (FlashAttention-4 skips below a threshold; this keeps exactness).
  // A NaN alpha compares unequal, so it is applied.
  Value one = f32Const(b, loc, 1.f);
  Value grew = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  for (Value a : alpha.regs)
    grew = arith::OrIOp::create(
        b, loc, grew,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, a, one));
  Value anyGrew = NVVM::VoteSyncOp::create(
      b, loc, b.getI1Type(),
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(-1)), grew,
      NVVM::VoteSyncKind::any);
  SmallVector<Type> types(acc.regs.size(), cT);
  auto ifOp = scf::IfOp::create(b, loc, types, anyGrew, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    if (awaitAcc)
      awaitAcc();
    scf::YieldOp::create(b, loc, scaled());
    b.setInsertionPointToStart(ifOp.elseBlock());
    if (awaitAcc)
      awaitAcc();
    scf::YieldOp::create(b, loc, acc.regs);
  }
  frags[op.getResult()] = {Frags::C, SmallVector<Value>(ifOp.getResults())};
  return success();
}

LogicalResult FragmentMath::trunc(arith::TruncFOp op) {
  // P in the C layout of n8 tiles (2j, 2j+1) is the A fragment of k16 chunk
  // j: registers (tile 2j row g, tile 2j row g+8, tile 2j+1 row g, ...).
  const Frags &p = frags[op.getIn()];
  Type elt = cast<RankedTensorType>(op.getType()).getElementType();
  auto pairT = VectorType::get({2}, elt);
  Frags out{Frags::A, {}};
  auto half = [&](Value reg, int64_t r) {
    return arith::TruncFOp::create(b, loc, pairT, row2(reg, r));
  };
  // Chunks never straddle m16 tiles: each tile has an even number of n8s.
  for (size_t j = 0; j + 1 < p.regs.size(); j += 2)
    out.regs.push_back(
        fromRows(VectorType::get({4, 2}, elt),
                 {half(p.regs[j], 0), half(p.regs[j], 1),
                  half(p.regs[j + 1], 0), half(p.regs[j + 1], 1)}));
  frags[op.getResult()] = std::move(out);
  return success();
}

LogicalResult FragmentMath::constant(arith::ConstantOp op) {
  auto t = cast<RankedTensorType>(op.getType());
  auto splat = dyn_cast<SplatElementsAttr>(op.getValue());
  if (!splat || !t.getElementType().isF32())
    return op.emitError("only f32 splat tile constants have fragments");
  float v = splat.getSplatValue<APFloat>().convertToFloat();
  if (t.getRank() == 1) {
    Value s = f32Const(b, loc, v);
    frags[op.getResult()] = {Frags::RowStat, SmallVector<Value>(2 * mTiles, s)};
    return success();
  }
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  Value c = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(cT, v));
  frags[op.getResult()] = {Frags::C,
                           SmallVector<Value>(mTiles * t.getDimSize(1) / 8, c)};
  return success();
}

LogicalResult FragmentMath::finalize(tile::FinalizeOp op,
                                     const IRMapping &map) {
  const Frags &acc = frags[op.getAcc()];
  // The sink's logit in the log2 domain of m (the same for every row).
  Value sink, sinkLog2;
  if (op.getSink()) {
    sink = map.lookup(op.getSink());
    sinkLog2 = gpu_emit::sinkLog2Of(b, loc, sink);
  }
  const Frags &m = frags[op.getMax()], &l = frags[op.getSum()];
  Type elt = op.getOutput().getType().getElementType();
  auto pairT = VectorType::get({2}, b.getF32Type());
  Value zero = f32Const(b, loc, 0.f);
  int64_t perTile = int64_t(acc.regs.size()) / mTiles;
  Frags lse{Frags::RowStat, {}};
  // O stays in the C layout, one 2-element row per register, in `elt`.
  Frags out{Frags::C, {}};
  auto oT = VectorType::get({2, 2}, elt);
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    Value inv[2];
    for (int64_t r = 0; r < 2; ++r) {
      // The lanes' partial sums.
      Value rowSum = quadReduce(l.regs[2 * mt + r], false);
      Value rowMax = m.regs[2 * mt + r];
      Value numerator = f32Const(b, loc, 1.f);
      if (sinkLog2) {
        gpu_emit::SinkMerge merged =
            gpu_emit::mergeSink(b, loc, rowMax, rowSum, sinkLog2);
        rowMax = merged.max;
        rowSum = merged.sum;
        numerator = merged.accWeight;
      }
      Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                             rowSum, zero);
      inv[r] = vector::BroadcastOp::create(
          b, loc, pairT,
          arith::SelectOp::create(
              b, loc, positive,
              arith::DivFOp::create(b, loc, numerator, rowSum), zero));
      Value v = gpu_emit::lseOf(b, loc, rowMax, rowSum, sink, sinkLog2);
      lse.regs.push_back(arith::SelectOp::create(
          b, loc, positive, v,
          f32Const(b, loc, -std::numeric_limits<float>::infinity())));
    }
    auto scaled = [&](Value reg, int64_t r) { // f32 stays (a split-KV partial)
      Value v = arith::MulFOp::create(b, loc, row2(reg, r), inv[r]);
      return elt.isF32() ? v
                         : Value(arith::TruncFOp::create(
                               b, loc, VectorType::get({2}, elt), v));
    };
    for (Value reg : ArrayRef<Value>(acc.regs).slice(mt * perTile, perTile))
      out.regs.push_back(fromRows(oT, {scaled(reg, 0), scaled(reg, 1)}));
  }
  frags[op.getOutput()] = std::move(out);
  frags[op.getLse()] = std::move(lse);
  return success();
}
