//===- GPUEmitCommon.cpp - pieces every GPU mapping of tile ops shares ----===//
#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/Analysis/MaskIntervals.h"
#include "compiler/LaunchABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <limits>

using namespace mlir;
using namespace attnc;

Value gpu_emit::f32Const(OpBuilder &b, Location loc, float v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value gpu_emit::indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

void gpu_emit::emitIfThen(OpBuilder &b, Location loc, Value cond,
                          function_ref<void()> then) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  then();
}

static Value nvvmUnary(OpBuilder &b, Location loc, StringRef intrinsic,
                       Value x) {
  auto one = [&](Value v) {
    return LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                         b.getStringAttr(intrinsic),
                                         ValueRange{v})
        .getResult(0);
  };
  auto vt = dyn_cast<VectorType>(x.getType());
  if (!vt)
    return one(x);
  SmallVector<Value> elems;
  for (int64_t i = 0; i < vt.getDimSize(0); ++i)
    elems.push_back(
        one(vector::ExtractOp::create(b, loc, x, ArrayRef<int64_t>{i})));
  return vector::FromElementsOp::create(b, loc, vt, elems);
}

Value gpu_emit::fromRows(OpBuilder &b, Location loc, VectorType t,
                         ArrayRef<Value> rows) {
  Value v = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(t, b.getZeroAttr(t.getElementType())));
  for (auto [i, r] : llvm::enumerate(rows))
    v = vector::InsertOp::create(b, loc, r, v, ArrayRef<int64_t>{int64_t(i)});
  return v;
}

Value gpu_emit::quadReduce(OpBuilder &b, Location loc, Value x, bool max) {
  for (int offset : {1, 2}) {
    Value other =
        gpu::ShuffleOp::create(b, loc, x, offset, 32, gpu::ShuffleMode::XOR)
            .getShuffleResult();
    x = max ? Value(arith::MaximumFOp::create(b, loc, x, other))
            : Value(arith::AddFOp::create(b, loc, x, other));
  }
  return x;
}

LLVM::InlineAsmOp gpu_emit::inlinePtx(OpBuilder &b, Location loc,
                                      TypeRange results, ValueRange operands,
                                      StringRef text, StringRef constraints) {
  return LLVM::InlineAsmOp::create(
      b, loc, results, operands, text, constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
}

Value gpu_emit::opaqueIndex(OpBuilder &b, Location loc, Value x) {
  Type i32 = b.getI32Type();
  Value narrow = arith::IndexCastUIOp::create(b, loc, i32, x);
  auto copy =
      inlinePtx(b, loc, i32, ValueRange{narrow}, "mov.b32 $0, $1;", "=r,r");
  return arith::IndexCastUIOp::create(b, loc, b.getIndexType(),
                                      copy.getResult(0));
}

gpu_emit::StateMerge::StateMerge(OpBuilder &b, Location loc, Value max)
    : b(b), loc(loc), maxValue(max) {
  Value isNegInf = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OEQ, max,
      f32Const(b, loc, -std::numeric_limits<float>::infinity()));
  ref = arith::SelectOp::create(b, loc, isNegInf, f32Const(b, loc, 0.f), max);
}

gpu_emit::StateMerge::StateMerge(OpBuilder &b, Location loc,
                                 ArrayRef<Value> maxima)
    : StateMerge(towards(b, loc, [&] {
        Value m = maxima.front();
        for (Value x : maxima.drop_front())
          m = arith::MaximumFOp::create(b, loc, m, x);
        return m;
      }())) {}

gpu_emit::StateMerge gpu_emit::StateMerge::towards(OpBuilder &b, Location loc,
                                                   Value max) {
  return StateMerge(b, loc, max);
}

Value gpu_emit::StateMerge::weight(Value m) const {
  Value r = ref;
  if (auto vt = dyn_cast<VectorType>(m.getType()))
    r = vector::BroadcastOp::create(b, loc, vt, ref);
  return exp2(b, loc, arith::SubFOp::create(b, loc, m, r));
}

gpu_emit::SinkMerge gpu_emit::mergeSink(OpBuilder &b, Location loc, Value m,
                                        Value l, Value sinkLog2) {
  StateMerge merge(b, loc, {m, sinkLog2});
  Value weight = merge.weight(m);
  Value sum = arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, l, weight), merge.weight(sinkLog2));
  return {merge.reference(), sum, weight};
}

Value gpu_emit::sinkLog2Of(OpBuilder &b, Location loc, Value sink) {
  return arith::MulFOp::create(b, loc, sink, f32Const(b, loc, kLog2e));
}

Value gpu_emit::lseOf(OpBuilder &b, Location loc, Value m, Value l, Value sink,
                      Value sinkLog2) {
  Value ln2 = f32Const(b, loc, kLn2);
  Value log2l = log2(b, loc, l);
  if (!sink)
    return arith::MulFOp::create(b, loc,
                                 arith::AddFOp::create(b, loc, m, log2l), ln2);
  Value one = f32Const(b, loc, 1.f);
  log2l = arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, one),
      f32Const(b, loc, 0.f), log2l);
  Value fromSink =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, sinkLog2);
  Value base = arith::SelectOp::create(b, loc, fromSink, sink,
                                       arith::MulFOp::create(b, loc, m, ln2));
  return arith::AddFOp::create(b, loc, base,
                               arith::MulFOp::create(b, loc, log2l, ln2));
}

