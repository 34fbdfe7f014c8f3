//===- RowsToGPU.cpp - row kernels onto GPU threads, 16-byte vectors ------===//
//
// A row tile of d elements is spread over the block_n threads of its row in
// 8-element chunks: thread l owns chunks l, l + block_n, ... (consecutive
// threads touch consecutive 16-byte vectors, so every warp access is
// coalesced). All of a thread's chunks are loaded before any is used, so a
// thread has all its loads in flight at once, and the row never leaves
// registers between its load and its stores.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/RowwiseABI.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"

#include <limits>

namespace attnc {
#define GEN_PASS_DEF_MAPROWSTOGPU
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;
using gpu_emit::f32Const;
using gpu_emit::indexConst;

namespace {

/// One f32 intrinsic applied to a scalar or to each element of a vector.
Value eachF32(OpBuilder &b, Location loc, Value x,
              function_ref<Value(Value)> one) {
  auto vt = dyn_cast<VectorType>(x.getType());
  if (!vt)
    return one(x);
  SmallVector<Value> elems;
  for (int64_t i = 0; i < vt.getDimSize(0); ++i)
    elems.push_back(
        one(vector::ExtractOp::create(b, loc, x, ArrayRef<int64_t>{i})));
  return vector::FromElementsOp::create(b, loc, vt, elems);
}

Value intrinsic(OpBuilder &b, Location loc, StringRef name, Value x) {
  return LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                       b.getStringAttr(name), ValueRange{x})
      .getResult(0);
}

/// a / b with div.approx.ftz.f32, elementwise on vectors.
Value fastDivide(OpBuilder &b, Location loc, Value a, Value c) {
  auto one = [&](Value x, Value y) {
    return LLVM::CallIntrinsicOp::create(
               b, loc, b.getF32Type(),
               b.getStringAttr("llvm.nvvm.div.approx.ftz.f"), ValueRange{x, y})
        .getResult(0);
  };
  auto vt = dyn_cast<VectorType>(a.getType());
  if (!vt)
    return one(a, c);
  SmallVector<Value> elems;
  for (int64_t i = 0; i < vt.getDimSize(0); ++i)
    elems.push_back(
        one(vector::ExtractOp::create(b, loc, a, ArrayRef<int64_t>{i}),
            vector::ExtractOp::create(b, loc, c, ArrayRef<int64_t>{i})));
  return vector::FromElementsOp::create(b, loc, vt, elems);
}

/// Constant of f32 `v` shaped like `like` (scalar or vector).
Value f32Like(OpBuilder &b, Location loc, Value like, float v) {
  if (auto vt = dyn_cast<VectorType>(like.getType()))
    return arith::ConstantOp::create(b, loc, vt, DenseElementsAttr::get(vt, v));
  return f32Const(b, loc, v);
}

/// `op` (one f32 result) applied to `operands` (f32 scalars, or vectors of
/// one length) one scalar at a time.
Value eachScalarOp(OpBuilder &b, Location loc, Operation *op,
                   ValueRange operands) {
  auto one = [&](ValueRange args) {
    OperationState state(loc, op->getName(), args, {b.getF32Type()},
                         op->getAttrs());
    return b.create(state)->getResult(0);
  };
  auto vt = dyn_cast<VectorType>(operands[0].getType());
  if (!vt)
    return one(operands);
  SmallVector<Value> elems;
  for (int64_t i = 0; i < vt.getDimSize(0); ++i) {
    SmallVector<Value> args;
    for (Value v : operands)
      args.push_back(
          vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i}));
    elems.push_back(one(args));
  }
  return vector::FromElementsOp::create(b, loc, vt, elems);
}

