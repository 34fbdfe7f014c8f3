//===- TileToLinalg.cpp - tile ops as linalg on tensors (host path) -------===//
//
// The portable meaning of each tile op, written with linalg, tensor and scf
// on tensors. Bufferized and lowered to loops, this runs the kernel-level
// algorithm on the host CPU, so CI checks the real tiled online softmax
// without a GPU. GPU targets map the same tile ops onto threads instead.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToLinalg/RowsToLinalg.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace attnc {
#define GEN_PASS_DEF_LOWERTILETOLINALG
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

Value f32Const(OpBuilder &b, Location loc, float v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value emptyLike(OpBuilder &b, Location loc, RankedTensorType t) {
  return tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType());
}

SmallVector<utils::IteratorType> iters(int parallel, int reduction = 0) {
  SmallVector<utils::IteratorType> it(parallel, utils::IteratorType::parallel);
  it.append(reduction, utils::IteratorType::reduction);
  return it;
}

AffineMap map(MLIRContext *ctx, unsigned dims, ArrayRef<unsigned> results) {
  SmallVector<AffineExpr> exprs;
  for (unsigned r : results)
    exprs.push_back(getAffineDimExpr(r, ctx));
  return AffineMap::get(dims, 0, exprs, ctx);
}

/// tile.load: rows at or past the length (default: the view's sequence
/// length) read as zero; a paged load looks each row's page up in the block
/// table.
struct LowerLoad : OpRewritePattern<tile::LoadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::LoadOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto t = op.getResult().getType();
    Value seq = op.getLength()
                    ? op.getLength()
                    : Value(memref::DimOp::create(rw, loc, op.getSource(), 2));
    auto gen = tensor::GenerateOp::create(
        rw, loc, t, ValueRange{},
        [&](OpBuilder &b, Location l, ValueRange idx) {
          Value row = arith::AddIOp::create(b, l, op.getRow(), idx[0]);
          Value inside =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, row, seq);
          auto ifOp = scf::IfOp::create(
              b, l, inside,
              [&](OpBuilder &tb, Location tl) {
                Value first = op.getBatch(), seqRow = row;
                if (op.isPaged()) {
                  auto view = cast<MemRefType>(op.getSource().getType());
                  Value pageSize = arith::ConstantIndexOp::create(
                      tb, tl, view.getDimSize(2));
                  Value block = arith::DivUIOp::create(tb, tl, row, pageSize);
                  Value page =
                      memref::LoadOp::create(tb, tl, op.getBlockTable(),
                                             ValueRange{op.getBatch(), block});
                  first = arith::IndexCastOp::create(tb, tl, tb.getIndexType(),
                                                     page);
                  seqRow = arith::RemUIOp::create(tb, tl, row, pageSize);
                }
                SmallVector<Value> at{first, op.getHead(), seqRow};
                if (t.getRank() == 2)
                  at.push_back(idx[1]);
                Value v = memref::LoadOp::create(tb, tl, op.getSource(), at);
                scf::YieldOp::create(tb, tl, v);
              },
              [&](OpBuilder &eb, Location el) {
                Value zero = arith::ConstantOp::create(
                    eb, el, eb.getZeroAttr(t.getElementType()));
                scf::YieldOp::create(eb, el, zero);
              });
          tensor::YieldOp::create(b, l, ifOp.getResult(0));
        });
    rw.replaceOp(op, gen.getResult());
    return success();
  }
};

