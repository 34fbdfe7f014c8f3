//===- SoleOp.h - the functions a tiling pass rewrites -----------*- C++
//-*-===//
//
// Each attn-to-tile pass rewrites functions whose body is one op of its kind
// applied to the function's arguments (the form the frontends build and
// `attnc emit` reads); anything else is a clear error at the op.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_TRANSFORMS_SOLEOP_H
#define ATTNC_COMPILER_TRANSFORMS_SOLEOP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <utility>

namespace attnc {

/// The (function, op) pairs of `module` whose function holds an `OpT`;
/// failure (with the error emitted) when such a function holds more than one
/// or the op reads anything but the function's arguments. `pass` names the
/// pass in the message.
template <typename OpT>
mlir::FailureOr<llvm::SmallVector<std::pair<mlir::func::FuncOp, OpT>>>
soleOpsOnArguments(mlir::ModuleOp module, llvm::StringRef pass) {
  llvm::SmallVector<std::pair<mlir::func::FuncOp, OpT>> work;
  for (auto fn : module.getOps<mlir::func::FuncOp>()) {
    auto ops = llvm::to_vector(fn.getOps<OpT>());
    if (ops.empty())
      continue;
    OpT op = ops.front();
    bool argsOnly = llvm::all_of(op->getOperands(), [&](mlir::Value v) {
      auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
      return arg && arg.getOwner()->getParentOp() == fn;
    });
    if (ops.size() != 1 || !argsOnly) {
      op.emitOpError() << "cannot be tiled: " << pass
                       << " expects a function whose body is one "
                       << OpT::getOperationName()
                       << " on the function's arguments";
      return mlir::failure();
    }
    work.push_back({fn, op});
  }
  return work;
}

} // namespace attnc

#endif