/// A math op of row kernels on f32 scalars or vectors: exp, exp2, rsqrt,
/// log and tanh with NVVM's fast approximations, sqrt as sqrt.rn; any other
/// op (absf, erf, sin, powf, ...) one scalar at a time, for the GPU-to-NVVM
/// conversion to lower to an LLVM intrinsic or a libdevice call (emitPTX
/// links libdevice).
FailureOr<Value> emitMath(OpBuilder &b, Location loc, Operation *op,
                          ValueRange operands) {
  assert(isa<math::MathDialect>(op->getDialect()) && "a math op");
  if (op->getNumResults() != 1)
    return op->emitOpError() << "has no GPU mapping in row kernels";
  SmallVector<Type> types = llvm::to_vector(TypeRange(operands));
  types.push_back(op->getResult(0).getType());
  for (Type type : types)
    if (Type elt = getElementTypeOrSelf(type); !elt.isF32())
      return op->emitOpError() << "math on " << elt
                               << " has no GPU mapping in row kernels (extend "
                                  "to f32 first)";
  if (op->getNumOperands() != 1)
    return eachScalarOp(b, loc, op, operands);
  Value x = operands[0];
  auto mul = [&](Value a, float c) {
    return arith::MulFOp::create(b, loc, a, f32Like(b, loc, a, c)).getResult();
  };
  auto ex2 = [&](Value v) {
    return eachF32(b, loc, v, [&](Value s) {
      return intrinsic(b, loc, "llvm.nvvm.ex2.approx.ftz.f", s);
    });
  };
  constexpr float log2e = 1.4426950408889634f, ln2 = 0.6931471805599453f;
  if (isa<math::ExpOp>(op))
    return ex2(mul(x, log2e));
  if (isa<math::Exp2Op>(op))
    return ex2(x);
  if (isa<math::RsqrtOp>(op))
    return eachF32(b, loc, x, [&](Value s) {
      return intrinsic(b, loc, "llvm.nvvm.rsqrt.approx.ftz.f", s);
    });
  if (isa<math::SqrtOp>(op)) // sqrt.rn (llvm.intr.sqrt is illegal for NVVM)
    return eachF32(b, loc, x, [&](Value s) {
      return intrinsic(b, loc, "llvm.nvvm.sqrt.rn.f", s);
    });
  if (isa<math::LogOp>(op))
    return mul(eachF32(b, loc, x,
                       [&](Value s) {
                         return intrinsic(b, loc, "llvm.nvvm.lg2.approx.f", s);
                       }),
               ln2);
  if (isa<math::TanhOp>(op)) {
    // tanh(y) = 1 - 2 / (exp2(2y log2 e) + 1): exact in both limits.
    Value e = ex2(mul(x, 2.0f * log2e));
    Value one = f32Like(b, loc, x, 1.0f);
    return arith::SubFOp::create(
               b, loc, one,
               arith::DivFOp::create(b, loc, f32Like(b, loc, x, 2.0f),
                                     arith::AddFOp::create(b, loc, e, one)))
        .getResult();
  }
  return eachScalarOp(b, loc, op, operands);
}

class RowEmitter {
public:
  RowEmitter(func::FuncOp kernel, gpu::GPUFuncOp gpuFunc)
      : kernel(kernel), gpuFunc(gpuFunc), b(gpuFunc.getContext()) {
    auto launch = kernel->getAttrOfType<tile::LaunchAttr>("tile.launch");
    rowsPerProgram = launch.getBlockM();
    threads = launch.getBlockN();
    d = kernel->getAttrOfType<IntegerAttr>("tile.row_length").getInt();
    chunks = d / kRowVector;
    perThread = (chunks + threads - 1) / threads;
  }

  LogicalResult emit();

private:
  Value idx(int64_t v) { return indexConst(b, loc, v); }
  /// Whether chunk k of this thread lies in the row (null: always).
  Value chunkValid(int64_t k);
  Value chunkColumn(int64_t k);
  LogicalResult emitOp(Operation &op);
  LogicalResult emitLoad(tile::LoadRowOp op);
  LogicalResult emitStore(tile::StoreRowOp op);
  LogicalResult emitReduce(tile::ReduceRowOp op);
  LogicalResult emitRotatePairs(tile::RotatePairsOp op);
  LogicalResult emitElementwise(Operation &op);
  Value combine(attn::ReduceKind kind, Value a, Value c);

  func::FuncOp kernel;
  gpu::GPUFuncOp gpuFunc;
  OpBuilder b;
  Location loc = UnknownLoc::get(b.getContext());
  int64_t rowsPerProgram, threads, d, chunks, perThread;
  Value lane, row, rowValid, rowInBlock;
  unsigned nextBuffer = 0;
  IRMapping scalars;                         // scalar values, per thread
  DenseMap<Value, SmallVector<Value>> tiles; // row tile -> its chunks
};

