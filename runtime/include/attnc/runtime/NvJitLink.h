//===- NvJitLink.h - Optional PTX to cubin: ptxas, else nvJitLink -*- C++
//-*-===//
//
// Turning PTX into a cubin once and caching it spares every later process
// the driver's JIT. Both compilers are optional. A ptxas binary is preferred
// ($ATTNC_PTXAS, "none" to skip it; else $CUDA_HOME/bin, $CUDA_PATH/bin,
// /usr/local/cuda/bin, PATH): it compiles the whole program, where
// nvJitLink (loaded with dlopen) compiles PTX as relocatable code, which
// can cost a kernel many registers. Without either, entries hold PTX only
// and the driver JITs them.
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
  // Finds ptxas and loads libnvJitLink once per process (NotFound when
  // neither is there).
  static Result<const CubinLinker *> load();

  // Compiles PTX for `arch` (e.g. "sm_90a") into a cubin image: with ptxas
  // when found, else nvJitLink. Errors carry the compiler's log.
  Result<std::string> link(std::string_view ptx, const std::string &arch) const;
  // Always through nvJitLink (NotFound when it is not loaded).
  Result<std::string> linkWithNvJitLink(std::string_view ptx,
                                        const std::string &arch) const;
  // The ptxas binary used first (empty: none).
  const std::string &ptxas() const { return ptxas_; }

  const std::string &library() const { return library_; }
  // e.g. "13.0"
  const std::string &version() const { return version_; }

  struct Api; // the resolved entry points (opaque)

private:
  explicit CubinLinker(const Api *api, std::string library, std::string version,
                       std::string ptxas)
      : api_(api), library_(std::move(library)), version_(std::move(version)),
        ptxas_(std::move(ptxas)) {}
  const Api *api_; // null: nvJitLink not found
  std::string library_;
  std::string version_;
  std::string ptxas_;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_NVJITLINK_H
