//===- JitLoader.cpp - The compiler plugin, loaded with dlopen ------------===//

#include "attnc/runtime/JitLoader.h"

#include "attnc/abi/JitPlugin.h"
#include "attnc/runtime/BuildId.h"
#include "attnc/runtime/Metadata.h"
#include "attnc/runtime/Spec.h"

#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <unistd.h>

namespace attnc {

namespace {

constexpr const char *kJitLibraryName = "libattnc_jit.so";

// A KernelCompiler that forwards to the plugin's C table. The library is
// never closed: compiled code and LLVM's statics live as long as the process.
class PluginCompiler final : public KernelCompiler {
public:
  explicit PluginCompiler(const attnc_jit_plugin *plugin) : plugin_(plugin) {}

  Result<CompiledKernel> compile(const KernelSpec &spec) override {
    const std::string specJson = writeJson(specToJson(spec), -1);
    attnc_jit_output out{};
    plugin_->compile(specJson.c_str(), &out);
    // Copy out before freeing: the strings are the plugin's.
    struct Release {
      const attnc_jit_plugin *plugin;
      attnc_jit_output *out;
      ~Release() { plugin->free_output(out); }
    } release{plugin_, &out};
    if (!out.ok) {
      // The compiler's own code (Unsupported, InvalidArgument, ...) when it
      // names one this runtime knows.
      ErrorCode code =
          out.code > 0 && out.code <= static_cast<int32_t>(ErrorCode::Internal)
              ? static_cast<ErrorCode>(out.code)
              : ErrorCode::CompileError;
      return Status(code, out.error ? out.error
                                    : "the JIT compiler failed without "
                                      "saying why");
    }
    if (!out.ptx || !out.meta_json)
      return Status(ErrorCode::CompileError,
                    "the JIT compiler returned no PTX or no metadata");
    CompiledKernel kernel;
    kernel.ptx.assign(out.ptx, out.ptx_size);
    Result<Json> meta = parseJson(out.meta_json);
    if (!meta.isOk())
      return Status(ErrorCode::CompileError,
                    "the JIT compiler's metadata: " + meta.status().message());
    Result<KernelMetadata> parsed =
        metadataFromJson(*meta, "JIT compiler metadata");
    if (!parsed.isOk())
      return Status(ErrorCode::CompileError, parsed.status().message());
    kernel.meta = std::move(parsed).value();
    return kernel;
  }

private:
  const attnc_jit_plugin *plugin_;
};

// The directory of the shared object this function is compiled into.
std::string ownDirectory() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(&ownDirectory), &info) == 0 ||
      !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// One open per path per process (later calls share the compiler).
std::mutex &loadedMutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, JitLibrary> &loaded() {
  static std::map<std::string, JitLibrary> libraries;
  return libraries;
}

// NotFound: nothing at `path` to open; other errors: opened, not usable.
Result<JitLibrary> openPlugin(const std::string &path) {
  // A path that names no file is NotFound; a file that exists but does not
  // load (a missing libLLVM, another architecture) is an error worth showing.
  if (path.find('/') != std::string::npos && ::access(path.c_str(), F_OK) != 0)
    return Status(ErrorCode::NotFound, "no such file");
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = ::dlerror();
    std::string message = why ? why : "unknown dlopen error";
    // A bare name the loader did not find: the message starts with it.
    bool missing =
        path.find('/') == std::string::npos &&
        message.rfind(path + ": cannot open shared object file", 0) == 0;
    return Status(missing ? ErrorCode::NotFound : ErrorCode::InvalidArgument,
                  message);
  }
  // A library refused below is closed again (its code never ran).
  struct CloseUnlessKept {
    void *handle;
    bool keep = false;
    ~CloseUnlessKept() {
      if (!keep)
        ::dlclose(handle);
    }
  } guard{handle};
  auto entry = reinterpret_cast<attnc_jit_plugin_entry_fn>(
      ::dlsym(handle, ATTNC_JIT_PLUGIN_ENTRY));
  if (!entry)
    return Status(ErrorCode::InvalidArgument,
                  "'" + path +
                      "' has no " ATTNC_JIT_PLUGIN_ENTRY
                      " (not an attnc JIT library)");
  const attnc_jit_plugin *plugin = entry();
  if (!plugin || plugin->version != ATTNC_JIT_PLUGIN_VERSION)
    return Status(ErrorCode::InvalidArgument,
                  "'" + path + "' speaks JIT plugin version " +
                      std::to_string(plugin ? plugin->version : 0) +
                      ", this runtime version " +
                      std::to_string(ATTNC_JIT_PLUGIN_VERSION));
  std::string buildId = plugin->build_id ? plugin->build_id : "";
  if (buildId != defaultBuildId())
    return Status(ErrorCode::InvalidArgument,
                  "'" + path + "' is the compiler of build " + buildId +
                      " but this runtime is build " + defaultBuildId() +
                      " (kernels are cached by build id); use the "
                      "libattnc_jit.so built with this libattnc.so");
  if (!plugin->compile || !plugin->free_output)
    return Status(ErrorCode::InvalidArgument,
                  "'" + path + "' has an incomplete plugin table");
  guard.keep = true; // never closed: see PluginCompiler
  JitLibrary library;
  library.compiler = std::make_shared<PluginCompiler>(plugin);
  library.path = path;
  library.description = plugin->description ? plugin->description : "";
  return library;
}

} // namespace

std::vector<std::string> jitLibraryCandidates() {
  if (const char *env = std::getenv("ATTNC_JIT_LIBRARY"); env && *env)
    return {env};
  std::vector<std::string> candidates;
  std::string dir = ownDirectory();
  if (!dir.empty())
    candidates.push_back(dir + "/" + kJitLibraryName);
  candidates.push_back(kJitLibraryName); // the loader's search path
  return candidates;
}

Result<JitLibrary> loadJitCompiler(const std::string &path) {
  std::vector<std::string> candidates =
      path.empty() ? jitLibraryCandidates() : std::vector<std::string>{path};
  std::lock_guard<std::mutex> lock(loadedMutex());
  std::string tried;
  for (const std::string &candidate : candidates) {
    if (auto hit = loaded().find(candidate); hit != loaded().end())
      return hit->second;
    Result<JitLibrary> library = openPlugin(candidate);
    if (library.isOk()) {
      loaded().emplace(candidate, *library);
      return library;
    }
    // A library that exists but is not usable is an error, not a reason to
    // try an older one further down the list.
    if (library.status().code() != ErrorCode::NotFound)
      return Status(library.status().code(),
                    "attnc: cannot use the JIT compiler '" + candidate +
                        "': " + library.status().message());
    tried += "\n  " + candidate + " (" + library.status().message() + ")";
  }
  return Status(
      ErrorCode::NotFound,
      "attnc: no JIT compiler (libattnc_jit.so) found; looked at:" + tried +
          "\nBuild it with `ninja -C build attnc_jit`, or set "
          "ATTNC_JIT_LIBRARY to its path");
}

} // namespace attnc
