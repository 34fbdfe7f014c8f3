//===- TileAttentionBackward.cpp - attn.attention_bwd -> tile kernels -----===//
//
// FlashAttention-2's backward, written at the kernel level as three kernels
// that run one after another:
//   preprocess  per query tile: delta = rowsum(dO ∘ O); dq_accum = 0;
//   main        per K/V tile (and KV head, batch): K_j, V_j stay in the
//               program while it walks the query heads of the group and the
//               query tiles that see the tile, recomputing S and P from LSE;
//               dK_j, dV_j are accumulated in the program and stored once,
//               dQ_i is added into the f32 dq_accum (tile.store_add);
//   convert     per query tile: dQ = dq_accum in the input type.
// Only O and LSE are kept from the forward: the n×n matrices P and dS exist
// one tile at a time.
//
//===----------------------------------------------------------------------===//
#include "compiler/LaunchABI.h"
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

namespace attnc {
#define GEN_PASS_DEF_TILEATTENTIONBACKWARD
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;

namespace {

/// Emits the three kernels of one attn.attention_bwd.
class BackwardBuilder {
public:
  BackwardBuilder(OpBuilder &b, attn::AttentionBwdOp op, int64_t blockM,
                  int64_t blockN)
      : b(b), op(op), loc(op.getLoc()), blockM(blockM), blockN(blockN),
        headDim(op.getHeadDim()), hq(op.getNumHeads()), hkv(op.getNumKVHeads()),
        elt(op.getElementType()) {}

  void buildPreprocess(StringRef name);
  void buildMain(StringRef name);
  void buildConvert(StringRef name);

private:
  /// A kernel function with the backward's parameters; leaves b at the start
  /// of its body and returns the (tile, head, batch) program ids.
  std::array<Value, 3> beginKernel(StringRef name, StringRef rule,
                                   int64_t heads);
  Value param(StringRef name) {
    size_t i = abi::indexOf(abi::kAttentionBwdParams, name);
    assert(i < abi::kAttentionBwdParams.size() && "unknown parameter");
    return fn.getArgument(i);
  }
  Value index(Value i64) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), i64);
  }
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  /// A [batch, heads, seq(, dim)] view of parameter `ptr` with strides
  /// `strides` (b, h, s; the innermost stride is 1).
  Value view(StringRef ptr, int64_t heads, Value seq, ArrayRef<Value> strides,
             bool withDim);
  /// The view of a strided tensor parameter: its b/h/s strides are
  /// `<prefix>_stride_{b,h,s}`.
  Value tensorView(StringRef ptr, StringRef prefix, int64_t heads, Value seq);
  /// The dense f32 workspaces: dq_accum [B, Hq, Sq, D] and delta [B, Hq, Sq].
  Value dqAccumView();
  Value deltaView();
  Value splat(ArrayRef<int64_t> shape, float v);
  Value scaleBy(Value tile, float factor);
  Value truncTo(Value tile, Type to);

  OpBuilder &b;
  attn::AttentionBwdOp op;
  Location loc;
  int64_t blockM, blockN, headDim, hq, hkv;
  Type elt;
  func::FuncOp fn;
  Value batch, seqQ, seqKV;
};

std::array<Value, 3>
BackwardBuilder::beginKernel(StringRef name, StringRef rule, int64_t heads) {
  MLIRContext *ctx = b.getContext();
  fn = func::FuncOp::create(
      b, loc, name,
      FunctionType::get(ctx, attentionBwdParamTypes(ctx, elt), {}));
  fn->setAttr("tile.launch",
              tile::LaunchAttr::get(ctx, rule, blockM, blockN, heads));
  for (auto [i, p] : llvm::enumerate(abi::kAttentionBwdParams))
    fn.setArgAttr(i, "tile.param", b.getStringAttr(p.name));
  Block *entry = fn.addEntryBlock();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  batch = index(param("batch"));
  seqQ = index(param("seq_q"));
  seqKV = index(param("seq_kv"));
  std::array<Value, 3> ids;
  for (int d = 0; d < 3; ++d)
    ids[d] = tile::ProgramIdOp::create(b, loc, b.getIndexType(),
                                       b.getI32IntegerAttr(d));
  func::ReturnOp::create(b, loc);
  return ids;
}