Value RowEmitter::chunkValid(int64_t k) {
  if (chunks % threads == 0)
    return {};
  Value c = arith::AddIOp::create(b, loc, lane, idx(k * threads));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c,
                               idx(chunks));
}

Value RowEmitter::chunkColumn(int64_t k) {
  Value c = arith::AddIOp::create(b, loc, lane, idx(k * threads));
  return arith::MulIOp::create(b, loc, c, idx(kRowVector));
}

LogicalResult RowEmitter::emit() {
  Block *entry = &gpuFunc.getBody().front();
  b.setInsertionPointToStart(entry);
  scalars.map(kernel.getArguments(),
              entry->getArguments().take_front(kernel.getNumArguments()));
  loc = kernel.getLoc();
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(threads));
  rowInBlock = arith::DivUIOp::create(b, loc, tid, idx(threads));
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value rowRaw = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bid, idx(rowsPerProgram)),
      rowInBlock);
  Value rows;
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
    if (auto p = kernel.getArgAttrOfType<StringAttr>(i, "tile.param");
        p && p.getValue() == "rows")
      rows = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                        entry->getArgument(i));
  if (!rows)
    return kernel.emitError() << "row kernel without a 'rows' parameter";
  // A block's last rows may lie past the end: they compute on the last row
  // (every lane takes part in the shuffles) and store nothing.
  row = rowRaw;
  if (rowsPerProgram > 1) {
    rowValid =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rowRaw, rows);
    row = arith::MinUIOp::create(b, loc, rowRaw,
                                 arith::SubIOp::create(b, loc, rows, idx(1)));
  }
  for (Operation &op : kernel.getBody().front())
    if (failed(emitOp(op)))
      return failure();
  return success();
}

LogicalResult RowEmitter::emitLoad(tile::LoadRowOp op) {
  Value src = scalars.lookup(op.getSource());
  SmallVector<Value> indices;
  for (Value i : op.getIndices())
    indices.push_back(scalars.lookup(i));
  Value col0 = indices.back();
  Type elt = op.getResult().getType().getElementType();
  auto vt = VectorType::get({kRowVector}, elt);
  const bool repeat = op.getRepeat() == 2, interleaved = op.getInterleaved();
  if (repeat &&
      (chunks % threads != 0 || (!interleaved && (chunks / 2) % threads != 0)))
    return op.emitOpError() << "a repeat = 2 load needs the row's " << chunks
                            << " vectors (and each half's) to split evenly "
                               "over "
                            << threads << " threads";
  SmallVector<Value> parts;
  for (int64_t k = 0; k < perThread; ++k) {
    auto load = [&](OpBuilder &lb, Location l) -> Value {
      SmallVector<Value> at = indices;
      Value c = arith::AddIOp::create(lb, l, lane, idx(k * threads));
      if (!repeat) {
        at.back() = arith::AddIOp::create(
            lb, l, col0, arith::MulIOp::create(lb, l, c, idx(kRowVector)));
        return vector::LoadOp::create(lb, l, vt, src, at, false,
                                      llvm::MaybeAlign(gpu_emit::kVectorAlign))
            .getResult();
      }
      if (!interleaved) { // [half, half]: vector c is vector c mod C/2
        Value h = arith::RemUIOp::create(lb, l, c, idx(chunks / 2));
        at.back() = arith::AddIOp::create(
            lb, l, col0, arith::MulIOp::create(lb, l, h, idx(kRowVector)));
        return vector::LoadOp::create(lb, l, vt, src, at, false,
                                      llvm::MaybeAlign(gpu_emit::kVectorAlign))
            .getResult();
      }
      // [c0, c0, c1, c1, ...]: 8 bytes, each element twice.
      auto half = VectorType::get({kRowVector / 2}, elt);
      at.back() = arith::AddIOp::create(
          lb, l, col0, arith::MulIOp::create(lb, l, c, idx(kRowVector / 2)));
      Value v = vector::LoadOp::create(lb, l, half, src, at, false,
                                       llvm::MaybeAlign(8));
      return vector::ShuffleOp::create(
          lb, l, v, v, ArrayRef<int64_t>{0, 0, 1, 1, 2, 2, 3, 3});
    };
    Value valid = chunkValid(k);
    if (!valid) {
      parts.push_back(load(b, loc));
      continue;
    }
    auto ifOp = scf::IfOp::create(
        b, loc, valid,
        [&](OpBuilder &tb, Location tl) {
          scf::YieldOp::create(tb, tl, load(tb, tl));
        },
        [&](OpBuilder &eb, Location el) {
          Value zero = arith::ConstantOp::create(
              eb, el,
              DenseElementsAttr::get(vt, eb.getZeroAttr(vt.getElementType())));
          scf::YieldOp::create(eb, el, zero);
        });
    parts.push_back(ifOp.getResult(0));
  }
  tiles[op.getResult()] = std::move(parts);
  return success();
}

