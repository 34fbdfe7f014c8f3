//===- AssignLayouts.cpp - thread layouts and schedules of tile kernels ---===//
//
// The choices of the sm_90a mapping, made once and recorded in the IR: each
// tile's tensor type gets its layout as encoding, each kernel its schedule.
// The layouts follow the data: a dot's result is an accumulator, the
// softmax's row statistics are the rows of the scores' accumulator, P in 16
// bits is the register A operand of the next dot, and what an scf.for
// carries keeps its initial value's layout.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/WGMMASupport.h"
#include "compiler/LaunchABI.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/TileGPU/IR/TileGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace attnc {
#define GEN_PASS_DEF_ASSIGNLAYOUTS
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;

namespace {

/// The layouts of one kernel's tiles: the wgmma mapping's, and for a
/// register tile the accumulator (2-d) or its row statistics (1-d).
struct KernelLayouts : wgmma::TileLayouts {
  using TileLayouts::TileLayouts;
  Attribute registers(RankedTensorType t) const {
    return t.getRank() == 2 ? acc : stats;
  }
};

bool isTile(Type t) { return isa<RankedTensorType>(t); }

void setLayout(Value v, Attribute layout) {
  v.setType(tgpu::withLayout(cast<RankedTensorType>(v.getType()), layout));
}

/// Gives `op`'s tile results their layouts (the regions of scf.for: its
/// carried values, then its body, then its results).
LogicalResult assign(Operation *op, const KernelLayouts &l);

LogicalResult assignBlock(Block &block, const KernelLayouts &l) {
  for (Operation &op : block)
    if (failed(assign(&op, l)))
      return failure();
  return success();
}

LogicalResult assign(Operation *op, const KernelLayouts &l) {
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    for (auto [init, arg] :
         llvm::zip(loop.getInitArgs(), loop.getRegionIterArgs()))
      arg.setType(init.getType());
    if (failed(assignBlock(*loop.getBody(), l)))
      return failure();
    for (auto [init, res] : llvm::zip(loop.getInitArgs(), loop.getResults()))
      res.setType(init.getType());
    return success();
  }
  if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
    if (ifOp.getNumResults())
      return op->emitError("attnc-assign-layouts: no layout for the tiles an "
                           "scf.if yields");
    for (Region &r : op->getRegions())
      for (Block &b : r)
        if (failed(assignBlock(b, l)))
          return failure();
    return success();
  }
  // Tiles without results, and conversions this pass inserted.
  if (!llvm::any_of(op->getResultTypes(), isTile) ||
      isa<tgpu::ConvertLayoutOp>(op))
    return success();
  if (auto load = dyn_cast<tile::LoadOp>(op)) {
    if (load.getType().getRank() != 2)
      return op->emitError("attnc-assign-layouts: the wgmma mapping stages "
                           "2-d tiles only");
    setLayout(load.getResult(), l.shared);
    return success();
  }
  if (isa<tile::DotOp, tile::ScoreOp, tile::RescaleOp>(op)) {
    setLayout(op->getResult(0), l.acc);
    return success();
  }
  if (auto upd = dyn_cast<tile::SoftmaxUpdateOp>(op)) {
    setLayout(upd.getProbs(), l.acc);
    for (Value stat : {upd.getNewMax(), upd.getNewSum(), upd.getAlpha()})
      setLayout(stat, l.stats);
    return success();
  }
  if (auto fin = dyn_cast<tile::FinalizeOp>(op)) {
    setLayout(fin.getOutput(), l.acc);
    setLayout(fin.getLse(), l.stats);
    return success();
  }
  if (auto trunc = dyn_cast<arith::TruncFOp>(op)) {
    // P in 16 bits, then in the A operand layout of P·V.
    if (tgpu::layoutOf(trunc.getIn()) != l.acc)
      return op->emitError("attnc-assign-layouts: only an accumulator is "
                           "converted to a dot operand");
    setLayout(trunc.getResult(), l.acc);
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    auto operand = tgpu::ConvertLayoutOp::create(
        b, op->getLoc(),
        tgpu::withLayout(cast<RankedTensorType>(trunc.getType()), l.operand),
        trunc.getResult());
    trunc.getResult().replaceAllUsesExcept(operand.getResult(), operand);
    return success();
  }
  if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
    auto splat = dyn_cast<SplatElementsAttr>(cst.getValue());
    if (!splat)
      return op->emitError("attnc-assign-layouts: tile constants are splats");
    auto type = cast<RankedTensorType>(cst.getType());
    auto laid = tgpu::withLayout(type, l.registers(type));
    cst.setValueAttr(
        SplatElementsAttr::get(laid, splat.getSplatValue<Attribute>()));
    cst.getResult().setType(laid);
    return success();
  }
  return op->emitError("attnc-assign-layouts: no layout for this tile op");
}

class AssignLayoutsPass
    : public attnc::impl::AssignLayoutsBase<AssignLayoutsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    for (auto kernel : getOperation().getOps<func::FuncOp>()) {
      auto launch = kernel->getAttrOfType<tile::LaunchAttr>("tile.launch");
      if (!launch || launch.getRule() != abi::kGridRuleAttentionFwd)
        continue;
      auto emitError = [&] { return kernel.emitError(); };
      const tgpu::Grid blocks = grid;
      const bool persistent = blocks == tgpu::Grid::persistent;
      auto schedule = tgpu::WgmmaScheduleAttr::getChecked(
          emitError, ctx, tgpu::KVSync(kvSync), int64_t(kvStages), blocks,
          streamK && persistent, tgpu::Epilogue(epilogue),
          tgpu::Rescale(rescale));
      if (!schedule)
        return signalPassFailure();
      if (launch.getBlockM() % 64 != 0) {
        kernel.emitError() << "attnc-assign-layouts: the wgmma mapping needs "
                              "block_m a multiple of 64, not "
                           << launch.getBlockM();
        return signalPassFailure();
      }
      kernel->setAttr(tgpu::kScheduleAttrName, schedule);
      KernelLayouts layouts(ctx, launch.getBlockM());
      if (failed(assignBlock(kernel.getBody().front(), layouts)))
        return signalPassFailure();
    }
  }
};

} // namespace
