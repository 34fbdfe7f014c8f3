//===- NvJitLink.h - Optional PTX to cubin through nvJitLink ----*- C++ -*-===//
//
// Turning PTX into a cubin once and caching it spares every later process
// the driver's JIT. nvJitLink is loaded with dlopen and is optional: without
// it entries hold PTX only and the driver JITs them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_NVJITLINK_H
#define ATTNC_RUNTIME_NVJITLINK_H

#include "attnc/runtime/Status.h"

#include <string>
#include <string_view>

namespace attnc {

class CubinLinker {
public:
  // Loads libnvJitLink once per process (NotFound when absent).
  static Result<const CubinLinker *> load();

  // Compiles PTX for `arch` (e.g. "sm_90a") into a cubin image. Errors carry
  // nvJitLink's error log.
  Result<std::string> link(std::string_view ptx, const std::string &arch) const;

  const std::string &library() const { return library_; }
  // e.g. "13.0"
  const std::string &version() const { return version_; }

  struct Api; // the resolved entry points (opaque)

private:
  explicit CubinLinker(const Api *api, std::string library, std::string version)
      : api_(api), library_(std::move(library)), version_(std::move(version)) {}
  const Api *api_;
  std::string library_;
  std::string version_;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_NVJITLINK_H
