//===- NvJitLink.cpp - Optional PTX to cubin through nvJitLink ------------===//

#include "attnc/runtime/NvJitLink.h"

#include <nvJitLink.h>

#include <dlfcn.h>

#include <memory>
#include <mutex>
#include <vector>

namespace attnc {

// nvJitLink.h maps each call to a versioned symbol (nvJitLinkCreate ->
// __nvJitLinkCreate_13_0); we resolve those names, falling back to the plain
// ones that the library also exports.
struct CubinLinker::Api {
  nvJitLinkResult (*create)(nvJitLinkHandle *, uint32_t, const char **);
  nvJitLinkResult (*destroy)(nvJitLinkHandle *);
  nvJitLinkResult (*addData)(nvJitLinkHandle, nvJitLinkInputType, const void *,
                             size_t, const char *);
  nvJitLinkResult (*complete)(nvJitLinkHandle);
  nvJitLinkResult (*getLinkedCubinSize)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*getLinkedCubin)(nvJitLinkHandle, void *);
  nvJitLinkResult (*getErrorLogSize)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*getErrorLog)(nvJitLinkHandle, char *);
  nvJitLinkResult (*version)(unsigned int *, unsigned int *);
};

namespace {

template <typename Fn>
bool resolve(void *handle, Fn &fn, const char *versioned, const char *plain) {
  void *symbol = versioned ? ::dlsym(handle, versioned) : nullptr;
  if (!symbol)
    symbol = ::dlsym(handle, plain);
  fn = reinterpret_cast<Fn>(symbol);
  return fn != nullptr;
}

Result<std::unique_ptr<CubinLinker::Api>> openNvJitLink(void *handle) {
  auto api = std::make_unique<CubinLinker::Api>();
  bool ok = true;
  ok &=
      resolve(handle, api->create, "__nvJitLinkCreate_13_0", "nvJitLinkCreate");
  ok &= resolve(handle, api->destroy, "__nvJitLinkDestroy_13_0",
                "nvJitLinkDestroy");
  ok &= resolve(handle, api->addData, "__nvJitLinkAddData_13_0",
                "nvJitLinkAddData");
  ok &= resolve(handle, api->complete, "__nvJitLinkComplete_13_0",
                "nvJitLinkComplete");
  ok &= resolve(handle, api->getLinkedCubinSize,
                "__nvJitLinkGetLinkedCubinSize_13_0",
                "nvJitLinkGetLinkedCubinSize");
  ok &= resolve(handle, api->getLinkedCubin, "__nvJitLinkGetLinkedCubin_13_0",
                "nvJitLinkGetLinkedCubin");
  ok &= resolve(handle, api->getErrorLogSize, "__nvJitLinkGetErrorLogSize_13_0",
                "nvJitLinkGetErrorLogSize");
  ok &= resolve(handle, api->getErrorLog, "__nvJitLinkGetErrorLog_13_0",
                "nvJitLinkGetErrorLog");
  ok &= resolve(handle, api->version, nullptr, "nvJitLinkVersion");
  if (!ok)
    return Status(ErrorCode::NotFound,
                  "libnvJitLink lacks the nvJitLink 13 entry points");
  return api;
}

} // namespace

Result<const CubinLinker *> CubinLinker::load() {
  static std::mutex mutex;
  static std::unique_ptr<Api> api;
  static std::unique_ptr<CubinLinker> linker;
  static Status failure;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (tried) {
    if (linker)
      return static_cast<const CubinLinker *>(linker.get());
    return failure;
  }
  tried = true;
  std::string errors;
  for (const char *name :
       {"libnvJitLink.so.13", "/usr/local/cuda/lib64/libnvJitLink.so.13"}) {
    void *handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = ::dlerror();
      errors += std::string(errors.empty() ? "" : "; ") + (why ? why : name);
      continue;
    }
    Result<std::unique_ptr<Api>> opened = openNvJitLink(handle);
    if (!opened.isOk()) {
      errors += "; " + opened.status().message();
      ::dlclose(handle);
      continue;
    }
    api = std::move(opened).value();
    unsigned major = 0, minor = 0;
    api->version(&major, &minor);
    linker.reset(new CubinLinker(
        api.get(), name, std::to_string(major) + "." + std::to_string(minor)));
    return static_cast<const CubinLinker *>(linker.get());
  }
  failure = Status(ErrorCode::NotFound, "nvJitLink not found: " + errors);
  return failure;
}

Result<std::string> CubinLinker::link(std::string_view ptx,
                                      const std::string &arch) const {
  std::string archOption = "-arch=" + arch;
  const char *options[] = {archOption.c_str()};
  nvJitLinkHandle handle = nullptr;
  if (api_->create(&handle, 1, options) != NVJITLINK_SUCCESS)
    return Status(ErrorCode::CompileError,
                  "nvJitLinkCreate failed for " + archOption);
  auto errorLog = [&]() {
    size_t size = 0;
    if (api_->getErrorLogSize(handle, &size) != NVJITLINK_SUCCESS || !size)
      return std::string();
    std::string log(size, '\0');
    api_->getErrorLog(handle, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
      log.pop_back();
    return log;
  };
  Status status;
  std::string cubin;
  nvJitLinkResult rc = api_->addData(handle, NVJITLINK_INPUT_PTX, ptx.data(),
                                     ptx.size(), "kernel.ptx");
  if (rc == NVJITLINK_SUCCESS)
    rc = api_->complete(handle);
  size_t size = 0;
  if (rc == NVJITLINK_SUCCESS)
    rc = api_->getLinkedCubinSize(handle, &size);
  if (rc == NVJITLINK_SUCCESS) {
    cubin.resize(size);
    rc = api_->getLinkedCubin(handle, cubin.data());
  }
  if (rc != NVJITLINK_SUCCESS)
    status = Status(ErrorCode::CompileError,
                    "nvJitLink could not compile PTX for " + arch +
                        " (nvJitLinkResult " + std::to_string(rc) +
                        "): " + errorLog());
  api_->destroy(&handle);
  if (!status.isOk())
    return status;
  return cubin;
}

} // namespace attnc
