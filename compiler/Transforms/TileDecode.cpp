//===- TileDecode.cpp - attn.decode -> split-KV kernel + LSE combine ------===//
//
// Flash-Decoding at the kernel level. A decode problem has too few query
// rows to fill a GPU with one program per query tile, so the KV sequence is
// split: program (split, kv_head, batch) runs the online softmax over its
// chunk of the paged cache for all query rows of the GQA group at once (each
// KV byte read once) and writes a partial O and LSE; a second kernel merges
// the partials with their LSE weights (tile.lse_accumulate + tile.finalize).
// Both kernels are ordinary tile kernels, so the host path runs the real
// split algorithm in CI.
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
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"

#include <algorithm>

#include <limits>

namespace attnc {
#define GEN_PASS_DEF_TILEDECODE
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

class DecodeBuilder {
public:
  DecodeBuilder(OpBuilder &b, attn::DecodeOp op, int64_t blockN,
                int64_t maxQLen, int64_t stages)
      : b(b), op(op), loc(op.getLoc()), blockN(blockN), maxQLen(maxQLen),
        stages(stages), headDim(op.getHeadDim()), elt(op.getElementType()),
        group(op.getNumHeads() / op.getNumKVHeads()) {}

  /// Rows of the split kernel's query tile: the group's heads x seq_q,
  /// padded to the mma.sync m16.
  int64_t splitRows() const { return (group * maxQLen + 15) / 16 * 16; }
  void buildSplit(StringRef name);
  void buildCombine(StringRef name);

private:
  Value index(Value i64) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), i64);
  }
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value minS(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value pid(int dim) {
    return tile::ProgramIdOp::create(b, loc, b.getIndexType(),
                                     b.getI32IntegerAttr(dim));
  }
  /// A strided view of a bare pointer: `sizes` and `strides` (element
  /// counts; a static 1 for the innermost) as index values or constants.
  Value view(Value ptr, ArrayRef<OpFoldResult> sizesIn,
             ArrayRef<OpFoldResult> stridesIn) {
    SmallVector<int64_t> shape, layout;
    SmallVector<OpFoldResult> sizes, strides;
    auto fold = [&](ArrayRef<OpFoldResult> in, SmallVector<int64_t> &dims,
                    SmallVector<OpFoldResult> &out) {
      for (OpFoldResult s : in) {
        std::optional<int64_t> c = getConstantIntValue(s);
        dims.push_back(c.value_or(ShapedType::kDynamic));
        out.push_back(c ? OpFoldResult(b.getIndexAttr(*c)) : s);
      }
    };
    fold(sizesIn, shape, sizes);
    fold(stridesIn, layout, strides);
    Type eltType = cast<MemRefType>(ptr.getType()).getElementType();
    auto type = MemRefType::get(
        shape, eltType, StridedLayoutAttr::get(b.getContext(), 0, layout));
    return memref::ReinterpretCastOp::create(b, loc, type, ptr,
                                             b.getIndexAttr(0), sizes, strides);
  }
  Value splat(ArrayRef<int64_t> shape, float v) {
    auto t = RankedTensorType::get(shape, b.getF32Type());
    return arith::ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, v));
  }
  OpFoldResult attr(int64_t v) { return b.getIndexAttr(v); }

  OpBuilder &b;
  attn::DecodeOp op;
  Location loc;
  int64_t blockN, maxQLen, stages, headDim;
  Type elt;
  int64_t group;
};