/// tile.store: writes rows below the view's sequence length.
/// tile.store_add: adds into them (read, add, write: the host runs one
/// program at a time, so no other program adds in between).
template <typename StoreOpT>
struct LowerStoreRows : OpRewritePattern<StoreOpT> {
  using OpRewritePattern<StoreOpT>::OpRewritePattern;
  static constexpr bool kAdd = std::is_same_v<StoreOpT, tile::StoreAddOp>;
  /// The value to store at `at`: v, or what is there plus v.
  static Value stored(OpBuilder &b, Location l, StoreOpT op, Value v,
                      ValueRange at) {
    if (!kAdd)
      return v;
    Value old = memref::LoadOp::create(b, l, op.getDest(), at);
    return arith::AddFOp::create(b, l, old, v);
  }
  LogicalResult matchAndRewrite(StoreOpT op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto t = op.getValue().getType();
    Value seq = memref::DimOp::create(rw, loc, op.getDest(), 2);
    Value c0 = arith::ConstantIndexOp::create(rw, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rw, loc, 1);
    Value rows = arith::ConstantIndexOp::create(rw, loc, t.getDimSize(0));
    // Rows to write: min(R, seq - row), at least 0.
    Value left = arith::SubIOp::create(rw, loc, seq, op.getRow());
    Value n = arith::MaxSIOp::create(
        rw, loc, c0, arith::MinSIOp::create(rw, loc, rows, left));
    scf::ForOp::create(
        rw, loc, c0, n, c1, ValueRange{},
        [&](OpBuilder &b, Location l, Value i, ValueRange) {
          Value row = arith::AddIOp::create(b, l, op.getRow(), i);
          if (t.getRank() == 1) {
            Value v = tensor::ExtractOp::create(b, l, op.getValue(), i);
            SmallVector<Value, 3> at{op.getBatch(), op.getHead(), row};
            memref::StoreOp::create(b, l, stored(b, l, op, v, at), op.getDest(),
                                    at);
          } else {
            Value d = arith::ConstantIndexOp::create(b, l, t.getDimSize(1));
            scf::ForOp::create(
                b, l, c0, d, c1, ValueRange{},
                [&](OpBuilder &ib, Location il, Value j, ValueRange) {
                  Value v = tensor::ExtractOp::create(ib, il, op.getValue(),
                                                      ValueRange{i, j});
                  SmallVector<Value, 4> at{op.getBatch(), op.getHead(), row, j};
                  memref::StoreOp::create(ib, il, stored(ib, il, op, v, at),
                                          op.getDest(), at);
                  scf::YieldOp::create(ib, il);
                });
          }
          scf::YieldOp::create(b, l);
        });
    rw.eraseOp(op);
    return success();
  }
};

/// tile.dot: a linalg.generic contraction with f32 accumulation.
struct LowerDot : OpRewritePattern<tile::DotOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::DotOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto rt = op.getResult().getType();
    Value init = op.getAcc();
    if (!init) {
      Value zero = f32Const(rw, loc, 0.0f);
      init = linalg::FillOp::create(rw, loc, zero, emptyLike(rw, loc, rt))
                 .getResult(0);
    }
    // (m, n, k): a[m, k] (or a[k, m] transposed) · b[k, n] (or b[n, k]
    // transposed) -> c[m, n].
    SmallVector<AffineMap> maps{
        op.getTransposeA() ? map(ctx, 3, {2, 0}) : map(ctx, 3, {0, 2}),
        op.getTransposeB() ? map(ctx, 3, {1, 2}) : map(ctx, 3, {2, 1}),
        map(ctx, 3, {0, 1})};
    auto gen = linalg::GenericOp::create(
        rw, loc, TypeRange{rt}, ValueRange{op.getLhs(), op.getRhs()},
        ValueRange{init}, maps, iters(2, 1),
        [](OpBuilder &b, Location l, ValueRange args) {
          Value a = arith::ExtFOp::create(b, l, b.getF32Type(), args[0]);
          Value c = arith::ExtFOp::create(b, l, b.getF32Type(), args[1]);
          Value prod = arith::MulFOp::create(b, l, a, c);
          linalg::YieldOp::create(
              b, l, ValueRange{arith::AddFOp::create(b, l, args[2], prod)});
        });
    rw.replaceOp(op, gen.getResult(0));
    return success();
  }
};

/// Clones a scalar region's ops, mapping its block arguments to `args` and
/// then to `captures` (the captured tensors' memrefs), and returns the value
/// its tile.yield yields.
Value inlineRegion(OpBuilder &b, Region &region, ArrayRef<Value> args,
                   ValueRange captures) {
  Block &block = region.front();
  IRMapping mapping;
  mapping.map(block.getArguments().take_front(args.size()), args);
  mapping.map(block.getArguments().drop_front(args.size()), captures);
  for (Operation &op : block.without_terminator())
    b.clone(op, mapping);
  auto yield = cast<tile::YieldOp>(block.getTerminator());
  return mapping.lookup(yield.getValues()[0]);
}

