//===- WGMMASupport.cpp - what the sm_90a wgmma mapping can take ----------===//
#include "compiler/Conversion/TileToGPU/WGMMASupport.h"

#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"

#include "attnc/abi/TensorMaps.h"

using namespace mlir;

std::string attnc::wgmma::unsupportedReason(int64_t headDim, int64_t blockM,
                                            int64_t blockN, int64_t elementBits,
                                            int64_t stages, bool leftWindow,
                                            int64_t pageSize) {
  if (elementBits != 16)
    return "needs 16-bit (bf16/f16) inputs";
  if (pageSize > 0 && abi::pagedBoxRows(pageSize, blockN) == 0)
    return "copies a paged cache's K/V tiles by TMA in boxes of whole "
           "8-row swizzle atoms inside one page: needs gcd(page size, "
           "block_n) a multiple of 8, not gcd(" +
           std::to_string(pageSize) + ", " + std::to_string(blockN) + ")";
  if (headDim % 64 != 0 || headDim > 256)
    return "supports head dims 64, 128, 192 and 256, not " +
           std::to_string(headDim);
  // 128 accumulator registers per thread at D = 256 leave too few for the
  // window's bounds: ptxas spills (255 registers, ~200 bytes of stack).
  if (leftWindow && headDim > 192)
    return "takes no sliding window at head dim " + std::to_string(headDim) +
           " yet (it would spill)";
  if (blockM % 64 != 0 || blockM > 256)
    return "needs block_m a multiple of 64 (one warpgroup per 64 rows), up "
           "to 256, not " +
           std::to_string(blockM);
  if (blockN % 16 != 0 || blockN > 256)
    return "needs block_n a multiple of 16 up to 256, not " +
           std::to_string(blockN);
  if (stages < 2 || stages > 4)
    return "needs 2 to 4 K/V stages, not " + std::to_string(stages);
  if (smemBytes(headDim, blockM, blockN, stages) > kSmemLimit)
    return "needs the Q tile and " + std::to_string(stages) +
           "-stage K/V rings within 227 KiB of shared memory, not " +
           std::to_string(smemBytes(headDim, blockM, blockN, stages)) +
           " bytes";
  return "";
}

std::string attnc::wgmma::unsupportedReason(func::FuncOp kernel,
                                            tile::LaunchAttr launch,
                                            int64_t stages) {
  int64_t headDim = -1, blockN = -1, bits = 16;
  bool consistent = true;
  kernel.walk([&](tile::LoadOp load) {
    auto t = load.getResult().getType();
    bits = std::min<int64_t>(bits, t.getElementTypeBitWidth());
    if (headDim >= 0 && headDim != t.getDimSize(1))
      consistent = false;
    headDim = t.getDimSize(1);
    if (gpu_emit::isRowOwnedLoad(load)) {
      consistent &= t.getDimSize(0) == launch.getBlockM();
    } else {
      if (blockN >= 0 && blockN != t.getDimSize(0))
        consistent = false;
      blockN = t.getDimSize(0);
    }
  });
  if (!consistent || headDim < 0 || blockN < 0)
    return "needs one Q tile of block_m rows and K/V tiles of one shape";
  bool leftWindow = false;
  kernel.walk([&](tile::ScoreOp score) {
    if (auto w = score.getWindowAttr())
      leftWindow |= w.getLeft() >= 0;
  });
  int64_t pageSize = 0;
  kernel.walk([&](tile::LoadOp load) {
    if (load.isPaged())
      pageSize = cast<MemRefType>(load.getSource().getType()).getDimSize(2);
  });
  return unsupportedReason(headDim, launch.getBlockM(), blockN, bits, stages,
                           leftWindow, pageSize);
}

attnc::wgmma::TileLayouts::TileLayouts(MLIRContext *ctx, int64_t blockM)
    : acc(tgpu::WgmmaLayoutAttr::get(ctx, blockM / 64)),
      stats(tgpu::RowStatsLayoutAttr::get(ctx, acc)),
      operand(tgpu::DotOperandLayoutAttr::get(ctx, acc)),
      shared(tgpu::SharedLayoutAttr::get(ctx, /*swizzle=*/kSwizzleBytes,
                                         /*pad=*/0,
                                         /*colBlock=*/kSwizzleElems)) {}
