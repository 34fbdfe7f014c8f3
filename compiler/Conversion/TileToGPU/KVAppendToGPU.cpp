//===- KVAppendToGPU.cpp - the KV append kernel onto GPU threads ----------===//
//
// A `kv_append_v1` kernel is written for one program (one row of key and
// value: a (token, KV head) pair). On the GPU a block holds block_m such
// rows with block_n threads each; thread l of a row owns the 16-byte
// vectors l, l + block_n, ... of the row, so a warp's accesses are
// coalesced and all of a thread's loads are issued before its stores.
// Scalar ops (views, the slot lookup, the page arithmetic) are cloned per
// thread; a `scf.if` without results (the slot check) keeps its structure
// with its body mapped the same way. Rows past `rows` do nothing.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/LaunchABI.h"
#include "compiler/RowwiseABI.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace attnc {
#define GEN_PASS_DEF_MAPKVAPPENDTOGPU
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;
using gpu_emit::indexConst;

namespace {

class KVAppendEmitter {
public:
  KVAppendEmitter(func::FuncOp kernel, gpu::GPUFuncOp gpuFunc)
      : kernel(kernel), gpuFunc(gpuFunc), b(gpuFunc.getContext()) {
    auto launch = kernel->getAttrOfType<tile::LaunchAttr>("tile.launch");
    rowsPerProgram = launch.getBlockM();
    threads = launch.getBlockN();
    int64_t d = kernel->getAttrOfType<IntegerAttr>("tile.row_length").getInt();
    vectors = d / kRowVector;
    perThread = (vectors + threads - 1) / threads;
  }

  LogicalResult emit();

private:
  Value idx(int64_t v) { return indexConst(b, loc, v); }
  LogicalResult emitBlock(Block &block);
  LogicalResult emitOp(Operation &op);
  /// Vector k of this thread: its first column, and whether it lies in the
  /// row (null: always).
  Value column(Value col0, int64_t k) {
    Value v = arith::AddIOp::create(b, loc, lane, idx(k * threads));
    return arith::AddIOp::create(
        b, loc, col0, arith::MulIOp::create(b, loc, v, idx(kRowVector)));
  }
  Value inRow(int64_t k) {
    if (vectors % threads == 0)
      return {};
    Value v = arith::AddIOp::create(b, loc, lane, idx(k * threads));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, v,
                                 idx(vectors));
  }
  /// `body` under `cond` (directly when null).
  void guarded(Value cond, function_ref<void()> body) {
    if (!cond)
      return body();
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  }

  func::FuncOp kernel;
  gpu::GPUFuncOp gpuFunc;
  OpBuilder b;
  Location loc = UnknownLoc::get(b.getContext());
  int64_t rowsPerProgram, threads, vectors, perThread;
  Value lane, row;
  IRMapping scalars;
  DenseMap<Value, SmallVector<Value>>
      tiles; // row tile -> this thread's vectors
};

LogicalResult KVAppendEmitter::emit() {
  Block *entry = &gpuFunc.getBody().front();
  b.setInsertionPointToStart(entry);
  loc = kernel.getLoc();
  scalars.map(kernel.getArguments(),
              entry->getArguments().take_front(kernel.getNumArguments()));
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(threads));
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  row = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bid, idx(rowsPerProgram)),
      arith::DivUIOp::create(b, loc, tid, idx(threads)));
  Value rows;
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
    if (auto p = kernel.getArgAttrOfType<StringAttr>(i, "tile.param");
        p && p.getValue() == "rows")
      rows = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                        entry->getArgument(i));
  if (!rows)
    return kernel.emitError() << "kv_append kernel without a 'rows' parameter";
  // The program's body runs for rows in range only.
  auto inRange = scf::IfOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, rows),
      /*withElse=*/false);
  gpu::ReturnOp::create(b, loc);
  b.setInsertionPointToStart(inRange.thenBlock());
  return emitBlock(kernel.getBody().front());
}

LogicalResult KVAppendEmitter::emitBlock(Block &block) {
  for (Operation &op : block.without_terminator())
    if (failed(emitOp(op)))
      return failure();
  return success();
}

