//===- FuzzSpecJson.cpp - fuzz target: spec files and kernel metadata -----===//
//
// The JSON the runtime reads from users (spec files, `attnc bundle --specs`)
// and from disk (meta.json): parse, validate, and check that whatever is
// accepted survives a round trip unchanged.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/FuzzTarget.h"

#include "attnc/runtime/Metadata.h"
#include "attnc/runtime/Spec.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace attnc;

namespace {
long specFiles = 0, metadata = 0; // accepted inputs, printed at exit
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  std::atexit([] {
    std::printf("spec-json: accepted %ld spec files and %ld meta.json\n",
                specFiles, metadata);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  Result<std::vector<KernelSpec>> specs = parseSpecFile(text);
  if (specs.isOk()) {
    ++specFiles;
    for (const KernelSpec &spec : *specs) {
      if (!validateSpec(spec).isOk())
        fuzzFail("parseSpecFile returned a spec validateSpec rejects");
      (void)spec.canonical();
      (void)cacheKey("fuzz", spec.canonical());
    }
    // Compared by canonical form: that is what keys the cache.
    Result<std::vector<KernelSpec>> again =
        parseSpecFile(writeSpecFile(*specs));
    if (!again.isOk() || again->size() != specs->size())
      fuzzFail("a spec file does not survive writeSpecFile/parseSpecFile");
    for (size_t i = 0; i < specs->size(); ++i)
      if ((*again)[i].canonical() != (*specs)[i].canonical())
        fuzzFail("a spec changes its canonical form in a round trip");
  }
  Result<KernelMetadata> meta = parseMetadata(text);
  if (meta.isOk()) {
    ++metadata;
    Result<KernelMetadata> again = parseMetadata(writeMetadata(*meta));
    if (!again.isOk())
      fuzzFail("writeMetadata wrote metadata parseMetadata rejects");
    (void)validateMetadata(*meta);
  }
  return 0;
}
