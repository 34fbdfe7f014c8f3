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

/// `attnc emit --op kv-append`: the cache's KV heads, head dim, element type
/// and page size.
struct KVAppendConfig {
  int64_t kvHeads = 8;
  int64_t headDim = 128;
  std::string dtype = "bf16";
  int64_t pageSize = 16;
};

/// Builds `func.func @kv_append(key, value, slot_mapping, key_cache,
/// value_cache) -> (key_cache, value_cache)` holding one attn.kv_append with
/// dynamic token and page counts. Null (with a diagnostic) when it does
/// not verify.
mlir::OwningOpRef<mlir::ModuleOp>
buildKVAppendModule(mlir::MLIRContext &ctx, const KVAppendConfig &config);

/// Builds `func.func @lse_merge(o_a, lse_a, o_b, lse_b) -> (o[, lse])`
/// holding one attn.lse_merge of [B, heads, S, head_dim] results (cascade
/// attention). Null (with a diagnostic) when it does not verify.
mlir::OwningOpRef<mlir::ModuleOp>
buildLseMergeModule(mlir::MLIRContext &ctx, const AttentionConfig &config);

} // namespace attnc

#endif