void DecodeBuilder::buildSplit(StringRef name) {
  MLIRContext *ctx = b.getContext();
  int64_t hkv = op.getNumKVHeads(), page = op.getPageSize();
  int64_t rows = splitRows();
  auto fn = func::FuncOp::create(
      b, loc, name,
      FunctionType::get(ctx, decodeSplitParamTypes(ctx, elt), {}));
  fn->setAttr(
      "tile.launch",
      tile::LaunchAttr::get(ctx, abi::kGridRuleDecodeSplit, rows, blockN, hkv));
  for (auto [i, param] : llvm::enumerate(abi::kDecodeSplitParams))
    fn.setArgAttr(i, "tile.param", b.getStringAttr(param.name));
  // Two or more stages: the GPU mappings copy the next stages - 1 K/V
  // tiles (paged, length bounded) into rings while this one is computed.
  if (stages >= 2)
    fn->setAttr(kPrefetchPagedAttr, b.getI64IntegerAttr(stages));
  fn->setAttr(kLiveRowsAttr, b.getI64IntegerAttr(group * maxQLen));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  // The kernel's parameters by their contract names (abi::kDecodeSplitParams).
  auto param = [&](StringRef name) -> BlockArgument {
    size_t at = abi::indexOf(abi::kDecodeSplitParams, name);
    assert(at < abi::kDecodeSplitParams.size() &&
           "not a decode_split parameter");
    return entry->getArgument(at);
  };
  auto arg = [&](StringRef name) { return index(param(name)); };
  Value batch = arg("batch"), seqQ = arg("seq_q"), splits = arg("num_splits");
  Value maxBlocks = arg("max_blocks"), numPages = arg("num_pages");

  Value split = pid(0), kvHead = pid(1), bIdx = pid(2);
  // The group's query rows as one [G · seq_q, D] matrix per KV head.
  // Row g · seq_q + s is (head g, position s): the runtime checks
  // q_stride_h = seq_q · q_stride_s when seq_q > 1; with one row per head
  // the rows are the heads. O and LSE written directly are seen the same
  // way.
  Value groupRows = mul(cst(group), seqQ);
  Value oneRow =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, seqQ, cst(1));
  auto rowStride = [&](Value perHead, Value perRow) -> Value {
    return arith::SelectOp::create(b, loc, oneRow, perHead, perRow);
  };
  Value qView =
      view(param("q"), {batch, attr(hkv), groupRows, attr(headDim)},
           {arg("q_stride_b"), mul(arg("q_stride_h"), cst(group)),
            rowStride(arg("q_stride_h"), arg("q_stride_s")), attr(1)});
  Value kView =
      view(param("k_cache"), {numPages, attr(hkv), attr(page), attr(headDim)},
           {arg("k_stride_p"), arg("k_stride_h"), arg("k_stride_s"), attr(1)});
  Value vView =
      view(param("v_cache"), {numPages, attr(hkv), attr(page), attr(headDim)},
           {arg("v_stride_p"), arg("v_stride_h"), arg("v_stride_s"), attr(1)});
  Value table =
      view(param("block_table"), {batch, maxBlocks}, {maxBlocks, attr(1)});
  Value lens = view(param("kv_lens"), {batch}, {attr(1)});

  Value kvLen = arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      memref::LoadOp::create(b, loc, lens, ValueRange{bIdx}));
  // This split's keys: chunks of ceil(len / splits) rounded up to whole KV
  // tiles, so every split but the last starts and ends on a tile boundary.
  Value perSplit = arith::CeilDivSIOp::create(b, loc, kvLen, splits);
  Value chunk = mul(arith::CeilDivSIOp::create(b, loc, perSplit, cst(blockN)),
                    cst(blockN));
  Value lo = minS(mul(split, chunk), kvLen);
  Value hi = minS(add(lo, chunk), kvLen);

  auto qTileT = RankedTensorType::get({rows, headDim}, elt);
  auto kvTileT = RankedTensorType::get({blockN, headDim}, elt);
  Value c0 = cst(0);
  Value qTile = tile::LoadOp::create(b, loc, qTileT, qView, bIdx, kvHead, c0);
  // An empty split (past the sequence's end) stores O = 0, LSE = -inf,
  // which the combine weighs 0.
  auto fin = buildOnlineSoftmaxLoop(
      b, loc, qTile, lo, hi, blockN, b.getF32Type(),
      {[&](Value k0) -> Value {
         return tile::LoadOp::create(b, loc, kvTileT, kView, bIdx, kvHead, k0,
                                     kvLen, table);
       },
       [&](Value k0) -> Value {
         return tile::LoadOp::create(b, loc, kvTileT, vView, bIdx, kvHead, k0,
                                     kvLen, table);
       },
       [&](Value s, Value k0) -> Value {
         return tile::ScoreOp::create(
             b, loc, s.getType(), s, bIdx, kvHead, c0, k0, seqQ, kvLen,
             ValueRange(), /*kv_bounds=*/Value(), Value(), Value(),
             b.getF32FloatAttr(op.getEffectiveScale()),
             op.getCausal() ? b.getUnitAttr() : UnitAttr(), op.getWindowAttr(),
             op.getSoftcapAttr(), b.getUnitAttr());
       }});
  Value acc = fin.getAcc(), m = fin.getMax(), l = fin.getSum();
  fin.erase();

  // write_o (abi/GridRules.h): 1 (one split) O in the input type and LSE
  // straight into the caller's tensors; otherwise the f32 partials into the
  // workspace, contiguous [splits · B, Hkv, G · seq_q(, D)], so that (split ·
  // B + b, kv_head) holds the group's rows, and with 2 the last program of
  // the group to store them merges them and writes O and LSE.
  auto writeMode = [&](int64_t mode) -> Value {
    return arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, param("write_o"),
        arith::ConstantIntOp::create(b, loc, b.getI64Type(), mode));
  };
  Value out = view(param("o"), {batch, attr(hkv), groupRows, attr(headDim)},
                   {arg("o_stride_b"), mul(arg("o_stride_h"), cst(group)),
                    rowStride(arg("o_stride_h"), arg("o_stride_s")), attr(1)});
  Value lseOut =
      op.getLse()
          ? view(param("lse"), {batch, attr(hkv), groupRows},
                 {arg("lse_stride_b"), mul(arg("lse_stride_h"), cst(group)),
                  rowStride(arg("lse_stride_h"), cst(1))})
          : Value();
  auto storeResult = [&](Value accV, Value mV, Value lV) {
    auto done = tile::FinalizeOp::create(b, loc, accV, mV, lV, elt);
    tile::StoreOp::create(b, loc, done.getOutput(), out, bIdx, kvHead, c0);
    if (lseOut)
      tile::StoreOp::create(b, loc, done.getLse(), lseOut, bIdx, kvHead, c0);
  };
  // With sinks the split kernel writes partials only (abi::
  // kDecodeWriteCombine, which the runtime then always asks for): a sink is
  // per query head, and the combine, one program per head, merges it once.
  scf::IfOp ifOp;
  if (!op.hasSinks())
    ifOp = scf::IfOp::create(b, loc, writeMode(abi::kDecodeWriteOneSplit),
                             /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    if (ifOp) {
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      storeResult(acc, m, l);
      b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    }
    Value splitBatch = add(mul(split, batch), bIdx);
    Value oPart =
        view(param("o_part"),
             {mul(splits, batch), attr(hkv), groupRows, attr(headDim)},
             {mul(groupRows, cst(hkv * headDim)), mul(groupRows, cst(headDim)),
              attr(headDim), attr(1)});
    Value lsePart =
        view(param("lse_part"), {mul(splits, batch), attr(hkv), groupRows},
             {mul(groupRows, cst(hkv)), groupRows, attr(1)});
    auto part = tile::FinalizeOp::create(b, loc, acc, m, l, b.getF32Type());
    tile::StoreOp::create(b, loc, part.getOutput(), oPart, splitBatch, kvHead,
                          c0);
    tile::StoreOp::create(b, loc, part.getLse(), lsePart, splitBatch, kvHead,
                          c0);
    if (!ifOp) {
      func::ReturnOp::create(b, loc);
      return;
    }

    // write_o = 2: the last program to arrive merges the other splits'
    // partials into its own state with the LSE weights (its (acc, m, l)
    // is already lse_accumulate's: o = acc / l, lse = m + log2 l), taking
    // them in the order split + 1, split + 2, ... (mod splits).
    auto merge =
        scf::IfOp::create(b, loc, writeMode(abi::kDecodeWriteLastSplit),
                          /*withElseRegion=*/false);
    b.setInsertionPoint(merge.thenBlock()->getTerminator());
    Value counts =
        view(param("merge_counts"), {batch, attr(hkv)}, {attr(hkv), attr(1)});
    Value last =
        tile::SplitArriveOp::create(b, loc, b.getI1Type(), counts, bIdx, kvHead,
                                    param("merge_ticket"), splits);
    auto ifLast = scf::IfOp::create(b, loc, last, /*withElseRegion=*/false);
    b.setInsertionPoint(ifLast.thenBlock()->getTerminator());
    auto oT = RankedTensorType::get({rows, headDim}, b.getF32Type());
    auto rowT = RankedTensorType::get({rows}, b.getF32Type());
    auto loop = scf::ForOp::create(b, loc, cst(1), splits, cst(1),
                                   ValueRange{acc, m, l});
    {
      OpBuilder::InsertionGuard loopGuard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value other = arith::RemUIOp::create(
          b, loc, add(split, loop.getInductionVar()), splits);
      Value sb = add(mul(other, batch), bIdx);
      Value o = tile::LoadOp::create(b, loc, oT, oPart, sb, kvHead, c0);
      Value lse = tile::LoadOp::create(b, loc, rowT, lsePart, sb, kvHead, c0);
      auto accu = tile::LseAccumulateOp::create(
          b, loc, oT, rowT, rowT, o, lse, loop.getRegionIterArg(0),
          loop.getRegionIterArg(1), loop.getRegionIterArg(2));
      scf::YieldOp::create(b, loc, accu->getResults());
    }
    storeResult(loop.getResult(0), loop.getResult(1), loop.getResult(2));
  }
  func::ReturnOp::create(b, loc);
}