/// Each element's partner, negated in the first of its pair. GPT-J pairs
/// are neighbours inside a vector; NeoX pairs are vectors k and
/// k + (C/2)/threads of the same thread (threads divide C/2).
LogicalResult RowEmitter::emitRotatePairs(tile::RotatePairsOp op) {
  const SmallVector<Value> &in = tiles.lookup(op.getInput());
  auto vt = VectorType::get({kRowVector}, b.getF32Type());
  SmallVector<Value> parts;
  if (op.getInterleaved()) {
    SmallVector<float> signs;
    for (int64_t i = 0; i < kRowVector; ++i)
      signs.push_back(i % 2 ? 1.0f : -1.0f);
    Value sign = arith::ConstantOp::create(
        b, loc, vt, DenseElementsAttr::get(vt, ArrayRef<float>(signs)));
    for (Value x : in) {
      Value swapped = vector::ShuffleOp::create(
          b, loc, x, x, ArrayRef<int64_t>{1, 0, 3, 2, 5, 4, 7, 6});
      parts.push_back(arith::MulFOp::create(b, loc, swapped, sign));
    }
  } else {
    if (chunks % threads != 0 || (chunks / 2) % threads != 0)
      return op.emitOpError()
             << "NeoX pairs need the " << chunks / 2
             << " vectors of each half to split evenly over " << threads
             << " threads (a thread owns both vectors of its pairs)";
    int64_t shift = chunks / 2 / threads;
    for (int64_t k = 0; k < perThread; ++k)
      parts.push_back(
          k < shift ? arith::NegFOp::create(b, loc, in[k + shift]).getResult()
                    : in[k - shift]);
  }
  tiles[op.getResult()] = std::move(parts);
  return success();
}

LogicalResult RowEmitter::emitStore(tile::StoreRowOp op) {
  Value dst = scalars.lookup(op.getDest());
  SmallVector<Value> indices;
  for (Value i : op.getIndices())
    indices.push_back(scalars.lookup(i));
  Value col0 = indices.back();
  const SmallVector<Value> &parts = tiles.lookup(op.getValue());
  for (int64_t k = 0; k < perThread; ++k) {
    SmallVector<Value> at = indices;
    at.back() = arith::AddIOp::create(b, loc, col0, chunkColumn(k));
    Value cond = rowValid;
    if (Value valid = chunkValid(k))
      cond =
          cond ? arith::AndIOp::create(b, loc, cond, valid).getResult() : valid;
    auto store = [&](OpBuilder &sb, Location l) {
      vector::StoreOp::create(sb, l, parts[k], dst, at, false,
                              llvm::MaybeAlign(gpu_emit::kVectorAlign));
    };
    if (!cond) {
      store(b, loc);
      continue;
    }
    scf::IfOp::create(b, loc, cond, [&](OpBuilder &tb, Location tl) {
      store(tb, tl);
      scf::YieldOp::create(tb, tl);
    });
  }
  return success();
}

Value RowEmitter::combine(attn::ReduceKind kind, Value a, Value c) {
  if (kind == attn::ReduceKind::max)
    return arith::MaximumFOp::create(b, loc, a, c);
  return arith::AddFOp::create(b, loc, a, c);
}

