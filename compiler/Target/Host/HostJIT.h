//===- HostJIT.h - run tile-level kernels on the host CPU ------*- C++ -*-===//
#ifndef ATTNC_COMPILER_TARGET_HOST_HOSTJIT_H
#define ATTNC_COMPILER_TARGET_HOST_HOSTJIT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  /// Runs any kernel whose parameters are all rank-0 memrefs (pointers) and
  /// integers: `words` holds each parameter in order, a pointer `p` as the
  /// three words (p, p, 0) of MLIR's memref descriptor (see
  /// pointerWords). At most 64 words (the attention backward takes 62).
  /// `at`: another function of the module (from lookup) instead of the
  /// entry, as the attention backward's three kernels are called.
  void runWords(const std::vector<uint64_t> &words, uint64_t at = 0) const;
  static void pointerWords(std::vector<uint64_t> &words, const void *p);

private:
  HostKernel() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  uint64_t address = 0;
};

} // namespace attnc

#endif
