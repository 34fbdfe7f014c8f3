//===- Driver.cpp - CUDA driver API loaded with dlopen --------------------===//

#include "attnc/runtime/Driver.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>

// Stringify after macro expansion so cuMemAlloc becomes "cuMemAlloc_v2",
// the symbol whose ABI matches cuda.h's declaration.
#define ATTNC_STRINGIFY_INNER(x) #x
#define ATTNC_STRINGIFY(x) ATTNC_STRINGIFY_INNER(x)

namespace attnc {

std::string DriverApi::errorText(CUresult result) const {
  const char *name = nullptr;
  const char *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(result, &name);
  if (cuGetErrorString)
    cuGetErrorString(result, &text);
  std::string out = name ? name : "CUresult " + std::to_string(result);
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}

Status DriverApi::check(CUresult result, const std::string &what) const {
  if (result == CUDA_SUCCESS)
    return Status::ok();
  return Status(ErrorCode::DriverError, what + " failed: " + errorText(result));
}

namespace {

Result<std::unique_ptr<DriverApi>> openDriver(const std::string &library) {
  // RTLD_LOCAL: the driver's symbols stay out of the global namespace.
  void *handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = ::dlerror();
    return Status(ErrorCode::DriverNotFound,
                  "CUDA driver not found (" + library +
                      "): " + (why ? why : "unknown dlopen error"));
  }
  auto api = std::make_unique<DriverApi>();
  api->library = library;
  std::string missing;
#define ATTNC_RESOLVE_REQUIRED(name)                                           \
  api->name = reinterpret_cast<decltype(api->name)>(                           \
      ::dlsym(handle, ATTNC_STRINGIFY(name)));                                 \
  if (!api->name)                                                              \
    missing += std::string(missing.empty() ? "" : ", ") + ATTNC_STRINGIFY(name);
#define ATTNC_RESOLVE_OPTIONAL(name)                                           \
  api->name = reinterpret_cast<decltype(api->name)>(                           \
      ::dlsym(handle, ATTNC_STRINGIFY(name)));
  ATTNC_CUDA_REQUIRED_FUNCTIONS(ATTNC_RESOLVE_REQUIRED)
  ATTNC_CUDA_OPTIONAL_FUNCTIONS(ATTNC_RESOLVE_OPTIONAL)
#undef ATTNC_RESOLVE_REQUIRED
#undef ATTNC_RESOLVE_OPTIONAL
  if (!missing.empty()) {
    ::dlclose(handle);
    return Status(ErrorCode::DriverNotFound,
                  "CUDA driver " + library +
                      " is too old or not a CUDA driver: missing " + missing);
  }
  ATTNC_RETURN_IF_ERROR(api->check(api->cuInit(0), "cuInit"));
  ATTNC_RETURN_IF_ERROR(api->check(api->cuDriverGetVersion(&api->driverVersion),
                                   "cuDriverGetVersion"));
  return api;
}

} // namespace

Result<const DriverApi *> loadDriver(const std::string &library) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<DriverApi>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(library);
  if (it != loaded.end())
    return static_cast<const DriverApi *>(it->second.get());
  ATTNC_ASSIGN_OR_RETURN(std::unique_ptr<DriverApi> api, openDriver(library));
  const DriverApi *result = api.get();
  loaded.emplace(library, std::move(api));
  return result;
}

} // namespace attnc
