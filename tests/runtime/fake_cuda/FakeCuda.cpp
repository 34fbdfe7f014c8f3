//===- FakeCuda.cpp - A fake libcuda.so.1 for CPU tests -------------------===//
//
// Built as libcuda.so.1 in its own directory; tests hand its path to the
// runtime (ContextOptions::driverLibrary). Including cuda.h makes every
// definition below carry the versioned symbol name (cuCtxPushCurrent ->
// cuCtxPushCurrent_v2) the runtime resolves.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include <cuda.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct FakeFunction;

struct FakeModule {
  std::map<std::string, FakeFunction *> functions;
};

struct FakeFunction {
  std::string name;
  std::vector<size_t> paramSizes;
  int maxDynamicSmem = 48 * 1024;
};

struct FakeContext {
  int id;
};

struct State {
  std::mutex mutex;
  int ccMajor = 9;
  int ccMinor = 0;
  int deviceCount = 1;
  FakeCudaStats stats{};
  FakeCudaLaunch last{};
  bool launched = false;
  FakeContext primary{1};
  FakeContext user{2};
};

State &state() {
  static State s;
  return s;
}

thread_local std::vector<CUcontext> contextStack;

CUcontext current() {
  return contextStack.empty() ? nullptr : contextStack.back();
}

size_t ptxTypeSize(const std::string &type) {
  if (type == ".u64" || type == ".s64" || type == ".b64" || type == ".f64")
    return 8;
  if (type == ".u32" || type == ".s32" || type == ".b32" || type == ".f32")
    return 4;
  if (type == ".u16" || type == ".s16" || type == ".b16")
    return 2;
  return 1;
}

// Parses ".entry name( .param .u64 [.ptr ...] p0, ... )" declarations.
FakeModule *parseModule(const std::string &text) {
  auto *module = new FakeModule;
  size_t pos = 0;
  while ((pos = text.find(".entry ", pos)) != std::string::npos) {
    pos += 7;
    size_t nameEnd = text.find_first_of("( \t\n", pos);
    auto *function = new FakeFunction;
    function->name = text.substr(pos, nameEnd - pos);
    size_t open = text.find('(', nameEnd);
    size_t close = text.find(')', open);
    std::string params = text.substr(open + 1, close - open - 1);
    size_t p = 0;
    while ((p = params.find(".param", p)) != std::string::npos) {
      p += 6;
      size_t typeStart = params.find('.', p);
      size_t typeEnd = params.find_first_of(" \t\n", typeStart);
      function->paramSizes.push_back(
          ptxTypeSize(params.substr(typeStart, typeEnd - typeStart)));
    }
    module->functions[function->name] = function;
    pos = close;
  }
  return module;
}

} // namespace

extern "C" {

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }

CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case CUDA_SUCCESS:
    *name = "CUDA_SUCCESS";
    break;
  case CUDA_ERROR_INVALID_VALUE:
    *name = "CUDA_ERROR_INVALID_VALUE";
    break;
  case CUDA_ERROR_INVALID_CONTEXT:
    *name = "CUDA_ERROR_INVALID_CONTEXT";
    break;
  case CUDA_ERROR_INVALID_PTX:
    *name = "CUDA_ERROR_INVALID_PTX";
    break;
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
    *name = "CUDA_ERROR_NO_BINARY_FOR_GPU";
    break;
  case CUDA_ERROR_NOT_FOUND:
    *name = "CUDA_ERROR_NOT_FOUND";
    break;
  default:
    *name = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  const char *name = nullptr;
  CUresult result = cuGetErrorName(error, &name);
  *text = name ? "fake driver error" : nullptr;
  return result;
}

