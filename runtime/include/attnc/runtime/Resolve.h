//===- Resolve.h - From a spec to a verified cache entry --------*- C++ -*-===//
//
// The one place that decides hit, rebuild or error: look the spec's key up
// in the disk cache, and on a miss compile (when a compiler is plugged in),
// optionally turn the PTX into a cubin, and publish atomically. Needs no
// GPU, so `attnc bundle` uses it too.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_RESOLVE_H
#define ATTNC_RUNTIME_RESOLVE_H

#include "attnc/runtime/BuildId.h"
#include "attnc/runtime/Compiler.h"
#include "attnc/runtime/DiskCache.h"
#include "attnc/runtime/NvJitLink.h"
#include "attnc/runtime/Spec.h"

#include <functional>
#include <string>

namespace attnc {

using LogFn = std::function<void(const std::string &)>;

struct ResolveOptions {
  KernelCompiler *compiler = nullptr;       // null: misses are errors
  const CubinLinker *cubinLinker = nullptr; // null: entries hold PTX only
  LogFn log; // warnings (damaged entries, cubin failures); may be empty
};

struct ResolvedKernel {
  CacheEntry entry;
  bool compiled = false; // this call ran the compiler
};

Result<ResolvedKernel> resolveKernel(DiskCache &cache, const KernelSpec &spec,
                                     const std::string &buildId,
                                     const ResolveOptions &options);

} // namespace attnc

#endif // ATTNC_RUNTIME_RESOLVE_H
