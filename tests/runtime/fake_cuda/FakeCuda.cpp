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

#include <algorithm>
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
  int smCount = 0; // 0: CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT unsupported
  FakeCudaStats stats{};
  FakeCudaLaunch last{};
  bool launched = false;
  int tensorMaps = 0;
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
      // ".align N .b8 name[bytes]": a by-value aggregate.
      if (params.compare(typeStart, 6, ".align") == 0)
        typeStart = params.find('.', typeStart + 6);
      size_t typeEnd = params.find_first_of(" \t\n", typeStart);
      size_t size = ptxTypeSize(params.substr(typeStart, typeEnd - typeStart));
      size_t next = params.find(".param", typeEnd);
      size_t bracket = params.find('[', typeEnd);
      if (bracket != std::string::npos && bracket < next)
        size *= std::stoul(params.substr(bracket + 1));
      function->paramSizes.push_back(size);
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
  else if (attribute == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT &&
           state().smCount > 0)
    *value = state().smCount;
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
    size_t size = fake->paramSizes[i];
    launch.paramSizes[i] = size;
    std::memcpy(&launch.params[i], params[i], std::min<size_t>(size, 8));
    if (size > 8 && launch.bigParamCount < 4 && size <= 128) {
      // A by-value aggregate must come 64-byte aligned (a CUtensorMap).
      if (reinterpret_cast<uintptr_t>(params[i]) % 64)
        return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(launch.bigParams[launch.bigParamCount++], params[i], size);
    }
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  state().last = launch;
  state().launched = true;
  ++state().stats.launches;
  return CUDA_SUCCESS;
}

// Checks what the real driver documents (16-byte aligned address, strides
// multiples of 16 below 2^40, boxes of 1-256 rows, a 128-byte swizzle span
// at most 128 bytes wide) and records the request in the map.
CUresult cuTensorMapEncodeTiled(
    CUtensorMap *map, CUtensorMapDataType dataType, cuuint32_t rank,
    void *address, const cuuint64_t *dims, const cuuint64_t *strides,
    const cuuint32_t *box, const cuuint32_t *elementStrides,
    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
  if (!map || rank < 1 || rank > 5 || !dims || !box || !elementStrides ||
      reinterpret_cast<uintptr_t>(address) % 16)
    return CUDA_ERROR_INVALID_VALUE;
  size_t elem = dataType == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 ||
                        dataType == CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                    ? 2
                    : 4;
  for (cuuint32_t i = 0; i < rank; ++i) {
    if (dims[i] == 0 || box[i] == 0 || box[i] > 256 || elementStrides[i] != 1)
      return CUDA_ERROR_INVALID_VALUE;
    if (i + 1 < rank && (strides[i] % 16 || strides[i] >= (1ull << 40)))
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (swizzle == CU_TENSOR_MAP_SWIZZLE_128B && box[0] * elem > 128)
    return CUDA_ERROR_INVALID_VALUE;
  FakeCudaTensorMap fake{};
  fake.magic = FAKECUDA_TENSOR_MAP_MAGIC;
  fake.dataType = dataType;
  fake.rank = rank;
  fake.swizzle = swizzle;
  fake.interleave = interleave;
  fake.l2Promotion = l2Promotion;
  fake.oobFill = oobFill;
  fake.address = reinterpret_cast<uintptr_t>(address);
  for (cuuint32_t i = 0; i < rank && i < 4; ++i) {
    fake.box[i] = box[i];
    fake.dims[i] = dims[i];
    if (i + 1 < rank && i < 3)
      fake.strides[i] = strides[i];
  }
  static_assert(sizeof(FakeCudaTensorMap) <= sizeof(CUtensorMap));
  std::memset(map, 0, sizeof(CUtensorMap));
  std::memcpy(map, &fake, sizeof(fake));
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().tensorMaps;
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
  state().smCount = 0;
  state().stats = FakeCudaStats{};
  state().launched = false;
  state().tensorMaps = 0;
  contextStack.clear();
}

void fakecuda_set_compute_capability(int major, int minor) {
  state().ccMajor = major;
  state().ccMinor = minor;
}

void fakecuda_set_device_count(int count) { state().deviceCount = count; }

void fakecuda_set_sm_count(int count) { state().smCount = count; }

int fakecuda_tensor_maps_encoded(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().tensorMaps;
}

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
