//===- TileEmitter.h - the walk every GPU mapping of tile ops shares -*- C++
//-*-===//
//
// A GPU mapping writes the per-thread code of one tile kernel into a
// gpu.func. The walk is the same for all of them: bind the arguments, map
// program ids to block ids (permuted for tile.dim0_major kernels), copy scalar
// ops (the same on every thread), turn func.return into gpu.return, and hand
// each tile op to the mapping, which decides which thread owns which element. A
// mapping derives from TileEmitter<Mapping> (CRTP) and provides:
//   setUp()                       per-thread ids, before the first op
//   emitRowLoad(tile::LoadOp)     a tile of the program's query rows
//   emitStage(tile::LoadOp)       a tile every row reads (K, V)
//   emitDot, emitScore, emitSoftmaxUpdate, emitRescale, emitFinalize,
//   emitStore, emitConstant(arith::ConstantOp on tiles), emitConvertLayout
//   (tgpu.convert_layout, where the tiles carry layouts),
//   emitTrunc(arith::TruncFOp on tiles), emitFor(scf::ForOp),
//   optionally emitLseAccumulate (the split-KV combine), emitSplitArrive
//   (the last split merges) and emitReturn
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CONVERSION_TILETOGPU_TILEEMITTER_H
#define ATTNC_COMPILER_CONVERSION_TILETOGPU_TILEEMITTER_H

#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/TileGPU/IR/TileGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <array>

namespace attnc::gpu_emit {

template <typename Mapping> class TileEmitter {
public:
  TileEmitter(mlir::func::FuncOp kernel, mlir::gpu::GPUFuncOp gpuFunc,
              tile::LaunchAttr launch, llvm::ArrayRef<mlir::Value> buffers)
      : kernel(kernel), gpuFunc(gpuFunc), launch(launch),
        buffers(buffers.begin(), buffers.end()), b(gpuFunc.getContext()) {}

  mlir::LogicalResult emit() {
    startWalk();
    for (mlir::Operation &op : kernel.getBody().front())
      if (mlir::failed(emitOp(op)))
        return mlir::failure();
    return mlir::success();
  }

protected:
  /// Before the first op: the insertion point after the shared-memory
  /// buffers, the kernel's arguments bound, the mapping's per-thread ids.
  void startWalk() {
    mlir::Block *entry = &gpuFunc.getBody().front();
    b.setInsertionPointToEnd(entry);
    map.map(kernel.getArguments(),
            entry->getArguments().take_front(kernel.getNumArguments()));
    self().setUp();
  }

  /// Program id `dim` of this block (`pid` asks for it). Blocks start in
  /// the order of their linear index (x fastest); a kernel marked
  /// tile.dim0_major wants dimension 0 slowest (causal attention: every
  /// head's longest query tile before any shorter one, so that the short
  /// ones fill the tail), so the linear index is split again that way: the
  /// grid's shape is unchanged. The three ids are computed once, at the
  /// first program id of the kernel's entry block.
  mlir::Value programId(tile::ProgramIdOp pid) {
    using namespace mlir;
    gpu::Dimension dims[] = {gpu::Dimension::x, gpu::Dimension::y,
                             gpu::Dimension::z};
    unsigned dim = pid.getDim();
    if (!kernel->hasAttr(tile::kDim0MajorAttrName))
      return gpu::BlockIdOp::create(b, loc, dims[dim]);
    if (dim0MajorIds[0] && pid->getBlock() == &kernel.getBody().front())
      return dim0MajorIds[dim];
    auto block = [&](int d) { return gpu::BlockIdOp::create(b, loc, dims[d]); };
    auto grid = [&](int d) { return gpu::GridDimOp::create(b, loc, dims[d]); };
    auto mul = [&](Value x, Value y) {
      return arith::MulIOp::create(b, loc, x, y);
    };
    // Index arithmetic (64 bits): x * y * z can pass 2^32. Once per block.
    Value gy = grid(1);
    Value linear = arith::AddIOp::create(
        b, loc, block(0),
        mul(grid(0),
            arith::AddIOp::create(b, loc, block(1), mul(gy, block(2)))));
    Value inner = mul(gy, grid(2));
    Value rest = arith::RemUIOp::create(b, loc, linear, inner);
    std::array<Value, 3> ids = {arith::DivUIOp::create(b, loc, linear, inner),
                                arith::RemUIOp::create(b, loc, rest, gy),
                                arith::DivUIOp::create(b, loc, rest, gy)};
    if (pid->getBlock() == &kernel.getBody().front())
      dim0MajorIds = ids;
    return ids[dim];
  }

  mlir::LogicalResult emitOp(mlir::Operation &op) {
    using namespace mlir;
    loc = op.getLoc();
    Mapping &m = self();
    if (auto pid = dyn_cast<tile::ProgramIdOp>(op)) {
      map.map(pid.getResult(), programId(pid));
      return success();
    }
    if (auto load = dyn_cast<tile::LoadOp>(op))
      return isRowOwnedLoad(load) ? m.emitRowLoad(load) : m.emitStage(load);
    if (auto dot = dyn_cast<tile::DotOp>(op)) {
      // The backward's transposed-lhs products have no GPU mapping yet.
      if (dot.getTransposeA())
        return dot.emitOpError()
               << "with transpose_a has no GPU mapping yet (the attention "
                  "backward runs on the host path only)";
      return m.emitDot(dot);
    }
    if (auto score = dyn_cast<tile::ScoreOp>(op))
      return m.emitScore(score);
    if (auto upd = dyn_cast<tile::SoftmaxUpdateOp>(op))
      return m.emitSoftmaxUpdate(upd);
    if (auto rescale = dyn_cast<tile::RescaleOp>(op))
      return m.emitRescale(rescale);
    if (auto accu = dyn_cast<tile::LseAccumulateOp>(op))
      return m.emitLseAccumulate(accu);
    if (auto arrive = dyn_cast<tile::SplitArriveOp>(op))
      return m.emitSplitArrive(arrive);
    if (auto cvt = dyn_cast<tgpu::ConvertLayoutOp>(op))
      return m.emitConvertLayout(cvt);
    if (auto trunc = dyn_cast<arith::TruncFOp>(op);
        trunc && isa<RankedTensorType>(trunc.getType()))
      return m.emitTrunc(trunc);
    if (auto cst = dyn_cast<arith::ConstantOp>(op);
        cst && isa<RankedTensorType>(cst.getType()))
      return m.emitConstant(cst);
    if (auto fin = dyn_cast<tile::FinalizeOp>(op))
      return m.emitFinalize(fin);
    if (auto store = dyn_cast<tile::StoreOp>(op))
      return m.emitStore(store);
    // It has no results, so the catch-all below would copy it unmapped.
    if (isa<tile::StoreAddOp>(op))
      return op.emitOpError("has no GPU mapping yet (the attention backward "
                            "runs on the host path only)");
    if (auto loop = dyn_cast<scf::ForOp>(op))
      return m.emitFor(loop);
    if (isa<func::ReturnOp>(op))
      return m.emitReturn();
    if (auto ifOp = dyn_cast<scf::IfOp>(op); ifOp && ifOp.getNumResults() == 0)
      return emitIf(ifOp);
    // Scalar index arithmetic, casts and views: the same on every thread.
    // (A scalar loop, such as the search for a mask's KV tiles, is cloned
    // with its regions: block arguments mapped by an earlier walk over the
    // same ops, another role's, are forgotten first, or the clone would
    // reuse them instead of making its own.)
    if (llvm::any_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>))
      return op.emitError("no GPU mapping for this tile op");
    op.walk([&](Block *block) {
      for (BlockArgument arg : block->getArguments())
        map.erase(arg);
    });
    b.clone(op, map);
    return success();
  }