LogicalResult KVAppendEmitter::emitOp(Operation &op) {
  loc = op.getLoc();
  if (auto pid = dyn_cast<tile::ProgramIdOp>(op)) {
    scalars.map(pid.getResult(), row);
    return success();
  }
  if (auto load = dyn_cast<tile::LoadRowOp>(op)) {
    Value src = scalars.lookup(load.getSource());
    SmallVector<Value> at;
    for (Value i : load.getIndices())
      at.push_back(scalars.lookup(i));
    Value col0 = at.back();
    auto vt = VectorType::get({kRowVector},
                              load.getResult().getType().getElementType());
    SmallVector<Value> parts;
    for (int64_t k = 0; k < perThread; ++k) {
      at.back() = column(col0, k);
      if (Value valid = inRow(k)) {
        // Past the row: a zero vector, never stored.
        auto ifOp = scf::IfOp::create(
            b, loc, valid,
            [&](OpBuilder &tb, Location tl) {
              scf::YieldOp::create(tb, tl,
                                   vector::LoadOp::create(
                                       tb, tl, vt, src, at, false,
                                       llvm::MaybeAlign(gpu_emit::kVectorAlign))
                                       .getResult());
            },
            [&](OpBuilder &eb, Location el) {
              scf::YieldOp::create(
                  eb, el,
                  arith::ConstantOp::create(
                      eb, el,
                      DenseElementsAttr::get(
                          vt, eb.getZeroAttr(vt.getElementType())))
                      .getResult());
            });
        parts.push_back(ifOp.getResult(0));
        continue;
      }
      parts.push_back(
          vector::LoadOp::create(b, loc, vt, src, at, false,
                                 llvm::MaybeAlign(gpu_emit::kVectorAlign)));
    }
    tiles[load.getResult()] = std::move(parts);
    return success();
  }
  if (auto store = dyn_cast<tile::StoreRowOp>(op)) {
    auto it = tiles.find(store.getValue());
    if (it == tiles.end())
      return store.emitOpError() << "stores a tile that is not a loaded row";
    Value dst = scalars.lookup(store.getDest());
    SmallVector<Value> at;
    for (Value i : store.getIndices())
      at.push_back(scalars.lookup(i));
    Value col0 = at.back();
    for (int64_t k = 0; k < perThread; ++k) {
      at.back() = column(col0, k);
      guarded(inRow(k), [&] {
        vector::StoreOp::create(b, loc, it->second[k], dst, at, false,
                                llvm::MaybeAlign(gpu_emit::kVectorAlign));
      });
    }
    return success();
  }
  if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
    if (ifOp.getNumResults() != 0)
      return ifOp.emitOpError() << "with results has no kv_append mapping";
    auto mapped = scf::IfOp::create(b, loc, scalars.lookup(ifOp.getCondition()),
                                    /*withElse=*/!ifOp.getElseRegion().empty());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(mapped.thenBlock());
    if (failed(emitBlock(*ifOp.thenBlock())))
      return failure();
    if (!ifOp.getElseRegion().empty()) {
      b.setInsertionPointToStart(mapped.elseBlock());
      if (failed(emitBlock(*ifOp.elseBlock())))
        return failure();
    }
    return success();
  }
  if (llvm::any_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>))
    return op.emitOpError() << "has no kv_append mapping (only row loads and "
                               "stores of whole rows)";
  if (op.getNumRegions() != 0)
    return op.emitOpError() << "has no kv_append mapping";
  b.clone(op, scalars);
  return success();
}

class MapKVAppendToGPUPass
    : public attnc::impl::MapKVAppendToGPUBase<MapKVAppendToGPUPass> {
public:
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    SmallVector<func::FuncOp> kernels =
        gpu_emit::kernelsWithRule(module, abi::kGridRuleKVAppend);
    if (kernels.empty())
      return;
    OpBuilder b(ctx);
    gpu::GPUModuleOp gpuModule = gpu_emit::kernelsModule(module);
    for (func::FuncOp kernel : kernels) {
      auto launch = kernel->getAttrOfType<tile::LaunchAttr>("tile.launch");
      auto length = kernel->getAttrOfType<IntegerAttr>("tile.row_length");
      if (!length || length.getInt() % kRowVector != 0 ||
          launch.getBlockN() < 1 || launch.getBlockM() < 1) {
        kernel.emitError() << "kv_append kernel needs tile.row_length (a "
                              "multiple of 8) and a positive block_n, block_m";
        return signalPassFailure();
      }
      gpu::GPUFuncOp gpuFunc = gpu_emit::createKernelFunc(
          b, gpuModule, kernel, launch.getBlockN() * launch.getBlockM());
      if (failed(KVAppendEmitter(kernel, gpuFunc).emit()))
        return signalPassFailure();
      kernel.erase();
    }
  }
};

} // namespace
