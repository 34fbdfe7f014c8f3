//===- MappingChoice.cpp - which GPU mapping a kernel is lowered with -----===//
#include "compiler/Pipelines/MappingChoice.h"

#include "compiler/Conversion/TileToGPU/WGMMASupport.h"

const char *attnc::mappingName(GPUMapping mapping) {
  switch (mapping) {
  case GPUMapping::WGMMA:
    return "wgmma";
  case GPUMapping::MMA:
    return "mma.sync";
  case GPUMapping::SIMT:
    return "simt";
  }
  return "?";
}

attnc::MappingChoice
attnc::chooseTensorCoreMapping(const std::string &arch, int64_t headDim,
                               int64_t elementBits, const TileOptions &tile,
                               bool leftWindow, int64_t pageSize) {
  MappingChoice c;
  if (arch != "sm_90a") {
    c.mapping = GPUMapping::MMA;
    c.why = arch + " has no wgmma";
  } else if (std::string reason = wgmma::unsupportedReason(
                 headDim, tile.blockM, tile.blockN, elementBits, tile.kvStages,
                 leftWindow, pageSize);
             !reason.empty()) {
    c.mapping = GPUMapping::MMA;
    c.why = "fallback: the wgmma mapping " + reason;
  } else if (pageSize > 0 && tile.kvSync != tgpu::KVSync::tma) {
    c.mapping = GPUMapping::MMA;
    c.why = "fallback: the wgmma mapping copies a paged cache by TMA only "
            "(kv_sync tma, block_m >= 128)";
  } else {
    c.mapping = GPUMapping::WGMMA;
    c.why = "sm_90a, head dim " + std::to_string(headDim) + ", " +
            std::to_string(tile.blockM) + "x" + std::to_string(tile.blockN) +
            " tiles";
  }
  c.name = mappingName(c.mapping);
  return c;
}

void attnc::buildMappingPipeline(mlir::OpPassManager &pm, GPUMapping mapping,
                                 const TileOptions &tile) {
  switch (mapping) {
  case GPUMapping::WGMMA:
    buildWGMMAPipeline(pm, tile);
    return;
  case GPUMapping::MMA:
    buildMMAPipeline(pm, tile);
    return;
  case GPUMapping::SIMT:
    buildSIMTPipeline(pm);
    return;
  }
}
