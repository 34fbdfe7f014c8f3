//===- Compiler.h - Hook through which the runtime compiles -----*- C++ -*-===//
//
// The runtime compiles on a cache miss when a compiler is plugged in, but
// never depends on it: the MLIR-based compiler implements KernelCompiler in
// its own library and registers it (Context::setCompiler or
// setDefaultCompiler). A runtime-only build runs from the disk cache alone.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_COMPILER_H
#define ATTNC_RUNTIME_COMPILER_H

#include "attnc/runtime/Metadata.h"
#include "attnc/runtime/Spec.h"
#include "attnc/runtime/Status.h"

#include <memory>
#include <string>

namespace attnc {

struct CompiledKernel {
  std::string ptx;   // NUL-free PTX text
  std::string cubin; // optional ELF image; empty when not produced
  // meta.files is filled by the cache; meta.spec and meta.buildId may be left
  // empty (the runtime fills them) but must match when set.
  KernelMetadata meta;
};

class KernelCompiler {
public:
  virtual ~KernelCompiler();
  // Called with a spec that passed validateSpec. May be called from several
  // threads only if the implementation says so; the Context serialises calls.
  virtual Result<CompiledKernel> compile(const KernelSpec &spec) = 0;
};

// A process-wide compiler picked up by every Context created afterwards
// (so a library that links the compiler can make C ABI users compile on a
// miss). Pass null to unset.
void setDefaultCompiler(std::shared_ptr<KernelCompiler> compiler);
std::shared_ptr<KernelCompiler> defaultCompiler();

} // namespace attnc

#endif // ATTNC_RUNTIME_COMPILER_H