/// tile.score: scale, softcap, score_mod, masks, then into the log2 domain.
struct LowerScore : OpRewritePattern<tile::ScoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::ScoreOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto t = op.getResult().getType();
    auto window = op.getWindowAttr();
    int64_t left = window ? window.getLeft() : -1;
    int64_t right = op.getCausal() ? 0 : (window ? window.getRight() : -1);
    auto gen = linalg::GenericOp::create(
        rw, loc, TypeRange{t}, ValueRange{op.getScores()},
        ValueRange{emptyLike(rw, loc, t)},
        SmallVector<AffineMap>(2, AffineMap::getMultiDimIdentityMap(2, ctx)),
        iters(2), [&](OpBuilder &b, Location l, ValueRange args) {
          Value i = linalg::IndexOp::create(b, l, 0);
          Value j = linalg::IndexOp::create(b, l, 1);
          Value row = arith::AddIOp::create(b, l, op.getQ0(), i);
          if (op.getPacked()) // several heads' rows: the position in the head
            row = arith::RemUIOp::create(b, l, row, op.getSeqQ());
          Value key = arith::AddIOp::create(b, l, op.getK0(), j);
          // The regions see positions inside the sequences only (rows and
          // keys past them are masked or never stored): a mod indexing a
          // captured tensor by position stays inside it.
          Value modRow = row, modKey = key;
          if (!op.getScoreMod().empty() || !op.getMaskMod().empty()) {
            Value one = arith::ConstantIndexOp::create(b, l, 1);
            modRow = arith::MinUIOp::create(
                b, l, row, arith::SubIOp::create(b, l, op.getSeqQ(), one));
            modKey = arith::MinUIOp::create(
                b, l, key, arith::SubIOp::create(b, l, op.getSeqKv(), one));
          }
          Value s = arith::MulFOp::create(
              b, l, args[0], f32Const(b, l, op.getScale().convertToFloat()));
          if (auto cap = op.getSoftcapAttr()) {
            float c = cap.getValueAsDouble();
            Value x = arith::MulFOp::create(b, l, s, f32Const(b, l, 1.0f / c));
            s = arith::MulFOp::create(b, l, math::TanhOp::create(b, l, x),
                                      f32Const(b, l, c));
          }
          if (!op.getScoreMod().empty())
            s = inlineRegion(b, op.getScoreMod(),
                             {s, op.getBatch(), op.getHead(), modRow, modKey},
                             op.getCaptures());
          // Visible: key < seq_kv, and within [diag - left, diag + right]
          // where diag = row + seq_kv - seq_q.
          Value visible = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                                key, op.getSeqKv());
          Value diag = arith::AddIOp::create(
              b, l, row,
              arith::SubIOp::create(b, l, op.getSeqKv(), op.getSeqQ()));
          auto andWith = [&](arith::CmpIPredicate pred, Value lhs, Value rhs) {
            visible = arith::AndIOp::create(
                b, l, visible, arith::CmpIOp::create(b, l, pred, lhs, rhs));
          };
          if (right >= 0)
            andWith(
                arith::CmpIPredicate::sle, key,
                arith::AddIOp::create(
                    b, l, diag, arith::ConstantIndexOp::create(b, l, right)));
          if (left >= 0)
            andWith(
                arith::CmpIPredicate::sge, key,
                arith::SubIOp::create(
                    b, l, diag, arith::ConstantIndexOp::create(b, l, left)));
          if (Value bounds = op.getKvBounds()) { // [first, end) of the row
            Value lastRow = arith::SubIOp::create(
                b, l, op.getSeqQ(), arith::ConstantIndexOp::create(b, l, 1));
            Value at = arith::MinUIOp::create(b, l, row, lastRow);
            auto bound = [&](int64_t which) -> Value {
              return arith::IndexCastOp::create(
                  b, l, b.getIndexType(),
                  memref::LoadOp::create(
                      b, l, bounds,
                      ValueRange{op.getBatch(), at,
                                 arith::ConstantIndexOp::create(b, l, which)}));
            };
            andWith(arith::CmpIPredicate::sge, key, bound(0));
            andWith(arith::CmpIPredicate::slt, key, bound(1));
          }
          if (!op.getMaskMod().empty())
            visible = arith::AndIOp::create(
                b, l, visible,
                inlineRegion(b, op.getMaskMod(),
                             {op.getBatch(), op.getHead(), modRow, modKey},
                             op.getCaptures()));
          Value log2 = arith::MulFOp::create(b, l, s, f32Const(b, l, kLog2e));
          Value out = arith::SelectOp::create(
              b, l, visible, log2,
              f32Const(b, l, -std::numeric_limits<float>::infinity()));
          linalg::YieldOp::create(b, l, out);
        });
    rw.replaceOp(op, gen.getResult(0));
    return success();
  }
};

