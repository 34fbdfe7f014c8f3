//===- JitLoader.h - The compiler plugin, loaded with dlopen ----*- C++ -*-===//
//
// libattnc_jit.so holds the MLIR compiler behind abi/JitPlugin.h. The
// runtime never links it: loadJitCompiler opens it at run time, checks that
// it speaks this runtime's plugin version and was built from the same
// compiler sources (same build id: cached kernels are keyed on it), and
// wraps it as a KernelCompiler.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_JITLOADER_H
#define ATTNC_RUNTIME_JITLOADER_H

#include "attnc/runtime/Compiler.h"

#include <memory>
#include <string>
#include <vector>

namespace attnc {

struct JitLibrary {
  std::shared_ptr<KernelCompiler> compiler;
  std::string path;        // as opened
  std::string description; // the plugin's own words (version, LLVM)
};

// Where the JIT library is looked for when no path is given, in order:
// $ATTNC_JIT_LIBRARY (the only candidate when set), libattnc_jit.so beside
// the library holding this code (libattnc.so), then the loader's path.
std::vector<std::string> jitLibraryCandidates();

// Opens `path` (empty: the candidates above, the first that loads wins).
// NotFound when no candidate exists; InvalidArgument for a library that is
// not a compatible plugin (other plugin version or build id), with the
// reason and every path tried in the message.
Result<JitLibrary> loadJitCompiler(const std::string &path = "");

} // namespace attnc

#endif // ATTNC_RUNTIME_JITLOADER_H
