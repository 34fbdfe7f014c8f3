//===- TileAttention.cpp - attn.attention -> tiled online-softmax kernel --===//
//
// The FlashAttention forward algorithm, written at the kernel level: one
// program per (query tile, head, batch); a loop over K/V tiles keeps the row
// max m, row sum l and the accumulator, so the n×n score matrix never exists.
//
//===----------------------------------------------------------------------===//
#include "compiler/LaunchABI.h"
#include "compiler/Transforms/OnlineSoftmax.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/SoleOp.h"

#include "dialects/Attn/IR/AttnOps.h"
#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"

namespace attnc {
#define GEN_PASS_DEF_TILEATTENTION
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;

namespace {

/// Emits the tiled kernel for one attention op.
class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, attn::AttentionOp att, int64_t blockM,
                int64_t blockN)
      : b(b), att(att), loc(att.getLoc()), blockM(blockM), blockN(blockN),
        headDim(att.getHeadDim()), elt(att.getElementType()) {}

  func::FuncOp build(StringRef name);

private:
  Value index(Value i64) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), i64);
  }
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  /// A [batch, heads, seq(, dim)] view of a bare pointer with the ABI's
  /// element strides (the innermost stride is 1).
  Value view(Value ptr, int64_t heads, Value seq, ArrayRef<Value> strides,
             bool withDim);
  void cloneRegion(Region &from, Region &to);

  OpBuilder &b;
  attn::AttentionOp att;
  Location loc;
  int64_t blockM, blockN, headDim;
  Type elt;
  Value batch; // the problem's batch size, as an index
};

Value KernelBuilder::view(Value ptr, int64_t heads, Value seq,
                          ArrayRef<Value> strides, bool withDim) {
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<int64_t> shape{dyn, heads, dyn};
  SmallVector<int64_t> layout{dyn, dyn, 1};
  SmallVector<OpFoldResult> sizes{batch, b.getIndexAttr(heads), seq};
  SmallVector<OpFoldResult> strideVals{strides[0], strides[1],
                                       b.getIndexAttr(1)};
  if (withDim) {
    shape.push_back(headDim);
    layout = {dyn, dyn, dyn, 1};
    sizes.push_back(b.getIndexAttr(headDim));
    strideVals = {strides[0], strides[1], strides[2], b.getIndexAttr(1)};
  }
  Type eltType = cast<MemRefType>(ptr.getType()).getElementType();
  auto type = MemRefType::get(
      shape, eltType, StridedLayoutAttr::get(b.getContext(), 0, layout));
  return memref::ReinterpretCastOp::create(b, loc, type, ptr, b.getIndexAttr(0),
                                           sizes, strideVals);
}

void KernelBuilder::cloneRegion(Region &from, Region &to) {
  if (from.empty())
    return;
  IRMapping mapping;
  from.cloneInto(&to, mapping);
  to.walk([&](attn::YieldOp y) {
    OpBuilder yb(y);
    tile::YieldOp::create(yb, y.getLoc(), y.getValues());
    y.erase();
  });
}

