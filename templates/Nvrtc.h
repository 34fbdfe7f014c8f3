//===- Nvrtc.h - NVRTC through dlopen -------------------------------------===//
//
// A small wrapper over NVRTC that has no link-time dependency on NVRTC or
// CUDA: libnvrtc is opened with dlopen at run time. It compiles a CUDA C++
// source string (plus in-memory headers) to PTX for one target and returns
// the PTX, or the NVRTC log on error.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEMPLATES_NVRTC_H
#define ATTNC_TEMPLATES_NVRTC_H

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnc::templates {

/// The CUDA toolkit root: $ATTNC_CUDA_HOME, else $CUDA_HOME, else the build's
/// configured ATTNC_CUDA_HOME (default /usr/local/cuda).
std::string defaultCudaHome();

/// A header handed to NVRTC from memory: `#include "name"` resolves to it.
struct NvrtcHeader {
  std::string name;
  std::string text;
};

struct NvrtcCompileOptions {
  /// Target: "sm_80", "sm_90", "sm_90a" (any "sm_NN[a|f]"), or the virtual
  /// "compute_NN[a|f]" spelling. PTX is always generated for the virtual
  /// architecture (sm_90a -> --gpu-architecture=compute_90a).
  std::string arch = "sm_90a";
  /// -DNAME=VALUE (or -DNAME when VALUE is empty).
  std::vector<std::pair<std::string, std::string>> defines;
  /// Name expressions (e.g. "my_kernel<float, 64>") whose lowered (mangled)
  /// names are returned in NvrtcCompileResult::loweredNames.
  std::vector<std::string> nameExpressions;
  /// --include-path=...; empty means {defaultCudaHome() + "/include"} so that
  /// cuda_fp16.h / cuda_bf16.h are found.
  std::vector<std::string> includePaths;
  std::vector<NvrtcHeader> headers;
  /// Passed verbatim after the options above (e.g. "-lineinfo").
  std::vector<std::string> extraOptions;
  std::string programName = "attnc_template.cu";
  /// C++ dialect, passed as --std=<value>.
  std::string cxxStandard = "c++17";
};

struct NvrtcCompileResult {
  bool ok = false;
  std::string ptx; ///< NUL-free PTX text when ok
  /// NVRTC's program log (warnings when ok, errors otherwise).
  std::string log;
  /// Wrapper-level error when !ok: which NVRTC call failed and why.
  std::string error;
  /// (name expression, lowered name) for each requested name expression.
  std::vector<std::pair<std::string, std::string>> loweredNames;
  /// The option strings passed to nvrtcCompileProgram (for diagnostics).
  std::vector<std::string> options;

  /// error + "\n" + log, for printing.
  std::string message() const;
};

/// A loaded libnvrtc. Thread-safe: compile() may be called concurrently (each
/// call owns its nvrtcProgram). The library handle is never dlclose'd.
class Nvrtc {
public:
  /// Opens libnvrtc from defaultLibraryCandidates(). On failure returns null
  /// and, if `error` is non-null, stores a message naming every path tried.
  static std::unique_ptr<Nvrtc> load(std::string *error);
  /// Opens the first loadable library of `candidates` (names or paths).
  static std::unique_ptr<Nvrtc>
  loadFrom(const std::vector<std::string> &candidates, std::string *error);
  /// $ATTNC_NVRTC_LIBRARY (alone, if set); else "libnvrtc.so.13",
  /// "libnvrtc.so", <cuda home>/lib64/libnvrtc.so.13 and
  /// <cuda home>/lib64/libnvrtc.so.
  static std::vector<std::string> defaultLibraryCandidates();

  ~Nvrtc();
  Nvrtc(const Nvrtc &) = delete;
  Nvrtc &operator=(const Nvrtc &) = delete;

  /// The candidate that was loaded.
  const std::string &libraryPath() const { return path; }
  /// NVRTC's (major, minor) version.
  std::pair<int, int> version() const;

  NvrtcCompileResult compile(std::string_view source,
                             const NvrtcCompileOptions &options) const;

  struct Api; // function pointers resolved with dlsym

private:
  Nvrtc(void *handle, std::string path, std::unique_ptr<Api> api);
  void *handle;
  std::string path;
  std::unique_ptr<Api> api;
};

} // namespace attnc::templates

#endif // ATTNC_TEMPLATES_NVRTC_H
