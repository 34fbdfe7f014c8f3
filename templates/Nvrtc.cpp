//===- Nvrtc.cpp - NVRTC through dlopen -----------------------------------===//

#include "templates/Nvrtc.h"

#include <cctype>
#include <cstdlib>
#include <dlfcn.h>
#include <type_traits>

#ifndef ATTNC_TEMPLATES_CUDA_HOME
#define ATTNC_TEMPLATES_CUDA_HOME "/usr/local/cuda"
#endif

namespace attnc::templates {

namespace {
// The subset of nvrtc.h used here, restated so that no CUDA header is needed
// to build the library. nvrtcResult is an int-sized enum; 0 is success.
using NvrtcResult = int;
using NvrtcProgram = struct NvrtcProgramOpaque *;
constexpr NvrtcResult kNvrtcSuccess = 0;
} // namespace

struct Nvrtc::Api {
  const char *(*getErrorString)(NvrtcResult) = nullptr;
  NvrtcResult (*version)(int *, int *) = nullptr;
  NvrtcResult (*createProgram)(NvrtcProgram *, const char *, const char *, int,
                               const char *const *,
                               const char *const *) = nullptr;
  NvrtcResult (*destroyProgram)(NvrtcProgram *) = nullptr;
  NvrtcResult (*compileProgram)(NvrtcProgram, int,
                                const char *const *) = nullptr;
  NvrtcResult (*getPTXSize)(NvrtcProgram, size_t *) = nullptr;
  NvrtcResult (*getPTX)(NvrtcProgram, char *) = nullptr;
  NvrtcResult (*getProgramLogSize)(NvrtcProgram, size_t *) = nullptr;
  NvrtcResult (*getProgramLog)(NvrtcProgram, char *) = nullptr;
  NvrtcResult (*addNameExpression)(NvrtcProgram, const char *) = nullptr;
  NvrtcResult (*getLoweredName)(NvrtcProgram, const char *,
                                const char **) = nullptr;
};

std::string defaultCudaHome() {
  for (const char *var : {"ATTNC_CUDA_HOME", "CUDA_HOME"}) {
    const char *value = std::getenv(var);
    if (value && *value)
      return value;
  }
  return ATTNC_TEMPLATES_CUDA_HOME;
}

std::string NvrtcCompileResult::message() const {
  if (log.empty())
    return error;
  return error + "\n" + log;
}

std::vector<std::string> Nvrtc::defaultLibraryCandidates() {
  const char *explicitPath = std::getenv("ATTNC_NVRTC_LIBRARY");
  if (explicitPath && *explicitPath)
    return {explicitPath};
  const std::string lib64 = defaultCudaHome() + "/lib64/";
  return {"libnvrtc.so.13", "libnvrtc.so", lib64 + "libnvrtc.so.13",
          lib64 + "libnvrtc.so"};
}

std::unique_ptr<Nvrtc> Nvrtc::load(std::string *error) {
  return loadFrom(defaultLibraryCandidates(), error);
}

std::unique_ptr<Nvrtc>
Nvrtc::loadFrom(const std::vector<std::string> &candidates,
                std::string *error) {
  std::string tried;
  for (const std::string &candidate : candidates) {
    void *handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = ::dlerror();
      tried += "\n  " + candidate + ": " + (why ? why : "dlopen failed");
      continue;
    }
    auto api = std::make_unique<Api>();
    std::string missing;
    auto bind = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          ::dlsym(handle, symbol));
      if (!fn)
        missing += std::string(missing.empty() ? "" : ", ") + symbol;
    };
    bind(api->getErrorString, "nvrtcGetErrorString");
    bind(api->version, "nvrtcVersion");
    bind(api->createProgram, "nvrtcCreateProgram");
    bind(api->destroyProgram, "nvrtcDestroyProgram");
    bind(api->compileProgram, "nvrtcCompileProgram");
    bind(api->getPTXSize, "nvrtcGetPTXSize");
    bind(api->getPTX, "nvrtcGetPTX");
    bind(api->getProgramLogSize, "nvrtcGetProgramLogSize");
    bind(api->getProgramLog, "nvrtcGetProgramLog");
    bind(api->addNameExpression, "nvrtcAddNameExpression");
    bind(api->getLoweredName, "nvrtcGetLoweredName");
    if (!missing.empty()) {
      tried += "\n  " + candidate + ": not NVRTC (missing " + missing + ")";
      ::dlclose(handle);
      continue;
    }
    return std::unique_ptr<Nvrtc>(new Nvrtc(handle, candidate, std::move(api)));
  }
  if (error)
    *error = "attnc: cannot load NVRTC (libnvrtc); tried:" +
             (tried.empty() ? std::string("\n  (no candidates)") : tried) +
             "\nInstall the CUDA 13 NVRTC library, or point "
             "ATTNC_NVRTC_LIBRARY at libnvrtc.so.13 (or ATTNC_CUDA_HOME at "
             "the toolkit root).";
  return nullptr;
}

Nvrtc::Nvrtc(void *handle, std::string path, std::unique_ptr<Api> api)
    : handle(handle), path(std::move(path)), api(std::move(api)) {}

