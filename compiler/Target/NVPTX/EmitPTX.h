//===- EmitPTX.h - NVVM-level IR to PTX, in process -------------*- C++ -*-===//
#ifndef ATTNC_COMPILER_TARGET_NVPTX_EMITPTX_H
#define ATTNC_COMPILER_TARGET_NVPTX_EMITPTX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace attnc {

/// The PTX ISA version attnc targets per chip (CUDA 13.0's ptxas reads 9.0).
llvm::StringRef ptxFeaturesFor(llvm::StringRef chip);

/// Where libdevice (CUDA's bitcode math library) is read from when a kernel
/// calls it: $ATTNC_LIBDEVICE (the .bc file), else
/// <home>/nvvm/libdevice/libdevice.10.bc for home $ATTNC_CUDA_HOME, else
/// $CUDA_HOME, else the build's ATTNC_LIBDEVICE (CMake; by default under
/// ATTNC_CUDA_HOME).
std::string libdevicePath();

/// Translates the single `gpu.module` of `module`, already lowered to the
/// LLVM and NVVM dialects, to PTX with LLVM's NVPTX back end (upstream's
/// ModuleToObject steps, as gpu-module-to-binary takes them for `isa`).
/// Calls into libdevice (`__nv_*`, from math ops) are resolved by linking
/// libdevicePath() before optimisation; a missing file is an error naming
/// the functions and the path. `chip` is "sm_80", "sm_90a", ... Diagnostics
/// go to the context's handler; `module` keeps its gpu.module.
mlir::FailureOr<std::string> emitPTX(mlir::ModuleOp module,
                                     llvm::StringRef chip, int optLevel = 3);

} // namespace attnc

#endif
