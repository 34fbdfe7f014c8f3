//===- CacheConcurrencyTest.cpp - Many processes, one cache ---------------===//
//
// Forks processes that all compile and publish the same key at the same
// moment (released together through a pipe), with readers polling the entry
// throughout, and checks that exactly one valid entry results and that no
// reader ever sees a partial one.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "attnc/runtime/Resolve.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <sys/wait.h>
#include <unistd.h>

using namespace attnc;
using namespace attnc::test;

namespace {

constexpr int kCompiled = 10; // child exit code: ran the compiler
constexpr int kHit = 0;       // child exit code: used a cached entry

// 4 MiB of PTX makes each publish take long enough to overlap.
std::string expectedPtx(size_t padding) {
  FakeCompiler compiler;
  compiler.paddingBytes = padding;
  return compiler.compile(sampleSpec())->ptx;
}

// Forks `count` children running body(i); they start together when the
// returned release function is called. Returns their exit codes.
template <typename Body> std::vector<int> runChildren(int count, Body body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < count; ++i) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[1]);
      char byte;
      // Blocks until the parent closes the write end.
      while (::read(fds[0], &byte, 1) > 0) {
      }
      int code = 99;
      try {
        code = body(i);
      } catch (...) {
        code = 98;
      }
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  ::close(fds[0]);
  ::close(fds[1]); // go
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status)
                                      : 128 + WTERMSIG(status));
  }
  return codes;
}

// A writer: resolve (compile + publish on a miss) and check the content.
int writer(const std::string &root, size_t padding) {
  DiskCache cache(root);
  FakeCompiler compiler;
  compiler.paddingBytes = padding;
  ResolveOptions options;
  options.compiler = &compiler;
  Result<ResolvedKernel> resolved =
      resolveKernel(cache, sampleSpec(), "build", options);
  if (!resolved.isOk()) {
    std::fprintf(stderr, "writer: %s\n", resolved.status().message().c_str());
    return 1;
  }
  if (resolved->entry.ptx != expectedPtx(padding))
    return 2;
  return resolved->compiled ? kCompiled : kHit;
}

// A reader: poll the entry without compiling; every hit must be whole and
// no lookup may find a damaged entry.
int reader(const std::string &root, size_t padding) {
  DiskCache cache(root);
  const std::string key = cacheKey("build", sampleSpec().canonical());
  const std::string expected = expectedPtx(padding);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int hits = 0;
  while (hits < 20 && std::chrono::steady_clock::now() < deadline) {
    Result<CacheLookup> lookup = cache.lookup(key);
    if (!lookup.isOk())
      return 3;
    if (!lookup->problem.empty()) {
      std::fprintf(stderr, "reader saw a damaged entry: %s\n",
                   lookup->problem.c_str());
      return 4;
    }
    if (lookup->entry) {
      if (lookup->entry->ptx != expected)
        return 5;
      ++hits;
    }
  }
  return hits == 20 ? kHit : 6;
}

} // namespace

TEST_CASE("racing processes publish exactly one valid entry",
          "[cache][concurrency]") {
  TempDir dir;
  const size_t padding = 4 << 20;
  const int writers = 8;
  const int readers = 4;
  std::vector<int> codes = runChildren(writers + readers, [&](int i) -> int {
    return i < writers ? writer(dir.path(), padding)
                       : reader(dir.path(), padding);
  });
  int compiled = 0;
  for (int i = 0; i < writers + readers; ++i) {
    INFO("child " << i << (i < writers ? " (writer)" : " (reader)"));
    CHECK((codes[i] == kHit || codes[i] == kCompiled));
    compiled += codes[i] == kCompiled;
  }
  CHECK(compiled >= 1);
  std::printf("%d of %d racing writers compiled; one entry won\n", compiled,
              writers);

  const std::string key = cacheKey("build", sampleSpec().canonical());
  // One entry (beside the build locks' directory), no temporaries or
  // trash left behind.
  CHECK(listDir(dir.path()) == std::vector<std::string>{".locks", key});
  DiskCache cache(dir.path());
  Result<CacheLookup> lookup = cache.lookup(key);
  REQUIRE(lookup.isOk());
  REQUIRE(lookup->entry);
  CHECK(lookup->entry->ptx == expectedPtx(padding));
}

TEST_CASE("racing processes replace a damaged entry with one valid entry",
          "[cache][concurrency]") {
  TempDir dir;
  const size_t padding = 1 << 20;
  const std::string key = cacheKey("build", sampleSpec().canonical());
  {
    DiskCache cache(dir.path());
    FakeCompiler compiler;
    compiler.paddingBytes = padding;
    ResolveOptions options;
    options.compiler = &compiler;
    REQUIRE(resolveKernel(cache, sampleSpec(), "build", options).isOk());
    std::string ptxPath = dir.path() + "/" + key + "/kernel.ptx";
    std::string ptx = readFile(ptxPath);
    writeFile(ptxPath, ptx.substr(0, ptx.size() - 100)); // truncated
  }
  std::vector<int> codes =
      runChildren(8, [&](int) -> int { return writer(dir.path(), padding); });
  for (int code : codes)
    CHECK((code == kHit || code == kCompiled));
  CHECK(listDir(dir.path()) == std::vector<std::string>{".locks", key});
  DiskCache cache(dir.path());
  Result<CacheLookup> lookup = cache.lookup(key);
  REQUIRE(lookup->entry);
  CHECK(lookup->entry->ptx == expectedPtx(padding));
}

TEST_CASE("resolving stays correct while another process prunes",
          "[cache][concurrency]") {
  TempDir dir;
  const size_t padding = 256 << 10;
  std::vector<int> codes = runChildren(6, [&](int i) -> int {
    if (i == 0) {
      // The pruner: evict everything, repeatedly.
      DiskCache cache(dir.path());
      for (int round = 0; round < 200; ++round) {
        if (!cache.prune(0).isOk())
          return 7;
        ::usleep(500);
      }
      return kHit;
    }
    for (int round = 0; round < 20; ++round) {
      int code = writer(dir.path(), padding);
      if (code != kHit && code != kCompiled)
        return code;
    }
    return kHit;
  });
  for (int code : codes)
    CHECK(code == kHit);
  // Whatever survived is whole.
  DiskCache cache(dir.path());
  Result<CacheLookup> lookup =
      cache.lookup(cacheKey("build", sampleSpec().canonical()));
  REQUIRE(lookup.isOk());
  CHECK(lookup->problem.empty());
  if (lookup->entry)
    CHECK(lookup->entry->ptx == expectedPtx(padding));
}