Value gpu_emit::exp2(OpBuilder &b, Location loc, Value x) {
  return nvvmUnary(b, loc, "llvm.nvvm.ex2.approx.ftz.f", x);
}

Value gpu_emit::log2(OpBuilder &b, Location loc, Value x) {
  return nvvmUnary(b, loc, "llvm.nvvm.lg2.approx.f", x);
}

/// Clones a scalar region of `op` with its arguments bound to `args`, then
/// its captures' memrefs (as the walk mapped them); returns what its
/// tile.yield yields.
static Value inlineRegion(OpBuilder &b, tile::ScoreOp op, Region &region,
                          ValueRange args, const IRMapping &map) {
  Block &block = region.front();
  IRMapping m;
  m.map(block.getArguments().take_front(args.size()), args);
  for (auto [arg, capture] : llvm::zip_equal(
           block.getArguments().drop_front(args.size()), op.getCaptures()))
    m.map(arg, map.lookup(capture));
  for (Operation &op : block.without_terminator())
    b.clone(op, m);
  return m.lookup(cast<tile::YieldOp>(block.getTerminator()).getValues()[0]);
}

Value gpu_emit::scoreElement(OpBuilder &b, Location loc, tile::ScoreOp op,
                             const IRMapping &map, Value s, Value row,
                             Value key, bool masks, bool deferScale,
                             ArrayRef<Value> rowRange) {
  auto window = op.getWindowAttr();
  int64_t left = window ? window.getLeft() : -1;
  int64_t right = op.getCausal() ? 0 : (window ? window.getRight() : -1);
  Value seqQ = map.lookup(op.getSeqQ()), seqKV = map.lookup(op.getSeqKv());
  Value batch = map.lookup(op.getBatch()), head = map.lookup(op.getHead());
  if (op.getPacked() && row) // several heads' rows: the position in the head
    row = arith::RemUIOp::create(b, loc, row, seqQ);
  // The regions see positions inside the sequences only: a tile's rows past
  // seq_q and keys past seq_kv are masked or never stored whatever a region
  // says, so they see the last row and key instead, and a mod that indexes
  // a captured tensor by position never reads outside it.
  // Clamped in 32 bits and zero-extended (positions are below 2^30; the
  // runtime checks the lengths): 64-bit clamps of every column's key are
  // hoisted and kept live beside the accumulators (the causal-as-a-mod
  // wgmma kernel spilled 96 B with them), while comparisons of extended
  // values narrow back to 32 bits.
  Value modRow = row, modKey = key;
  if (row && key && (!op.getScoreMod().empty() || !op.getMaskMod().empty())) {
    auto clamp = [&](Value x, Value seq) -> Value {
      Type i32 = b.getI32Type();
      Value x32 = arith::IndexCastOp::create(b, loc, i32, x);
      Value last = arith::SubIOp::create(
          b, loc, arith::IndexCastOp::create(b, loc, i32, seq),
          arith::ConstantIntOp::create(b, loc, i32, 1));
      return arith::IndexCastUIOp::create(
          b, loc, b.getIndexType(), arith::MinUIOp::create(b, loc, x32, last));
    };
    modRow = clamp(row, seqQ);
    modKey = clamp(key, seqKV);
  }

  // Without softcap or score_mod, scale and log2(e) fold into one multiply.
  float scale = op.getScale().convertToFloat();
  bool plain = !op.getSoftcapAttr() && op.getScoreMod().empty();
  assert((!deferScale || plain) && "only a plain score defers its scale");
  Value x =
      deferScale
          ? s
          : Value(arith::MulFOp::create(
                b, loc, s, f32Const(b, loc, plain ? scale * kLog2e : scale)));
  if (auto cap = op.getSoftcapAttr()) {
    // c·tanh(x/c) with tanh(y) = 1 - 2 / (exp2(2y·log2 e) + 1): exact in
    // both limits, no libdevice.
    float c = cap.getValueAsDouble();
    Value e = exp2(
        b, loc,
        arith::MulFOp::create(b, loc, x, f32Const(b, loc, 2.0f * kLog2e / c)));
    Value one = f32Const(b, loc, 1.0f);
    Value t = arith::SubFOp::create(
        b, loc, one,
        arith::DivFOp::create(b, loc, f32Const(b, loc, 2.0f),
                              arith::AddFOp::create(b, loc, e, one)));
    x = arith::MulFOp::create(b, loc, t, f32Const(b, loc, c));
  }
  if (!op.getScoreMod().empty())
    x = inlineRegion(b, op, op.getScoreMod(), {x, batch, head, modRow, modKey},
                     map);

  if (!masks)
    return plain ? x
                 : Value(arith::MulFOp::create(b, loc, x,
                                               f32Const(b, loc, kLog2e)));
  // Visible: key < seq_kv and within [diag - left, diag + right], where the
  // diagonal of row r is key r + seq_kv - seq_q (bottom-right aligned).
  // In 32 bits (positions are below 2^30; the runtime checks the lengths):
  // 64-bit keys and diagonals take twice the registers (the causal 128x64
  // mma.sync kernel spills 28 B with them, 8 B without). Each element is
  // compared with its row's bounds, not a per-row range against constants:
  // that form spills nothing but runs 2.5-3% slower (bench/NOTES.md,
  // "decode's launch structure, causal sm_80", 2026-11-30).
  if (op.getMaskMod().empty()) {
    auto i32 = [&](Value v) -> Value {
      return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
    };
    key = i32(key);
    row = i32(row);
    seqKV = i32(seqKV);
    seqQ = i32(seqQ);
  }
  auto constant = [&](int64_t v) -> Value {
    return key.getType().isIndex()
               ? indexConst(b, loc, v)
               : Value(arith::ConstantIntOp::create(b, loc, key.getType(), v));
  };
  Value visible =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, key, seqKV);
  Value diag = arith::AddIOp::create(
      b, loc, row, arith::SubIOp::create(b, loc, seqKV, seqQ));
  auto andWith = [&](Value cond) {
    visible = arith::AndIOp::create(b, loc, visible, cond);
  };
  if (right >= 0)
    andWith(arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sle, key,
        arith::AddIOp::create(b, loc, diag, constant(right))));
  if (left >= 0)
    andWith(arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sge, key,
        arith::SubIOp::create(b, loc, diag, constant(left))));
  if (op.getKvBounds()) { // the row's key range [first, end)
    auto [first, end] = rowRange.empty() ? rowKeyRange(b, loc, op, map, row)
                                         : std::pair{rowRange[0], rowRange[1]};
    if (key.getType().isIndex()) {
      first = arith::IndexCastOp::create(b, loc, b.getIndexType(), first);
      end = arith::IndexCastOp::create(b, loc, b.getIndexType(), end);
    }
    andWith(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, key, first));
    andWith(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, key, end));
  }
  if (!op.getMaskMod().empty())
    andWith(inlineRegion(b, op, op.getMaskMod(), {batch, head, modRow, modKey},
                         map));
  Value log2x =
      plain ? x : arith::MulFOp::create(b, loc, x, f32Const(b, loc, kLog2e));
  return arith::SelectOp::create(
      b, loc, visible, log2x,
      f32Const(b, loc, -std::numeric_limits<float>::infinity()));
}