void DecodeBuilder::buildCombine(StringRef name) {
  MLIRContext *ctx = b.getContext();
  int64_t hq = op.getNumHeads();
  constexpr int64_t rows = abi::kDecodeCombineRows; // of one head
  // The contract's parameters, then "sinks" when the op has them.
  SmallVector<Type> params = decodeCombineParamTypes(ctx, elt);
  const unsigned sinksArg = params.size();
  if (op.hasSinks())
    params.push_back(abiParamType(ctx, abi::ParamType::F32Ptr, elt));
  auto fn =
      func::FuncOp::create(b, loc, name, FunctionType::get(ctx, params, {}));
  fn->setAttr(
      "tile.launch",
      tile::LaunchAttr::get(ctx, abi::kGridRuleDecodeCombine, rows, 0, hq));
  for (auto [i, param] : llvm::enumerate(abi::kDecodeCombineParams))
    fn.setArgAttr(i, "tile.param", b.getStringAttr(param.name));
  if (op.hasSinks())
    fn.setArgAttr(sinksArg, "tile.param",
                  b.getStringAttr(abi::kAttentionSinksParam));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](int i) { return index(entry->getArgument(i)); };
  Value batch = arg(4), seqQ = arg(5), splits = arg(6);
  Value mTile = pid(0), head = pid(1), bIdx = pid(2);
  Value q0 = mul(mTile, cst(rows));
  // The head's sink logit: one program is one query head.
  Value sink;
  if (op.hasSinks())
    sink = memref::LoadOp::create(
        b, loc, view(entry->getArgument(sinksArg), {attr(hq)}, {attr(1)}),
        ValueRange{head});

  // The workspace seen per query head: [splits · B, Hq, seq_q(, D)].
  Value oPart = view(entry->getArgument(0),
                     {mul(splits, batch), attr(hq), seqQ, attr(headDim)},
                     {mul(seqQ, cst(hq * headDim)), mul(seqQ, cst(headDim)),
                      attr(headDim), attr(1)});
  Value lsePart =
      view(entry->getArgument(1), {mul(splits, batch), attr(hq), seqQ},
           {mul(seqQ, cst(hq)), seqQ, attr(1)});
  Value out =
      view(entry->getArgument(2), {batch, attr(hq), seqQ, attr(headDim)},
           {arg(7), arg(8), arg(9), attr(1)});
  Value lseOut = view(entry->getArgument(3), {batch, attr(hq), seqQ},
                      {arg(10), arg(11), attr(1)});

  auto oT = RankedTensorType::get({rows, headDim}, b.getF32Type());
  auto rowT = RankedTensorType::get({rows}, b.getF32Type());
  Value m0 = splat({rows}, kNegInf), l0 = splat({rows}, 0.0f);
  Value acc0 = splat({rows, headDim}, 0.0f);
  auto loop = scf::ForOp::create(b, loc, cst(0), splits, cst(1),
                                 ValueRange{acc0, m0, l0});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value sb = add(mul(loop.getInductionVar(), batch), bIdx);
    Value o = tile::LoadOp::create(b, loc, oT, oPart, sb, head, q0);
    Value lse = tile::LoadOp::create(b, loc, rowT, lsePart, sb, head, q0);
    Value acc = loop.getRegionIterArg(0), m = loop.getRegionIterArg(1);
    auto accu = tile::LseAccumulateOp::create(b, loc, acc.getType(),
                                              m.getType(), m.getType(), o, lse,
                                              acc, m, loop.getRegionIterArg(2));
    scf::YieldOp::create(b, loc, accu->getResults());
  }
  auto fin =
      tile::FinalizeOp::create(b, loc, loop.getResult(0), loop.getResult(1),
                               loop.getResult(2), elt, sink);
  tile::StoreOp::create(b, loc, fin.getOutput(), out, bIdx, head, q0);
  if (op.getLse())
    tile::StoreOp::create(b, loc, fin.getLse(), lseOut, bIdx, head, q0);
  func::ReturnOp::create(b, loc);
}

