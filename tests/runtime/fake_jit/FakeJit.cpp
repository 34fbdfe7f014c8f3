//===- FakeJit.cpp - Plugins for the JIT loader's tests -------------------===//
//
// Built several times with FAKE_JIT_MODE: a working plugin around the
// tests' FakeCompiler (this build's id), one of another plugin version, one
// of another build id, and one whose compiles fail.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include "attnc/abi/JitPlugin.h"
#include "attnc/runtime/BuildId.h"
#include "attnc/runtime/Metadata.h"

#include <cstdlib>
#include <cstring>

#define FAKE_JIT_GOOD 0
#define FAKE_JIT_OTHER_VERSION 1
#define FAKE_JIT_OTHER_BUILD 2
#define FAKE_JIT_FAILS 3

namespace {

char *copy(const std::string &text) {
  char *out = static_cast<char *>(std::malloc(text.size() + 1));
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

void compile(const char *specJson, attnc_jit_output *out) {
  *out = attnc_jit_output{};
  if (FAKE_JIT_MODE == FAKE_JIT_FAILS) {
    out->error = copy("fake JIT: this plugin always fails");
    return;
  }
  auto json = attnc::parseJson(specJson);
  auto spec = json.isOk() ? attnc::specFromJson(*json)
                          : attnc::Result<attnc::KernelSpec>(json.status());
  if (!spec.isOk()) {
    out->error = copy("fake JIT: " + spec.status().message());
    return;
  }
  attnc::test::FakeCompiler compiler;
  auto kernel = compiler.compile(*spec);
  out->ptx = copy(kernel->ptx);
  out->ptx_size = kernel->ptx.size();
  out->meta_json =
      copy(attnc::writeJson(attnc::metadataToJson(kernel->meta), -1));
  out->ok = 1;
}

void release(attnc_jit_output *out) {
  std::free(out->ptx);
  std::free(out->meta_json);
  std::free(out->error);
  *out = attnc_jit_output{};
}

} // namespace

extern "C" __attribute__((visibility("default"))) const attnc_jit_plugin *
attnc_jit_plugin_v1(void) {
  static const std::string buildId = FAKE_JIT_MODE == FAKE_JIT_OTHER_BUILD
                                         ? "another-build"
                                         : attnc::defaultBuildId();
  static const attnc_jit_plugin plugin = {
      FAKE_JIT_MODE == FAKE_JIT_OTHER_VERSION ? 99u : ATTNC_JIT_PLUGIN_VERSION,
      buildId.c_str(), "fake JIT for tests", compile, release};
  return &plugin;
}