/// A row reduction of an M x N f32 tile into M values, starting from init.
Value rowReduce(OpBuilder &b, Location loc, Value tile, Value init,
                function_ref<Value(OpBuilder &, Location, Value, Value)> comb) {
  MLIRContext *ctx = b.getContext();
  auto gen = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{tile}, ValueRange{init},
      SmallVector<AffineMap>{map(ctx, 2, {0, 1}), map(ctx, 2, {0})},
      iters(1, 1), [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, comb(nb, l, args[1], args[0]));
      });
  return gen.getResult(0);
}

/// max(m, rowmax) with -inf rows mapped to a safe 0 reference point.
Value safeMax(OpBuilder &b, Location l, Value m) {
  Value isNegInf = arith::CmpFOp::create(
      b, l, arith::CmpFPredicate::OEQ, m,
      f32Const(b, l, -std::numeric_limits<float>::infinity()));
  return arith::SelectOp::create(b, l, isNegInf, f32Const(b, l, 0.0f), m);
}

/// tile.softmax_update, element by element as its description states.
struct LowerSoftmaxUpdate : OpRewritePattern<tile::SoftmaxUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::SoftmaxUpdateOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto sT = op.getScores().getType();
    auto rowT = op.getMax().getType();
    Value newMax =
        rowReduce(rw, loc, op.getScores(), op.getMax(),
                  [](OpBuilder &b, Location l, Value acc, Value x) -> Value {
                    return arith::MaximumFOp::create(b, l, acc, x);
                  });
    // p = exp2(s - safe(m')).
    auto probs = linalg::GenericOp::create(
        rw, loc, TypeRange{sT}, ValueRange{op.getScores(), newMax},
        ValueRange{emptyLike(rw, loc, sT)},
        SmallVector<AffineMap>{map(ctx, 2, {0, 1}), map(ctx, 2, {0}),
                               map(ctx, 2, {0, 1})},
        iters(2), [&](OpBuilder &b, Location l, ValueRange args) {
          Value d =
              arith::SubFOp::create(b, l, args[0], safeMax(b, l, args[1]));
          linalg::YieldOp::create(b, l,
                                  ValueRange{math::Exp2Op::create(b, l, d)});
        });
    // alpha = exp2(m - safe(m')): 1 while both are -inf (exp2(-inf - 0) = 0
    // would also be harmless: l and acc are still 0 then).
    auto alpha = linalg::GenericOp::create(
        rw, loc, TypeRange{rowT}, ValueRange{op.getMax(), newMax},
        ValueRange{emptyLike(rw, loc, rowT)},
        SmallVector<AffineMap>(3, AffineMap::getMultiDimIdentityMap(1, ctx)),
        iters(1), [&](OpBuilder &b, Location l, ValueRange args) {
          Value d =
              arith::SubFOp::create(b, l, args[0], safeMax(b, l, args[1]));
          linalg::YieldOp::create(b, l,
                                  ValueRange{math::Exp2Op::create(b, l, d)});
        });
    // l' = alpha * l + rowsum(p).
    auto scaled = linalg::GenericOp::create(
        rw, loc, TypeRange{rowT}, ValueRange{op.getSum(), alpha.getResult(0)},
        ValueRange{emptyLike(rw, loc, rowT)},
        SmallVector<AffineMap>(3, AffineMap::getMultiDimIdentityMap(1, ctx)),
        iters(1), [&](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(
              b, l, ValueRange{arith::MulFOp::create(b, l, args[0], args[1])});
        });
    Value newSum =
        rowReduce(rw, loc, probs.getResult(0), scaled.getResult(0),
                  [](OpBuilder &b, Location l, Value acc, Value x) -> Value {
                    return arith::AddFOp::create(b, l, acc, x);
                  });
    rw.replaceOp(
        op, ValueRange{probs.getResult(0), newMax, newSum, alpha.getResult(0)});
    return success();
  }
};

