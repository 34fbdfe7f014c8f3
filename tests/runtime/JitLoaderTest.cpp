//===- JitLoaderTest.cpp - The compiler plugin behind libattnc ------------===//
//
// Fake plugins (fake_jit/FakeJit.cpp) stand in for libattnc_jit.so: what
// the loader accepts, what it refuses and why, and compiles through it.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include "attnc/runtime/JitLoader.h"
#include "attnc/runtime/Resolve.h"

#include <catch2/catch.hpp>
#include <cstdlib>

using namespace attnc;
using namespace attnc::test;

namespace {

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// Sets an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }

private:
  const char *name_;
  bool had_ = false;
  std::string old_;
};

} // namespace

TEST_CASE("a JIT library that does not exist is NotFound, naming the path",
          "[jit]") {
  TempDir dir;
  std::string path = dir.path() + "/libattnc_jit.so";
  Result<JitLibrary> library = loadJitCompiler(path);
  REQUIRE_FALSE(library.isOk());
  CHECK(library.status().code() == ErrorCode::NotFound);
  CHECK(contains(library.status().message(), path));
  CHECK(contains(library.status().message(), "ATTNC_JIT_LIBRARY"));
}

TEST_CASE("$ATTNC_JIT_LIBRARY is the only candidate when set", "[jit]") {
  ScopedEnv env("ATTNC_JIT_LIBRARY", "/nowhere/libattnc_jit.so");
  CHECK(jitLibraryCandidates() ==
        std::vector<std::string>{"/nowhere/libattnc_jit.so"});
  Result<JitLibrary> library = loadJitCompiler();
  REQUIRE_FALSE(library.isOk());
  CHECK(library.status().code() == ErrorCode::NotFound);
  CHECK(contains(library.status().message(), "/nowhere/libattnc_jit.so"));
}

TEST_CASE("without $ATTNC_JIT_LIBRARY the library beside this code comes "
          "first, then the loader's path",
          "[jit]") {
  ScopedEnv env("ATTNC_JIT_LIBRARY", "");
  std::vector<std::string> candidates = jitLibraryCandidates();
  REQUIRE(candidates.size() == 2);
  CHECK(contains(candidates[0], "/libattnc_jit.so"));
  CHECK(candidates[1] == "libattnc_jit.so");
}

TEST_CASE("a shared library that is not a plugin is refused", "[jit]") {
  Result<JitLibrary> library = loadJitCompiler(ATTNC_FAKE_CUDA_PATH);
  REQUIRE_FALSE(library.isOk());
  CHECK(library.status().code() == ErrorCode::InvalidArgument);
  CHECK(contains(library.status().message(), "not an attnc JIT library"));
}

TEST_CASE("a file that exists but does not load is an error, not a miss",
          "[jit]") {
  TempDir dir;
  std::string path = dir.path() + "/libattnc_jit.so";
  writeFile(path, "not an ELF file");
  Result<JitLibrary> library = loadJitCompiler(path);
  REQUIRE_FALSE(library.isOk());
  CHECK(library.status().code() == ErrorCode::InvalidArgument);
  CHECK(contains(library.status().message(), path));
}

TEST_CASE("a plugin of another version or another build is refused", "[jit]") {
  Result<JitLibrary> version = loadJitCompiler(ATTNC_FAKE_JIT_OTHER_VERSION);
  REQUIRE_FALSE(version.isOk());
  CHECK(version.status().code() == ErrorCode::InvalidArgument);
  CHECK(contains(version.status().message(), "plugin version 99"));

  Result<JitLibrary> build = loadJitCompiler(ATTNC_FAKE_JIT_OTHER_BUILD);
  REQUIRE_FALSE(build.isOk());
  CHECK(build.status().code() == ErrorCode::InvalidArgument);
  CHECK(contains(build.status().message(), "build another-build"));
  CHECK(contains(build.status().message(), defaultBuildId()));
}

TEST_CASE("a miss compiles through the plugin, once, and is cached", "[jit]") {
  Result<JitLibrary> library = loadJitCompiler(ATTNC_FAKE_JIT_GOOD);
  REQUIRE(library.isOk());
  CHECK(library->description == "fake JIT for tests");
  // Loaded once per path: the same compiler again.
  Result<JitLibrary> again = loadJitCompiler(ATTNC_FAKE_JIT_GOOD);
  REQUIRE(again.isOk());
  CHECK(again->compiler == library->compiler);

  TempDir dir;
  DiskCache cache(dir.path());
  ResolveOptions options;
  options.compiler = library->compiler.get();
  KernelSpec spec = sampleSpec();
  Result<ResolvedKernel> first =
      resolveKernel(cache, spec, defaultBuildId(), options);
  REQUIRE(first.isOk());
  CHECK(first->compiled);
  CHECK(first->entry.meta.spec == spec.canonical());
  CHECK(first->entry.meta.entry == "attnc_fake_attention");
  CHECK(contains(first->entry.ptx, spec.canonical()));
  Result<ResolvedKernel> second =
      resolveKernel(cache, spec, defaultBuildId(), options);
  REQUIRE(second.isOk());
  CHECK_FALSE(second->compiled);
  CHECK(second->entry.ptx == first->entry.ptx);
}

TEST_CASE("the plugin's compile error reaches the caller", "[jit]") {
  Result<JitLibrary> library = loadJitCompiler(ATTNC_FAKE_JIT_FAILS);
  REQUIRE(library.isOk());
  Result<CompiledKernel> kernel = library->compiler->compile(sampleSpec());
  REQUIRE_FALSE(kernel.isOk());
  CHECK(kernel.status().code() == ErrorCode::CompileError);
  CHECK(kernel.status().message() == "fake JIT: this plugin always fails");
}