// libnvrtc stays loaded: unloading it while other Nvrtc objects or its own
// exit-time handlers may still run is not worth the risk.
Nvrtc::~Nvrtc() = default;

std::pair<int, int> Nvrtc::version() const {
  int major = 0, minor = 0;
  if (api->version(&major, &minor) != kNvrtcSuccess)
    return {0, 0};
  return {major, minor};
}

namespace {
/// "sm_90a" -> "compute_90a"; "compute_80" unchanged; anything else -> "".
std::string virtualArch(const std::string &arch) {
  std::string digits;
  if (arch.rfind("sm_", 0) == 0)
    digits = arch.substr(3);
  else if (arch.rfind("compute_", 0) == 0)
    digits = arch.substr(8);
  else
    return "";
  size_t n = 0;
  while (n < digits.size() &&
         std::isdigit(static_cast<unsigned char>(digits[n])))
    ++n;
  if (n < 2 || n + 1 < digits.size())
    return "";
  if (n + 1 == digits.size() && digits[n] != 'a' && digits[n] != 'f')
    return "";
  return "compute_" + digits;
}
} // namespace

NvrtcCompileResult Nvrtc::compile(std::string_view source,
                                  const NvrtcCompileOptions &options) const {
  NvrtcCompileResult result;
  const std::string arch = virtualArch(options.arch);
  if (arch.empty()) {
    result.error = "attnc: unsupported NVRTC target '" + options.arch +
                   "' (expected sm_NN, sm_NNa, sm_NNf or compute_NN...)";
    return result;
  }

  std::vector<std::string> &opts = result.options;
  opts.push_back("--gpu-architecture=" + arch);
  opts.push_back("--std=" + options.cxxStandard);
  std::vector<std::string> includes = options.includePaths;
  if (includes.empty())
    includes.push_back(defaultCudaHome() + "/include");
  for (const std::string &path : includes)
    opts.push_back("--include-path=" + path);
  for (const auto &[name, value] : options.defines)
    opts.push_back(value.empty() ? "-D" + name : "-D" + name + "=" + value);
  for (const std::string &extra : options.extraOptions)
    opts.push_back(extra);

  auto fail = [&](const char *call, NvrtcResult code) {
    result.ok = false;
    result.error = std::string("attnc: ") + call +
                   " failed: " + api->getErrorString(code) + " (target " +
                   options.arch + ", program " + options.programName + ")";
  };

  const std::string src(source);
  std::vector<const char *> headerTexts, headerNames;
  for (const NvrtcHeader &header : options.headers) {
    headerTexts.push_back(header.text.c_str());
    headerNames.push_back(header.name.c_str());
  }
  NvrtcProgram program = nullptr;
  NvrtcResult rc =
      api->createProgram(&program, src.c_str(), options.programName.c_str(),
                         static_cast<int>(headerTexts.size()),
                         headerTexts.data(), headerNames.data());
  if (rc != kNvrtcSuccess) {
    fail("nvrtcCreateProgram", rc);
    return result;
  }
  struct Destroy {
    const Api &api;
    NvrtcProgram &program;
    ~Destroy() { api.destroyProgram(&program); }
  } destroy{*api, program};

  for (const std::string &expr : options.nameExpressions) {
    rc = api->addNameExpression(program, expr.c_str());
    if (rc != kNvrtcSuccess) {
      fail("nvrtcAddNameExpression", rc);
      result.error += ": " + expr;
      return result;
    }
  }

  std::vector<const char *> optPtrs;
  for (const std::string &opt : opts)
    optPtrs.push_back(opt.c_str());
  const NvrtcResult compileRc = api->compileProgram(
      program, static_cast<int>(optPtrs.size()), optPtrs.data());

  size_t logSize = 0;
  if (api->getProgramLogSize(program, &logSize) == kNvrtcSuccess &&
      logSize > 1) {
    std::string log(logSize, '\0');
    if (api->getProgramLog(program, log.data()) == kNvrtcSuccess) {
      log.resize(log.find('\0') == std::string::npos ? log.size()
                                                     : log.find('\0'));
      result.log = std::move(log);
    }
  }
  if (compileRc != kNvrtcSuccess) {
    fail("nvrtcCompileProgram", compileRc);
    return result;
  }

  size_t ptxSize = 0;
  rc = api->getPTXSize(program, &ptxSize);
  if (rc != kNvrtcSuccess) {
    fail("nvrtcGetPTXSize", rc);
    return result;
  }
  std::string ptx(ptxSize, '\0');
  rc = api->getPTX(program, ptx.data());
  if (rc != kNvrtcSuccess) {
    fail("nvrtcGetPTX", rc);
    return result;
  }
  while (!ptx.empty() && ptx.back() == '\0')
    ptx.pop_back();
  result.ptx = std::move(ptx);

  for (const std::string &expr : options.nameExpressions) {
    const char *lowered = nullptr;
    rc = api->getLoweredName(program, expr.c_str(), &lowered);
    if (rc != kNvrtcSuccess || !lowered) {
      fail("nvrtcGetLoweredName", rc);
      result.error += ": " + expr;
      return result;
    }
    result.loweredNames.emplace_back(expr, lowered);
  }
  result.ok = true;
  return result;
}

} // namespace attnc::templates
