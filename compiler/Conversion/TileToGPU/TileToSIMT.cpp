//===- TileToSIMT.cpp - tiles onto GPU threads, one query row per thread --===//
//
// The portable GPU mapping of a tile kernel, and the first one attnc has: a
// program is a thread block; a tile whose rows are the program's query rows
// (Q, S, P, the accumulator, the softmax state) is split by rows, one row per
// thread, held in registers as vectors; a K/V tile that every row reads is
// staged in shared memory by all threads together. It uses no tensor cores:
// it is the correctness baseline that the mma.sync (sm_80) and wgmma (sm_90a)
// mappings replace.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/Conversion/TileToGPU/TileEmitter.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <limits>

namespace attnc {
#define GEN_PASS_DEF_MAPTILETOSIMT
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;

namespace {

using gpu_emit::kLn2;
using gpu_emit::kVectorAlign;

/// Emits the per-thread code of one kernel: one query row per thread.
class SIMTEmitter : public gpu_emit::TileEmitter<SIMTEmitter> {
public:
  using TileEmitter::TileEmitter;

  // The mapping's part of the walk (see TileEmitter.h).
  void setUp() { row = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x); }
  LogicalResult emitRowLoad(tile::LoadOp op);
  LogicalResult emitStage(tile::LoadOp op);
  LogicalResult emitDot(tile::DotOp op);
  LogicalResult emitScore(tile::ScoreOp op);
  LogicalResult emitSoftmaxUpdate(tile::SoftmaxUpdateOp op);
  LogicalResult emitRescale(tile::RescaleOp op);
  LogicalResult emitTrunc(arith::TruncFOp op);
  LogicalResult emitConstant(arith::ConstantOp op);
  LogicalResult emitFinalize(tile::FinalizeOp op);
  LogicalResult emitStore(tile::StoreOp op);
  LogicalResult emitFor(scf::ForOp op);

private:
  /// The type a tile value has once split by rows: tensor<M x N x T> becomes
  /// vector<N x T>, tensor<M x T> becomes T.
  Type rowType(Type t) {
    auto tt = cast<RankedTensorType>(t);
    if (tt.getRank() == 1)
      return tt.getElementType();
    return VectorType::get({tt.getDimSize(1)}, tt.getElementType());
  }
  Value f32(float v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value splat(VectorType t, Value scalar) {
    return vector::BroadcastOp::create(b, loc, t, scalar);
  }
  Value exp2(Value x) { return gpu_emit::exp2(b, loc, x); }

  Value row;              // this thread's row in the query tile
  unsigned nextStage = 0; // next workgroup buffer for a staged tile
};

LogicalResult SIMTEmitter::emitRescale(tile::RescaleOp op) {
  Value acc = map.lookup(op.getAcc());
  auto vt = cast<VectorType>(acc.getType());
  map.map(
      op.getResult(),
      arith::MulFOp::create(b, loc, acc, splat(vt, map.lookup(op.getAlpha()))));
  return success();
}

LogicalResult SIMTEmitter::emitTrunc(arith::TruncFOp op) {
  map.map(op.getResult(), arith::TruncFOp::create(b, loc, rowType(op.getType()),
                                                  map.lookup(op.getIn())));
  return success();
}

LogicalResult SIMTEmitter::emitConstant(arith::ConstantOp op) {
  auto dense = dyn_cast<SplatElementsAttr>(op.getValue());
  if (!dense)
    return op.emitError("only splat tile constants can be split by rows");
  Type t = rowType(op.getType());
  Attribute value =
      isa<VectorType>(t)
          ? Attribute(SplatElementsAttr::get(cast<ShapedType>(t),
                                             dense.getSplatValue<Attribute>()))
          : dense.getSplatValue<Attribute>();
  map.map(op.getResult(),
          arith::ConstantOp::create(b, loc, cast<TypedAttr>(value)));
  return success();
}

/// This thread's row of a [B, H, S, D] view, zero past the sequence end.
static Value loadRow(OpBuilder &b, Location loc, Value view, Value batch,
                     Value head, Value seqRow, VectorType vt) {
  Value seq = memref::DimOp::create(b, loc, view, 2);
  Value inside =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, seqRow, seq);
  auto ifOp = scf::IfOp::create(
      b, loc, inside,
      [&](OpBuilder &tb, Location l) {
        Value c0 = arith::ConstantIndexOp::create(tb, l, 0);
        Value v = vector::LoadOp::create(
            tb, l, vt, view, ValueRange{batch, head, seqRow, c0},
            /*nontemporal=*/false, llvm::MaybeAlign(kVectorAlign));
        scf::YieldOp::create(tb, l, v);
      },
      [&](OpBuilder &eb, Location l) {
        Value zero = arith::ConstantOp::create(
            eb, l,
            DenseElementsAttr::get(vt, eb.getZeroAttr(vt.getElementType())));
        scf::YieldOp::create(eb, l, zero);
      });
  return ifOp.getResult(0);
}

LogicalResult SIMTEmitter::emitRowLoad(tile::LoadOp op) {
  auto t = op.getResult().getType();
  if (op.getLength() || op.isPaged() || t.getRank() != 2)
    return op.emitError("the SIMT mapping loads plain [R x D] row tiles only");
  auto vt = VectorType::get({t.getDimSize(1)}, t.getElementType());
  Value seqRow = arith::AddIOp::create(b, loc, map.lookup(op.getRow()), row);
  map.map(op.getResult(),
          loadRow(b, loc, map.lookup(op.getSource()), map.lookup(op.getBatch()),
                  map.lookup(op.getHead()), seqRow, vt));
  return success();
}

LogicalResult SIMTEmitter::emitStage(tile::LoadOp op) {
  auto t = op.getResult().getType();
  if (op.getLength() || op.isPaged()) // decode runs on the mma.sync mapping
    return op.emitError("the SIMT mapping has no paged or length-bounded "
                        "loads");
  if (nextStage >= buffers.size())
    return op.emitError("more staged tiles than workgroup buffers");
  Value buf = buffers[nextStage++];
  gpu_emit::stageRows(b, loc, map.lookup(op.getSource()),
                      map.lookup(op.getBatch()), map.lookup(op.getHead()),
                      map.lookup(op.getRow()), buf, t.getDimSize(0),
                      t.getDimSize(1), row, launch.getBlockM());
  map.map(op.getResult(), buf);
  return success();
}

LogicalResult SIMTEmitter::emitDot(tile::DotOp op) {
  Value lhs = map.lookup(op.getLhs()); // this row: vector<K x T>
  Value rhs = map.lookup(op.getRhs()); // staged: memref<R x C x T>
  if (!isa<VectorType>(lhs.getType()) || !isa<MemRefType>(rhs.getType()))
    return op.emitError("SIMT dot expects a row-split lhs and a staged rhs");
  auto rhsT = cast<MemRefType>(rhs.getType());
  Type f32T = b.getF32Type();
  int64_t rows = rhsT.getDimSize(0), cols = rhsT.getDimSize(1);
  Value c0 = idx(0);
  if (op.getTransposeB()) {
    // s[j] = q · k_j: one dot product per staged row.
    auto kVec = VectorType::get({cols}, rhsT.getElementType());
    auto kF32 = VectorType::get({cols}, f32T);
    Value q = arith::ExtFOp::create(b, loc, kF32, lhs);
    SmallVector<Value> s;
    for (int64_t j = 0; j < rows; ++j) {
      Value k =
          vector::LoadOp::create(b, loc, kVec, rhs, ValueRange{idx(j), c0},
                                 false, llvm::MaybeAlign(kVectorAlign));
      Value prod = arith::MulFOp::create(
          b, loc, q, arith::ExtFOp::create(b, loc, kF32, k));
      s.push_back(vector::ReductionOp::create(
          b, loc, vector::CombiningKind::ADD, prod));
    }
    Value result = vector::FromElementsOp::create(
        b, loc, VectorType::get({rows}, f32T), s);
    if (op.getAcc())
      result = arith::AddFOp::create(b, loc, result, map.lookup(op.getAcc()));
    map.map(op.getResult(), result);
    return success();
  }
  // acc += sum_j p[j] · v_j: an axpy per staged row.
  auto vVec = VectorType::get({cols}, rhsT.getElementType());
  auto vF32 = VectorType::get({cols}, f32T);
  Value acc = op.getAcc() ? map.lookup(op.getAcc())
                          : arith::ConstantOp::create(
                                b, loc, DenseElementsAttr::get(vF32, 0.0f));
  Value p = arith::ExtFOp::create(b, loc, VectorType::get({rows}, f32T), lhs);
  for (int64_t j = 0; j < rows; ++j) {
    Value v = vector::LoadOp::create(b, loc, vVec, rhs, ValueRange{idx(j), c0},
                                     false, llvm::MaybeAlign(kVectorAlign));
    Value pj = vector::ExtractOp::create(b, loc, p, ArrayRef<int64_t>{j});
    acc = vector::FMAOp::create(b, loc, splat(vF32, pj),
                                arith::ExtFOp::create(b, loc, vF32, v), acc);
  }
  map.map(op.getResult(), acc);
  return success();
}

LogicalResult SIMTEmitter::emitScore(tile::ScoreOp op) {
  Value s = map.lookup(op.getScores());
  auto vt = cast<VectorType>(s.getType());
  Value qRow = arith::AddIOp::create(b, loc, map.lookup(op.getQ0()), row);
  SmallVector<Value> out;
  for (int64_t j = 0; j < vt.getDimSize(0); ++j) {
    Value key = arith::AddIOp::create(b, loc, map.lookup(op.getK0()), idx(j));
    Value sj = vector::ExtractOp::create(b, loc, s, ArrayRef<int64_t>{j});
    out.push_back(gpu_emit::scoreElement(b, loc, op, map, sj, qRow, key));
  }
  map.map(op.getResult(), vector::FromElementsOp::create(b, loc, vt, out));
  return success();
}

LogicalResult SIMTEmitter::emitSoftmaxUpdate(tile::SoftmaxUpdateOp op) {
  Value t = map.lookup(op.getScores());
  Value m = map.lookup(op.getMax()), l = map.lookup(op.getSum());
  auto vt = cast<VectorType>(t.getType());
  Value rowMax =
      vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXIMUMF, t);
  // The running state and the tile's merge (StateMerge): a row that has
  // seen only -inf keeps a 0 reference, so p = 0, never NaN.
  gpu_emit::StateMerge merge(b, loc, {m, rowMax});
  Value newMax = merge.max(), ref = merge.reference();
  Value p = exp2(arith::SubFOp::create(b, loc, t, splat(vt, ref)));
  Value alpha = merge.weight(m);
  Value rowSum =
      vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, p);
  Value newSum = arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, alpha, l), rowSum);
  map.map(op.getProbs(), p);
  map.map(op.getNewMax(), newMax);
  map.map(op.getNewSum(), newSum);
  map.map(op.getAlpha(), alpha);
  return success();
}

