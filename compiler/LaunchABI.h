//===- LaunchABI.h - the kernel parameters the runtime passes ---*- C++ -*-===//
//
// The contract between generated kernels and the runtime's launcher: the
// parameter list of an `attention_fwd_v1` kernel, every entry 8 bytes.
// Pointers first (Q, K, V, O, LSE), then batch, seq_q, seq_kv, then element
// strides of the logical [B, H, S, D] tensors (the D stride is 1) and of the
// [B, H, S] LSE (the S stride is 1). Grid: (ceil(seq_q / block_m), heads,
// batch). The runtime packs arguments by these names.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_LAUNCHABI_H
#define ATTNC_COMPILER_LAUNCHABI_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <array>

namespace attnc {

inline constexpr const char *kAttentionFwdRule = "attention_fwd_v1";

inline constexpr std::array<const char *, 22> kAttentionFwdParams = {
    "q",           "k",          "v",
    "o",           "lse",        "batch",
    "seq_q",       "seq_kv",     "q_stride_b",
    "q_stride_h",  "q_stride_s", "k_stride_b",
    "k_stride_h",  "k_stride_s", "v_stride_b",
    "v_stride_h",  "v_stride_s", "o_stride_b",
    "o_stride_h",  "o_stride_s", "lse_stride_b",
    "lse_stride_h"};

/// Pointers are rank-0 memrefs: with the bare-pointer calling convention
/// they become plain pointers, and memref.reinterpret_cast gives them shape.
inline llvm::SmallVector<mlir::Type>
attentionFwdParamTypes(mlir::MLIRContext *ctx, mlir::Type elt) {
  auto ptr = mlir::MemRefType::get({}, elt);
  auto lsePtr = mlir::MemRefType::get({}, mlir::Float32Type::get(ctx));
  llvm::SmallVector<mlir::Type> types{ptr, ptr, ptr, ptr, lsePtr};
  types.append(kAttentionFwdParams.size() - types.size(),
               mlir::IntegerType::get(ctx, 64));
  return types;
}

} // namespace attnc

#endif
