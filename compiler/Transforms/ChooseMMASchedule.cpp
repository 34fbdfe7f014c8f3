//===- ChooseMMASchedule.cpp - schedules of the mma.sync mapping ----------===//
//
// The choices of the mma.sync mapping, made once and recorded on each tile
// kernel as `tgpu.schedule = #tgpu.mma_schedule<...>` (see Passes.td for
// what each one means and why staging depends on the module's kernels).
//
//===----------------------------------------------------------------------===//
#include "compiler/LaunchABI.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/TileGPU/IR/TileGPUDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace attnc {
#define GEN_PASS_DEF_CHOOSEMMASCHEDULE
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;

namespace {

class ChooseMMASchedulePass
    : public attnc::impl::ChooseMMAScheduleBase<ChooseMMASchedulePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<func::FuncOp, tile::LaunchAttr>> kernels;
    bool hasDecodeSplit = false;
    for (auto kernel : module.getOps<func::FuncOp>())
      if (auto launch =
              kernel->getAttrOfType<tile::LaunchAttr>("tile.launch")) {
        kernels.push_back({kernel, launch});
        hasDecodeSplit |= launch.getRule() == abi::kGridRuleDecodeSplit;
      }
    // Swizzled only when every staged row of the module's kernels is a
    // multiple of 64 elements (the XOR permutes 8 chunks of 16 bytes).
    bool swizzle = swizzleStaged || hasDecodeSplit;
    module.walk([&](tile::LoadOp load) {
      auto t = load.getResult().getType();
      if (t.getRank() == 2)
        swizzle &= t.getDimSize(1) % 64 == 0;
    });
    for (auto [kernel, launch] : kernels) {
      auto emitError = [&] { return kernel.emitError(); };
      auto schedule = tgpu::MmaScheduleAttr::getChecked(
          emitError, &getContext(), int64_t(rowsPerWarp), bool(qInSharedMemory),
          int64_t(kvStages),
          swizzle ? tgpu::Staging::swizzled : tgpu::Staging::padded,
          launch.getRule() == abi::kGridRuleDecodeSplit
              ? int64_t(decodeKeyWarps)
              : 1);
      if (!schedule)
        return signalPassFailure();
      kernel->setAttr(tgpu::kScheduleAttrName, schedule);
    }
  }
};

} // namespace
