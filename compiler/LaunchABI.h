//===- LaunchABI.h - the compiler's view of the launch contract -*- C++ -*-===//
//
// The contract between generated kernels and the runtime (parameter names,
// order and types per grid rule, the rules themselves, tensor maps,
// workspaces, magic divisors) is attnc/abi, which the runtime includes too.
// This header turns its parameter tables into MLIR types and holds the
// attributes that only the compiler's own passes exchange.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_LAUNCHABI_H
#define ATTNC_COMPILER_LAUNCHABI_H

#include "attnc/abi/GridRules.h"
#include "attnc/abi/LaunchParams.h"
#include "attnc/abi/TensorMaps.h"
#include "attnc/abi/Workspace.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <array>
#include <cassert>

namespace attnc {

/// The MLIR type of a fixed-list parameter: pointers are rank-0 memrefs
/// (with the bare-pointer calling convention they become plain pointers,
/// and memref.reinterpret_cast gives them shape), `elt` the kernel's
/// element type.
inline mlir::Type abiParamType(mlir::MLIRContext *ctx, abi::ParamType type,
                               mlir::Type elt) {
  switch (type) {
  case abi::ParamType::ElementPtr:
    return mlir::MemRefType::get({}, elt);
  case abi::ParamType::F32Ptr:
    return mlir::MemRefType::get({}, mlir::Float32Type::get(ctx));
  case abi::ParamType::I32Ptr:
    return mlir::MemRefType::get({}, mlir::IntegerType::get(ctx, 32));
  case abi::ParamType::I64Ptr:
    return mlir::MemRefType::get({}, mlir::IntegerType::get(ctx, 64));
  case abi::ParamType::I64:
    return mlir::IntegerType::get(ctx, 64);
  case abi::ParamType::I32:
    return mlir::IntegerType::get(ctx, 32);
  case abi::ParamType::F32:
    return mlir::Float32Type::get(ctx);
  case abi::ParamType::BytePtr:
  case abi::ParamType::TensorMap:
    break;
  }
  // Appended by the GPU mappings as LLVM pointers, never in a tile-level
  // signature.
  assert(false && "no tile-level type for this parameter");
  return {};
}

/// The tile-level signature of a kernel with the parameters of `table`.
template <size_t N>
llvm::SmallVector<mlir::Type>
abiParamTypes(mlir::MLIRContext *ctx,
              const std::array<abi::ParamDesc, N> &table, mlir::Type elt) {
  llvm::SmallVector<mlir::Type> types;
  for (const abi::ParamDesc &p : table)
    types.push_back(abiParamType(ctx, p.type, elt));
  return types;
}

inline llvm::SmallVector<mlir::Type>
attentionFwdParamTypes(mlir::MLIRContext *ctx, mlir::Type elt) {
  return abiParamTypes(ctx, abi::kAttentionFwdParams, elt);
}
inline llvm::SmallVector<mlir::Type>
attentionBwdParamTypes(mlir::MLIRContext *ctx, mlir::Type elt) {
  return abiParamTypes(ctx, abi::kAttentionBwdParams, elt);
}
inline llvm::SmallVector<mlir::Type>
decodeSplitParamTypes(mlir::MLIRContext *ctx, mlir::Type elt) {
  return abiParamTypes(ctx, abi::kDecodeSplitParams, elt);
}
inline llvm::SmallVector<mlir::Type>
decodeCombineParamTypes(mlir::MLIRContext *ctx, mlir::Type elt) {
  return abiParamTypes(ctx, abi::kDecodeCombineParams, elt);
}
inline llvm::SmallVector<mlir::Type> lseMergeParamTypes(mlir::MLIRContext *ctx,
                                                        mlir::Type elt) {
  return abiParamTypes(ctx, abi::kLseMergeParams, elt);
}
inline llvm::SmallVector<mlir::Type> kvAppendParamTypes(mlir::MLIRContext *ctx,
                                                        mlir::Type elt) {
  return abiParamTypes(ctx, abi::kKVAppendParams, elt);
}

/// An integer attribute on a kernel with paged, length-bounded K/V loads (a
/// decode split kernel, paged varlen attention): they are copied into rings
/// of that many tiles (tuning.stages >= 2; 0: the schedule's kv_stages),
/// the tiles of the next stages - 1 iterations in flight.
inline constexpr const char *kPrefetchPagedAttr = "tile.prefetch_paged";

/// An integer attribute on a decode split kernel: the most query rows of
/// its tile that can be live (heads per KV head x max_q_len); the rows past
/// them are padding up to the mma.sync m16. At most 8, the GPU mapping
/// leaves the softmax of each lane's upper row (g + 8) out.
inline constexpr const char *kLiveRowsAttr = "tile.live_rows";

} // namespace attnc

#endif