Value BackwardBuilder::view(StringRef ptr, int64_t heads, Value seq,
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
  Value p = param(ptr);
  Type eltType = cast<MemRefType>(p.getType()).getElementType();
  auto type = MemRefType::get(
      shape, eltType, StridedLayoutAttr::get(b.getContext(), 0, layout));
  return memref::ReinterpretCastOp::create(b, loc, type, p, b.getIndexAttr(0),
                                           sizes, strideVals);
}

Value BackwardBuilder::tensorView(StringRef ptr, StringRef prefix,
                                  int64_t heads, Value seq) {
  SmallVector<Value> strides;
  for (StringRef s : {"_stride_b", "_stride_h", "_stride_s"})
    strides.push_back(index(param(prefix.str() + s.str())));
  return view(ptr, heads, seq, strides, true);
}

Value BackwardBuilder::dqAccumView() {
  Value sh = mul(seqQ, cst(headDim));
  return view("dq_accum", hq, seqQ, {mul(sh, cst(hq)), sh, cst(headDim)}, true);
}

Value BackwardBuilder::deltaView() {
  return view("delta", hq, seqQ, {mul(seqQ, cst(hq)), seqQ}, false);
}

Value BackwardBuilder::splat(ArrayRef<int64_t> shape, float v) {
  auto t = RankedTensorType::get(shape, b.getF32Type());
  return arith::ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, v));
}

Value BackwardBuilder::scaleBy(Value tile, float factor) {
  auto t = cast<RankedTensorType>(tile.getType());
  return arith::MulFOp::create(b, loc, tile, splat(t.getShape(), factor));
}

Value BackwardBuilder::truncTo(Value tile, Type to) {
  auto t = cast<RankedTensorType>(tile.getType());
  return arith::TruncFOp::create(b, loc, t.clone(to), tile);
}

void BackwardBuilder::buildPreprocess(StringRef name) {
  auto [mTile, head, bIdx] =
      beginKernel(name, abi::kGridRuleAttentionBwdPreprocess, hq);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(fn.getBody().front().getTerminator());
  Value q0 = mul(mTile, cst(blockM));
  auto rowsT = RankedTensorType::get({blockM, headDim}, elt);
  Value o = tile::LoadOp::create(b, loc, rowsT, tensorView("o", "o", hq, seqQ),
                                 bIdx, head, q0);
  Value dO = tile::LoadOp::create(
      b, loc, rowsT, tensorView("dout", "dout", hq, seqQ), bIdx, head, q0);
  Value delta = tile::RowDotOp::create(
      b, loc, RankedTensorType::get({blockM}, b.getF32Type()), dO, o);
  tile::StoreOp::create(b, loc, delta, deltaView(), bIdx, head, q0);
  // The main kernel adds every K/V tile's share of dQ into dq_accum.
  tile::StoreOp::create(b, loc, splat({blockM, headDim}, 0.0f), dqAccumView(),
                        bIdx, head, q0);
}

void BackwardBuilder::buildConvert(StringRef name) {
  auto [mTile, head, bIdx] =
      beginKernel(name, abi::kGridRuleAttentionBwdConvert, hq);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(fn.getBody().front().getTerminator());
  Value q0 = mul(mTile, cst(blockM));
  auto accT = RankedTensorType::get({blockM, headDim}, b.getF32Type());
  Value acc = tile::LoadOp::create(b, loc, accT, dqAccumView(), bIdx, head, q0);
  tile::StoreOp::create(b, loc, truncTo(acc, elt),
                        tensorView("dq", "dq", hq, seqQ), bIdx, head, q0);
}

