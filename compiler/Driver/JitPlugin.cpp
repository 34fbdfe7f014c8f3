//===- JitPlugin.cpp - libattnc_jit.so: the compiler behind a C table -----===//
//
// The runtime (libattnc.so, no LLVM) loads this library with dlopen when a
// kernel is neither cached nor bundled, and compiles through the table of
// abi/JitPlugin.h. Everything here is hidden except the entry point; the
// runtime code linked in (spec and metadata JSON) is a private copy.
//
//===----------------------------------------------------------------------===//
#include "attnc/abi/JitPlugin.h"
#include "attnc/runtime/BuildId.h"
#include "attnc/runtime/Metadata.h"
#include "attnc/runtime/Spec.h"
#include "compiler/Driver/SpecCompiler.h"

#include "llvm/Config/llvm-config.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

char *copyString(const std::string &text) {
  char *out = static_cast<char *>(std::malloc(text.size() + 1));
  if (out)
    std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

void fail(attnc_jit_output *out, const attnc::Status &status) noexcept {
  out->ok = 0;
  out->code = static_cast<int32_t>(status.code());
  try {
    out->error = copyString(status.message());
  } catch (...) {
    out->error = nullptr; // the runtime says the compiler gave no reason
  }
}

void fail(attnc_jit_output *out, attnc::ErrorCode code,
          const char *error) noexcept {
  out->ok = 0;
  out->code = static_cast<int32_t>(code);
  out->error = copyString(error);
}

void compileSpec(const char *specJson, attnc_jit_output *out) {
  *out = attnc_jit_output{};
  if (!specJson) {
    fail(out, attnc::ErrorCode::InvalidArgument, "attnc_jit: null spec");
    return;
  }
  try {
    attnc::Result<attnc::Json> json = attnc::parseJson(specJson);
    if (!json.isOk()) {
      fail(out, attnc::Status(json.status()).withContext("spec JSON"));
      return;
    }
    attnc::Result<attnc::KernelSpec> spec = attnc::specFromJson(*json);
    if (!spec.isOk()) {
      fail(out, spec.status());
      return;
    }
    attnc::SpecCompiler compiler;
    attnc::Result<attnc::CompiledKernel> kernel = compiler.compile(*spec);
    if (!kernel.isOk()) {
      fail(out, kernel.status());
      return;
    }
    attnc::KernelMetadata meta = kernel->meta;
    meta.spec = spec->canonical();
    meta.buildId = attnc::defaultBuildId();
    meta.files.clear();
    std::string metaJson = attnc::writeJson(attnc::metadataToJson(meta), -1);
    out->ptx = copyString(kernel->ptx);
    out->ptx_size = kernel->ptx.size();
    out->meta_json = copyString(metaJson);
    if (!out->ptx || !out->meta_json) {
      std::free(out->ptx);
      std::free(out->meta_json);
      *out = attnc_jit_output{};
      fail(out, attnc::ErrorCode::Internal, "attnc_jit: out of memory");
      return;
    }
    out->ok = 1;
  } catch (const std::exception &e) {
    fail(out, attnc::ErrorCode::Internal, e.what());
  } catch (...) { // nothing may cross the C boundary
    fail(out, attnc::ErrorCode::Internal, "attnc_jit: unknown exception");
  }
}

void freeOutput(attnc_jit_output *out) {
  if (!out)
    return;
  std::free(out->ptx);
  std::free(out->meta_json);
  std::free(out->error);
  *out = attnc_jit_output{};
}

} // namespace

extern "C" __attribute__((visibility("default"))) const attnc_jit_plugin *
attnc_jit_plugin_v1(void) {
  static const std::string description =
      "attnc " ATTNC_VERSION_STRING " compiler (LLVM/MLIR " LLVM_VERSION_STRING
      ")";
  static const attnc_jit_plugin plugin = {
      ATTNC_JIT_PLUGIN_VERSION, attnc::defaultBuildId().c_str(),
      description.c_str(), compileSpec, freeOutput};
  return &plugin;
}