/// tile.probs_from_lse: p = exp2(t - lse · log2 e); 0 in rows with
/// lse = -inf.
struct LowerProbsFromLse : OpRewritePattern<tile::ProbsFromLseOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::ProbsFromLseOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto t = op.getProbs().getType();
    auto gen = linalg::GenericOp::create(
        rw, loc, TypeRange{t}, ValueRange{op.getScores(), op.getLse()},
        ValueRange{emptyLike(rw, loc, t)},
        SmallVector<AffineMap>{map(ctx, 2, {0, 1}), map(ctx, 2, {0}),
                               map(ctx, 2, {0, 1})},
        iters(2), [&](OpBuilder &b, Location l, ValueRange args) {
          Value ref =
              arith::MulFOp::create(b, l, args[1], f32Const(b, l, kLog2e));
          Value p = math::Exp2Op::create(
              b, l, arith::SubFOp::create(b, l, args[0], ref));
          Value noKey = arith::CmpFOp::create(
              b, l, arith::CmpFPredicate::OEQ, args[1],
              f32Const(b, l, -std::numeric_limits<float>::infinity()));
          linalg::YieldOp::create(b, l,
                                  ValueRange{arith::SelectOp::create(
                                      b, l, noKey, f32Const(b, l, 0.0f), p)});
        });
    rw.replaceOp(op, gen.getResult(0));
    return success();
  }
};

/// tile.score_grad: ds = p · (dp - delta), times 1 - u² with
/// u = t · ln 2 / softcap (0 where t = -inf: a masked entry).
struct LowerScoreGrad : OpRewritePattern<tile::ScoreGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::ScoreGradOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto t = op.getResult().getType();
    SmallVector<Value> ins{op.getProbs(), op.getGradProbs(), op.getDelta()};
    SmallVector<AffineMap> maps{map(ctx, 2, {0, 1}), map(ctx, 2, {0, 1}),
                                map(ctx, 2, {0})};
    auto cap = op.getSoftcapAttr();
    if (cap) {
      ins.push_back(op.getScores());
      maps.push_back(map(ctx, 2, {0, 1}));
    }
    maps.push_back(map(ctx, 2, {0, 1}));
    auto gen = linalg::GenericOp::create(
        rw, loc, TypeRange{t}, ins, ValueRange{emptyLike(rw, loc, t)}, maps,
        iters(2), [&](OpBuilder &b, Location l, ValueRange args) {
          Value ds = arith::MulFOp::create(
              b, l, args[0], arith::SubFOp::create(b, l, args[1], args[2]));
          if (cap) {
            float c = cap.getValueAsDouble();
            Value u =
                arith::MulFOp::create(b, l, args[3], f32Const(b, l, kLn2 / c));
            Value slope = arith::SubFOp::create(
                b, l, f32Const(b, l, 1.0f), arith::MulFOp::create(b, l, u, u));
            Value masked = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OEQ, args[3],
                f32Const(b, l, -std::numeric_limits<float>::infinity()));
            ds =
                arith::SelectOp::create(b, l, masked, f32Const(b, l, 0.0f),
                                        arith::MulFOp::create(b, l, ds, slope));
          }
          linalg::YieldOp::create(b, l, ValueRange{ds});
        });
    rw.replaceOp(op, gen.getResult(0));
    return success();
  }
};

