//===- MappingChoice.h - which GPU mapping a kernel is lowered with -*- C++
//-*-===//
//
// One decision for every driver (attnc emit, the runtime's SpecCompiler):
// sm_90a takes the wgmma mapping when the variant is one it supports, else
// mma.sync, with the reason; other targets take mma.sync.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_PIPELINES_MAPPINGCHOICE_H
#define ATTNC_COMPILER_PIPELINES_MAPPINGCHOICE_H

#include "compiler/Pipelines/Pipelines.h"

#include <string>

namespace attnc {

struct MappingChoice {
  GPUMapping mapping = GPUMapping::MMA;
  /// "wgmma", "mma.sync" or "simt": what kernel metadata and summaries say.
  std::string name;
  /// Why: the variant's support, or the reason for a fallback.
  std::string why;
};

/// The tensor-core mapping for `arch` and a variant with `tile` sizes
/// (`leftWindow`: it has a sliding window with a left bound).
MappingChoice chooseTensorCoreMapping(const std::string &arch, int64_t headDim,
                                      int64_t elementBits,
                                      const TileOptions &tile,
                                      bool leftWindow = false,
                                      int64_t pageSize = 0);

/// The name a mapping goes by ("wgmma", "mma.sync", "simt").
const char *mappingName(GPUMapping mapping);

/// Adds the NVVM pipeline of `mapping` to `pm` (mma.sync reads its rows per
/// warp and Q placement from `tile`).
void buildMappingPipeline(mlir::OpPassManager &pm, GPUMapping mapping,
                          const TileOptions &tile = {});

} // namespace attnc

#endif
