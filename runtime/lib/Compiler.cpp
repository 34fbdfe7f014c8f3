//===- Compiler.cpp - The compiler hook -----------------------------------===//

#include "attnc/runtime/Compiler.h"

#include <mutex>

namespace attnc {

KernelCompiler::~KernelCompiler() = default;

namespace {
std::mutex &defaultCompilerMutex() {
  static std::mutex mutex;
  return mutex;
}
std::shared_ptr<KernelCompiler> &defaultCompilerSlot() {
  static std::shared_ptr<KernelCompiler> compiler;
  return compiler;
}
} // namespace

void setDefaultCompiler(std::shared_ptr<KernelCompiler> compiler) {
  std::lock_guard<std::mutex> lock(defaultCompilerMutex());
  defaultCompilerSlot() = std::move(compiler);
}

std::shared_ptr<KernelCompiler> defaultCompiler() {
  std::lock_guard<std::mutex> lock(defaultCompilerMutex());
  return defaultCompilerSlot();
}

} // namespace attnc