/// tile.row_dot: r[i] = sum_x a[i, x] · b[i, x] in f32.
struct LowerRowDot : OpRewritePattern<tile::RowDotOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::RowDotOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto rt = op.getResult().getType();
    Value init = linalg::FillOp::create(rw, loc, f32Const(rw, loc, 0.0f),
                                        emptyLike(rw, loc, rt))
                     .getResult(0);
    auto gen = linalg::GenericOp::create(
        rw, loc, TypeRange{rt}, ValueRange{op.getLhs(), op.getRhs()},
        ValueRange{init},
        SmallVector<AffineMap>{map(ctx, 2, {0, 1}), map(ctx, 2, {0, 1}),
                               map(ctx, 2, {0})},
        iters(1, 1), [](OpBuilder &b, Location l, ValueRange args) {
          auto f32 = [&](Value v) -> Value {
            return v.getType().isF32()
                       ? v
                       : arith::ExtFOp::create(b, l, b.getF32Type(), v);
          };
          Value prod = arith::MulFOp::create(b, l, f32(args[0]), f32(args[1]));
          linalg::YieldOp::create(
              b, l, ValueRange{arith::AddFOp::create(b, l, args[2], prod)});
        });
    rw.replaceOp(op, gen.getResult(0));
    return success();
  }
};

/// tile.lse_accumulate, element by element as its description states.
struct LowerLseAccumulate : OpRewritePattern<tile::LseAccumulateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::LseAccumulateOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto accT = op.getAcc().getType();
    auto rowT = op.getMax().getType();
    auto rowMap = [&](int dims) { return map(ctx, dims, {0}); };
    // t = lse · log2 e; m' = max(m, t); a = exp2(m - m'), w = exp2(t - m')
    // (m' = -inf maps to a 0 reference: a = w = 0 then, and l, acc stay 0).
    auto stats = linalg::GenericOp::create(
        rw, loc, TypeRange{rowT, rowT, rowT, rowT},
        ValueRange{op.getLse(), op.getMax(), op.getSum()},
        ValueRange{emptyLike(rw, loc, rowT), emptyLike(rw, loc, rowT),
                   emptyLike(rw, loc, rowT), emptyLike(rw, loc, rowT)},
        SmallVector<AffineMap>(7, rowMap(1)), iters(1),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value t =
              arith::MulFOp::create(b, l, args[0], f32Const(b, l, kLog2e));
          Value m = arith::MaximumFOp::create(b, l, args[1], t);
          Value ref = safeMax(b, l, m);
          Value a = math::Exp2Op::create(
              b, l, arith::SubFOp::create(b, l, args[1], ref));
          Value w =
              math::Exp2Op::create(b, l, arith::SubFOp::create(b, l, t, ref));
          Value sum = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, a, args[2]), w);
          linalg::YieldOp::create(b, l, ValueRange{m, sum, a, w});
        });
    auto accOut = linalg::GenericOp::create(
        rw, loc, TypeRange{accT},
        ValueRange{op.getAcc(), op.getPartial(), stats.getResult(2),
                   stats.getResult(3)},
        ValueRange{emptyLike(rw, loc, accT)},
        SmallVector<AffineMap>{map(ctx, 2, {0, 1}), map(ctx, 2, {0, 1}),
                               rowMap(2), rowMap(2), map(ctx, 2, {0, 1})},
        iters(2), [&](OpBuilder &b, Location l, ValueRange args) {
          Value part = args[1];
          if (!part.getType().isF32()) // a finished bf16/f16 output
            part = arith::ExtFOp::create(b, l, b.getF32Type(), part);
          Value v = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, args[2], args[0]),
              arith::MulFOp::create(b, l, args[3], part));
          linalg::YieldOp::create(b, l, ValueRange{v});
        });
    rw.replaceOp(op, ValueRange{accOut.getResult(0), stats.getResult(0),
                                stats.getResult(1)});
    return success();
  }
};