std::pair<Value, Value> gpu_emit::rowKeyRange(OpBuilder &b, Location loc,
                                              tile::ScoreOp op,
                                              const IRMapping &map, Value row) {
  Value bounds = map.lookup(op.getKvBounds());
  Value seqQ = map.lookup(op.getSeqQ()), batch = map.lookup(op.getBatch());
  if (!row.getType().isIndex())
    row = arith::IndexCastOp::create(b, loc, b.getIndexType(), row);
  row = arith::MinUIOp::create(
      b, loc, row, arith::SubIOp::create(b, loc, seqQ, indexConst(b, loc, 1)));
  auto at = [&](int64_t which) -> Value {
    return memref::LoadOp::create(
        b, loc, bounds, ValueRange{batch, row, indexConst(b, loc, which)});
  };
  return {at(0), at(1)};
}

int64_t gpu_emit::tilePageCount(int64_t rows, int64_t pageSize) {
  if (pageSize <= 0)
    return 0;
  if (pageSize % rows == 0)
    return 1;
  if (rows % pageSize == 0 && rows / pageSize <= kMaxTilePages)
    return rows / pageSize;
  return 0;
}

SmallVector<Value> gpu_emit::tilePagesOf(OpBuilder &b, Location loc,
                                         Value table, Value batch, Value row,
                                         Value length, int64_t pageSize,
                                         int64_t count) {
  SmallVector<Value> pages;
  for (int64_t i = 0; i < count; ++i)
    pages.push_back(
        tilePageOf(b, loc, table, batch,
                   i ? Value(arith::AddIOp::create(
                           b, loc, row, indexConst(b, loc, i * pageSize)))
                     : row,
                   length, pageSize));
  return pages;
}

Value gpu_emit::tilePageOf(OpBuilder &b, Location loc, Value table, Value batch,
                           Value row, Value length, int64_t pageSize) {
  Value last = arith::MaxSIOp::create(
      b, loc, indexConst(b, loc, 0),
      arith::SubIOp::create(b, loc, length, indexConst(b, loc, 1)));
  Value at = arith::MinSIOp::create(b, loc, row, last);
  Value entry = memref::LoadOp::create(
      b, loc, table,
      ValueRange{batch, arith::DivUIOp::create(b, loc, at,
                                               indexConst(b, loc, pageSize))});
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), entry);
}

