//===- FakeCuda.h - Inspection API of the fake CUDA driver ------*- C++ -*-===//
//
// libcuda.so.1 stand-in used by the CPU tests: it implements the driver
// entry points the runtime needs with checks a real driver makes (a current
// context for loads and launches, a 48 KiB dynamic shared memory limit
// unless raised, PTX entry and parameter lists) and records what it was
// asked to do. Tests reach these functions with dlsym on the same handle.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_RUNTIME_FAKECUDA_H
#define ATTNC_TESTS_RUNTIME_FAKECUDA_H

#include <cstddef>
#include <cstdint>

extern "C" {

struct FakeCudaLaunch {
  char entry[128];
  unsigned grid[3];
  unsigned block[3];
  unsigned dynamicSmem;
  void *stream;
  size_t paramCount;
  // Each parameter's bytes, zero-extended to 8 bytes (the first 8 of a
  // larger one).
  uint64_t params[64];
  size_t paramSizes[64];
  // The parameters larger than 8 bytes (tensor maps), in order.
  unsigned char bigParams[4][128];
  size_t bigParamCount;
};

// What cuTensorMapEncodeTiled was asked; the fake writes exactly this
// struct (zero-padded) into the 128-byte map, so a launch's bigParams show
// which encoding reached the kernel.
struct FakeCudaTensorMap {
  uint32_t magic; // kFakeTensorMapMagic
  uint32_t dataType, rank, swizzle, interleave, l2Promotion, oobFill;
  uint32_t box[4];
  uint64_t address;
  uint64_t dims[4];
  uint64_t strides[3];
};
#define FAKECUDA_TENSOR_MAP_MAGIC 0x7e45a9u

struct FakeCudaStats {
  int launches;
  int moduleLoads; // successful loads
  int ptxLoads;    // of which PTX
  int cubinLoads;  // of which cubin
  int liveModules; // loaded and not unloaded
  int setAttributeCalls;
  int primaryRetains; // retain count of the primary context
  int pushes;         // cuCtxPushCurrent calls
};

// Resets all state; compute capability 9.0, one device.
void fakecuda_reset(void);
void fakecuda_set_compute_capability(int major, int minor);
void fakecuda_set_device_count(int count);
// The SM count cuDeviceGetAttribute reports; 0 (the default after a reset):
// the attribute is unsupported, as on a driver that does not say.
void fakecuda_set_sm_count(int count);
void fakecuda_stats(FakeCudaStats *out);
// False when nothing was launched yet.
bool fakecuda_last_launch(FakeCudaLaunch *out);
// Tensor maps encoded since the last reset.
int fakecuda_tensor_maps_encoded(void);
// Makes a fake context current on the calling thread (as a framework that
// created its own context would); returns it.
void *fakecuda_make_user_context_current(void);
void fakecuda_clear_current(void);
}

#endif // ATTNC_TESTS_RUNTIME_FAKECUDA_H