LogicalResult RowEmitter::emitReduce(tile::ReduceRowOp op) {
  attn::ReduceKind kind = op.getKind();
  bool isMax = kind == attn::ReduceKind::max;
  float identity = isMax ? -std::numeric_limits<float>::infinity() : 0.0f;
  const SmallVector<Value> &parts = tiles.lookup(op.getInput());
  // This thread's elements.
  Value acc;
  for (int64_t k = 0; k < perThread; ++k) {
    Value v = parts[k];
    if (kind == attn::ReduceKind::mean_sq)
      v = arith::MulFOp::create(b, loc, v, v);
    Value r = vector::ReductionOp::create(
        b, loc,
        isMax ? vector::CombiningKind::MAXIMUMF : vector::CombiningKind::ADD,
        v);
    if (Value valid = chunkValid(k))
      r = arith::SelectOp::create(b, loc, valid, r, f32Const(b, loc, identity));
    acc = acc ? combine(kind, acc, r) : r;
  }
  // The row's threads within a warp (row segments are aligned).
  int64_t inWarp = std::min<int64_t>(threads, 32);
  for (int64_t off = inWarp / 2; off >= 1; off /= 2) {
    auto shfl = gpu::ShuffleOp::create(b, loc, acc, static_cast<int32_t>(off),
                                       32, gpu::ShuffleMode::XOR);
    acc = combine(kind, acc, shfl.getShuffleResult());
  }
  // Across the row's warps, through shared memory: one slot per warp of
  // each of the program's rows.
  if (threads > 32) {
    Value buf = gpuFunc.getWorkgroupAttributions()[nextBuffer++];
    int64_t warps = threads / 32;
    Value base = arith::MulIOp::create(b, loc, rowInBlock, idx(warps));
    Value warp = arith::AddIOp::create(
        b, loc, base, arith::DivUIOp::create(b, loc, lane, idx(32)));
    Value first = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, loc, lane, idx(32)), idx(0));
    scf::IfOp::create(b, loc, first, [&](OpBuilder &tb, Location tl) {
      memref::StoreOp::create(tb, tl, acc, buf, ValueRange{warp});
      scf::YieldOp::create(tb, tl);
    });
    gpu::BarrierOp::create(b, loc);
    Value total;
    for (int64_t w = 0; w < warps; ++w) {
      Value v = memref::LoadOp::create(
          b, loc, buf,
          ValueRange{arith::AddIOp::create(b, loc, base, idx(w)).getResult()});
      total = total ? combine(kind, total, v) : v;
    }
    acc = total;
  }
  if (kind == attn::ReduceKind::mean_sq)
    acc = arith::MulFOp::create(b, loc, acc,
                                f32Const(b, loc, 1.0f / static_cast<float>(d)));
  scalars.map(op.getResult(), acc);
  return success();
}

LogicalResult RowEmitter::emitElementwise(Operation &op) {
  SmallVector<Value> parts;
  for (int64_t k = 0; k < perThread; ++k) {
    SmallVector<Value> operands;
    for (Value v : op.getOperands()) {
      auto it = tiles.find(v);
      if (it == tiles.end())
        return op.emitOpError() << "mixes a row tile with a scalar: splat it";
      operands.push_back(it->second[k]);
    }
    if (isa<math::MathDialect>(op.getDialect())) {
      FailureOr<Value> r = emitMath(b, loc, &op, operands);
      if (failed(r))
        return failure();
      parts.push_back(*r);
      continue;
    }
    if (!isa<arith::ArithDialect>(op.getDialect()) || op.getNumResults() != 1)
      return op.emitOpError() << "has no GPU mapping in row kernels";
    if (auto div = dyn_cast<arith::DivFOp>(op);
        div && getElementTypeOrSelf(operands[0].getType()).isF32()) {
      // div.approx (2 ulp): div.rn is a long sequence with a slow-path
      // branch, and SiluAndMul divides once per element (a large share of
      // its instructions next to the HBM time; bench/NOTES.md).
      parts.push_back(fastDivide(b, loc, operands[0], operands[1]));
      continue;
    }
    auto rt = cast<RankedTensorType>(op.getResult(0).getType());
    OperationState state(loc, op.getName());
    state.addOperands(operands);
    state.addTypes(VectorType::get({kRowVector}, rt.getElementType()));
    state.addAttributes(op.getAttrs());
    parts.push_back(b.create(state)->getResult(0));
  }
  tiles[op.getResult(0)] = std::move(parts);
  return success();
}

