//===- Pipelines.h - attnc's pass pipelines, one per target -----*- C++ -*-===//
#ifndef ATTNC_COMPILER_PIPELINES_PIPELINES_H
#define ATTNC_COMPILER_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

#include <cstdint>

namespace attnc {

struct TileOptions {
  int64_t blockM = 64;
  int64_t blockN = 32;
};

/// attn (graph level) -> tile (kernel level).
void buildTilePipeline(mlir::OpPassManager &pm, const TileOptions &options);

/// tile -> LLVM dialect for the host CPU: every program of the grid runs in
/// turn, with the portable (linalg) meaning of each tile op. Pointer
/// parameters use MLIR's memref descriptor convention (allocated, aligned,
/// offset); see HostKernel.
void buildHostPipeline(mlir::OpPassManager &pm);

/// tile -> NVVM for any sm_80+ GPU through the SIMT mapping (one query row
/// per thread, no tensor cores): a gpu.module ready for emitPTX.
void buildSIMTPipeline(mlir::OpPassManager &pm);

/// Registers the pipelines as attnc-opt options (-attnc-host-pipeline, ...).
void registerPipelines();

} // namespace attnc

#endif
