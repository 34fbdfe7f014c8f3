//===- TileAttention.cpp - attn.attention -> tiled online-softmax kernel --===//
//
// The FlashAttention forward algorithm, written at the kernel level: one
// program per (query tile, head, batch); a loop over K/V tiles keeps the row
// max m, row sum l and the accumulator, so the n×n score matrix never exists.
//
// Varlen (packed sequences with cu_seqlens): one program per (query tile,
// head, sequence) over a grid sized by the longest sequence; each program
// reads its sequence's start and length from cu_seqlens and works on views
// that begin at the sequence's first row and end at its last, so loads past
// the end read zeros (never the next sequence's rows), stores past it write
// nothing, and the masks see positions within the sequence.
//
//===----------------------------------------------------------------------===//
#include "compiler/Analysis/MaskIntervals.h"
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
  /// Whether the KV loop is narrowed to the mask region: a region of the
  /// query row (a mask of keys or heads alone leaves the loop the same for
  /// every tile, which the persistent schedule's stream-K tail needs) that
  /// the interval evaluation understands.
  bool narrowsToMaskByRow() {
    return att.hasMaskMod() && !att.getMask().getArgument(2).use_empty() &&
           mask_intervals::isAnalyzable(att.getMask());
  }
  /// [lo, hi) narrowed to the keys where the mask region may yield true for
  /// some row of [q0, q0 + blockM) (see build()).
  std::pair<Value, Value> narrowToMask(Value lo, Value hi, Value q0, Value seqQ,
                                       Value seqKV, Value batch, Value head);
  /// A [batch, heads, seq(, dim)] view of a bare pointer with the ABI's
  /// element strides (the innermost stride is 1). With `firstRow`, a
  /// [1, heads, seq(, dim)] view of rows [firstRow, firstRow + seq) (one
  /// sequence of a packed varlen batch).
  Value view(Value ptr, int64_t heads, Value seq, ArrayRef<Value> strides,
             bool withDim, Value firstRow = Value());
  void cloneRegion(Region &from, Region &to, ValueRange captureViews);

  OpBuilder &b;
  attn::AttentionOp att;
  Location loc;
  int64_t blockM, blockN, headDim;
  Type elt;
  Value batch; // the problem's batch size, as an index
};

Value KernelBuilder::view(Value ptr, int64_t heads, Value seq,
                          ArrayRef<Value> strides, bool withDim,
                          Value firstRow) {
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<int64_t> shape{firstRow ? 1 : dyn, heads, dyn};
  SmallVector<int64_t> layout{dyn, dyn, 1};
  SmallVector<OpFoldResult> sizes{firstRow ? OpFoldResult(b.getIndexAttr(1))
                                           : OpFoldResult(batch),
                                  b.getIndexAttr(heads), seq};
  SmallVector<OpFoldResult> strideVals{strides[0], strides[1],
                                       b.getIndexAttr(1)};
  if (withDim) {
    shape.push_back(headDim);
    layout = {dyn, dyn, dyn, 1};
    sizes.push_back(b.getIndexAttr(headDim));
    strideVals = {strides[0], strides[1], strides[2], b.getIndexAttr(1)};
  }
  Type eltType = cast<MemRefType>(ptr.getType()).getElementType();
  OpFoldResult offset = b.getIndexAttr(0);
  if (firstRow) {
    // The sequence's first row, by the row stride (the LSE's is 1).
    Value rowStride = withDim ? strides[2] : cst(1);
    offset = Value(arith::MulIOp::create(b, loc, firstRow, rowStride));
  }
  auto type = MemRefType::get(
      shape, eltType,
      StridedLayoutAttr::get(b.getContext(), firstRow ? dyn : 0, layout));
  return memref::ReinterpretCastOp::create(b, loc, type, ptr, offset, sizes,
                                           strideVals);
}