  /// A branch without results (decode's write_o epilogue): the same
  /// branch per thread, each side's ops handed to the mapping in turn.
  /// Tiles made inside a side stay inside it.
  mlir::LogicalResult emitIf(mlir::scf::IfOp op) {
    using namespace mlir;
    auto gpuIf = scf::IfOp::create(b, loc, map.lookup(op.getCondition()),
                                   /*withElseRegion=*/op.elseBlock());
    OpBuilder::InsertionGuard guard(b);
    for (auto [from, to] : {std::pair{op.thenBlock(), gpuIf.thenBlock()},
                            {op.elseBlock(), gpuIf.elseBlock()}}) {
      if (!from)
        continue;
      b.setInsertionPoint(to->getTerminator());
      for (Operation &inner : from->without_terminator())
        if (failed(emitOp(inner)))
          return failure();
    }
    return success();
  }

  /// func.return: gpu.return where the walk stands (a mapping that left the
  /// walk inside a region of its own closes it first).
  mlir::LogicalResult emitReturn() {
    mlir::gpu::ReturnOp::create(b, loc);
    return mlir::success();
  }

  /// A mapping without a split-KV combine says so at the op.
  mlir::LogicalResult emitLseAccumulate(tile::LseAccumulateOp op) {
    return op.emitError("this GPU mapping has no tile.lse_accumulate");
  }

  /// A mapping whose tiles carry no layouts has nothing to convert.
  mlir::LogicalResult emitConvertLayout(tgpu::ConvertLayoutOp op) {
    return op.emitError("this GPU mapping has no tgpu.convert_layout");
  }

  /// A mapping without it says so at the op (its scalar result would
  /// otherwise be cloned: one arrival per thread).
  mlir::LogicalResult emitSplitArrive(tile::SplitArriveOp op) {
    return op.emitError("this GPU mapping has no tile.split_arrive");
  }

  Mapping &self() { return static_cast<Mapping &>(*this); }

  mlir::func::FuncOp kernel;
  mlir::gpu::GPUFuncOp gpuFunc;
  tile::LaunchAttr launch;
  // Shared-memory buffers of the staged tiles, in kernel order.
  llvm::SmallVector<mlir::Value> buffers;
  mlir::OpBuilder b;
  mlir::Location loc = mlir::UnknownLoc::get(b.getContext());
  mlir::IRMapping map; // scalar values: tile level -> per thread
  // tile.dim0_major kernels: the program ids, once computed (programId).
  std::array<mlir::Value, 3> dim0MajorIds;
};

} // namespace attnc::gpu_emit

#endif
