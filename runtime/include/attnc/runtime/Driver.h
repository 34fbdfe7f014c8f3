//===- Driver.h - CUDA driver API loaded with dlopen ------------*- C++ -*-===//
//
// The runtime never links libcuda: it must load (and report a clear error)
// on machines without a driver. cuda.h provides only types and the versioned
// entry-point names (cuMemAlloc -> cuMemAlloc_v2), which the table below
// resolves with dlsym so each pointer matches the ABI its type was compiled
// against.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_DRIVER_H
#define ATTNC_RUNTIME_DRIVER_H

#include "attnc/runtime/Status.h"

#include <cuda.h>

#include <string>

namespace attnc {

// Entry points the runtime needs; loading fails if one is missing.
#define ATTNC_CUDA_REQUIRED_FUNCTIONS(X)                                       \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxGetDevice)                                                            \
  X(cuCtxPushCurrent)                                                          \
  X(cuCtxPopCurrent)                                                           \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)

// Entry points only tests and tools use (memory, streams, graphs); null when
// the library lacks them.
#define ATTNC_CUDA_OPTIONAL_FUNCTIONS(X)                                       \
  X(cuDeviceGetName)                                                           \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuFuncGetAttribute)                                                        \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemsetD8)                                                                \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuGraphInstantiate)                                                        \
  X(cuGraphLaunch)                                                             \
  X(cuGraphDestroy)                                                            \
  X(cuGraphExecDestroy)                                                        \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuEventDestroy)                                                            \
  X(cuTensorMapEncodeTiled)

struct DriverApi {
#define ATTNC_DECLARE_CUDA_FUNCTION(name) decltype(&::name) name = nullptr;
  ATTNC_CUDA_REQUIRED_FUNCTIONS(ATTNC_DECLARE_CUDA_FUNCTION)
  ATTNC_CUDA_OPTIONAL_FUNCTIONS(ATTNC_DECLARE_CUDA_FUNCTION)
#undef ATTNC_DECLARE_CUDA_FUNCTION

  std::string library; // what was dlopen'ed
  int driverVersion = 0;

  // "CUDA_ERROR_X (description)".
  std::string errorText(CUresult result) const;
  // OK, or DriverError "<what> failed: CUDA_ERROR_X (description)".
  Status check(CUresult result, const std::string &what) const;
};

// Loads the driver library once per process and path (it is never
// unloaded) and calls cuInit(0). Errors: DriverNotFound "CUDA driver not
// found (<library>): <dlerror>", or DriverError when cuInit fails.
Result<const DriverApi *>
loadDriver(const std::string &library = "libcuda.so.1");

} // namespace attnc

#endif // ATTNC_RUNTIME_DRIVER_H