Value gpu_emit::swizzledColumn(OpBuilder &b, Location loc, Value row,
                               Value col) {
  Value r8 = arith::AndIOp::create(b, loc, row, indexConst(b, loc, 7));
  return arith::XOrIOp::create(
      b, loc, col, arith::ShLIOp::create(b, loc, r8, indexConst(b, loc, 3)));
}

void gpu_emit::stageRows(OpBuilder &b, Location loc, Value view, Value batch,
                         Value head, Value row, Value buf, int64_t rows,
                         int64_t dim, Value tid, int64_t threads, bool async,
                         bool barrier, bool commit, Value length, Value table,
                         ArrayRef<Value> tilePagesIn, bool swizzle,
                         bool unrollWholeTile) {
  // Nobody may still read the previous tile from this buffer.
  if (barrier)
    gpu::BarrierOp::create(b, loc);
  auto viewT = cast<MemRefType>(view.getType());
  Type elt = viewT.getElementType();
  auto chunkT = VectorType::get({8}, elt);
  int64_t chunksPerRow = dim / 8;
  Value seq = length ? length : Value(memref::DimOp::create(b, loc, view, 2));
  // A tile over a few whole pages (tiles start on multiples of `rows`; the
  // page size a multiple of it, or it a small multiple of the page size):
  // one block-table lookup per page, each at a row clamped into the
  // sequence (a look-ahead copy past the end must not read past the
  // table's used part), rather than one per 16-byte chunk.
  int64_t pageSize = table ? viewT.getDimSize(2) : 0;
  SmallVector<Value> tilePages;
  if (int64_t count = tilePageCount(rows, pageSize)) {
    if (!tilePagesIn.empty())
      tilePages.assign(tilePagesIn.begin(), tilePagesIn.end());
    else
      tilePages = tilePagesOf(b, loc, table, batch, row, seq, pageSize, count);
  }
  // The page of row `at` in [row, row + rows).
  auto pageOf = [&](OpBuilder &sb, Location l, Value at) -> Value {
    if (tilePages.size() == 1)
      return tilePages.front();
    Value k =
        arith::DivUIOp::create(sb, l, arith::SubIOp::create(sb, l, at, row),
                               indexConst(sb, l, pageSize));
    Value page = tilePages.back();
    for (int64_t i = int64_t(tilePages.size()) - 2; i >= 0; --i)
      page = arith::SelectOp::create(
          sb, l,
          arith::CmpIOp::create(sb, l, arith::CmpIPredicate::eq, k,
                                indexConst(sb, l, i)),
          tilePages[i], page);
    return page;
  };
  // Chunk `chunk` of the tile: its row in the tile and first column.
  auto chunkAt = [&](OpBuilder &lb, Location l,
                     Value chunk) -> std::pair<Value, Value> {
    Value cpr = indexConst(lb, l, chunksPerRow);
    Value r = arith::DivUIOp::create(lb, l, chunk, cpr);
    Value col = arith::MulIOp::create(
        lb, l, arith::RemUIOp::create(lb, l, chunk, cpr), indexConst(lb, l, 8));
    return {r, col};
  };
  // Where that chunk lands in `buf`.
  auto smemColumn = [&](OpBuilder &lb, Location l, Value r, Value col) {
    return swizzle ? swizzledColumn(lb, l, r, col) : col;
  };
  // The checked copy: bounds, clamps, per-row page lookups.
  auto emitChecked = [&]() {
    scf::ForOp::create(
        b, loc, tid, indexConst(b, loc, rows * chunksPerRow),
        indexConst(b, loc, threads), ValueRange{},
        [&](OpBuilder &lb, Location l, Value chunk, ValueRange) {
          auto [r, col] = chunkAt(lb, l, chunk);
          Value seqRow = arith::AddIOp::create(lb, l, row, r);
          Value inside = arith::CmpIOp::create(lb, l, arith::CmpIPredicate::slt,
                                               seqRow, seq);
          // Where row `at` lives: (batch, at) of a plain view; (page, at mod
          // page_size) of a paged cache, the page from the block table.
          auto source = [&](OpBuilder &sb,
                            Value at) -> std::pair<Value, Value> {
            if (!table)
              return {batch, at};
            Value pageSize = indexConst(sb, l, viewT.getDimSize(2));
            if (!tilePages.empty())
              return {pageOf(sb, l, at),
                      arith::RemUIOp::create(sb, l, at, pageSize)};
            Value entry = memref::LoadOp::create(
                sb, l, table,
                ValueRange{batch, arith::DivUIOp::create(sb, l, at, pageSize)});
            return {arith::IndexCastOp::create(sb, l, sb.getIndexType(), entry),
                    arith::RemUIOp::create(sb, l, at, pageSize)};
          };
          if (async) {
            // Past the end: read 0 of 8 elements (zero fill) from a valid
            // address: the last row of a plain view; with an explicit length
            // (which may be 0) row 0, of page 0 when paged.
            Value first, srcRow;
            if (!length) {
              Value last =
                  arith::SubIOp::create(lb, l, seq, indexConst(lb, l, 1));
              std::tie(first, srcRow) =
                  source(lb, arith::MinSIOp::create(lb, l, seqRow, last));
            } else {
              Value zero = indexConst(lb, l, 0);
              Value last = arith::MaxSIOp::create(
                  lb, l, zero,
                  arith::SubIOp::create(lb, l, seq, indexConst(lb, l, 1)));
              auto [f, rr] =
                  source(lb, arith::MinSIOp::create(lb, l, seqRow, last));
              first =
                  table ? Value(arith::SelectOp::create(lb, l, inside, f, zero))
                        : f;
              srcRow = arith::SelectOp::create(lb, l, inside, rr, zero);
            }
            Value n = arith::SelectOp::create(
                lb, l, inside, indexConst(lb, l, 8), indexConst(lb, l, 0));
            nvgpu::DeviceAsyncCopyOp::create(
                lb, l, nvgpu::DeviceAsyncTokenType::get(lb.getContext()), buf,
                ValueRange{r, smemColumn(lb, l, r, col)}, view,
                ValueRange{first, head, srcRow, col}, lb.getIndexAttr(8), n,
                lb.getUnitAttr()); // .cg: L2 only
            scf::YieldOp::create(lb, l);
            return;
          }
          auto ifOp = scf::IfOp::create(
              lb, l, inside,
              [&](OpBuilder &tb, Location tl) {
                auto [first, srcRow] = source(tb, seqRow);
                Value v = vector::LoadOp::create(
                    tb, tl, chunkT, view, ValueRange{first, head, srcRow, col},
                    false, llvm::MaybeAlign(kVectorAlign));
                scf::YieldOp::create(tb, tl, v);
              },
              [&](OpBuilder &eb, Location el) {
                Value zero = arith::ConstantOp::create(
                    eb, el,
                    DenseElementsAttr::get(chunkT, eb.getZeroAttr(elt)));
                scf::YieldOp::create(eb, el, zero);
              });
          vector::StoreOp::create(lb, l, ifOp.getResult(0), buf,
                                  ValueRange{r, smemColumn(lb, l, r, col)},
                                  false, llvm::MaybeAlign(kVectorAlign));
          scf::YieldOp::create(lb, l);
        });
  };
  // The whole-tile copy unrolled, when the chunks divide evenly among the
  // threads and a row's chunks among them too (threads a multiple of the
  // chunks per row) and the tile lies in one page: thread t copies chunks
  // t + i·threads, all in column (t mod chunks per row) and rows
  // t / (chunks per row) + i·step. Each copy's source is then one per-tile
  // base (page, head and first row) plus a per-thread offset plus i times
  // a fixed stride, so the offsets are loop-invariant and the KV loop
  // computes one base per tile. A loop over the chunks from tid (an
  // unknown trip count, which LLVM unrolls by 4 with a remainder) costs the
  // decode split kernel ~10 integer instructions per 16-byte copy
  // (bench/NOTES.md, "the decode split kernel is issue-bound", 2026-12-03).
  auto emitUnrolled = [&]() -> bool {
    int64_t total = rows * chunksPerRow;
    if (!unrollWholeTile || total % threads || threads % chunksPerRow ||
        (table && tilePages.size() != 1))
      return false;
    int64_t step = threads / chunksPerRow, perThread = total / threads;
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, view);
    auto strides = meta.getStrides();
    auto mul = [&](Value x, Value y) -> Value {
      return arith::MulIOp::create(b, loc, x, y);
    };
    auto add = [&](Value x, Value y) -> Value {
      return arith::AddIOp::create(b, loc, x, y);
    };
    Value cpr = indexConst(b, loc, chunksPerRow);
    Value r0 = arith::DivUIOp::create(b, loc, tid, cpr);
    Value col0 =
        mul(arith::RemUIOp::create(b, loc, tid, cpr), indexConst(b, loc, 8));
    // The tile's first row: in its page (a tile in one page starts on a
    // multiple of its rows, so its rows are consecutive in the page).
    Value first = table ? tilePages.front() : batch;
    Value start = table ? Value(arith::RemUIOp::create(
                              b, loc, row, indexConst(b, loc, pageSize)))
                        : row;
    Value tileOff = add(add(meta.getOffset(), mul(first, strides[0])),
                        add(mul(head, strides[1]), mul(start, strides[2])));
    Value threadOff = add(mul(r0, strides[2]), col0);
    int64_t dyn = ShapedType::kDynamic;
    auto chunksT =
        MemRefType::get({perThread, 8}, elt,
                        StridedLayoutAttr::get(b.getContext(), dyn, {dyn, 1}));
    Value mine = memref::ReinterpretCastOp::create(
        b, loc, chunksT, meta.getBaseBuffer(),
        OpFoldResult(add(tileOff, threadOff)),
        {b.getIndexAttr(perThread), b.getIndexAttr(8)},
        {OpFoldResult(mul(strides[2], indexConst(b, loc, step))),
         b.getIndexAttr(1)});
    Value zero = indexConst(b, loc, 0);
    for (int64_t i = 0; i < perThread; ++i) {
      Value r = add(r0, indexConst(b, loc, i * step));
      nvgpu::DeviceAsyncCopyOp::create(
          b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), buf,
          ValueRange{r, smemColumn(b, loc, r, col0)}, mine,
          ValueRange{indexConst(b, loc, i), zero}, b.getIndexAttr(8), Value(),
          b.getUnitAttr()); // .cg
    }
    return true;
  };
  // A whole async tile inside the sequence with no per-row lookups (the
  // common case: every tile but a sequence's last) copies without the
  // per-chunk bounds checks, clamps and selects: a few instructions per
  // 16 bytes instead of ~17 (the decode split kernel copies 16 chunks per
  // thread per K or V tile).
  if (async && (!table || !tilePages.empty())) {
    Value whole = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sle,
        arith::AddIOp::create(b, loc, row, indexConst(b, loc, rows)), seq);
    auto fast = scf::IfOp::create(b, loc, whole, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(fast.thenBlock());
      if (!emitUnrolled())
        scf::ForOp::create(
            b, loc, tid, indexConst(b, loc, rows * chunksPerRow),
            indexConst(b, loc, threads), ValueRange{},
            [&](OpBuilder &lb, Location l, Value chunk, ValueRange) {
              auto [r, col] = chunkAt(lb, l, chunk);
              Value at = arith::AddIOp::create(lb, l, row, r);
              Value first = batch;
              if (table) {
                first = pageOf(lb, l, at);
                at = arith::RemUIOp::create(lb, l, at,
                                            indexConst(lb, l, pageSize));
              }
              nvgpu::DeviceAsyncCopyOp::create(
                  lb, l, nvgpu::DeviceAsyncTokenType::get(lb.getContext()), buf,
                  ValueRange{r, smemColumn(lb, l, r, col)}, view,
                  ValueRange{first, head, at, col}, lb.getIndexAttr(8), Value(),
                  lb.getUnitAttr()); // .cg
              scf::YieldOp::create(lb, l);
            });
      b.setInsertionPointToStart(fast.elseBlock());
      emitChecked();
    }
  } else {
    emitChecked();
  }
  if (async && commit)
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  else if (!async)
    gpu::BarrierOp::create(b, loc);
}