func::FuncOp KernelBuilder::build(StringRef name) {
  MLIRContext *ctx = b.getContext();
  // The launch ABI's parameters, then the optional ones the op needs.
  SmallVector<Type> params = attentionFwdParamTypes(ctx, elt);
  const unsigned sinksArg = params.size();
  if (att.hasSinks())
    params.push_back(abiParamType(ctx, abi::ParamType::F32Ptr, elt));
  auto fn =
      func::FuncOp::create(b, loc, name, FunctionType::get(ctx, params, {}));
  fn->setAttr("tile.launch",
              tile::LaunchAttr::get(ctx, abi::kGridRuleAttentionFwd, blockM,
                                    blockN, att.getNumHeads()));
  for (auto [i, param] : llvm::enumerate(abi::kAttentionFwdParams))
    fn.setArgAttr(i, "tile.param", b.getStringAttr(param.name));
  if (att.hasSinks())
    fn.setArgAttr(sinksArg, "tile.param",
                  b.getStringAttr(abi::kAttentionSinksParam));

  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](int i) { return entry->getArgument(i); };
  auto strides = [&](int first) {
    return SmallVector<Value>{index(arg(first)), index(arg(first + 1)),
                              index(arg(first + 2))};
  };

  int64_t hq = att.getNumHeads(), hkv = att.getNumKVHeads();
  batch = index(arg(5));
  Value seqQ = index(arg(6)), seqKV = index(arg(7));
  Value qView = view(arg(0), hq, seqQ, strides(8), true);
  Value kView = view(arg(1), hkv, seqKV, strides(11), true);
  Value vView = view(arg(2), hkv, seqKV, strides(14), true);
  Value oView = view(arg(3), hq, seqQ, strides(17), true);
  Value lseView =
      view(arg(4), hq, seqQ, {index(arg(20)), index(arg(21))}, false);

  Value mTile = tile::ProgramIdOp::create(b, loc, b.getIndexType(),
                                          b.getI32IntegerAttr(0));
  // Causal: the last query tiles see the most keys. Program id 0 counts
  // them from the last, and tile.dim0_major asks the mapping to start the
  // programs with id 0 slowest: every head's longest tile first, the short
  // ones filling the tail (as FlashAttention-3 schedules causal tiles).
  if (att.getCausal()) {
    fn->setAttr(tile::kDim0MajorAttrName, b.getUnitAttr());
    mTile = arith::SubIOp::create(
        b, loc,
        arith::SubIOp::create(
            b, loc, arith::CeilDivSIOp::create(b, loc, seqQ, cst(blockM)),
            cst(1)),
        mTile);
  }
  Value head = tile::ProgramIdOp::create(b, loc, b.getIndexType(),
                                         b.getI32IntegerAttr(1));
  Value bIdx = tile::ProgramIdOp::create(b, loc, b.getIndexType(),
                                         b.getI32IntegerAttr(2));
  // Grouped-query attention: query head h reads KV head h / (Hq / Hkv).
  Value kvHead = arith::DivUIOp::create(b, loc, head, cst(hq / hkv));
  Value q0 = arith::MulIOp::create(b, loc, mTile, cst(blockM));
  // The head's sink logit, read once before the loop.
  Value sink;
  if (att.hasSinks()) {
    int64_t hq = att.getNumHeads();
    auto sinksT = MemRefType::get({hq}, b.getF32Type());
    Value sinks = memref::ReinterpretCastOp::create(
        b, loc, sinksT, arg(sinksArg), b.getIndexAttr(0),
        ArrayRef<OpFoldResult>{b.getIndexAttr(hq)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    sink = memref::LoadOp::create(b, loc, sinks, ValueRange{head});
  }

  auto qTileT = RankedTensorType::get({blockM, headDim}, elt);
  auto kvTileT = RankedTensorType::get({blockN, headDim}, elt);
  Value qTile = tile::LoadOp::create(b, loc, qTileT, qView, bIdx, head, q0);

  // KV tiles to visit. Masks are bottom-right aligned: row r's diagonal is
  // key r + (seq_kv - seq_q). Tiles wholly outside [lo, hi) are skipped,
  // never loaded.
  Value shift = arith::SubIOp::create(b, loc, seqKV, seqQ);
  Value lo = cst(0), hi = seqKV;
  auto window = att.getWindowAttr();
  int64_t right = att.getCausal() ? 0 : (window ? window.getRight() : -1);
  int64_t left = window ? window.getLeft() : -1;
  if (right >= 0) {
    // The last row of this tile sees keys up to q0 + BM - 1 + shift + right.
    Value lastKey =
        arith::AddIOp::create(b, loc, arith::AddIOp::create(b, loc, q0, shift),
                              cst(blockM - 1 + right + 1));
    hi = arith::MinSIOp::create(b, loc, seqKV, lastKey);
  }
  if (left >= 0) {
    Value first = arith::SubIOp::create(
        b, loc, arith::AddIOp::create(b, loc, q0, shift), cst(left));
    first = arith::MaxSIOp::create(b, loc, first, cst(0));
    // Start on a tile boundary so that K/V loads stay aligned.
    lo = arith::MulIOp::create(
        b, loc, arith::DivSIOp::create(b, loc, first, cst(blockN)),
        cst(blockN));
  }

  auto fin = buildOnlineSoftmaxLoop(
      b, loc, qTile, lo, hi, blockN, elt,
      {[&](Value k0) -> Value {
         return tile::LoadOp::create(b, loc, kvTileT, kView, bIdx, kvHead, k0);
       },
       [&](Value k0) -> Value {
         return tile::LoadOp::create(b, loc, kvTileT, vView, bIdx, kvHead, k0);
       },
       [&](Value s, Value k0) -> Value {
         auto score = tile::ScoreOp::create(
             b, loc, s.getType(), s, bIdx, head, q0, k0, seqQ, seqKV,
             b.getF32FloatAttr(att.getEffectiveScale()),
             att.getCausal() ? b.getUnitAttr() : UnitAttr(), window,
             att.getSoftcapAttr());
         cloneRegion(att.getScore(), score.getScoreMod());
         cloneRegion(att.getMask(), score.getMaskMod());
         return score;
       }},
      sink);
  tile::StoreOp::create(b, loc, fin.getOutput(), oView, bIdx, head, q0);
  if (att.getLse())
    tile::StoreOp::create(b, loc, fin.getLse(), lseView, bIdx, head, q0);
  func::ReturnOp::create(b, loc);
  return fn;
}

class TileAttentionPass
    : public attnc::impl::TileAttentionBase<TileAttentionPass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

void TileAttentionPass::runOnOperation() {
  auto work = soleOpsOnArguments<attn::AttentionOp>(getOperation(),
                                                    "attnc-tile-attention");
  if (failed(work))
    return signalPassFailure();
  for (auto [fn, att] : *work) {
    if (blockM <= 0 || blockN <= 0 || blockM % 16 || blockN % 16 ||
        blockM > 256 || blockN > 256) {
      att.emitOpError() << "cannot be tiled with block-m " << blockM.getValue()
                        << " and block-n " << blockN.getValue()
                        << ": both must be positive multiples of 16, at "
                           "most 256";
      return signalPassFailure();
    }
  }
  for (auto [fn, att] : *work) {
    OpBuilder b(fn);
    KernelBuilder(b, att, blockM, blockN).build(fn.getName());
    fn.erase();
  }
}

} // namespace
