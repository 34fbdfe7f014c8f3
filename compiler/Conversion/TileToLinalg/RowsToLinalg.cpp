//===- RowsToLinalg.cpp - tile row ops for the host path ------------------===//
#include "compiler/Conversion/TileToLinalg/RowsToLinalg.h"

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/TypeUtilities.h"

#include <limits>

using namespace mlir;
using namespace attnc;

namespace {

/// Indices of element `i` of the row starting at `indices`.
SmallVector<Value> at(OpBuilder &b, Location loc, ValueRange indices, Value i) {
  SmallVector<Value> out(indices.begin(), indices.end());
  out.back() = arith::AddIOp::create(b, loc, out.back(), i);
  return out;
}

struct LowerLoadRow : OpRewritePattern<tile::LoadRowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::LoadRowOp op,
                                PatternRewriter &rw) const override {
    int64_t d = op.getResult().getType().getDimSize(0);
    auto gen = tensor::GenerateOp::create(
        rw, op.getLoc(), op.getResult().getType(), ValueRange{},
        [&](OpBuilder &b, Location l, ValueRange idx) {
          // repeat = 2: column i / 2 (interleaved) or i mod d/2 (halves).
          Value col = idx[0];
          if (op.getRepeat() == 2)
            col = op.getInterleaved()
                      ? arith::DivUIOp::create(
                            b, l, col, arith::ConstantIndexOp::create(b, l, 2))
                            .getResult()
                      : arith::RemUIOp::create(
                            b, l, col,
                            arith::ConstantIndexOp::create(b, l, d / 2))
                            .getResult();
          Value v = memref::LoadOp::create(b, l, op.getSource(),
                                           at(b, l, op.getIndices(), col));
          tensor::YieldOp::create(b, l, v);
        });
    rw.replaceOp(op, gen.getResult());
    return success();
  }
};

struct LowerStoreRow : OpRewritePattern<tile::StoreRowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::StoreRowOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    int64_t d = op.getValue().getType().getDimSize(0);
    scf::ForOp::create(rw, loc, arith::ConstantIndexOp::create(rw, loc, 0),
                       arith::ConstantIndexOp::create(rw, loc, d),
                       arith::ConstantIndexOp::create(rw, loc, 1), ValueRange{},
                       [&](OpBuilder &b, Location l, Value i, ValueRange) {
                         Value v =
                             tensor::ExtractOp::create(b, l, op.getValue(), i);
                         memref::StoreOp::create(b, l, v, op.getDest(),
                                                 at(b, l, op.getIndices(), i));
                         scf::YieldOp::create(b, l);
                       });
    rw.eraseOp(op);
    return success();
  }
};

struct LowerReduceRow : OpRewritePattern<tile::ReduceRowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::ReduceRowOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    attn::ReduceKind kind = op.getKind();
    int64_t d = op.getInput().getType().getDimSize(0);
    float init = kind == attn::ReduceKind::max
                     ? -std::numeric_limits<float>::infinity()
                     : 0.0f;
    auto loop = scf::ForOp::create(
        rw, loc, arith::ConstantIndexOp::create(rw, loc, 0),
        arith::ConstantIndexOp::create(rw, loc, d),
        arith::ConstantIndexOp::create(rw, loc, 1),
        ValueRange{
            arith::ConstantOp::create(rw, loc, rw.getF32FloatAttr(init))},
        [&](OpBuilder &b, Location l, Value i, ValueRange acc) {
          Value v = tensor::ExtractOp::create(b, l, op.getInput(), i);
          Value next;
          if (kind == attn::ReduceKind::max)
            next = arith::MaximumFOp::create(b, l, acc[0], v);
          else if (kind == attn::ReduceKind::sum)
            next = arith::AddFOp::create(b, l, acc[0], v);
          else
            next = arith::AddFOp::create(b, l, acc[0],
                                         arith::MulFOp::create(b, l, v, v));
          scf::YieldOp::create(b, l, next);
        });
    Value r = loop.getResult(0);
    if (kind == attn::ReduceKind::mean_sq)
      r = arith::DivFOp::create(
          rw, loc, r,
          arith::ConstantOp::create(rw, loc,
                                    rw.getF32FloatAttr(static_cast<float>(d))));
    rw.replaceOp(op, r);
    return success();
  }
};

/// Partner of element i: NeoX i +- d/2, GPT-J i xor 1; negated in the first
/// element of its pair.
struct LowerRotatePairs : OpRewritePattern<tile::RotatePairsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::RotatePairsOp op,
                                PatternRewriter &rw) const override {
    auto t = cast<RankedTensorType>(op.getType());
    int64_t d = t.getDimSize(0);
    bool interleaved = op.getInterleaved();
    auto gen = tensor::GenerateOp::create(
        rw, op.getLoc(), t, ValueRange{},
        [&](OpBuilder &b, Location l, ValueRange idx) {
          Value i = idx[0];
          auto c = [&](int64_t v) {
            return arith::ConstantIndexOp::create(b, l, v).getResult();
          };
          Value first, partner;
          if (interleaved) {
            Value odd = arith::AndIOp::create(b, l, i, c(1));
            first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, odd,
                                          c(0));
            partner = arith::XOrIOp::create(b, l, i, c(1));
          } else {
            first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, i,
                                          c(d / 2));
            partner = arith::SelectOp::create(
                b, l, first, arith::AddIOp::create(b, l, i, c(d / 2)),
                arith::SubIOp::create(b, l, i, c(d / 2)));
          }
          Value v = tensor::ExtractOp::create(b, l, op.getInput(), partner);
          Value neg = arith::NegFOp::create(b, l, v);
          tensor::YieldOp::create(
              b, l, arith::SelectOp::create(b, l, first, neg, v).getResult());
        });
    rw.replaceOp(op, gen.getResult());
    return success();
  }
};

struct LowerSplat : OpRewritePattern<tensor::SplatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::SplatOp op,
                                PatternRewriter &rw) const override {
    auto t = op.getType();
    Value empty = tensor::EmptyOp::create(rw, op.getLoc(), t.getShape(),
                                          t.getElementType());
    rw.replaceOp(op,
                 linalg::FillOp::create(rw, op.getLoc(), op.getInput(), empty)
                     .getResult(0));
    return success();
  }
};

struct ExpandRsqrt : OpRewritePattern<math::RsqrtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::RsqrtOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type t = op.getType();
    Attribute one = rw.getFloatAttr(getElementTypeOrSelf(t), 1.0);
    if (auto st = dyn_cast<ShapedType>(t))
      one = DenseElementsAttr::get(st, one);
    Value c = arith::ConstantOp::create(rw, loc, cast<TypedAttr>(one));
    rw.replaceOpWithNewOp<arith::DivFOp>(
        op, c, math::SqrtOp::create(rw, loc, op.getOperand()));
    return success();
  }
};

} // namespace

void attnc::populateRowsToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerLoadRow, LowerStoreRow, LowerReduceRow, LowerSplat,
               ExpandRsqrt, LowerRotatePairs>(patterns.getContext());
}

void attnc::addRowsToLinalgIllegalOps(ConversionTarget &target) {
  target.addIllegalOp<tile::LoadRowOp, tile::StoreRowOp, tile::ReduceRowOp,
                      tensor::SplatOp, math::RsqrtOp, tile::RotatePairsOp>();
}