/// tile.split_arrive on one thread (the host runs the programs one after
/// another): the counter word's update as the GPU's compare-and-swap makes
/// it, without the atomicity.
struct LowerSplitArrive : OpRewritePattern<tile::SplitArriveOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::SplitArriveOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type i64 = rw.getI64Type();
    auto c64 = [&](int64_t v) {
      return arith::ConstantIntOp::create(rw, loc, i64, v);
    };
    SmallVector<Value, 2> at{op.getBatch(), op.getHead()};
    Value word = memref::LoadOp::create(rw, loc, op.getCounts(), at);
    Value ticket =
        arith::AndIOp::create(rw, loc, op.getTicket(), c64(0xFFFFFFFF));
    Value same = arith::CmpIOp::create(
        rw, loc, arith::CmpIPredicate::eq,
        arith::ShRUIOp::create(rw, loc, word, c64(32)), ticket);
    Value arrived = arith::SelectOp::create(
        rw, loc, same, arith::AndIOp::create(rw, loc, word, c64(0xFFFFFFFF)),
        c64(0));
    Value n = arith::AddIOp::create(rw, loc, arrived, c64(1));
    Value count = arith::IndexCastUIOp::create(rw, loc, i64, op.getCount());
    Value last =
        arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::uge, n, count);
    Value next = arith::SelectOp::create(
        rw, loc, last, c64(0),
        arith::OrIOp::create(
            rw, loc, arith::ShLIOp::create(rw, loc, ticket, c64(32)), n));
    memref::StoreOp::create(rw, loc, next, op.getCounts(), at);
    rw.replaceOp(op, last);
    return success();
  }
};

/// tile.rescale: acc[i, :] *= alpha[i].
struct LowerRescale : OpRewritePattern<tile::RescaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::RescaleOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto t = op.getAcc().getType();
    auto gen = linalg::GenericOp::create(
        rw, loc, TypeRange{t}, ValueRange{op.getAcc(), op.getAlpha()},
        ValueRange{emptyLike(rw, loc, t)},
        SmallVector<AffineMap>{map(ctx, 2, {0, 1}), map(ctx, 2, {0}),
                               map(ctx, 2, {0, 1})},
        iters(2), [](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(
              b, l, ValueRange{arith::MulFOp::create(b, l, args[0], args[1])});
        });
    rw.replaceOp(op, gen.getResult(0));
    return success();
  }
};

