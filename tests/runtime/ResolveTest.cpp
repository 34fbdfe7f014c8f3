//===- ResolveTest.cpp - Hit, rebuild or error ----------------------------===//

#include "TestSupport.h"

#include "attnc/runtime/Resolve.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <fstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace attnc;
using namespace attnc::test;

TEST_CASE("a miss without a compiler names the spec and the cache dir",
          "[resolve]") {
  TempDir dir;
  DiskCache cache(dir.path());
  KernelSpec spec = sampleSpec();
  Result<ResolvedKernel> result =
      resolveKernel(cache, spec, "test-build", ResolveOptions{});
  REQUIRE_FALSE(result.isOk());
  CHECK(result.status().code() == ErrorCode::NotFound);
  CHECK(result.status().message() ==
        "no compiled kernel for spec '" + spec.canonical() + "' (key " +
            cacheKey("test-build", spec.canonical()) +
            ", build id test-build) in cache directory '" + dir.path() +
            "', and no compiler in this process; precompile it with "
            "`attnc bundle`, or enable the JIT compiler (libattnc_jit.so: "
            "attnc_jit_enable; Python does on import)");
}

TEST_CASE("a miss compiles and publishes; a hit does not compile",
          "[resolve]") {
  TempDir dir;
  DiskCache cache(dir.path());
  FakeCompiler compiler;
  ResolveOptions options;
  options.compiler = &compiler;
  KernelSpec spec = sampleSpec();

  Result<ResolvedKernel> first =
      resolveKernel(cache, spec, "test-build", options);
  REQUIRE(first.isOk());
  CHECK(first->compiled);
  CHECK(compiler.calls == 1);
  CHECK(first->entry.key == cacheKey("test-build", spec.canonical()));
  CHECK(first->entry.meta.spec == spec.canonical());
  CHECK(first->entry.meta.buildId == "test-build");

  Result<ResolvedKernel> second =
      resolveKernel(cache, spec, "test-build", options);
  REQUIRE(second.isOk());
  CHECK_FALSE(second->compiled);
  CHECK(compiler.calls == 1);
  CHECK(second->entry.ptx == first->entry.ptx);

  // Without the compiler the cache alone serves it (the AOT bundle path).
  Result<ResolvedKernel> runtimeOnly =
      resolveKernel(cache, spec, "test-build", ResolveOptions{});
  REQUIRE(runtimeOnly.isOk());
  CHECK(runtimeOnly->entry.ptx == first->entry.ptx);

  // Another build id is another key: compiled again.
  REQUIRE(resolveKernel(cache, spec, "other-build", options).isOk());
  CHECK(compiler.calls == 2);
}

TEST_CASE("a damaged entry is rebuilt and reported", "[resolve]") {
  TempDir dir;
  DiskCache cache(dir.path());
  FakeCompiler compiler;
  std::vector<std::string> warnings;
  ResolveOptions options;
  options.compiler = &compiler;
  options.log = [&](const std::string &m) { warnings.push_back(m); };
  KernelSpec spec = sampleSpec();
  Result<ResolvedKernel> first = resolveKernel(cache, spec, "b", options);
  REQUIRE(first.isOk());
  std::string ptxPath = first->entry.dir + "/kernel.ptx";
  std::string ptx = readFile(ptxPath);
  ptx[10] ^= 1;
  writeFile(ptxPath, ptx);

  Result<ResolvedKernel> second = resolveKernel(cache, spec, "b", options);
  REQUIRE(second.isOk());
  CHECK(second->compiled);
  CHECK(compiler.calls == 2);
  CHECK(second->entry.ptx == first->entry.ptx);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0],
             Catch::Contains("was damaged") && Catch::Contains("checksum"));
}

TEST_CASE("an entry holding another spec is replaced", "[resolve]") {
  TempDir dir;
  DiskCache cache(dir.path());
  FakeCompiler compiler;
  ResolveOptions options;
  options.compiler = &compiler;
  options.log = [](const std::string &) {};
  KernelSpec spec = sampleSpec();
  // Publish some other spec's kernel under this spec's key.
  KernelSpec other = sampleSpec();
  other.heads = 16;
  CompiledKernel foreign = *compiler.compile(other);
  foreign.meta.spec = other.canonical();
  foreign.meta.buildId = std::string("b");
  REQUIRE(cache.publish(cacheKey("b", spec.canonical()), foreign).isOk());

  Result<ResolvedKernel> result = resolveKernel(cache, spec, "b", options);
  REQUIRE(result.isOk());
  CHECK(result->compiled);
  CHECK(result->entry.meta.spec == spec.canonical());
}