/// A score or mask region into tile.score's: attn.yield becomes tile.yield,
/// and the captured tensors become their kernel parameters' memref views
/// (the block arguments after the indices change type, tensor.extract
/// becomes memref.load).
void KernelBuilder::cloneRegion(Region &from, Region &to,
                                ValueRange captureViews) {
  if (from.empty())
    return;
  IRMapping mapping;
  from.cloneInto(&to, mapping);
  Block &block = to.front();
  const unsigned first = block.getNumArguments() - captureViews.size();
  for (auto [i, view] : llvm::enumerate(captureViews))
    block.getArgument(first + i).setType(view.getType());
  SmallVector<tensor::ExtractOp> extracts;
  to.walk([&](tensor::ExtractOp x) { extracts.push_back(x); });
  for (tensor::ExtractOp x : extracts) {
    OpBuilder xb(x);
    x.replaceAllUsesWith(
        memref::LoadOp::create(xb, x.getLoc(), x.getTensor(), x.getIndices())
            .getResult());
    x.erase();
  }
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
  const bool varlen = att.isVarlen();
  const bool paged = att.isPaged(); // cu_seqlens_q alone
  const unsigned cuArg = params.size();
  if (varlen)
    params.append(paged ? 1 : 2,
                  abiParamType(ctx, abi::ParamType::I32Ptr, elt));
  const unsigned boundsArg = params.size();
  if (att.hasKVBounds())
    params.push_back(abiParamType(ctx, abi::ParamType::I32Ptr, elt));
  // Paged: block_table, kv_lens, max_blocks, num_pages.
  const unsigned pagedArg = params.size();
  if (paged)
    params.append(abiParamTypes(ctx, abi::kAttentionPagedParams, elt));
  // Each captured tensor: its data, then its sizes and strides
  // (abi::captureParamName).
  static_assert(attn::AttentionOp::kMaxCaptures == abi::kMaxCaptures);
  const unsigned captureArg = params.size();
  for (Value capture : att.getCaptures()) {
    auto t = cast<RankedTensorType>(capture.getType());
    params.push_back(MemRefType::get({}, t.getElementType()));
    params.append(2 * t.getRank(), b.getI64Type());
  }
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
  if (varlen)
    for (auto [i, name] : llvm::enumerate(abi::kAttentionCuSeqlensParams))
      if (i == 0 || !paged)
        fn.setArgAttr(cuArg + i, "tile.param", b.getStringAttr(name));
  if (att.hasKVBounds())
    fn.setArgAttr(boundsArg, "tile.param",
                  b.getStringAttr(abi::kAttentionKVBoundsParam));
  if (paged)
    for (auto [i, p] : llvm::enumerate(abi::kAttentionPagedParams))
      fn.setArgAttr(pagedArg + i, "tile.param", b.getStringAttr(p.name));
  for (unsigned k = 0, at = captureArg; k < att.getCaptures().size(); ++k) {
    auto param = [&](abi::CapturePart part, unsigned dim) {
      fn.setArgAttr(at++, "tile.param",
                    b.getStringAttr(abi::captureParamName({k, part, dim})));
    };
    param(abi::CapturePart::Data, 0);
    auto rank =
        cast<RankedTensorType>(att.getCaptures()[k].getType()).getRank();
    for (unsigned d = 0; d < rank; ++d)
      param(abi::CapturePart::Size, d);
    for (unsigned d = 0; d < rank; ++d)
      param(abi::CapturePart::Stride, d);
  }

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
  auto programId = [&](int dim) -> Value {
    return tile::ProgramIdOp::create(b, loc, b.getIndexType(),
                                     b.getI32IntegerAttr(dim));
  };
  Value pid0, head, bIdx;
  // The (batch) index of the views: the program's batch, or 0 in a varlen
  // sequence's own views. bIdx stays the sequence for the score's mods.
  Value viewBatch;
  // Varlen: this sequence's first rows and lengths, from cu_seqlens; seqQ
  // and seqKV become its own lengths (the arguments are the longest).
  Value firstQ, firstK;
  if (varlen) {
    pid0 = programId(0);
    head = programId(1);
    bIdx = programId(2);
    auto cuT = MemRefType::get({ShapedType::kDynamic}, b.getI32Type());
    // A 1-D i32 array parameter of `size` entries.
    auto i32Array = [&](Value ptr, OpFoldResult size) -> Value {
      return memref::ReinterpretCastOp::create(
          b, loc, cuT, ptr, b.getIndexAttr(0), ArrayRef<OpFoldResult>{size},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    };
    auto startEnd = [&](unsigned argNo) -> std::pair<Value, Value> {
      Value cu = i32Array(
          arg(argNo), arith::AddIOp::create(b, loc, batch, cst(1)).getResult());
      Value next = arith::AddIOp::create(b, loc, bIdx, cst(1));
      return {index(memref::LoadOp::create(b, loc, cu, ValueRange{bIdx})),
              index(memref::LoadOp::create(b, loc, cu, ValueRange{next}))};
    };
    auto [qStart, qEnd] = startEnd(cuArg);
    Value kStart, kEnd;
    if (!paged)
      std::tie(kStart, kEnd) = startEnd(cuArg + 1);
    firstQ = qStart;
    firstK = kStart;
    seqQ = arith::SubIOp::create(b, loc, qEnd, qStart);
    if (paged) {
      // The sequence's key count, from kv_lens.
      Value lens = i32Array(arg(pagedArg + 1), batch);
      seqKV = index(memref::LoadOp::create(b, loc, lens, ValueRange{bIdx}));
    } else {
      seqKV = arith::SubIOp::create(b, loc, kEnd, kStart);
    }
    viewBatch = cst(0);
  }
  Value qView = view(arg(0), hq, seqQ, strides(8), true, firstQ);
  Value kView, vView, blockTable, kvLength;
  if (paged) {
    // The caches [num_pages, Hkv, page_size, D] (k_stride_b is the page
    // stride) and the [B, max_blocks] block table; the tile loads look up
    // each key's page, bounded by the sequence's key count.
    int64_t page = att.getPageSize(), dyn = ShapedType::kDynamic;
    Value maxBlocks = index(arg(pagedArg + 2));
    Value numPages = index(arg(pagedArg + 3));
    auto cache = [&](Value ptr, int first) -> Value {
      auto type =
          MemRefType::get({dyn, hkv, page, headDim}, elt,
                          StridedLayoutAttr::get(ctx, 0, {dyn, dyn, dyn, 1}));
      SmallVector<Value> st = strides(first);
      return memref::ReinterpretCastOp::create(
          b, loc, type, ptr, b.getIndexAttr(0),
          ArrayRef<OpFoldResult>{numPages, b.getIndexAttr(hkv),
                                 b.getIndexAttr(page), b.getIndexAttr(headDim)},
          ArrayRef<OpFoldResult>{st[0], st[1], st[2], b.getIndexAttr(1)});
    };
    kView = cache(arg(1), 11);
    vView = cache(arg(2), 14);
    auto tableT = MemRefType::get({dyn, dyn}, b.getI32Type(),
                                  StridedLayoutAttr::get(ctx, 0, {dyn, 1}));
    blockTable = memref::ReinterpretCastOp::create(
        b, loc, tableT, arg(pagedArg), b.getIndexAttr(0),
        ArrayRef<OpFoldResult>{batch, maxBlocks},
        ArrayRef<OpFoldResult>{maxBlocks, b.getIndexAttr(1)});
    kvLength = seqKV; // the loads' batch is the block table's row, bIdx
    // Paged tiles go into the KV loop's rings like contiguous ones (the
    // schedule's stages).
    fn->setAttr(kPrefetchPagedAttr, b.getI64IntegerAttr(0));
  } else {
    kView = view(arg(1), hkv, seqKV, strides(11), true, firstK);
    vView = view(arg(2), hkv, seqKV, strides(14), true, firstK);
  }
  Value oView = view(arg(3), hq, seqQ, strides(17), true, firstQ);
  Value lseView =
      view(arg(4), hq, seqQ, {index(arg(20)), index(arg(21))}, false, firstQ);

  // Causal: the last query tiles see the most keys. Program id 0 counts
  // them from the last, and tile.dim0_major asks the mapping to start the
  // programs with id 0 slowest: every head's longest tile first, the short
  // ones filling the tail (as FlashAttention-3 schedules causal tiles).
  // Likewise for a mask region whose tiles are narrowed (causal or
  // prefix-LM as a mod; a window's tiles are all alike).
  const bool narrowsByRow = narrowsToMaskByRow();
  const bool longestLast = att.getCausal() || narrowsByRow;
  Value mTile;
  if (!varlen) {
    mTile = programId(0);
    if (longestLast) {
      fn->setAttr(tile::kDim0MajorAttrName, b.getUnitAttr());
      mTile = arith::SubIOp::create(
          b, loc,
          arith::SubIOp::create(
              b, loc, arith::CeilDivSIOp::create(b, loc, seqQ, cst(blockM)),
              cst(1)),
          mTile);
    }
    head = programId(1);
    bIdx = programId(2);
    viewBatch = bIdx;
  }
  // Varlen: the grid is sized for the longest sequence, so a shorter one's
  // programs past its tiles have no rows. They get q0 at or past the
  // sequence's end (loads read zeros, stores write nothing) and no KV tiles;
  // causal tiles count from the sequence's own last tile.
  Value hasRows;
  if (varlen) {
    Value qTiles = arith::CeilDivSIOp::create(b, loc, seqQ, cst(blockM));
    hasRows =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, pid0, qTiles);
    mTile = pid0;
    if (longestLast) {
      fn->setAttr(tile::kDim0MajorAttrName, b.getUnitAttr());
      mTile = arith::SubIOp::create(
          b, loc, arith::SubIOp::create(b, loc, qTiles, cst(1)), pid0);
    }
    mTile = arith::SelectOp::create(b, loc, hasRows, mTile, qTiles);
  }
  // The captured tensors as strided views of their parameters.
  SmallVector<Value> captureViews;
  for (unsigned at = captureArg; Value capture : att.getCaptures()) {
    auto t = cast<RankedTensorType>(capture.getType());
    const int64_t rank = t.getRank(), dyn = ShapedType::kDynamic;
    SmallVector<OpFoldResult> sizes, strides;
    for (int64_t d = 0; d < rank; ++d) {
      sizes.push_back(index(arg(at + 1 + d)));
      strides.push_back(index(arg(at + 1 + rank + d)));
    }
    auto type = MemRefType::get(
        SmallVector<int64_t>(rank, dyn), t.getElementType(),
        StridedLayoutAttr::get(b.getContext(), 0,
                               SmallVector<int64_t>(rank, dyn)));
    captureViews.push_back(memref::ReinterpretCastOp::create(
        b, loc, type, arg(at), b.getIndexAttr(0), sizes, strides));
    at += 1 + 2 * rank;
  }
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
  Value qTile =
      tile::LoadOp::create(b, loc, qTileT, qView, viewBatch, head, q0);

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
  if (varlen) // no KV tiles for a program without rows
    hi = arith::SelectOp::create(b, loc, hasRows, hi, lo);
  // Key ranges (kv_bounds, non-decreasing along the rows): the tile's first
  // row's first key and its last row's end key bound the keys any of its
  // rows sees; the tiles outside are skipped (the first on a tile boundary,
  // so that K/V loads stay aligned). tile.score masks each row to its range.
  Value bounds, innerFirst, innerEnd;
  if (att.hasKVBounds()) {
    auto boundsT = MemRefType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, 2}, b.getI32Type());
    bounds = memref::ReinterpretCastOp::create(
        b, loc, boundsT, arg(boundsArg), b.getIndexAttr(0),
        ArrayRef<OpFoldResult>{batch, seqQ, b.getIndexAttr(2)},
        ArrayRef<OpFoldResult>{
            arith::MulIOp::create(b, loc, seqQ, cst(2)).getResult(),
            b.getIndexAttr(2), b.getIndexAttr(1)});
    Value lastRow = arith::SubIOp::create(
        b, loc,
        arith::MinSIOp::create(
            b, loc, arith::AddIOp::create(b, loc, q0, cst(blockM)), seqQ),
        cst(1));
    auto bound = [&](Value row, int64_t which) -> Value {
      return arith::IndexCastOp::create(
          b, loc, b.getIndexType(),
          memref::LoadOp::create(b, loc, bounds,
                                 ValueRange{bIdx, row, cst(which)}));
    };
    // The keys every row of the tile sees by its range: from the last
    // row's first to the first row's end (tile.score's inner range).
    innerFirst = bound(lastRow, 0);
    innerEnd = bound(q0, 1);
    Value first = arith::MaxSIOp::create(b, loc, bound(q0, 0), cst(0));
    first = arith::MulIOp::create(
        b, loc, arith::DivSIOp::create(b, loc, first, cst(blockN)),
        cst(blockN));
    lo = arith::MaxSIOp::create(b, loc, lo, first);
    hi = arith::MinSIOp::create(b, loc, hi, bound(lastRow, 1));
  }

  // A mask region of the row that the interval evaluation understands
  // (causal, windows, prefix-LM written as mods): the KV tiles where it is
  // false for every row of this tile are skipped, as the built-in masks'
  // are.
  if (narrowsByRow)
    std::tie(lo, hi) = narrowToMask(lo, hi, q0, seqQ, seqKV, bIdx, head);

  auto fin = buildOnlineSoftmaxLoop(
      b, loc, qTile, lo, hi, blockN, elt,
      {[&](Value k0) -> Value {
         return tile::LoadOp::create(b, loc, kvTileT, kView,
                                     paged ? bIdx : viewBatch, kvHead, k0,
                                     kvLength, blockTable);
       },
       [&](Value k0) -> Value {
         return tile::LoadOp::create(b, loc, kvTileT, vView,
                                     paged ? bIdx : viewBatch, kvHead, k0,
                                     kvLength, blockTable);
       },
       [&](Value s, Value k0) -> Value {
         auto score = tile::ScoreOp::create(
             b, loc, s.getType(), s, bIdx, head, q0, k0, seqQ, seqKV,
             captureViews, bounds, innerFirst, innerEnd,
             b.getF32FloatAttr(att.getEffectiveScale()),
             att.getCausal() ? b.getUnitAttr() : UnitAttr(), window,
             att.getSoftcapAttr());
         cloneRegion(att.getScore(), score.getScoreMod(), captureViews);
         cloneRegion(att.getMask(), score.getMaskMod(), captureViews);
         return score;
       }},
      sink);
  tile::StoreOp::create(b, loc, fin.getOutput(), oView, viewBatch, head, q0);
  if (att.getLse())
    tile::StoreOp::create(b, loc, fin.getLse(), lseView, viewBatch, head, q0);
  func::ReturnOp::create(b, loc);
  return fn;
}