CUresult cuDeviceGetCount(int *count) {
  *count = state().deviceCount;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal < 0 || ordinal >= state().deviceCount)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice) {
  if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    *value = state().ccMajor;
  else if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    *value = state().ccMinor;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice) {
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().stats.primaryRetains;
  *ctx = reinterpret_cast<CUcontext>(&state().primary);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice) {
  std::lock_guard<std::mutex> lock(state().mutex);
  --state().stats.primaryRetains;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx) {
  *ctx = current();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
  if (!current())
    return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx) {
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  contextStack.push_back(ctx);
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().stats.pushes;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *ctx) {
  if (contextStack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx)
    *ctx = contextStack.back();
  contextStack.pop_back();
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                            unsigned int numOptions, CUjit_option *options,
                            void **values) {
  if (!current())
    return CUDA_ERROR_INVALID_CONTEXT;
  std::string text = static_cast<const char *>(image);
  bool isCubin = text.rfind("\x7f"
                            "ELF",
                            0) == 0;
  if (isCubin && text.find("BADCUBIN") != std::string::npos)
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  if (!isCubin && text.find("SYNTAX_ERROR") != std::string::npos) {
    char *log = nullptr;
    size_t size = 0;
    for (unsigned i = 0; i < numOptions; ++i) {
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
        log = static_cast<char *>(values[i]);
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        size = reinterpret_cast<size_t>(values[i]);
    }
    if (log && size)
      std::snprintf(log, size,
                    "ptxas fatal   : (fake) syntax error at "
                    "SYNTAX_ERROR\n");
    return CUDA_ERROR_INVALID_PTX;
  }
  *module = reinterpret_cast<CUmodule>(parseModule(text));
  std::lock_guard<std::mutex> lock(state().mutex);
  FakeCudaStats &stats = state().stats;
  ++stats.moduleLoads;
  ++(isCubin ? stats.cubinLoads : stats.ptxLoads);
  ++stats.liveModules;
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module) {
  if (!current())
    return CUDA_ERROR_INVALID_CONTEXT;
  auto *fake = reinterpret_cast<FakeModule *>(module);
  for (auto &[name, function] : fake->functions)
    delete function;
  delete fake;
  std::lock_guard<std::mutex> lock(state().mutex);
  --state().stats.liveModules;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  auto *fake = reinterpret_cast<FakeModule *>(module);
  auto it = fake->functions.find(name);
  if (it == fake->functions.end())
    return CUDA_ERROR_NOT_FOUND;
  *function = reinterpret_cast<CUfunction>(it->second);
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction function, CUfunction_attribute attr,
                            int value) {
  auto *fake = reinterpret_cast<FakeFunction *>(function);
  if (attr != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    return CUDA_ERROR_INVALID_VALUE;
  // An H100/H200 block can opt into at most 227 KiB.
  if (value > 227 * 1024)
    return CUDA_ERROR_INVALID_VALUE;
  fake->maxDynamicSmem = value;
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().stats.setAttributeCalls;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy,
                        unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, CUstream stream, void **params,
                        void **extra) {
  if (!current())
    return CUDA_ERROR_INVALID_CONTEXT;
  auto *fake = reinterpret_cast<FakeFunction *>(function);
  if (extra || !params || static_cast<int>(smem) > fake->maxDynamicSmem ||
      bx * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  FakeCudaLaunch launch{};
  std::snprintf(launch.entry, sizeof(launch.entry), "%s", fake->name.c_str());
  launch.grid[0] = gx;
  launch.grid[1] = gy;
  launch.grid[2] = gz;
  launch.block[0] = bx;
  launch.block[1] = by;
  launch.block[2] = bz;
  launch.dynamicSmem = smem;
  launch.stream = stream;
  launch.paramCount = fake->paramSizes.size();
  for (size_t i = 0; i < fake->paramSizes.size() && i < 64; ++i) {
    launch.paramSizes[i] = fake->paramSizes[i];
    std::memcpy(&launch.params[i], params[i], fake->paramSizes[i]);
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  state().last = launch;
  state().launched = true;
  ++state().stats.launches;
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Inspection API
//===----------------------------------------------------------------------===//

void fakecuda_reset(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().ccMajor = 9;
  state().ccMinor = 0;
  state().deviceCount = 1;
  state().stats = FakeCudaStats{};
  state().launched = false;
  contextStack.clear();
}

void fakecuda_set_compute_capability(int major, int minor) {
  state().ccMajor = major;
  state().ccMinor = minor;
}

void fakecuda_set_device_count(int count) { state().deviceCount = count; }

void fakecuda_stats(FakeCudaStats *out) {
  std::lock_guard<std::mutex> lock(state().mutex);
  *out = state().stats;
}

bool fakecuda_last_launch(FakeCudaLaunch *out) {
  std::lock_guard<std::mutex> lock(state().mutex);
  *out = state().last;
  return state().launched;
}

void *fakecuda_make_user_context_current(void) {
  contextStack.clear();
  contextStack.push_back(reinterpret_cast<CUcontext>(&state().user));
  return &state().user;
}

void fakecuda_clear_current(void) { contextStack.clear(); }

} // extern "C"