bool gpu_emit::isRowOwnedLoad(tile::LoadOp load) {
  return llvm::all_of(load->getUses(), [](OpOperand &use) {
    // The lhs of a dot (Q), or a partial result the combine merges.
    return (isa<tile::DotOp>(use.getOwner()) && use.getOperandNumber() == 0) ||
           (isa<tile::LseAccumulateOp>(use.getOwner()) &&
            use.getOperandNumber() < 2);
  });
}

Value gpu_emit::tileNeedsMasks(OpBuilder &b, Location loc, tile::ScoreOp op,
                               const IRMapping &map, int64_t rows,
                               int64_t cols) {
  // A mask region needs its per-element masks wherever it may be false;
  // where the interval evaluation cannot tell, on every tile.
  // (Packed rows, several heads per tile, take no regions.)
  const bool analyzable =
      op.getMaskMod().empty() ||
      (!op.getPacked() && mask_intervals::isAnalyzable(op.getMaskMod()));
  if (!analyzable)
    return arith::ConstantIntOp::create(b, loc, 1, 1);
  auto window = op.getWindowAttr();
  int64_t left = window ? window.getLeft() : -1;
  int64_t right = op.getCausal() ? 0 : (window ? window.getRight() : -1);
  Value q0 = map.lookup(op.getQ0()), k0 = map.lookup(op.getK0());
  Value seqKV = map.lookup(op.getSeqKv());
  if (op.getPacked()) { // every tile may hold every position of a head
    q0 = indexConst(b, loc, 0);
    rows = 0;
  }
  Value shift = arith::SubIOp::create(b, loc, seqKV, map.lookup(op.getSeqQ()));
  Value lastKey =
      arith::AddIOp::create(b, loc, k0, indexConst(b, loc, cols - 1));
  auto gt = [&](Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, y);
  };
  Value needs =
      gt(arith::AddIOp::create(b, loc, lastKey, indexConst(b, loc, 1)), seqKV);
  if (right >= 0) // the first row sees the fewest keys on the right
    needs = arith::OrIOp::create(
        b, loc, needs,
        gt(lastKey, arith::AddIOp::create(
                        b, loc, arith::AddIOp::create(b, loc, q0, shift),
                        indexConst(b, loc, right))));
  if (left >= 0) { // the last row sees the fewest keys on the left
    Value lastRow =
        rows ? Value(arith::AddIOp::create(b, loc, q0,
                                           indexConst(b, loc, rows - 1)))
             : Value(arith::SubIOp::create(b, loc, map.lookup(op.getSeqQ()),
                                           indexConst(b, loc, 1)));
    Value lowest = arith::SubIOp::create(
        b, loc, arith::AddIOp::create(b, loc, lastRow, shift),
        indexConst(b, loc, left));
    needs = arith::OrIOp::create(b, loc, needs, gt(lowest, k0));
  }
  if (op.getKvBounds()) { // outside the keys every row sees by its range
    Value innerFirst = map.lookup(op.getKvInnerFirst());
    Value innerEnd = map.lookup(op.getKvInnerEnd());
    needs = arith::OrIOp::create(b, loc, needs, gt(innerFirst, k0));
    needs = arith::OrIOp::create(
        b, loc, needs,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, lastKey,
                              innerEnd));
  }
  if (!op.getMaskMod().empty()) {
    Value seqQ = map.lookup(op.getSeqQ());
    Value batch = map.lookup(op.getBatch()), head = map.lookup(op.getHead());
    Value lastRow =
        arith::AddIOp::create(b, loc, q0, indexConst(b, loc, rows - 1));
    auto outcome = mask_intervals::evaluate(
        b, loc, op.getMaskMod(),
        {{batch, batch},
         {head, head},
         mask_intervals::clampedRange(b, loc, q0, lastRow, seqQ),
         mask_intervals::clampedRange(b, loc, k0, lastKey, seqKV)});
    needs = arith::OrIOp::create(b, loc, needs, outcome->mayBeFalse);
  }
  return needs;
}

