//===- EmitPTX.h - NVVM-level IR to PTX, in process -------------*- C++ -*-===//
#ifndef ATTNC_COMPILER_TARGET_NVPTX_EMITPTX_H
#define ATTNC_COMPILER_TARGET_NVPTX_EMITPTX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace attnc {

/// The PTX ISA version attnc targets per chip (CUDA 13.0's ptxas reads 9.0).
llvm::StringRef ptxFeaturesFor(llvm::StringRef chip);

/// Translates the single `gpu.module` of `module`, already lowered to the
/// LLVM and NVVM dialects, to PTX with LLVM's NVPTX back end (upstream's
/// gpu-module-to-binary in `isa` form). `chip` is "sm_80", "sm_90a", ...
/// Diagnostics go to the context's handler.
mlir::FailureOr<std::string> emitPTX(mlir::ModuleOp module,
                                     llvm::StringRef chip, int optLevel = 3);

} // namespace attnc

#endif
