//===- BuildAttnIR.h - build attn IR for a configuration -------*- C++ -*-===//
#ifndef ATTNC_COMPILER_FRONTEND_BUILDATTNIR_H
#define ATTNC_COMPILER_FRONTEND_BUILDATTNIR_H

#include "compiler/Frontend/AttentionConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace attnc {

/// Builds `func.func @attention_fwd(q, k, v) -> (o[, lse])` holding one
/// attn.attention with dynamic batch and sequence lengths. Returns null (and
/// has emitted a diagnostic) when the configuration does not verify.
mlir::OwningOpRef<mlir::ModuleOp>
buildAttentionModule(mlir::MLIRContext &ctx, const AttentionConfig &config);

} // namespace attnc

#endif