/// attn.lse_merge as a kernel: each program merges abi::kLseMergeRows rows
/// of one head.
void buildLseMerge(OpBuilder &b, attn::LseMergeOp op, StringRef name) {
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  auto oT = op.getOutputA().getType();
  Type elt = oT.getElementType();
  int64_t heads = oT.getDimSize(1), headDim = oT.getDimSize(3);
  constexpr int64_t rows = abi::kLseMergeRows;
  auto fn = func::FuncOp::create(
      b, loc, name, FunctionType::get(ctx, lseMergeParamTypes(ctx, elt), {}));
  fn->setAttr("tile.launch", tile::LaunchAttr::get(ctx, abi::kGridRuleLseMerge,
                                                   rows, 0, heads));
  for (auto [i, param] : llvm::enumerate(abi::kLseMergeParams))
    fn.setArgAttr(i, "tile.param", b.getStringAttr(param.name));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](int i) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                      entry->getArgument(i))
        .getResult();
  };
  Value batch = arg(6), seq = arg(7);
  int64_t dyn = ShapedType::kDynamic;
  auto view = [&](int ptr, int firstStride, bool withDim) -> Value {
    SmallVector<int64_t> shape{dyn, heads, dyn}, layout{dyn, dyn, 1};
    SmallVector<OpFoldResult> sizes{batch, b.getIndexAttr(heads), seq};
    SmallVector<OpFoldResult> strides{arg(firstStride), arg(firstStride + 1),
                                      b.getIndexAttr(1)};
    if (withDim) {
      shape.push_back(headDim);
      layout = {dyn, dyn, dyn, 1};
      sizes.push_back(b.getIndexAttr(headDim));
      strides = {arg(firstStride), arg(firstStride + 1), arg(firstStride + 2),
                 b.getIndexAttr(1)};
    }
    Type e =
        cast<MemRefType>(entry->getArgument(ptr).getType()).getElementType();
    auto type =
        MemRefType::get(shape, e, StridedLayoutAttr::get(ctx, 0, layout));
    return memref::ReinterpretCastOp::create(b, loc, type,
                                             entry->getArgument(ptr),
                                             b.getIndexAttr(0), sizes, strides);
  };
  Value oa = view(0, 8, true), lsea = view(1, 11, false);
  Value ob = view(2, 13, true), lseb = view(3, 16, false);
  Value out = view(4, 18, true), lseOut = view(5, 21, false);
  auto pid = [&](int dim) {
    return tile::ProgramIdOp::create(b, loc, b.getIndexType(),
                                     b.getI32IntegerAttr(dim));
  };
  Value mTile = pid(0), head = pid(1), bIdx = pid(2);
  Value q0 = arith::MulIOp::create(
      b, loc, mTile, arith::ConstantIndexOp::create(b, loc, rows));
  auto splat = [&](ArrayRef<int64_t> shape, float v) -> Value {
    auto t = RankedTensorType::get(shape, b.getF32Type());
    return arith::ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, v));
  };
  Value acc = splat({rows, headDim}, 0.0f), m = splat({rows}, kNegInf);
  Value l = splat({rows}, 0.0f);
  auto oTile = RankedTensorType::get({rows, headDim}, elt);
  auto rowT = RankedTensorType::get({rows}, b.getF32Type());
  for (auto [o, lse] : {std::pair{oa, lsea}, {ob, lseb}}) {
    Value part = tile::LoadOp::create(b, loc, oTile, o, bIdx, head, q0);
    Value w = tile::LoadOp::create(b, loc, rowT, lse, bIdx, head, q0);
    auto accu = tile::LseAccumulateOp::create(
        b, loc, acc.getType(), m.getType(), m.getType(), part, w, acc, m, l);
    acc = accu.getNewAcc();
    m = accu.getNewMax();
    l = accu.getNewSum();
  }
  auto fin = tile::FinalizeOp::create(b, loc, acc, m, l, elt);
  tile::StoreOp::create(b, loc, fin.getOutput(), out, bIdx, head, q0);
  if (op.getLse())
    tile::StoreOp::create(b, loc, fin.getLse(), lseOut, bIdx, head, q0);
  func::ReturnOp::create(b, loc);
}

