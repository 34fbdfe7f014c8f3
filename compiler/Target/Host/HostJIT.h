//===- HostJIT.h - run tile-level kernels on the host CPU ------*- C++ -*-===//
#ifndef ATTNC_COMPILER_TARGET_HOST_HOSTJIT_H
#define ATTNC_COMPILER_TARGET_HOST_HOSTJIT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>

namespace llvm::orc {
class LLJIT;
}

namespace attnc {

/// A tile-level kernel lowered with buildHostPipeline, translated to LLVM IR
/// and compiled by LLVM's ORC JIT for this CPU. Running it runs the whole
/// grid of programs, with the same arguments as the GPU kernel.
class HostKernel {
public:
  /// Lowers `module` (tile level; it is consumed) and JIT-compiles it.
  static llvm::Expected<std::unique_ptr<HostKernel>>
  compile(mlir::ModuleOp module, const std::string &entry);
  ~HostKernel();

  /// Runs the kernel with the launch ABI's arguments (as AttentionFwdFn).
  void runAttentionFwd(void *q, void *k, void *v, void *o, void *lse,
                       const int64_t (&scalars)[17]) const;

  /// The address of another function of the same module (a decode kernel's
  /// combine), to be called with MLIR's memref calling convention.
  llvm::Expected<uint64_t> lookup(const std::string &name) const;
  uint64_t entryAddress() const { return address; }

private:
  HostKernel() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  uint64_t address = 0;
};

} // namespace attnc

#endif
