//===- NoDriverTest.cpp - Every driver-facing path without a driver -------===//
//
// Without libcuda the runtime must report one clear error from context
// creation (C++ and C), and everything that needs no GPU (cache, specs,
// validation) must keep working.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "attnc/attnc.h"
#include "attnc/runtime/Context.h"
#include "attnc/runtime/Driver.h"
#include "attnc/runtime/Resolve.h"

#include <catch2/catch.hpp>

#include <dlfcn.h>

using namespace attnc;
using namespace attnc::test;

namespace {
const char *kMissing = "libattnc-no-such-driver.so.1";

bool systemHasDriver() {
  void *handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle)
    ::dlclose(handle);
  return handle != nullptr;
}
} // namespace

TEST_CASE("a missing driver is a clear error from loadDriver", "[no-driver]") {
  Result<const DriverApi *> driver = loadDriver(kMissing);
  REQUIRE_FALSE(driver.isOk());
  CHECK(driver.status().code() == ErrorCode::DriverNotFound);
  CHECK_THAT(driver.status().message(),
             Catch::StartsWith(std::string("CUDA driver not found (") +
                               kMissing + "): ") &&
                 Catch::Contains("cannot open shared object file"));
  // Failure is not cached: a second try reports the same.
  CHECK(loadDriver(kMissing).status().message() == driver.status().message());
}

TEST_CASE("a library that is not a CUDA driver is rejected", "[no-driver]") {
  Result<const DriverApi *> driver = loadDriver("libm.so.6");
  REQUIRE_FALSE(driver.isOk());
  CHECK(driver.status().code() == ErrorCode::DriverNotFound);
  CHECK_THAT(driver.status().message(),
             Catch::StartsWith("CUDA driver libm.so.6 is too old or not a "
                               "CUDA driver: missing cuInit, "));
}

TEST_CASE("creating a context without a driver fails cleanly", "[no-driver]") {
  TempDir dir;
  ContextOptions options;
  options.cacheDir = dir.path();
  options.driverLibrary = kMissing;
  Result<std::unique_ptr<Context>> context = Context::create(options);
  REQUIRE_FALSE(context.isOk());
  CHECK(context.status().code() == ErrorCode::DriverNotFound);
  CHECK_THAT(context.status().message(),
             Catch::StartsWith("CUDA driver not found ("));

  if (systemHasDriver()) {
    WARN("libcuda.so.1 exists here; the default-path case is not run");
    return;
  }
  // The default library name, as a user on a CPU-only machine would hit it.
  Result<std::unique_ptr<Context>> byDefault =
      Context::create(ContextOptions{});
  REQUIRE_FALSE(byDefault.isOk());
  CHECK_THAT(byDefault.status().message(),
             Catch::StartsWith("CUDA driver not found (libcuda.so.1): "));
}

TEST_CASE("the C ABI reports a missing driver", "[no-driver][capi]") {
  attnc_context_options options;
  attnc_context_options_init(&options);
  options.driver_library = kMissing;
  attnc_context *ctx = reinterpret_cast<attnc_context *>(0x1);
  CHECK(attnc_context_create(&options, &ctx) == ATTNC_ERROR_DRIVER_NOT_FOUND);
  CHECK(ctx == nullptr);
  CHECK_THAT(attnc_last_error(), Catch::StartsWith("CUDA driver not found ("));
  CHECK(std::string(attnc_status_string(ATTNC_ERROR_DRIVER_NOT_FOUND)) ==
        "DriverNotFound");
  CHECK(attnc_context_create(&options, nullptr) ==
        ATTNC_ERROR_INVALID_ARGUMENT);
  attnc_context_destroy(nullptr); // harmless
  CHECK(std::string(attnc_kernel_entry(nullptr)).empty());

  if (!systemHasDriver()) {
    CHECK(attnc_context_create(nullptr, &ctx) == ATTNC_ERROR_DRIVER_NOT_FOUND);
    CHECK_THAT(attnc_last_error(),
               Catch::StartsWith("CUDA driver not found (libcuda.so.1): "));
  }
}

TEST_CASE("GPU-free parts keep working without a driver", "[no-driver]") {
  TempDir dir;
  DiskCache cache(dir.path());
  FakeCompiler compiler;
  ResolveOptions options;
  options.compiler = &compiler;
  // The `attnc bundle` path: compile into the cache with no GPU at all.
  Result<ResolvedKernel> resolved =
      resolveKernel(cache, sampleSpec(), defaultBuildId(), options);
  REQUIRE(resolved.isOk());
  CHECK(resolved->entry.meta.buildId == defaultBuildId());
  CHECK(std::string(attnc_build_id()) == defaultBuildId());
  CHECK_FALSE(defaultBuildId().empty());
  CHECK(std::string(attnc_version()) == "0.1.0");

  attnc_spec spec;
  attnc_spec_init(&spec);
  spec.heads = 8;
  spec.kv_heads = 2;
  spec.head_dim = 64;
  attnc_attention_args args{};
  CHECK(attnc_attention_validate(&spec, &args) == ATTNC_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(attnc_last_error()) ==
        "invalid attention arguments: q: data pointer is null");

  setenv("ATTNC_CACHE_DIR", dir.path().c_str(), 1);
  CHECK(std::string(attnc_cache_dir(nullptr)) == dir.path());
  size_t removed = 0;
  CHECK(attnc_cache_clear(nullptr, &removed) == ATTNC_OK);
  CHECK(removed == 1);
  unsetenv("ATTNC_CACHE_DIR");
}