/// Threads per row and rows per program of the KV append kernel: one
/// 16-byte vector per thread and row (all of a thread's loads in flight at
/// once), at least 128 threads per program.
std::pair<int64_t, int64_t> kvAppendSchedule(int64_t headDim) {
  int64_t vectors = std::max<int64_t>(1, headDim / 8);
  int64_t threads = 1;
  while (threads * 2 <= std::min<int64_t>(vectors, 32))
    threads *= 2;
  return {threads, std::max<int64_t>(1, 128 / threads)};
}

/// attn.kv_append as a row kernel: program r copies row (r / Hkv, r mod
/// Hkv) of key and value into its slot of the caches, unless the slot is
/// negative (padding) or past the last page.
void buildKVAppend(OpBuilder &b, attn::KVAppendOp op, StringRef name) {
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  Type elt = op.getElementType();
  int64_t hkv = op.getNumKVHeads(), page = op.getPageSize();
  int64_t d = op.getHeadDim();
  auto [threads, rowsPerProgram] = kvAppendSchedule(d);
  auto fn = func::FuncOp::create(
      b, loc, name, FunctionType::get(ctx, kvAppendParamTypes(ctx, elt), {}));
  fn->setAttr("tile.launch",
              tile::LaunchAttr::get(ctx, abi::kGridRuleKVAppend, rowsPerProgram,
                                    threads, hkv));
  fn->setAttr("tile.row_length", b.getI64IntegerAttr(d));
  for (auto [i, param] : llvm::enumerate(abi::kKVAppendParams))
    fn.setArgAttr(i, "tile.param", b.getStringAttr(param.name));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto index = [&](Value v) -> Value {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  };
  auto arg = [&](int i) { return index(entry->getArgument(i)); };
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  int64_t dyn = ShapedType::kDynamic;
  // A strided view of a bare pointer; static sizes where known.
  auto view = [&](int ptr, ArrayRef<int64_t> shape,
                  ArrayRef<OpFoldResult> sizes,
                  ArrayRef<OpFoldResult> strides) -> Value {
    SmallVector<int64_t> layout;
    for (OpFoldResult st : strides)
      layout.push_back(getConstantIntValue(st).value_or(dyn));
    Value base = entry->getArgument(ptr);
    auto type = MemRefType::get(
        shape, cast<MemRefType>(base.getType()).getElementType(),
        StridedLayoutAttr::get(ctx, 0, layout));
    return memref::ReinterpretCastOp::create(b, loc, type, base,
                                             b.getIndexAttr(0), sizes, strides);
  };
  Value rows = arg(5), numPages = arg(6);
  Value tokens = arith::DivUIOp::create(b, loc, rows, cst(hkv));
  OpFoldResult one = b.getIndexAttr(1), heads = b.getIndexAttr(hkv),
               dim = b.getIndexAttr(d), pageAttr = b.getIndexAttr(page);
  Value kRows =
      view(0, {dyn, hkv, d}, {tokens, heads, dim}, {arg(7), arg(8), one});
  Value vRows =
      view(1, {dyn, hkv, d}, {tokens, heads, dim}, {arg(9), arg(10), one});
  Value slots = view(2, {dyn}, {tokens}, {one});
  Value kCache = view(3, {dyn, hkv, page, d}, {numPages, heads, pageAttr, dim},
                      {arg(11), arg(12), arg(13), one});
  Value vCache = view(4, {dyn, hkv, page, d}, {numPages, heads, pageAttr, dim},
                      {arg(14), arg(15), arg(16), one});

  Value r = tile::ProgramIdOp::create(b, loc, b.getIndexType(),
                                      b.getI32IntegerAttr(0));
  Value t = arith::DivUIOp::create(b, loc, r, cst(hkv));
  Value h = arith::RemUIOp::create(b, loc, r, cst(hkv));
  Value slot = memref::LoadOp::create(b, loc, slots, ValueRange{t});
  Value limit = arith::MulIOp::create(
      b, loc, entry->getArgument(6),
      arith::ConstantIntOp::create(b, loc, b.getI64Type(), page));
  Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
  Value valid = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, slot, zero),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, slot, limit));
  auto rowT = RankedTensorType::get({d}, elt);
  scf::IfOp::create(b, loc, valid, [&](OpBuilder &tb, Location tl) {
    Value s = arith::IndexCastOp::create(tb, tl, tb.getIndexType(), slot);
    Value pg = arith::DivUIOp::create(tb, tl, s, cst(page));
    Value off = arith::RemUIOp::create(tb, tl, s, cst(page));
    Value c0 = cst(0);
    for (auto [src, dst] : {std::pair{kRows, kCache}, {vRows, vCache}}) {
      Value x =
          tile::LoadRowOp::create(tb, tl, rowT, src, ValueRange{t, h, c0});
      tile::StoreRowOp::create(tb, tl, x, dst, ValueRange{pg, h, off, c0});
    }
    scf::YieldOp::create(tb, tl);
  });
  func::ReturnOp::create(b, loc);
}