LogicalResult SIMTEmitter::emitFinalize(tile::FinalizeOp op) {
  Value acc = map.lookup(op.getAcc());
  Value m = map.lookup(op.getMax()), l = map.lookup(op.getSum());
  auto vt = cast<VectorType>(acc.getType());
  Value numerator = f32(1.0f);
  Value sink, sinkLog2;
  if (op.getSink()) {
    sink = map.lookup(op.getSink());
    sinkLog2 = gpu_emit::sinkLog2Of(b, loc, sink);
    gpu_emit::SinkMerge merged = gpu_emit::mergeSink(b, loc, m, l, sinkLog2);
    m = merged.max;
    l = merged.sum;
    numerator = merged.accWeight;
  }
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, l, f32(0.0f));
  Value inv = arith::SelectOp::create(
      b, loc, positive, arith::DivFOp::create(b, loc, numerator, l), f32(0.0f));
  Value o = arith::MulFOp::create(b, loc, acc, splat(vt, inv));
  map.map(op.getOutput(), arith::TruncFOp::create(
                              b, loc, rowType(op.getOutput().getType()), o));
  // lse = (m + log2 l) · ln 2; lg2.approx is accurate to ~2^-22 relative.
  Value lse = gpu_emit::lseOf(b, loc, m, l, sink, sinkLog2);
  map.map(op.getLse(), arith::SelectOp::create(
                           b, loc, positive, lse,
                           f32(-std::numeric_limits<float>::infinity())));
  return success();
}

