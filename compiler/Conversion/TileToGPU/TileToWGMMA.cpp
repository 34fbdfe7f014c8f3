//===- TileToWGMMA.cpp - tiles onto warpgroups with wgmma (sm_90a) --------===//
//
// The pass attnc-map-tile-to-wgmma: for each kernel it checks the tile
// layouts and the #tgpu.wgmma_schedule that attnc-assign-layouts recorded,
// builds the gpu.func with its shared memory, and runs the mapping's
// emitter (WGMMAEmitter.h, which describes the mapping) over the kernel.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/WGMMAEmitter.h"
#include "compiler/LaunchABI.h"
#include "compiler/Transforms/Passes.h"

namespace attnc {
#define GEN_PASS_DEF_MAPTILETOWGMMA
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;
using namespace attnc::wgmma;

namespace {

class MapTileToWGMMAPass
    : public attnc::impl::MapTileToWGMMABase<MapTileToWGMMAPass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

/// The schedule `kernel` carries (#tgpu.wgmma_schedule), or null.
static tgpu::WgmmaScheduleAttr scheduleOf(func::FuncOp kernel) {
  return kernel->getAttrOfType<tgpu::WgmmaScheduleAttr>(
      tgpu::kScheduleAttrName);
}

/// Whether the tiles of `kernel` carry the layouts this mapping lowers
/// (attnc-assign-layouts): 128-byte swizzled shared tiles, accumulators of
/// block_m / 64 warpgroups, their row statistics and P as their A operand.
static LogicalResult checkLayouts(func::FuncOp kernel,
                                  tile::LaunchAttr launch) {
  wgmma::TileLayouts l(kernel.getContext(), launch.getBlockM());
  Attribute expected[] = {l.acc, l.stats, l.operand, l.shared};
  WalkResult walk = kernel.walk([&](Operation *op) {
    for (Value v : op->getResults()) {
      if (!isa<RankedTensorType>(v.getType()))
        continue;
      Attribute layout = tgpu::layoutOf(v);
      if (!layout) {
        op->emitError("the wgmma mapping needs the layout of every tile "
                      "(run attnc-assign-layouts first)");
        return WalkResult::interrupt();
      }
      if (!llvm::is_contained(expected, layout)) {
        op->emitError() << "the wgmma mapping has no lowering for layout "
                        << layout << " in a kernel of block_m "
                        << launch.getBlockM();
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

void MapTileToWGMMAPass::runOnOperation() {
  // The attention backward's kernels have no GPU mapping yet.
  for (auto kernel : getOperation().getOps<func::FuncOp>())
    if (auto launch = kernel->getAttrOfType<tile::LaunchAttr>("tile.launch");
        launch && (launch.getRule() == abi::kGridRuleAttentionBwdPreprocess ||
                   launch.getRule() == abi::kGridRuleAttentionBwd ||
                   launch.getRule() == abi::kGridRuleAttentionBwdConvert)) {
      kernel.emitError() << "the attention backward's kernels ('"
                         << launch.getRule()
                         << "') have no GPU mapping yet; they run on the "
                            "host path only";
      return signalPassFailure();
    }
  // Every kernel needs its schedule; the callbacks below read it.
  for (auto kernel : getOperation().getOps<func::FuncOp>())
    if (kernel->hasAttr("tile.launch") && !scheduleOf(kernel)) {
      kernel.emitError("the wgmma mapping needs the kernel's schedule "
                       "(tgpu.schedule = #tgpu.wgmma_schedule<...>; run "
                       "attnc-assign-layouts first)");
      return signalPassFailure();
    }
  // epilogue=tma with persistent blocks: O's staging buffer, at the start
  // of the scratch bytes (1 KiB aligned: they follow the tiles).
  auto oStaging = [&](func::FuncOp kernel, tile::LaunchAttr launch) {
    tgpu::WgmmaScheduleAttr sched = scheduleOf(kernel);
    int64_t headDim = 0;
    kernel.walk([&](tile::LoadOp load) {
      if (gpu_emit::isRowOwnedLoad(load))
        headDim = load.getResult().getType().getDimSize(1);
    });
    return sched.getEpilogue() == tgpu::Epilogue::tma &&
                   sched.getGrid() == tgpu::Grid::persistent
               ? wgmma::oStagingBytes(headDim, launch.getBlockM())
               : int64_t(0);
  };
  // Q, K and V all in shared memory (Q first), unpadded: the 128-byte
  // swizzle spreads the rows over the banks instead. The frame aligns every
  // buffer to 1024 bytes, the swizzle's period.
  if (failed(gpu_emit::mapKernelsToGPU(
          getOperation(), /*rowPad=*/0, /*stageRowOwned=*/true,
          // One warpgroup per 64 query rows (+ the producer's).
          [&](func::FuncOp kernel, tile::LaunchAttr launch) {
            bool producer = scheduleOf(kernel).hasProducer();
            return 2 * launch.getBlockM() + (producer ? kProducerThreads : 0);
          },
          [&](func::FuncOp kernel, gpu::GPUFuncOp gpuFunc,
              tile::LaunchAttr launch,
              ArrayRef<Value> buffers) -> LogicalResult {
            tgpu::WgmmaScheduleAttr sched = scheduleOf(kernel);
            const KVSync sync = sched.getKvSync();
            const int64_t kvStages = sched.getKvStages();
            const bool tmaEpilogue = sched.getEpilogue() == tgpu::Epilogue::tma;
            const bool mbarriers = sync != KVSync::barrier;
            if (failed(checkLayouts(kernel, launch)))
              return failure();
            std::string why =
                wgmma::unsupportedReason(kernel, launch, kvStages);
            if (!why.empty())
              return kernel.emitError() << "the wgmma mapping " << why;
            if (int64_t staging = oStaging(kernel, launch)) {
              int64_t headDim = staging / (2 * launch.getBlockM());
              int64_t tiles = wgmma::smemBytes(headDim, launch.getBlockM(),
                                               launch.getBlockN(), kvStages);
              if (tiles + staging > wgmma::kSmemLimit)
                return kernel.emitError()
                       << "epilogue tma with persistent blocks needs O's "
                          "staging buffer ("
                       << staging << " bytes) beside the Q tile and K/V rings ("
                       << tiles
                       << " bytes), more than the 227 KiB of shared "
                          "memory a block can have";
            }
            // A paged cache's tiles go by TMA only (issueStage's cp.async
            // reads contiguous rows), one block per query tile (the
            // persistent item walk carries no key count or table row).
            bool paged = false;
            kernel.walk([&](tile::LoadOp load) { paged |= load.isPaged(); });
            if (paged && (sync != KVSync::tma ||
                          sched.getGrid() == tgpu::Grid::persistent))
              return kernel.emitError()
                     << "the wgmma mapping copies a paged cache's K/V by "
                        "TMA with one block per query tile: it needs kv-sync "
                        "tma and grid tiles, not kv-sync "
                     << tgpu::stringifyKVSync(sync) << ", grid "
                     << tgpu::stringifyGrid(sched.getGrid());
            if (sched.takesTurns() && launch.getBlockM() < 128)
              return kernel.emitError()
                     << "kv-sync " << tgpu::stringifyKVSync(sync)
                     << " needs two consumer warpgroups or more (block_m >= "
                        "128), not block_m "
                     << launch.getBlockM();
            // A kernel parameter after the others, named for the runtime
            // (tile.param); null when it cannot be added.
            OpBuilder ab(gpuFunc);
            auto ptrT = LLVM::LLVMPointerType::get(gpuFunc.getContext());
            auto appendParam = [&](const char *name, Type type) -> Value {
              unsigned at = gpuFunc.getNumArguments();
              if (failed(gpuFunc.insertArgument(
                      at, type,
                      ab.getDictionaryAttr(ab.getNamedAttr(
                          "tile.param", ab.getStringAttr(name))),
                      gpuFunc.getLoc())))
                return Value();
              return gpuFunc.getArgument(at);
            };
            // kv-sync=tma: the Q, K and V tensor maps follow the launch
            // ABI's parameters (q_tmap, k_tmap, v_tmap; built by the
            // runtime, passed by value: attnc-mark-tensor-map-params).
            SmallVector<Value> tensorMaps;
            if (sync == KVSync::tma) {
              SmallVector<int64_t> indices;
              SmallVector<const char *, 4> names(
                  abi::kAttentionTensorMapParams.begin(),
                  abi::kAttentionTensorMapParams.end());
              if (tmaEpilogue) // O's, after them
                names.push_back(abi::kAttentionOutputTensorMapParam);
              for (const char *name : names) {
                indices.push_back(gpuFunc.getNumArguments());
                Value map = appendParam(name, ptrT);
                if (!map)
                  return failure();
                tensorMaps.push_back(map);
              }
              gpuFunc->setAttr("attnc.tensor_map_args",
                               ab.getDenseI64ArrayAttr(indices));
            }
            // setmaxnreg moves registers only in a kernel whose count is
            // capped at entry: one block per SM, all its threads.
            if (sched.hasProducer())
              gpuFunc->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                               OpBuilder(gpuFunc).getI32IntegerAttr(1));
            Value barriers = mbarriers ? buffers.back() : Value();
            Value oTensorMap;
            if (tmaEpilogue)
              oTensorMap = tensorMaps.pop_back_val();
            // Persistent blocks over items of equal KV length: the
            // stream-K schedule (i32, computed by the runtime) and the
            // workspace, the last parameters.
            SmallVector<Value> streamKArgs;
            // Two consumer warpgroups only: three (block_m 192) have 160
            // registers each, and the tail's values spill (16 B, fp16
            // D128 192x64).
            // (A varlen kernel's items have their own lengths: its KV loop
            // is not item-invariant either; said here rather than left to
            // the IR's order.)
            if (sched.getStreamK() && launch.getBlockM() == 128 &&
                !gpu_emit::isVarlenKernel(kernel) &&
                itemInvariantKVLoop(kernel, launch)) {
              for (const char *name : abi::kAttentionStreamKParams)
                streamKArgs.push_back(appendParam(name, ab.getI32Type()));
              streamKArgs.push_back(
                  appendParam(abi::kAttentionWorkspaceParam, ptrT));
              if (llvm::is_contained(streamKArgs, Value()))
                return failure();
              gpu_emit::recordStreamK(getOperation(), kernel.getName());
            }
            return WGMMAEmitter(kernel, gpuFunc, launch,
                                mbarriers ? buffers.drop_back() : buffers,
                                sched, barriers, tensorMaps, oTensorMap,
                                oStaging(kernel, launch), streamKArgs)
                .emit();
          },
          // K and V of the KV loop: rings of kv_stages tiles.
          [&](tile::LoadOp load) -> int64_t {
            auto loop = load->getParentOfType<scf::ForOp>();
            auto kernel = load->getParentOfType<func::FuncOp>();
            return loop && llvm::is_contained(gpu_emit::prefetchableLoads(loop),
                                              load)
                       ? scheduleOf(kernel).getKvStages()
                       : 1;
          },
          // O's staging buffer (persistent epilogue=tma), then the mbarrier
          // schedules' 4 x kv_stages objects of 8 bytes (+ Q's full barrier
          // with a producer, and its empty one when persistent).
          [&](func::FuncOp kernel, tile::LaunchAttr launch) -> int64_t {
            tgpu::WgmmaScheduleAttr sched = scheduleOf(kernel);
            if (sched.getKvSync() == KVSync::barrier)
              return oStaging(kernel, launch);
            return oStaging(kernel, launch) +
                   (4 * sched.getKvStages() + (sched.hasProducer() ? 1 : 0) +
                    (sched.getGrid() == tgpu::Grid::persistent ? 1 : 0)) *
                       8;
          })))
    signalPassFailure();
}

} // namespace