class TileDecodePass : public attnc::impl::TileDecodeBase<TileDecodePass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

void TileDecodePass::runOnOperation() {
  constexpr llvm::StringLiteral pass = "attnc-tile-decode";
  auto work = soleOpsOnArguments<attn::DecodeOp>(getOperation(), pass);
  if (failed(work))
    return signalPassFailure();
  for (auto [fn, dec] : *work) {
    if (blockN <= 0 || blockN % 16 || blockN > 256) {
      dec.emitOpError() << "cannot be tiled with block-n " << blockN.getValue()
                        << ": it must be a positive multiple of 16, at most "
                           "256";
      return signalPassFailure();
    }
    int64_t group = dec.getNumHeads() / dec.getNumKVHeads();
    if (maxQLen < 1 || group * maxQLen > 64) {
      dec.emitOpError() << "cannot pack " << group
                        << " query heads x max-q-len " << maxQLen.getValue()
                        << " rows into one program: at most 64 rows";
      return signalPassFailure();
    }
    if (stages < 1 || stages > 4) {
      dec.emitOpError() << "cannot be tiled with " << stages.getValue()
                        << " stages: the split kernel takes 1 to 4";
      return signalPassFailure();
    }
  }
  auto merges = soleOpsOnArguments<attn::LseMergeOp>(getOperation(), pass);
  if (failed(merges))
    return signalPassFailure();
  auto appends = soleOpsOnArguments<attn::KVAppendOp>(getOperation(), pass);
  if (failed(appends))
    return signalPassFailure();
  for (auto [fn, append] : *appends) {
    OpBuilder b(fn);
    buildKVAppend(b, append, fn.getName());
    fn.erase();
  }
  for (auto [fn, merge] : *merges) {
    OpBuilder b(fn);
    buildLseMerge(b, merge, fn.getName());
    fn.erase();
  }
  for (auto [fn, dec] : *work) {
    OpBuilder b(fn);
    DecodeBuilder builder(b, dec, blockN, maxQLen, stages);
    builder.buildSplit((fn.getName() + "_split").str());
    b.setInsertionPoint(fn);
    builder.buildCombine((fn.getName() + "_combine").str());
    fn.erase();
  }
}

} // namespace