TEST_CASE("compiler failures and inconsistent metadata are errors",
          "[resolve]") {
  TempDir dir;
  DiskCache cache(dir.path());
  FakeCompiler compiler;
  ResolveOptions options;
  options.compiler = &compiler;
  KernelSpec spec = sampleSpec();

  compiler.fail = true;
  Result<ResolvedKernel> failed = resolveKernel(cache, spec, "b", options);
  REQUIRE_FALSE(failed.isOk());
  CHECK(failed.status().code() == ErrorCode::CompileError);
  CHECK(failed.status().message() ==
        "compiling '" + spec.canonical() + "': fake compiler asked to fail");
  // Nothing published; only the build lock's directory remains.
  CHECK(listDir(dir.path()) == std::vector<std::string>{".locks"});

  compiler.fail = false;
  compiler.block = {2048, 1, 1};
  Result<ResolvedKernel> badMeta = resolveKernel(cache, spec, "b", options);
  REQUIRE_FALSE(badMeta.isOk());
  CHECK_THAT(badMeta.status().message(),
             Catch::Contains("block extents must be in [1, 1024]"));

  KernelSpec invalid = sampleSpec();
  invalid.kvHeads = 3;
  Result<ResolvedKernel> badSpec = resolveKernel(cache, invalid, "b", options);
  REQUIRE_FALSE(badSpec.isOk());
  CHECK(badSpec.status().code() == ErrorCode::InvalidArgument);
}

TEST_CASE("a kernel that cannot be cached is still returned, with a warning",
          "[resolve]") {
  TempDir dir;
  // A cache root that is a regular file: every publish fails.
  std::string root = dir.path() + "/not-a-directory";
  {
    std::ofstream(root) << "x";
  }
  DiskCache cache(root);
  FakeCompiler compiler;
  std::vector<std::string> warnings;
  ResolveOptions options;
  options.compiler = &compiler;
  options.log = [&](const std::string &m) { warnings.push_back(m); };
  KernelSpec spec = sampleSpec();
  Result<ResolvedKernel> r = resolveKernel(cache, spec, "test-build", options);
  REQUIRE(r.isOk());
  CHECK(r->compiled);
  CHECK(r->entry.dir.empty());
  CHECK_FALSE(r->entry.ptx.empty());
  CHECK(r->entry.meta.spec == spec.canonical());
  // The unreadable entry path, then the failed publish.
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0].find("cannot read cache entry") != std::string::npos);
  CHECK(warnings[1].find("using the kernel uncached") != std::string::npos);
}

namespace {

// Takes its time and counts compiles in a file, so that racing threads and
// processes overlap and the count survives the children.
class SlowCountingCompiler : public KernelCompiler {
public:
  explicit SlowCountingCompiler(std::string counter)
      : counter_(std::move(counter)) {}
  Result<CompiledKernel> compile(const KernelSpec &spec) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::ofstream(counter_, std::ios::app) << "c";
    return inner_.compile(spec);
  }

private:
  std::string counter_;
  FakeCompiler inner_;
};

} // namespace

TEST_CASE("concurrent misses of one spec compile once (threads)", "[resolve]") {
  TempDir dir;
  std::string counter = dir.path() + "/compiles";
  KernelSpec spec = sampleSpec();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&] {
      DiskCache cache(dir.path() + "/cache"); // each its own, as Contexts
      SlowCountingCompiler compiler(counter);
      ResolveOptions options;
      options.compiler = &compiler;
      if (resolveKernel(cache, spec, "test-build", options).isOk())
        ++ok;
    });
  for (std::thread &t : threads)
    t.join();
  CHECK(ok == 3);
  CHECK(readFile(counter) == "c");
}

TEST_CASE("concurrent misses of one spec compile once (processes)",
          "[resolve]") {
  TempDir dir;
  std::string counter = dir.path() + "/compiles";
  KernelSpec spec = sampleSpec();
  std::vector<pid_t> children;
  for (int i = 0; i < 3; ++i) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      DiskCache cache(dir.path() + "/cache");
      SlowCountingCompiler compiler(counter);
      ResolveOptions options;
      options.compiler = &compiler;
      ::_exit(resolveKernel(cache, spec, "test-build", options).isOk() ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CHECK(readFile(counter) == "c");
}

TEST_CASE("a build lock is released even when a forked child lives on",
          "[resolve]") {
  TempDir dir;
  DiskCache cache(dir.path());
  const std::string key = cacheKey("test-build", sampleSpec().canonical());
  pid_t child = -1;
  {
    Result<BuildLock> held = cache.lockForBuild(key);
    REQUIRE(held.isOk());
    child = ::fork(); // shares the lock's open file description
    REQUIRE(child >= 0);
    if (child == 0) {
      ::sleep(5);
      ::_exit(0);
    }
  } // released here while the child sleeps
  Result<BuildLock> again =
      cache.lockForBuild(key, std::chrono::milliseconds(500));
  CHECK(again.isOk());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_CASE("a build lock held too long is given up with a reason, and the "
          "waiter is told",
          "[resolve]") {
  TempDir dir;
  DiskCache cache(dir.path());
  const std::string key = cacheKey("test-build", sampleSpec().canonical());
  Result<BuildLock> held = cache.lockForBuild(key);
  REQUIRE(held.isOk());
  std::vector<std::string> told;
  Result<BuildLock> waited =
      cache.lockForBuild(key, std::chrono::milliseconds(2300),
                         [&](const std::string &m) { told.push_back(m); });
  REQUIRE_FALSE(waited.isOk());
  CHECK(waited.status().code() == ErrorCode::Unsupported);
  CHECK(waited.status().message().find("another process has been building") !=
        std::string::npos);
  REQUIRE(told.size() == 1);
  CHECK(told[0].find("waiting for another process's build of " + key) !=
        std::string::npos);
}