void BackwardBuilder::buildMain(StringRef name) {
  auto [nTile, kvHead, bIdx] =
      beginKernel(name, abi::kGridRuleAttentionBwd, hkv);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(fn.getBody().front().getTerminator());
  Type f32 = b.getF32Type();
  float scale = op.getEffectiveScale();
  Value qView = tensorView("q", "q", hq, seqQ);
  Value kView = tensorView("k", "k", hkv, seqKV);
  Value vView = tensorView("v", "v", hkv, seqKV);
  Value dOView = tensorView("dout", "dout", hq, seqQ);
  Value lseView =
      view("lse", hq, seqQ,
           {index(param("lse_stride_b")), index(param("lse_stride_h"))}, false);
  Value deltaV = deltaView(), dqAcc = dqAccumView();

  Value k0 = mul(nTile, cst(blockN));
  auto kvT = RankedTensorType::get({blockN, headDim}, elt);
  auto qT = RankedTensorType::get({blockM, headDim}, elt);
  auto rowT = RankedTensorType::get({blockM}, f32);
  auto sT = RankedTensorType::get({blockM, blockN}, f32);
  auto kvAccT = RankedTensorType::get({blockN, headDim}, f32);
  auto qAccT = RankedTensorType::get({blockM, headDim}, f32);
  Value kTile = tile::LoadOp::create(b, loc, kvT, kView, bIdx, kvHead, k0);
  Value vTile = tile::LoadOp::create(b, loc, kvT, vView, bIdx, kvHead, k0);

  // Query tiles that see a key of this tile. Masks are bottom-right
  // aligned: row r's diagonal is key r + (seq_kv - seq_q), and row r sees
  // keys [diag - left, diag + right]. Tiles outside [lo, hi) are skipped.
  Value shift = arith::SubIOp::create(b, loc, seqKV, seqQ);
  Value lo = cst(0), hi = seqQ;
  auto window = op.getWindowAttr();
  int64_t right = op.getCausal() ? 0 : (window ? window.getRight() : -1);
  int64_t left = window ? window.getLeft() : -1;
  if (right >= 0) {
    // The first row that sees key k0: k0 - shift - right.
    Value first = arith::SubIOp::create(
        b, loc, arith::SubIOp::create(b, loc, k0, shift), cst(right));
    first = arith::MaxSIOp::create(b, loc, first, cst(0));
    // Start on a tile boundary so that Q loads stay aligned.
    lo = mul(arith::DivSIOp::create(b, loc, first, cst(blockM)), cst(blockM));
  }
  if (left >= 0) {
    // The last row that sees key k0 + BN - 1: k0 + BN - 1 - shift + left.
    Value last =
        arith::AddIOp::create(b, loc, arith::SubIOp::create(b, loc, k0, shift),
                              cst(blockN - 1 + left + 1));
    hi = arith::MinSIOp::create(b, loc, seqQ, last);
  }

  // dK and dV of this K/V tile sum over the query heads of its group.
  int64_t group = hq / hkv;
  Value hFirst = mul(kvHead, cst(group));
  Value hEnd = arith::AddIOp::create(b, loc, hFirst, cst(group));
  auto heads = scf::ForOp::create(b, loc, hFirst, hEnd, cst(1),
                                  ValueRange{splat({blockN, headDim}, 0.0f),
                                             splat({blockN, headDim}, 0.0f)});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(heads.getBody());
    Value head = heads.getInductionVar();
    auto rows = scf::ForOp::create(b, loc, lo, hi, cst(blockM),
                                   heads.getRegionIterArgs());
    b.setInsertionPointToStart(rows.getBody());
    Value q0 = rows.getInductionVar();
    Value dK = rows.getRegionIterArg(0), dV = rows.getRegionIterArg(1);
    // Rows at or past seq_q load as zero (Q, dO, LSE, delta), so they add
    // nothing: dO = 0 makes their dP, dS and P·dO zero.
    Value qTile = tile::LoadOp::create(b, loc, qT, qView, bIdx, head, q0);
    Value dOTile = tile::LoadOp::create(b, loc, qT, dOView, bIdx, head, q0);
    Value lse = tile::LoadOp::create(b, loc, rowT, lseView, bIdx, head, q0);
    Value delta = tile::LoadOp::create(b, loc, rowT, deltaV, bIdx, head, q0);

    // S = Q·Kᵀ, scaled, capped and masked as in the forward (log2 domain);
    // P = exp(s - LSE).
    Value s = tile::DotOp::create(b, loc, sT, qTile, kTile, Value(),
                                  /*transpose_b=*/true);
    Value t = tile::ScoreOp::create(
        b, loc, sT, s, bIdx, head, q0, k0, seqQ, seqKV, ValueRange(),
        /*kv_bounds=*/Value(), Value(), Value(), b.getF32FloatAttr(scale),
        op.getCausal() ? b.getUnitAttr() : UnitAttr(), window,
        op.getSoftcapAttr());
    Value p = tile::ProbsFromLseOp::create(b, loc, sT, t, lse);
    // dV += Pᵀ·dO.
    Value dV1 = tile::DotOp::create(b, loc, kvAccT, truncTo(p, elt), dOTile, dV,
                                    /*transpose_b=*/false,
                                    /*transpose_a=*/true);
    // dP = dO·Vᵀ; dS = P ∘ (dP - delta) (through the soft-cap's derivative).
    Value dP = tile::DotOp::create(b, loc, sT, dOTile, vTile, Value(),
                                   /*transpose_b=*/true);
    auto softcap = op.getSoftcapAttr();
    Value dS = tile::ScoreGradOp::create(b, loc, sT, p, dP, delta,
                                         softcap ? t : Value(), softcap);
    Value dSh = truncTo(dS, elt);
    // dK += dSᵀ·Q (scaled once, after the loops).
    Value dK1 = tile::DotOp::create(b, loc, kvAccT, dSh, qTile, dK,
                                    /*transpose_b=*/false,
                                    /*transpose_a=*/true);
    // dQ_i += scale · dS·K, added into the f32 accumulator that every K/V
    // tile's program adds to.
    Value dQ = tile::DotOp::create(b, loc, qAccT, dSh, kTile, Value(),
                                   /*transpose_b=*/false);
    tile::StoreAddOp::create(b, loc, scaleBy(dQ, scale), dqAcc, bIdx, head, q0);
    scf::YieldOp::create(b, loc, ValueRange{dK1, dV1});

    b.setInsertionPointToEnd(heads.getBody());
    scf::YieldOp::create(b, loc, rows.getResults());
  }
  Value dK = scaleBy(heads.getResult(0), scale);
  tile::StoreOp::create(b, loc, truncTo(dK, elt),
                        tensorView("dk", "dk", hkv, seqKV), bIdx, kvHead, k0);
  tile::StoreOp::create(b, loc, truncTo(heads.getResult(1), elt),
                        tensorView("dv", "dv", hkv, seqKV), bIdx, kvHead, k0);
}

class TileAttentionBackwardPass
    : public attnc::impl::TileAttentionBackwardBase<TileAttentionBackwardPass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

void TileAttentionBackwardPass::runOnOperation() {
  auto work = soleOpsOnArguments<attn::AttentionBwdOp>(
      getOperation(), "attnc-tile-attention-bwd");
  if (failed(work))
    return signalPassFailure();
  for (auto [fn, bwd] : *work) {
    if (blockM <= 0 || blockN <= 0 || blockM % 16 || blockN % 16 ||
        blockM > 256 || blockN > 256) {
      bwd.emitOpError() << "cannot be tiled with block-m " << blockM.getValue()
                        << " and block-n " << blockN.getValue()
                        << ": both must be positive multiples of 16, at "
                           "most 256";
      return signalPassFailure();
    }
  }
  for (auto [fn, bwd] : *work) {
    OpBuilder b(fn);
    std::string name = fn.getName().str();
    BackwardBuilder builder(b, bwd, blockM, blockN);
    builder.buildPreprocess(name + "_preprocess");
    builder.buildMain(name);
    builder.buildConvert(name + "_convert");
    fn.erase();
  }
}

} // namespace