SmallVector<func::FuncOp> gpu_emit::kernelsWithRule(ModuleOp module,
                                                    StringRef rule) {
  SmallVector<func::FuncOp> kernels;
  for (auto fn : module.getOps<func::FuncOp>())
    if (auto l = fn->getAttrOfType<tile::LaunchAttr>("tile.launch");
        l && l.getRule() == rule)
      kernels.push_back(fn);
  return kernels;
}

gpu::GPUModuleOp gpu_emit::kernelsModule(ModuleOp module) {
  OpBuilder b(module.getContext());
  gpu::GPUModuleOp gpuModule;
  for (auto m : module.getOps<gpu::GPUModuleOp>())
    gpuModule = m;
  if (!gpuModule) {
    b.setInsertionPointToEnd(module.getBody());
    gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "kernels");
  }
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  return gpuModule;
}

LogicalResult gpu_emit::mapKernelsToGPU(
    ModuleOp module, int64_t rowPad, bool stageRowOwned,
    function_ref<int64_t(func::FuncOp, tile::LaunchAttr)> threads,
    function_ref<LogicalResult(func::FuncOp, gpu::GPUFuncOp, tile::LaunchAttr,
                               ArrayRef<Value>)>
        emit,
    function_ref<int64_t(tile::LoadOp)> ringStages,
    function_ref<int64_t(func::FuncOp, tile::LaunchAttr)> scratchBytes) {
  MLIRContext *ctx = module.getContext();
  SmallVector<func::FuncOp> kernels;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn->hasAttr("tile.launch"))
      kernels.push_back(fn);
  if (kernels.empty())
    return success();
  OpBuilder b(ctx);
  // Kernels an earlier, op-specific mapping placed (the split-KV combine)
  // share the gpu.module and keep their launch info.
  gpu::GPUModuleOp gpuModule = kernelsModule(module);
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  for (func::FuncOp kernel : kernels) {
    auto launch = kernel->getAttrOfType<tile::LaunchAttr>("tile.launch");
    SmallVector<MemRefType> bufferTypes; // staged tiles, in kernel order
    kernel.walk([&](tile::LoadOp load) {
      // Row-owned tiles are staged only as dot operands (Q), never the
      // partial results a combine merges.
      if (isRowOwnedLoad(load) &&
          !(stageRowOwned &&
            llvm::any_of(load->getUsers(), llvm::IsaPred<tile::DotOp>)))
        return;
      auto t = load.getResult().getType();
      SmallVector<int64_t> shape = {t.getDimSize(0), t.getDimSize(1) + rowPad};
      if (int64_t n = ringStages ? ringStages(load) : 1; n > 1)
        shape.insert(shape.begin(), n);
      bufferTypes.push_back(
          MemRefType::get(shape, t.getElementType(), nullptr, wg));
    });
    int64_t blockThreads = threads(kernel, launch);
    gpu::GPUFuncOp gpuFunc =
        createKernelFunc(b, gpuModule, kernel, blockThreads);
    // The buffers are views into the dynamic shared memory, each starting on
    // a 1024-byte boundary (the period of wgmma's 128-byte swizzle; the
    // padded mma.sync tiles are mostly multiples of it anyway).
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&gpuFunc.getBody().front());
    Location loc = kernel.getLoc();
    SmallVector<Value> buffers;
    int64_t bytes = 0;
    // After the tiles (whole 1 KiB blocks), the mapping's scratch bytes.
    size_t tiles = bufferTypes.size();
    if (int64_t scratch = scratchBytes ? scratchBytes(kernel, launch) : 0;
        scratch > 0)
      bufferTypes.push_back(
          MemRefType::get({scratch}, b.getI8Type(), nullptr, wg));
    if (!bufferTypes.empty()) {
      Value base = gpu::DynamicSharedMemoryOp::create(
          b, loc,
          MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr, wg));
      for (MemRefType t : bufferTypes) {
        buffers.push_back(memref::ViewOp::create(
            b, loc, t, base, indexConst(b, loc, bytes), ValueRange{}));
        int64_t size = t.getNumElements() *
                       (t.getElementType().getIntOrFloatBitWidth() / 8);
        bytes += llvm::alignTo(size, buffers.size() <= tiles ? 1024 : 16);
      }
    }
    recordLaunchInfo(module, kernel.getName(), blockThreads, bytes);
    if (failed(emit(kernel, gpuFunc, launch, buffers)))
      return failure();
    // The tiles are addressed from the dynamic-memory symbol, which NVPTX
    // lays out as the first static .shared variable: any other static
    // shared memory would sit on top of the first tile (mbarriers placed so
    // are overwritten by the tile copies and the kernel hangs). Mappings
    // ask for scratchBytes.
    if (bytes > 0 && gpuFunc.getNumWorkgroupAttributions() > 0)
      return gpuFunc.emitError(
          "a kernel with dynamic shared memory must not also have workgroup "
          "attributions (they would alias its first buffer); use the "
          "frame's scratch bytes");
    kernel.erase();
  }
  return success();
}