LogicalResult SIMTEmitter::emitStore(tile::StoreOp op) {
  Value view = map.lookup(op.getDest());
  Value seqRow = arith::AddIOp::create(b, loc, map.lookup(op.getRow()), row);
  Value seq = memref::DimOp::create(b, loc, view, 2);
  Value inside =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, seqRow, seq);
  Value value = map.lookup(op.getValue());
  Value batch = map.lookup(op.getBatch()), head = map.lookup(op.getHead());
  scf::IfOp::create(b, loc, inside, [&](OpBuilder &tb, Location l) {
    if (isa<VectorType>(value.getType()))
      vector::StoreOp::create(
          tb, l, value, view,
          ValueRange{batch, head, seqRow,
                     arith::ConstantIndexOp::create(tb, l, 0)},
          false, llvm::MaybeAlign(kVectorAlign));
    else
      memref::StoreOp::create(tb, l, value, view,
                              ValueRange{batch, head, seqRow});
    scf::YieldOp::create(tb, l);
  });
  return success();
}

LogicalResult SIMTEmitter::emitFor(scf::ForOp op) {
  SmallVector<Value> inits;
  for (Value v : op.getInitArgs())
    inits.push_back(map.lookup(v));
  auto loop = scf::ForOp::create(b, loc, map.lookup(op.getLowerBound()),
                                 map.lookup(op.getUpperBound()),
                                 map.lookup(op.getStep()), inits);
  map.map(op.getInductionVar(), loop.getInductionVar());
  map.map(op.getRegionIterArgs(), loop.getRegionIterArgs());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Block &body = *op.getBody();
  for (Operation &nested : body.without_terminator())
    if (failed(emitOp(nested)))
      return failure();
  SmallVector<Value> yields;
  for (Value v : body.getTerminator()->getOperands())
    yields.push_back(map.lookup(v));
  scf::YieldOp::create(b, loc, yields);
  map.map(op.getResults(), loop.getResults());
  return success();
}

class MapTileToSIMTPass
    : public attnc::impl::MapTileToSIMTBase<MapTileToSIMTPass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

void MapTileToSIMTPass::runOnOperation() {
  // One thread per query row; staged rows unpadded (each thread reads whole
  // rows, so there are no bank conflicts to avoid).
  if (failed(gpu_emit::mapKernelsToGPU(
          getOperation(), /*rowPad=*/0, /*stageRowOwned=*/false,
          [](func::FuncOp, tile::LaunchAttr launch) {
            return launch.getBlockM();
          },
          [](func::FuncOp kernel, gpu::GPUFuncOp gpuFunc,
             tile::LaunchAttr launch, ArrayRef<Value> buffers) {
            return SIMTEmitter(kernel, gpuFunc, launch, buffers).emit();
          })))
    signalPassFailure();
}

} // namespace
