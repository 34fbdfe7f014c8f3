//===- Pipelines.cpp - attnc's pass pipelines, one per target -------------===//
#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Conversion/TileToGPU/WGMMASupport.h"

#include "attnc/runtime/TuningDb.h"

#include "compiler/Transforms/Passes.h"
#include "dialects/Attn/IR/AttnOps.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

attnc::AttentionVariant attnc::attentionVariantOf(ModuleOp module) {
  AttentionVariant variant;
  module.walk([&](attn::AttentionOp op) {
    variant.causal = op.getCausal();
    auto window = op.getWindowAttr();
    variant.windowLeft = window ? window.getLeft() : -1;
    variant.windowRight = window ? window.getRight() : -1;
    variant.softcap =
        op.getSoftcap() ? op.getSoftcap()->convertToDouble() : 0.0;
    variant.varlen = op.isVarlen();
    variant.pageSize = op.getPageSize();
  });
  return variant;
}

attnc::TileOptions attnc::defaultTileOptions(GPUMapping mapping,
                                             int64_t headDim,
                                             const AttentionVariant &variant,
                                             int64_t blockM, int64_t blockN,
                                             int64_t warps, int64_t stages,
                                             const std::string &arch) {
  TileOptions t;
  if (mapping == GPUMapping::SIMT) {
    t.blockM = 64;
    t.blockN = 32;
  } else { // the runtime's heuristic, so that both sides agree
    KernelSpec spec;
    spec.headDim = headDim;
    spec.causal = variant.causal;
    spec.windowLeft = variant.windowLeft;
    spec.windowRight = variant.windowRight;
    spec.softcap = variant.softcap;
    spec.varlen = variant.varlen;
    spec.pageSize = variant.pageSize;
    spec.arch = arch.empty() ? "sm_80" : arch;
    TuningConfig h = heuristicTuning(spec);
    t.blockM = h.blockM;
    t.blockN = h.blockN;
    if (!warps && !blockM && h.warps)
      warps = h.warps;
    if (!stages && h.stages)
      stages = h.stages;
    // The heuristic's wgmma schedule where the tiles allow it (tma and
    // pingpong need two consumer warpgroups); the mbarrier rings otherwise.
    if (!h.kvSync.empty() && (blockM > 0 ? blockM : h.blockM) >= 128)
      if (auto sync = tgpu::symbolizeKVSync(h.kvSync))
        t.kvSync = *sync;
    // The heuristic's grid (the one place its default is chosen): persistent
    // CTAs exist on the tma schedule only, and by default where the item
    // loop's registers fit beside the tiles' (requested tiles included).
    const bool tma = t.kvSync == tgpu::KVSync::tma;
    t.grid =
        h.grid == "persistent" && tma &&
                wgmma::persistentFits(headDim, blockN > 0 ? blockN : h.blockN)
            ? tgpu::Grid::persistent
            : tgpu::Grid::tiles;
    // The heuristic's epilogue, likewise: the TMA store of O exists on the
    // tma schedule only.
    t.epilogue = h.epilogue == "tma" && tma ? tgpu::Epilogue::tma
                                            : tgpu::Epilogue::registers;
  }
  // The rescale threshold pays where the unit-rescale skip applies (head
  // dim 128 and more): H200 D256 S4k +4.4% / +7.9% (causal), D128 0 / +1%;
  // at D64, where O's multiplies are never skipped, it cost 1.2-1.5%
  // (bench/NOTES-hopper.md, 2026-12-01).
  t.rescale = headDim >= 128 ? tgpu::Rescale::threshold : tgpu::Rescale::exact;
  if (blockM > 0)
    t.blockM = blockM;
  if (blockN > 0)
    t.blockN = blockN;
  if (stages > 0)
    t.kvStages = stages;
  if (mapping == GPUMapping::MMA) {
    t.rowsPerWarp = warps > 0 ? t.blockM / warps : 16;
    // Two m16 tiles per warp leave no registers for Q's fragments.
    t.qInSmem = t.rowsPerWarp == 32 || headDim >= 256;
  }
  return t;
}

void attnc::settleWgmmaSchedule(TileOptions &tile, GPUMapping mapping,
                                int64_t headDim, bool epilogueRequested) {
  if (mapping != GPUMapping::WGMMA || tile.kvSync != tgpu::KVSync::tma) {
    tile.grid = tgpu::Grid::tiles;
    tile.epilogue = tgpu::Epilogue::registers;
    return;
  }
  if (!epilogueRequested && tile.epilogue == tgpu::Epilogue::tma &&
      !wgmma::tmaEpilogueByDefault(headDim, tile.blockM, tile.blockN,
                                   tile.kvStages, tile.persistent()))
    tile.epilogue = tgpu::Epilogue::registers;
}