gpu::GPUFuncOp gpu_emit::createKernelFunc(OpBuilder &b,
                                          gpu::GPUModuleOp gpuModule,
                                          func::FuncOp kernel, int64_t threads,
                                          TypeRange workgroup) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(gpuModule.getBody());
  auto gpuFunc = gpu::GPUFuncOp::create(b, kernel.getLoc(), kernel.getName(),
                                        kernel.getFunctionType(), workgroup);
  gpuFunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  gpuFunc.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
  gpuFunc->setAttr("tile.launch", kernel->getAttr("tile.launch"));
  if (auto args = kernel.getArgAttrs())
    gpuFunc.setAllArgAttrs(*args);
  return gpuFunc;
}

void gpu_emit::recordLaunchInfo(ModuleOp module, StringRef kernel,
                                int64_t threads, int64_t dynamicSmem) {
  Builder b(module.getContext());
  NamedAttrList infos;
  if (auto earlier = module->getAttrOfType<DictionaryAttr>("attnc.launch_info"))
    infos.append(earlier.getValue());
  infos.set(
      kernel,
      b.getDictionaryAttr(
          {b.getNamedAttr("threads", b.getI64IntegerAttr(threads)),
           b.getNamedAttr("dynamic_smem", b.getI64IntegerAttr(dynamicSmem))}));
  module->setAttr("attnc.launch_info", infos.getDictionary(b.getContext()));
}