LogicalResult RowEmitter::emitOp(Operation &op) {
  loc = op.getLoc();
  if (auto pid = dyn_cast<tile::ProgramIdOp>(op)) {
    scalars.map(pid.getResult(), row);
    return success();
  }
  if (auto load = dyn_cast<tile::LoadRowOp>(op))
    return emitLoad(load);
  if (auto store = dyn_cast<tile::StoreRowOp>(op))
    return emitStore(store);
  if (auto red = dyn_cast<tile::ReduceRowOp>(op))
    return emitReduce(red);
  if (auto rot = dyn_cast<tile::RotatePairsOp>(op))
    return emitRotatePairs(rot);
  if (auto splat = dyn_cast<tensor::SplatOp>(op)) {
    auto vt = VectorType::get({kRowVector}, splat.getType().getElementType());
    Value v = vector::BroadcastOp::create(b, loc, vt,
                                          scalars.lookup(splat.getInput()));
    tiles[splat.getResult()] = SmallVector<Value>(perThread, v);
    return success();
  }
  if (auto cst = dyn_cast<arith::ConstantOp>(op);
      cst && isa<RankedTensorType>(cst.getType())) {
    auto dense = dyn_cast<SplatElementsAttr>(cst.getValue());
    if (!dense)
      return op.emitOpError() << "only splat constants have a row mapping";
    auto vt = VectorType::get({kRowVector}, dense.getElementType());
    Value v = arith::ConstantOp::create(
        b, loc, vt,
        DenseElementsAttr::get(vt, dense.getSplatValue<Attribute>()));
    tiles[cst.getResult()] = SmallVector<Value>(perThread, v);
    return success();
  }
  if (isa<func::ReturnOp>(op)) {
    gpu::ReturnOp::create(b, loc);
    return success();
  }
  if (llvm::any_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>))
    return emitElementwise(op);
  // Scalars (row index, views, per-row values): the same for the row's
  // threads; math on them takes the fast path too.
  if (isa<math::MathDialect>(op.getDialect())) {
    SmallVector<Value> operands;
    for (Value v : op.getOperands())
      operands.push_back(scalars.lookup(v));
    FailureOr<Value> r = emitMath(b, loc, &op, operands);
    if (failed(r))
      return failure();
    scalars.map(op.getResult(0), *r);
    return success();
  }
  b.clone(op, scalars);
  return success();
}

class MapRowsToGPUPass
    : public attnc::impl::MapRowsToGPUBase<MapRowsToGPUPass> {
public:
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    SmallVector<func::FuncOp> kernels =
        gpu_emit::kernelsWithRule(module, abi::kGridRuleRowwise);
    if (kernels.empty())
      return;
    OpBuilder b(ctx);
    gpu::GPUModuleOp gpuModule = gpu_emit::kernelsModule(module);
    auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    for (func::FuncOp kernel : kernels) {
      auto launch = kernel->getAttrOfType<tile::LaunchAttr>("tile.launch");
      int64_t threads = launch.getBlockN(), rows = launch.getBlockM();
      SmallVector<Type> buffers; // per reduction, one f32 per warp of a row
      if (threads > 32)
        kernel.walk([&](tile::ReduceRowOp) {
          buffers.push_back(MemRefType::get({rows * threads / 32},
                                            b.getF32Type(), nullptr, wg));
        });
      gpu::GPUFuncOp gpuFunc = gpu_emit::createKernelFunc(
          b, gpuModule, kernel, threads * rows, buffers);
      // Occupancy: ptxas caps registers so that this many blocks fit an SM.
      if (auto minBlocks =
              kernel->getAttrOfType<IntegerAttr>("tile.min_blocks_per_sm");
          minBlocks && minBlocks.getInt() > 0)
        gpuFunc->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                         b.getI32IntegerAttr(minBlocks.getInt()));
      gpuFunc->setAttr("tile.row_length", kernel->getAttr("tile.row_length"));
      if (failed(RowEmitter(kernel, gpuFunc).emit()))
        return signalPassFailure();
      kernel.erase();
    }
  }
};

} // namespace
