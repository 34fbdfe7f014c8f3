//===- NvJitLink.cpp - Optional PTX to cubin: ptxas, else nvJitLink -------===//

#include "attnc/runtime/NvJitLink.h"

#include <nvJitLink.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

extern char **environ;

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

bool executable(const std::string &path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

/// The ptxas binary to use: $ATTNC_PTXAS ("none" turns ptxas off), else
/// $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, then PATH.
std::string findPtxas() {
  if (const char *forced = std::getenv("ATTNC_PTXAS"))
    return std::string(forced) == "none" ? std::string() : std::string(forced);
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(var))
      if (std::string p = std::string(dir) + "/bin/ptxas"; executable(p))
        return p;
  if (executable("/usr/local/cuda/bin/ptxas"))
    return "/usr/local/cuda/bin/ptxas";
  if (const char *path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (std::string p = dir + "/ptxas"; executable(p))
        return p;
  }
  return {};
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// `ptxas -arch=<arch> -O3 kernel.ptx -o kernel.cubin` in a fresh temporary
/// directory. A whole-program compile: nvJitLink compiles PTX as
/// relocatable code (like `ptxas -c`), which costs registers (the decode
/// split kernel: 227 against 162, bench/NOTES.md), so ptxas comes first.
Result<std::string> runPtxas(const std::string &ptxas, std::string_view ptx,
                             const std::string &arch) {
  const char *tmp = std::getenv("TMPDIR");
  std::string dirTemplate =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/attnc-ptxas-XXXXXX";
  if (!::mkdtemp(dirTemplate.data()))
    return Status(ErrorCode::IoError,
                  "cannot create a temporary directory for ptxas");
  const std::string dir = dirTemplate;
  const std::string in = dir + "/kernel.ptx", out = dir + "/kernel.cubin",
                    log = dir + "/ptxas.log";
  auto cleanup = [&] {
    std::remove(in.c_str());
    std::remove(out.c_str());
    std::remove(log.c_str());
    ::rmdir(dir.c_str());
  };
  {
    std::ofstream f(in, std::ios::binary);
    f.write(ptx.data(), std::streamsize(ptx.size()));
    if (!f) {
      cleanup();
      return Status(ErrorCode::IoError, "cannot write " + in);
    }
  }
  std::string archOption = "-arch=" + arch;
  std::vector<std::string> args = {ptxas, archOption, "-O3", in, "-o", out};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, ptxas.c_str(), &actions, nullptr, argv.data(),
                         environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    cleanup();
    return Status(ErrorCode::NotFound, "cannot run " + ptxas);
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  std::string cubin = readFile(out), messages = readFile(log);
  cleanup();
  while (!messages.empty() && messages.back() == '\n')
    messages.pop_back();
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0 || cubin.empty())
    return Status(ErrorCode::CompileError, "ptxas could not compile PTX for " +
                                               arch + " (" + ptxas +
                                               "): " + messages);
  return cubin;
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
  std::string ptxas = findPtxas();
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
        api.get(), name, std::to_string(major) + "." + std::to_string(minor),
        ptxas));
    return static_cast<const CubinLinker *>(linker.get());
  }
  if (!ptxas.empty()) { // ptxas alone will do
    linker.reset(new CubinLinker(nullptr, "", "", ptxas));
    return static_cast<const CubinLinker *>(linker.get());
  }
  failure = Status(ErrorCode::NotFound,
                   "neither ptxas nor nvJitLink found: " + errors);
  return failure;
}

Result<std::string> CubinLinker::link(std::string_view ptx,
                                      const std::string &arch) const {
  if (!ptxas_.empty()) {
    Result<std::string> cubin = runPtxas(ptxas_, ptx, arch);
    // A ptxas that cannot run (removed since load) leaves nvJitLink; a
    // ptxas that rejects the PTX is the answer.
    if (cubin.isOk() || cubin.status().code() != ErrorCode::NotFound || !api_)
      return cubin;
  }
  return linkWithNvJitLink(ptx, arch);
}

Result<std::string>
CubinLinker::linkWithNvJitLink(std::string_view ptx,
                               const std::string &arch) const {
  if (!api_)
    return Status(ErrorCode::NotFound, "nvJitLink not loaded");
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