void attnc::buildTilePipeline(OpPassManager &pm, const TileOptions &options) {
  TileAttentionOptions tile;
  tile.blockM = options.blockM;
  tile.blockN = options.blockN;
  pm.addPass(createTileAttention(tile));
  // The backward's kernels (attn.attention_bwd), with the same tile sizes.
  TileAttentionBackwardOptions bwd;
  bwd.blockM = options.blockM;
  bwd.blockN = options.blockN;
  pm.addPass(createTileAttentionBackward(bwd));
  // Fold the index arithmetic of the tile bounds before anyone reads it.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void attnc::buildDecodeTilePipeline(OpPassManager &pm,
                                    const DecodeTileOptions &options) {
  TileDecodeOptions decode;
  decode.blockN = options.blockN;
  decode.maxQLen = options.maxQLen;
  decode.stages = options.stages;
  pm.addPass(createTileDecode(decode));
  // Fold the split bounds' index arithmetic before anyone reads it.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void attnc::buildHostPipeline(OpPassManager &pm) {
  // Give tile ops their portable meaning; then the grid becomes loops (before
  // bufferization, so per-program temporaries are scoped to one program).
  pm.addPass(createLowerTileToLinalg());
  pm.addNestedPass<func::FuncOp>(createHostGrid());
  // Elementwise arith on tensors (the P -> bf16 conversion) as linalg.
  pm.addPass(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // The softmax state is yielded through the KV loop: allow new buffers there.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertLinalgToLoopsPass());
  // bf16 <-> f32 conversions as integer bit operations: no soft-float
  // runtime symbols needed by the JIT.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass()); // tanh (softcap) -> tanhf
  // MLIR's default calling convention: each memref<T> pointer parameter is
  // passed as (allocated, aligned, offset); HostKernel adapts the launch ABI.
  // (The bare-pointer convention cannot convert the deallocation helper.)
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// The common tail of the GPU pipelines: NVVM from the mapped gpu.module.
static void addGPUToNVVM(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // View arithmetic (reinterpret_cast, dims) into plain index math.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVGPUToNVVMPass()); // mma.sync, ldmatrix
  // The launch ABI: rank-0 memref parameters become bare pointers.
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
  // Math ops of score/mask/map regions that the conversion above has no NVVM
  // or libdevice lowering for (trunc, ctpop, ctlz, ...): LLVM intrinsics the
  // NVPTX back end selects. After it, so libdevice keeps the rest.
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertMathToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void attnc::buildSIMTPipeline(OpPassManager &pm) {
  pm.addPass(createMapCombineToGPU()); // split-KV combines, if any
  pm.addPass(createMapTileToSIMT());
  addGPUToNVVM(pm);
}

void attnc::buildMMAPipeline(OpPassManager &pm, const TileOptions &options) {
  pm.addPass(createMapCombineToGPU()); // split-KV combines, if any
  // Each kernel's schedule, recorded in the IR before the mapping reads it.
  ChooseMMAScheduleOptions mma;
  mma.rowsPerWarp = options.rowsPerWarp;
  mma.qInSharedMemory = options.qInSmem;
  mma.kvStages = options.kvStages;
  mma.decodeKeyWarps = options.decodeKeyWarps;
  pm.addPass(createChooseMMASchedule(mma));
  pm.addPass(createMapTileToMMA());
  addGPUToNVVM(pm);
}

void attnc::buildWGMMAPipeline(OpPassManager &pm, const TileOptions &options) {
  // The schedule and every tile's layout, recorded in the IR before the
  // mapping reads them.
  AssignLayoutsOptions layouts;
  layouts.kvStages = options.kvStages;
  layouts.kvSync = options.kvSync;
  layouts.rescale = options.rescale;
  layouts.grid = options.grid;
  layouts.streamK = options.streamK;
  layouts.epilogue = options.epilogue;
  pm.addPass(createAssignLayouts(layouts));
  pm.addPass(createMapTileToWGMMA());
  addGPUToNVVM(pm);
  // kv-sync=tma: the tensor-map parameters by value (grid constants); the
  // GPU-to-NVVM conversion above drops argument attributes, so after it.
  pm.addPass(createMarkTensorMapParams());
  // wgmma (and its fences) are PTX-builder ops: inline PTX before
  // translation, after everything else has reached NVVM.
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void attnc::buildRowTilePipeline(OpPassManager &pm, const RowOptions &options) {
  FuseElementwiseOptions fuse;
  fuse.threadsPerRow = options.threadsPerRow;
  fuse.rowsPerProgram = options.rowsPerProgram;
  fuse.minBlocksPerSm = options.minBlocksPerSm;
  pm.addPass(createFuseElementwise(fuse));
  // Loads of one input at one column are shared; fold the index math.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void attnc::buildRowGPUPipeline(OpPassManager &pm) {
  pm.addPass(createMapRowsToGPU());
  addGPUToNVVM(pm);
}

void attnc::buildKVAppendGPUPipeline(OpPassManager &pm) {
  pm.addPass(createMapKVAppendToGPU());
  addGPUToNVVM(pm);
}

void attnc::registerPipelines() {
  PassPipelineRegistration<>(
      "attnc-wgmma-pipeline",
      "Lower tile-level kernels to NVVM through the sm_90a wgmma mapping",
      [](OpPassManager &pm) { buildWGMMAPipeline(pm); });
  PassPipelineRegistration<>(
      "attnc-row-gpu-pipeline", "Lower tile-level row kernels to NVVM",
      [](OpPassManager &pm) { buildRowGPUPipeline(pm); });
  PassPipelineRegistration<>(
      "attnc-mma-pipeline",
      "Lower tile-level kernels to NVVM through the mma.sync mapping",
      [](OpPassManager &pm) { buildMMAPipeline(pm); });
  PassPipelineRegistration<>(
      "attnc-simt-pipeline",
      "Lower tile-level kernels to NVVM through the SIMT mapping",
      [](OpPassManager &pm) { buildSIMTPipeline(pm); });
  PassPipelineRegistration<>(
      "attnc-host-pipeline",
      "Lower tile-level kernels to the LLVM dialect for the host CPU",
      [](OpPassManager &pm) { buildHostPipeline(pm); });
}