/// tile.finalize: o = l > 0 ? acc / l : 0, lse = l > 0 ? (m + log2 l) ln 2
/// : -inf; with a sink σ, (m, l, acc) first merged with a key of logit
/// σ·log2 e and value 0 (the reference r = max(m, σ·log2 e), 0 when -inf;
/// l' = l·2^(m - r) + 2^(σ·log2 e - r), acc scaled by 2^(m - r)), and a row
/// whose reference is the sink's gets lse = σ + log2(l') ln 2.
struct LowerFinalize : OpRewritePattern<tile::FinalizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::FinalizeOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto oT = op.getOutput().getType();
    auto rowT = op.getLse().getType();
    Value max = op.getMax(), sum = op.getSum(), weight, sink = op.getSink(),
          sinkLog2;
    if (sink) {
      sinkLog2 =
          arith::MulFOp::create(rw, loc, sink, f32Const(rw, loc, kLog2e));
      auto merged = linalg::GenericOp::create(
          rw, loc, TypeRange{rowT, rowT, rowT}, ValueRange{max, sum},
          ValueRange{emptyLike(rw, loc, rowT), emptyLike(rw, loc, rowT),
                     emptyLike(rw, loc, rowT)},
          SmallVector<AffineMap>(5, AffineMap::getMultiDimIdentityMap(1, ctx)),
          iters(1), [&](OpBuilder &b, Location l, ValueRange args) {
            Value top = arith::MaximumFOp::create(b, l, args[0], sinkLog2);
            Value empty = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OEQ, top,
                f32Const(b, l, -std::numeric_limits<float>::infinity()));
            Value ref =
                arith::SelectOp::create(b, l, empty, f32Const(b, l, 0.0f), top);
            auto weightOf = [&](Value m) -> Value {
              return math::Exp2Op::create(b, l,
                                          arith::SubFOp::create(b, l, m, ref));
            };
            Value w = weightOf(args[0]);
            Value total = arith::AddFOp::create(
                b, l, arith::MulFOp::create(b, l, args[1], w),
                weightOf(sinkLog2));
            linalg::YieldOp::create(b, l, ValueRange{ref, total, w});
          });
      max = merged.getResult(0);
      sum = merged.getResult(1);
      weight = merged.getResult(2);
    }
    SmallVector<Value> outIns{op.getAcc(), sum};
    SmallVector<AffineMap> outMaps{map(ctx, 2, {0, 1}), map(ctx, 2, {0})};
    if (weight) {
      outIns.push_back(weight);
      outMaps.push_back(map(ctx, 2, {0}));
    }
    outMaps.push_back(map(ctx, 2, {0, 1}));
    auto out = linalg::GenericOp::create(
        rw, loc, TypeRange{oT}, outIns, ValueRange{emptyLike(rw, loc, oT)},
        outMaps, iters(2), [&](OpBuilder &b, Location l, ValueRange args) {
          Value zero = f32Const(b, l, 0.0f);
          Value pos = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                            args[1], zero);
          Value acc = weight
                          ? Value(arith::MulFOp::create(b, l, args[0], args[2]))
                          : args[0];
          Value q = arith::DivFOp::create(b, l, acc, args[1]);
          Value v = arith::SelectOp::create(b, l, pos, q, zero);
          if (!oT.getElementType().isF32()) // f32: a split-KV partial
            v = arith::TruncFOp::create(b, l, oT.getElementType(), v);
          linalg::YieldOp::create(b, l, ValueRange{v});
        });
    auto lse = linalg::GenericOp::create(
        rw, loc, TypeRange{rowT}, ValueRange{max, sum},
        ValueRange{emptyLike(rw, loc, rowT)},
        SmallVector<AffineMap>(3, AffineMap::getMultiDimIdentityMap(1, ctx)),
        iters(1), [&](OpBuilder &b, Location l, ValueRange args) {
          Value pos = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                            args[1], f32Const(b, l, 0.0f));
          Value ln2 = f32Const(b, l, kLn2);
          Value log2l = math::Log2Op::create(b, l, args[1]);
          Value v = arith::MulFOp::create(
              b, l, arith::AddFOp::create(b, l, args[0], log2l), ln2);
          if (sink) // a row whose reference is the sink's: LSE from the sink
                    // itself (a row without keys gets it exactly)
            v = arith::SelectOp::create(
                b, l,
                arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, args[0],
                                      sinkLog2),
                arith::AddFOp::create(b, l, sink,
                                      arith::MulFOp::create(b, l, log2l, ln2)),
                v);
          Value r = arith::SelectOp::create(
              b, l, pos, v,
              f32Const(b, l, -std::numeric_limits<float>::infinity()));
          linalg::YieldOp::create(b, l, ValueRange{r});
        });
    rw.replaceOp(op, ValueRange{out.getResult(0), lse.getResult(0)});
    return success();
  }
};

class LowerTileToLinalgPass
    : public attnc::impl::LowerTileToLinalgBase<LowerTileToLinalgPass> {
public:
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerLoad, LowerStoreRows<tile::StoreOp>,
                 LowerStoreRows<tile::StoreAddOp>, LowerDot, LowerScore,
                 LowerSoftmaxUpdate, LowerRescale, LowerFinalize,
                 LowerLseAccumulate, LowerSplitArrive, LowerProbsFromLse,
                 LowerScoreGrad, LowerRowDot>(&getContext());
    populateRowsToLinalgPatterns(patterns);
    ConversionTarget target(getContext());
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, memref::MemRefDialect,
                           scf::SCFDialect, tensor::TensorDialect>();
    target.addIllegalOp<
        tile::LoadOp, tile::StoreOp, tile::DotOp, tile::ScoreOp,
        tile::SoftmaxUpdateOp, tile::RescaleOp, tile::FinalizeOp,
        tile::LseAccumulateOp, tile::SplitArriveOp, tile::StoreAddOp,
        tile::ProbsFromLseOp, tile::ScoreGradOp, tile::RowDotOp>();
    addRowsToLinalgIllegalOps(target);
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