std::optional<gpu_emit::KernelLaunchInfo>
gpu_emit::launchInfo(ModuleOp module, StringRef kernel) {
  auto all = module->getAttrOfType<DictionaryAttr>("attnc.launch_info");
  auto one = all ? all.getAs<DictionaryAttr>(kernel) : DictionaryAttr();
  if (!one)
    return std::nullopt;
  auto threads = one.getAs<IntegerAttr>("threads");
  auto smem = one.getAs<IntegerAttr>("dynamic_smem");
  if (!threads || !smem)
    return std::nullopt;
  return KernelLaunchInfo{threads.getInt(), smem.getInt()};
}

void gpu_emit::recordStreamK(ModuleOp module, StringRef kernel) {
  Builder b(module.getContext());
  SmallVector<Attribute> names;
  if (auto earlier = module->getAttrOfType<ArrayAttr>("attnc.stream_k"))
    llvm::append_range(names, earlier.getValue());
  names.push_back(b.getStringAttr(kernel));
  module->setAttr("attnc.stream_k", b.getArrayAttr(names));
}

bool gpu_emit::hasStreamK(ModuleOp module, StringRef kernel) {
  auto names = module->getAttrOfType<ArrayAttr>("attnc.stream_k");
  return names && llvm::any_of(names, [&](Attribute a) {
           return cast<StringAttr>(a).getValue() == kernel;
         });
}

bool gpu_emit::isVarlenKernel(func::FuncOp kernel) {
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
    if (auto name = kernel.getArgAttrOfType<StringAttr>(i, "tile.param");
        name && name.getValue() == abi::kAttentionCuSeqlensParams[0])
      return true;
  return false;
}

SmallVector<tile::LoadOp> gpu_emit::prefetchableLoads(scf::ForOp loop) {
  SmallVector<tile::LoadOp> out;
  for (auto load : loop.getBody()->getOps<tile::LoadOp>()) {
    if (isRowOwnedLoad(load) || load.getRow() != loop.getInductionVar())
      continue;
    // Paged and length-bounded loads (decode) are copied where they stand
    // (their rings' extra index registers spill the split kernel at
    // block_n 64) unless the kernel asks for two stages.
    if ((load.getLength() || load.isPaged()) &&
        !loop->getParentOfType<FunctionOpInterface>()->hasAttr(
            kPrefetchPagedAttr))
      continue;
    if (llvm::all_of(
            ValueRange{load.getSource(), load.getBatch(), load.getHead()},
            [&](Value v) { return loop.isDefinedOutsideOfLoop(v); }))
      out.push_back(load);
  }
  return out;
}
