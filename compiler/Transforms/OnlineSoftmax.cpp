//===- OnlineSoftmax.cpp - the online-softmax loop over K/V tiles ---------===//
#include "compiler/Transforms/OnlineSoftmax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace attnc;

tile::FinalizeOp attnc::buildOnlineSoftmaxLoop(OpBuilder &b, Location loc,
                                               Value qTile, Value lo, Value hi,
                                               int64_t blockN, Type outElt,
                                               const OnlineSoftmaxTiles &tiles,
                                               Value sink) {
  auto qT = cast<RankedTensorType>(qTile.getType());
  int64_t rows = qT.getDimSize(0), headDim = qT.getDimSize(1);
  Type elt = qT.getElementType();
  auto splat = [&](ArrayRef<int64_t> shape, float v) -> Value {
    auto t = RankedTensorType::get(shape, b.getF32Type());
    return arith::ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, v));
  };
  Value m0 = splat({rows}, -std::numeric_limits<float>::infinity());
  Value l0 = splat({rows}, 0.0f);
  Value acc0 = splat({rows, headDim}, 0.0f);
  auto loop = scf::ForOp::create(b, loc, lo, hi,
                                 arith::ConstantIndexOp::create(b, loc, blockN),
                                 ValueRange{m0, l0, acc0});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value k0 = loop.getInductionVar();
    Value m = loop.getRegionIterArg(0), l = loop.getRegionIterArg(1);
    Value acc = loop.getRegionIterArg(2);
    Value kTile = tiles.loadK(k0);
    Value vTile = tiles.loadV(k0);
    auto sT = RankedTensorType::get({rows, blockN}, b.getF32Type());
    Value s = tile::DotOp::create(b, loc, sT, qTile, kTile, Value(),
                                  /*transpose_b=*/true);
    Value score = tiles.score(s, k0);
    auto upd = tile::SoftmaxUpdateOp::create(
        b, loc, sT, m.getType(), m.getType(), m.getType(), score, m, l);
    Value rescaled =
        tile::RescaleOp::create(b, loc, acc.getType(), acc, upd.getAlpha());
    Value p = arith::TruncFOp::create(
        b, loc, RankedTensorType::get({rows, blockN}, elt), upd.getProbs());
    Value acc1 = tile::DotOp::create(b, loc, acc.getType(), p, vTile, rescaled,
                                     /*transpose_b=*/false);
    scf::YieldOp::create(b, loc,
                         ValueRange{upd.getNewMax(), upd.getNewSum(), acc1});
  }
  return tile::FinalizeOp::create(b, loc, loop.getResult(2), loop.getResult(0),
                                  loop.getResult(1), outElt, sink);
}
