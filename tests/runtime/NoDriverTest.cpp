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

#include <cmath>
#include <dlfcn.h>
#include <functional>

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
  attnc_attention_args args;
  attnc_attention_args_init(&args);
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

TEST_CASE("attnc_attention_validate checks the spec before the arguments",
          "[no-driver]") {
  attnc_spec base;
  attnc_spec_init(&base);
  base.heads = 8;
  base.kv_heads = 2;
  base.head_dim = 64;
  // Valid contiguous arguments (fake addresses, never dereferenced).
  const KernelSpec cxx = sampleSpec();
  const AttentionArgs valid = contiguousArgs(cxx, 2, 100, 300);
  attnc_attention_args args;
  attnc_attention_args_init(&args);
  for (auto [to, from] :
       {std::pair<attnc_tensor *, const TensorArg *>{&args.q, &valid.q},
        {&args.k, &valid.k},
        {&args.v, &valid.v},
        {&args.o, &valid.o}}) {
    to->data = from->data;
    for (int d = 0; d < 4; ++d) {
      to->shape[d] = from->shape[d];
      to->stride[d] = from->stride[d];
    }
  }
  REQUIRE(attnc_attention_validate(&base, &args) == ATTNC_OK);

  struct Case {
    const char *what;
    std::function<void(attnc_spec &)> change;
    const char *message;
  };
  const Case cases[] = {
      {"dtype fp8", [](attnc_spec &s) { s.dtype = "fp8"; }, "dtype \"fp8\""},
      {"arch sm_70", [](attnc_spec &s) { s.arch = "sm_70"; }, "arch \"sm_70\""},
      {"NaN softcap", [](attnc_spec &s) { s.softcap = std::nan(""); },
       "softcap must be finite"},
      {"negative scale", [](attnc_spec &s) { s.scale = -1; },
       "scale must be finite and > 0"},
      {"negative window", [](attnc_spec &s) { s.window_left = -5; },
       "window_left must be >= 0"},
      {"unknown op", [](attnc_spec &s) { s.op = "bogus"; },
       "op \"bogus\" is not supported"},
      {"another op", [](attnc_spec &s) { s.op = "lse_merge"; },
       "checks attention_fwd arguments"},
  };
  for (const Case &c : cases) {
    INFO(c.what);
    attnc_spec spec = base;
    c.change(spec);
    CHECK(attnc_attention_validate(&spec, &args) ==
          ATTNC_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(attnc_last_error()), Catch::Contains(c.message));
  }

  // o aliasing q: once accepted.
  attnc_attention_args aliased = args;
  aliased.o.data = args.q.data;
  CHECK(attnc_attention_validate(&base, &aliased) ==
        ATTNC_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(attnc_last_error()),
             Catch::Contains("o [") && Catch::Contains("overlaps q"));
}
