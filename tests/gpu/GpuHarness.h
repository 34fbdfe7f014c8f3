//===- GpuHarness.h - what the GPU test binaries share -----------*- C++
//-*-===//
//
// The device-side plumbing of tests/gpu/*: a driver call that must succeed,
// an owned device allocation, and a kernel that must load. Each failure
// prints what failed and exits 1 (a test binary, not a library).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_GPU_GPUHARNESS_H
#define ATTNC_TESTS_GPU_GPUHARNESS_H

#include "attnc/runtime/Context.h"
#include "attnc/runtime/Driver.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#define CHECK_CU(expr)                                                         \
  do {                                                                         \
    CUresult r_ = (expr);                                                      \
    if (r_ != CUDA_SUCCESS) {                                                  \
      std::fprintf(stderr, "%s failed: %d\n", #expr, int(r_));                 \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace attnc::test {

/// `bytes` of device memory (at least 256, so that an empty tensor still
/// has an aligned, valid address), freed with the object.
struct DeviceBuffer {
  const DriverApi *api;
  CUdeviceptr ptr = 0;
  size_t bytes;
  DeviceBuffer(const DriverApi *api, size_t bytes) : api(api), bytes(bytes) {
    CHECK_CU(api->cuMemAlloc(&ptr, std::max<size_t>(bytes, 256)));
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { api->cuMemFree(ptr); }
  void *get() const { return reinterpret_cast<void *>(ptr); }
};

/// The loaded kernel for `spec`; exits with the runtime's message when it
/// does not load (not bundled, not compiled).
inline const Kernel &kernelFor(Context &ctx, const KernelSpec &spec) {
  auto kernel = ctx.getKernel(spec);
  if (!kernel.isOk()) {
    std::fprintf(stderr, "getKernel: %s\n", kernel.status().message().c_str());
    std::exit(1);
  }
  return **kernel;
}

/// The runtime's context over the kernels of `bundle`, current on this
/// thread (the test's own allocations and copies use it). Without a CUDA
/// device it prints "skipped: no CUDA device" and exits 77 (ctest's skip
/// code); a context that cannot be made exits 1 with the runtime's message.
inline std::unique_ptr<Context> openBundleContext(const std::string &bundle) {
  Result<const DriverApi *> driver = loadDriver();
  int devices = 0;
  if (!driver.isOk() || (*driver)->cuInit(0) != CUDA_SUCCESS ||
      (*driver)->cuDeviceGetCount(&devices) != CUDA_SUCCESS || devices == 0) {
    std::printf("skipped: no CUDA device\n");
    std::exit(77);
  }
  ContextOptions options;
  options.cacheDir = bundle;
  auto ctx = Context::create(options);
  if (!ctx.isOk()) {
    std::fprintf(stderr, "context: %s\n", ctx.status().message().c_str());
    std::exit(1);
  }
  CHECK_CU((*ctx)->driver().cuCtxSetCurrent((*ctx)->cuContext()));
  return std::move(*ctx);
}

} // namespace attnc::test

#endif