std::pair<Value, Value> KernelBuilder::narrowToMask(Value lo, Value hi,
                                                    Value q0, Value seqQ,
                                                    Value seqKV, Value batch,
                                                    Value head) {
  using P = arith::CmpIPredicate;
  auto c = [](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, l, v);
  };
  mask_intervals::PositionRange rows = mask_intervals::clampedRange(
      b, loc, q0, arith::AddIOp::create(b, loc, q0, cst(blockM - 1)), seqQ);
  // Whether the region is false for every row and every key in [k0, k1].
  auto noneVisible = [&](OpBuilder &nb, Location l, Value k0,
                         Value k1) -> Value {
    auto outcome = mask_intervals::evaluate(
        nb, l, att.getMask(),
        {{batch, batch},
         {head, head},
         rows,
         mask_intervals::clampedRange(nb, l, k0, k1, seqKV)});
    return arith::XOrIOp::create(nb, l, outcome->mayBeTrue,
                                 arith::ConstantIntOp::create(nb, l, 1, 1));
  };
  // A binary search over KV tile indices [l, r) (a uniform loop of about
  // log2(tiles) steps): "no key visible" over a suffix (prefix) of the keys
  // can only become true as the suffix (prefix) shrinks, since the
  // evaluation over a sub-range is at least as certain.
  auto search = [&](Value l0, Value r0, bool suffix, Value edgeKey) {
    Type idx = b.getIndexType();
    auto loop = scf::WhileOp::create(
        b, loc, TypeRange{idx, idx}, ValueRange{l0, r0},
        [&](OpBuilder &nb, Location l, ValueRange lr) {
          scf::ConditionOp::create(
              nb, l, arith::CmpIOp::create(nb, l, P::slt, lr[0], lr[1]), lr);
        },
        [&](OpBuilder &nb, Location l, ValueRange lr) {
          Value sum = arith::AddIOp::create(nb, l, lr[0], lr[1]);
          if (!suffix) // the upper middle: l < mid <= r
            sum = arith::AddIOp::create(nb, l, sum, c(nb, l, 1));
          Value mid = arith::DivSIOp::create(nb, l, sum, c(nb, l, 2));
          Value key = arith::MulIOp::create(nb, l, mid, c(nb, l, blockN));
          // Suffix: keys [mid tile, edge]; prefix: [edge, mid tile).
          Value none =
              suffix
                  ? noneVisible(nb, l, key, edgeKey)
                  : noneVisible(nb, l, edgeKey,
                                arith::SubIOp::create(nb, l, key, c(nb, l, 1)));
          Value below = arith::SubIOp::create(nb, l, mid, c(nb, l, 1));
          Value above = arith::AddIOp::create(nb, l, mid, c(nb, l, 1));
          // Suffix: the first tile of an invisible suffix, in [l, r];
          // prefix: the last tile ending an invisible prefix, in [l, r].
          Value nl = arith::SelectOp::create(nb, l, none, suffix ? lr[0] : mid,
                                             suffix ? above : lr[0]);
          Value nr = arith::SelectOp::create(nb, l, none, suffix ? mid : lr[1],
                                             suffix ? lr[1] : below);
          scf::YieldOp::create(nb, l, ValueRange{nl, nr});
        });
    return loop.getResult(0);
  };
  Value bn = cst(blockN);
  Value tLo = arith::DivSIOp::create(b, loc, lo, bn);
  // The first tile from which no key up to hi - 1 is visible.
  Value tEnd =
      search(tLo, arith::CeilDivSIOp::create(b, loc, hi, bn),
             /*suffix=*/true, arith::SubIOp::create(b, loc, hi, cst(1)));
  // (At least lo: a loop whose end precedes its start is never formed.)
  Value newHi = arith::MaxSIOp::create(
      b, loc,
      arith::MinSIOp::create(b, loc, hi,
                             arith::MulIOp::create(b, loc, tEnd, bn)),
      lo);
  // The last tile before which no key from lo is visible.
  Value tFirst = search(tLo, tEnd, /*suffix=*/false, lo);
  Value newLo = arith::MinSIOp::create(
      b, loc, arith::MulIOp::create(b, loc, tFirst, bn), newHi);
  return {arith::MaxSIOp::create(b, loc, lo, newLo), newHi};
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
