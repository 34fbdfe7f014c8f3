//===- TileOps.cpp - verifiers of tile ops --------------------------------===//
#include "dialects/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace attnc::tile;

#define GET_OP_CLASSES
#include "dialects/Tile/IR/TileOps.cpp.inc"

static bool isFloat16ish(Type t) { return t.isBF16() || t.isF16(); }

/// A [batch, heads, seq, D] or [batch, heads, seq] view and the tile of its
/// rows: the tile's trailing dims must match the view's.
static LogicalResult verifyRowsTile(Operation *op, MemRefType view,
                                    RankedTensorType tile) {
  if (view.getRank() != 3 && view.getRank() != 4)
    return op->emitOpError() << "expected a [batch, heads, seq(, dim)] view, "
                                "got rank "
                             << view.getRank();
  if (tile.getRank() != view.getRank() - 2)
    return op->emitOpError()
           << "expected a tile of rank " << view.getRank() - 2 << " for a rank-"
           << view.getRank() << " view, got " << Type(tile);
  if (view.getRank() == 4 && tile.getDimSize(1) != view.getDimSize(3))
    return op->emitOpError()
           << "expected the tile's row length " << tile.getDimSize(1)
           << " to match the view's last dim " << view.getDimSize(3);
  if (tile.getElementType() != view.getElementType())
    return op->emitOpError()
           << "expected the tile element type " << tile.getElementType()
           << " to match the view's " << view.getElementType();
  return success();
}

LogicalResult LoadOp::verify() {
  auto view = cast<MemRefType>(getSource().getType());
  if (failed(verifyRowsTile(*this, view, getResult().getType())))
    return failure();
  if (!getBlockTable())
    return success();
  auto table = cast<MemRefType>(getBlockTable().getType());
  if (table.getRank() != 2 || !table.getElementType().isInteger(32))
    return emitOpError() << "expected a [batch, max_blocks] i32 block table, "
                            "got "
                         << Type(table);
  if (view.getRank() != 4 || view.isDynamicDim(2))
    return emitOpError() << "expected a paged cache view [pages, heads, "
                            "page_size, dim] with a static page size, got "
                         << Type(view);
  if (!getLength())
    return emitOpError() << "a paged load needs the sequence's length";
  return success();
}

LogicalResult StoreOp::verify() {
  return verifyRowsTile(*this, cast<MemRefType>(getDest().getType()),
                        getValue().getType());
}

LogicalResult DotOp::verify() {
  auto a = getLhs().getType(), b = getRhs().getType();
  auto r = getResult().getType();
  if (a.getRank() != 2 || b.getRank() != 2 || r.getRank() != 2)
    return emitOpError() << "expected rank-2 tiles";
  if (!isFloat16ish(a.getElementType()) ||
      a.getElementType() != b.getElementType())
    return emitOpError() << "expected bf16 or f16 operands of one type, got "
                         << a.getElementType() << " and " << b.getElementType();
  if (!r.getElementType().isF32())
    return emitOpError() << "expected an f32 result";
  int64_t m = getTransposeA() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t k = getTransposeA() ? a.getDimSize(0) : a.getDimSize(1);
  int64_t bk = getTransposeB() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = getTransposeB() ? b.getDimSize(0) : b.getDimSize(1);
  if (bk != k)
    return emitOpError() << "expected the reduction dims to match, got " << k
                         << " and " << bk;
  if (r.getDimSize(0) != m || r.getDimSize(1) != n)
    return emitOpError() << "expected a " << m << "x" << n << " result, got "
                         << Type(r);
  if (getAcc() && getAcc().getType() != r)
    return emitOpError() << "expected the accumulator type to equal the "
                            "result type";
  return success();
}

LogicalResult ScoreOp::verify() {
  auto s = getScores().getType();
  if (s.getRank() != 2 || !s.getElementType().isF32() ||
      s != getResult().getType())
    return emitOpError() << "expected an f32 M x N score tile in and out";
  if (getPacked() && (!getScoreMod().empty() || !getMaskMod().empty()))
    return emitOpError() << "packed rows (several heads per tile) cannot "
                            "take score or mask regions";
  if (Value bounds = getKvBounds()) {
    auto t = cast<MemRefType>(bounds.getType());
    if (getPacked() || t.getRank() != 3 || !t.getElementType().isInteger(32) ||
        t.getDimSize(2) != 2)
      return emitOpError() << "expected kv_bounds as an i32 memref "
                              "[batch, seq_q, 2] of unpacked rows";
  }
  if (!getKvBounds() != !getKvInnerFirst() ||
      !getKvBounds() != !getKvInnerEnd())
    return emitOpError() << "expected kv_bounds with the tile's inner key "
                            "range, or neither";
  // Each region: its scalar arguments, then the captures' memrefs.
  for (auto [region, scalars] :
       {std::pair<Region *, unsigned>{&getScoreMod(), 5}, {&getMaskMod(), 4}}) {
    if (region->empty())
      continue;
    TypeRange args(region->front().getArgumentTypes());
    if (args.size() != scalars + getCaptures().size() ||
        args.drop_front(scalars) != TypeRange(getCaptures().getTypes()))
      return emitOpError() << "expected each region to take its "
                           << "indices, then the captures' memrefs";
  }
  return success();
}

