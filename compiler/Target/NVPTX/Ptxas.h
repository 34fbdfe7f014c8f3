//===- Ptxas.h - assemble PTX with ptxas and read its report ----*- C++ -*-===//
#ifndef ATTNC_COMPILER_TARGET_NVPTX_PTXAS_H
#define ATTNC_COMPILER_TARGET_NVPTX_PTXAS_H

#include <cstdint>
#include <string>
#include <vector>

namespace attnc {

/// What `ptxas -v` says about one kernel.
struct KernelResources {
  std::string name;
  int64_t registers = -1;
  int64_t sharedBytes = 0; // static shared memory
  int64_t stackFrameBytes = 0;
  int64_t spillStoreBytes = 0;
  int64_t spillLoadBytes = 0;
  bool spills() const { return spillStoreBytes > 0 || spillLoadBytes > 0; }
};

struct PtxasResult {
  bool ok = false;
  std::string log; // ptxas's stdout + stderr, or why it could not run
  std::vector<KernelResources> kernels;
};

/// Parses the "Compiling entry function", "Used N registers" and
/// "N bytes spill stores" lines of `ptxas -v`.
std::vector<KernelResources> parsePtxasReport(const std::string &log);

/// Assembles `ptx` for `arch` ("sm_80", "sm_90a") with the ptxas at
/// `ptxasPath`, discarding the cubin, and parses the resource report.
PtxasResult runPtxas(const std::string &ptx, const std::string &arch,
                     const std::string &ptxasPath);

} // namespace attnc

#endif
