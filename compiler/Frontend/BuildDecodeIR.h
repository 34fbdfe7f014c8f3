//===- BuildDecodeIR.h - build attn.decode IR for a configuration -*- C++
//-*-===//
#ifndef ATTNC_COMPILER_FRONTEND_BUILDDECODEIR_H
#define ATTNC_COMPILER_FRONTEND_BUILDDECODEIR_H

#include "compiler/Frontend/AttentionConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace attnc {

/// What `attnc emit --op decode` is asked to build: the attention flags, the
/// cache's page size and the most query rows per sequence.
struct DecodeConfig {
  AttentionConfig attention;
  int64_t pageSize = 16;
  int64_t maxQLen = 1;
};

/// Builds `func.func @decode(q, k_cache, v_cache, block_table, kv_lens) ->
/// (o[, lse])` holding one attn.decode with dynamic batch, query length,
/// page count and table width. Returns null (and has emitted a diagnostic)
/// when the configuration does not verify.
mlir::OwningOpRef<mlir::ModuleOp> buildDecodeModule(mlir::MLIRContext &ctx,
                                                    const DecodeConfig &config);

} // namespace attnc

#endif