/// Row statistics of an M x N tile are f32 tensors of M (whatever thread
/// layout they carry: see the tgpu dialect).
static LogicalResult verifyRowStat(Operation *op, RankedTensorType tile,
                                   Type stat, StringRef name) {
  auto expected = RankedTensorType::get({tile.getDimSize(0)},
                                        Float32Type::get(op->getContext()));
  auto statT = dyn_cast<RankedTensorType>(stat);
  if (!statT || statT.getShape() != expected.getShape() ||
      statT.getElementType() != expected.getElementType())
    return op->emitOpError() << "expected " << name << " of type "
                             << Type(expected) << ", got " << stat;
  return success();
}

LogicalResult SoftmaxUpdateOp::verify() {
  auto s = getScores().getType();
  if (s.getRank() != 2 || !s.getElementType().isF32())
    return emitOpError() << "expected an f32 M x N score tile";
  if (failed(verifyRowStat(*this, s, getMax().getType(), "the row max")) ||
      failed(verifyRowStat(*this, s, getSum().getType(), "the row sum")) ||
      failed(verifyRowStat(*this, s, getNewMax().getType(), "the new max")) ||
      failed(verifyRowStat(*this, s, getNewSum().getType(), "the new sum")) ||
      failed(verifyRowStat(*this, s, getAlpha().getType(), "alpha")))
    return failure();
  if (getProbs().getType() != s)
    return emitOpError() << "expected the probabilities to have the score "
                            "tile's type";
  return success();
}

LogicalResult RescaleOp::verify() {
  auto acc = getAcc().getType();
  if (acc.getRank() != 2 || !acc.getElementType().isF32())
    return emitOpError() << "expected an f32 M x D accumulator";
  return verifyRowStat(*this, acc, getAlpha().getType(), "alpha");
}

void FinalizeOp::build(OpBuilder &b, OperationState &state, Value acc,
                       Value max, Value sum, Type outputElementType,
                       Value sink) {
  auto accT = cast<RankedTensorType>(acc.getType());
  build(b, state, accT.clone(outputElementType),
        RankedTensorType::get({accT.getDimSize(0)}, b.getF32Type()), acc, max,
        sum, sink);
}

LogicalResult FinalizeOp::verify() {
  auto acc = getAcc().getType();
  if (acc.getRank() != 2 || !acc.getElementType().isF32())
    return emitOpError() << "expected an f32 M x D accumulator";
  if (failed(verifyRowStat(*this, acc, getMax().getType(), "the row max")) ||
      failed(verifyRowStat(*this, acc, getSum().getType(), "the row sum")) ||
      failed(verifyRowStat(*this, acc, getLse().getType(), "the lse")))
    return failure();
  Type out = getOutput().getType().getElementType();
  if (getOutput().getType().getShape() != acc.getShape() ||
      !(isFloat16ish(out) || out.isF32()))
    return emitOpError() << "expected a bf16, f16 or f32 output of the "
                            "accumulator's shape";
  if (getSink() && out.isF32())
    return emitOpError() << "a sink belongs to the final result, not to an "
                            "f32 split-KV partial";
  return success();
}

LogicalResult LseAccumulateOp::verify() {
  auto acc = getAcc().getType();
  if (acc.getRank() != 2 || !acc.getElementType().isF32())
    return emitOpError() << "expected an f32 M x D accumulator";
  auto part = getPartial().getType();
  if (part.getShape() != acc.getShape() ||
      !(part.getElementType().isF32() || isFloat16ish(part.getElementType())))
    return emitOpError() << "expected an f32, bf16 or f16 partial of the "
                            "accumulator's shape, got "
                         << Type(part);
  return verifyRowStat(*this, acc, getMax().getType(), "the row max");
}

LogicalResult ProbsFromLseOp::verify() {
  auto s = getScores().getType();
  if (s.getRank() != 2 || !s.getElementType().isF32())
    return emitOpError() << "expected an f32 M x N score tile";
  return verifyRowStat(*this, s, getLse().getType(), "the lse");
}

LogicalResult ScoreGradOp::verify() {
  auto p = getProbs().getType();
  if (p.getRank() != 2 || !p.getElementType().isF32())
    return emitOpError() << "expected f32 M x N tiles of P and dP";
  if (failed(verifyRowStat(*this, p, getDelta().getType(), "the row delta")))
    return failure();
  if (getScores() && getScores().getType() != p)
    return emitOpError() << "expected the score tile to have P's type";
  if (getSoftcapAttr() && !getScores())
    return emitOpError() << "the soft-cap's derivative needs the capped "
                            "score tile (`scores`)";
  if (auto c = getSoftcapAttr(); c && !(c.getValueAsDouble() > 0.0))
    return emitOpError() << "expected a positive softcap";
  return success();
}

LogicalResult RowDotOp::verify() {
  auto a = getLhs().getType();
  Type elt = a.getElementType();
  if (a.getRank() != 2 || a != getRhs().getType() ||
      !(isFloat16ish(elt) || elt.isF32()))
    return emitOpError() << "expected two M x D tiles of one type, bf16, f16 "
                            "or f32";
  return verifyRowStat(*this, a, getResult().getType(), "the result");
}

LogicalResult StoreAddOp::verify() {
  auto view = cast<MemRefType>(getDest().getType());
  if (!view.getElementType().isF32())
    return emitOpError() << "expected an f32 destination (an accumulator), "
                            "got "
                         << view.getElementType();
  return verifyRowsTile(*this, view, getValue().getType());
}
