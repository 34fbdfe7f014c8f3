//===- NvJitLinkTest.cpp - PTX to cubin without a GPU ---------------------===//
//
// ptxas and nvJitLink run on the CPU, so the cubin path of `attnc bundle` is
// tested here: real PTX (from nvcc) becomes an ELF cubin that is cached
// beside the PTX. Exits 77 where neither compiler is installed; the cases
// of one compiler report themselves not run where it is missing.
//
//===----------------------------------------------------------------------===//

#define CATCH_CONFIG_RUNNER
#include "TestSupport.h"

#include "attnc/runtime/NvJitLink.h"
#include "attnc/runtime/Resolve.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace attnc;
using namespace attnc::test;

namespace {
const char *const kFixturePtx =
#include "FixturePtx.inc"
    ;

const CubinLinker &linker() { return **CubinLinker::load(); }
} // namespace

TEST_CASE("ptxas turns PTX into cubins for both targets, whole program",
          "[nvjitlink]") {
  if (linker().ptxas().empty()) {
    WARN("no ptxas found; the ptxas path is not tested");
    return;
  }
  // A private TMPDIR: ptxas's scratch directory must be gone afterwards.
  TempDir scratch;
  const char *oldTmp = std::getenv("TMPDIR");
  std::string saved = oldTmp ? oldTmp : "";
  ::setenv("TMPDIR", scratch.path().c_str(), 1);
  for (const char *arch : {"sm_80", "sm_90a"}) {
    Result<std::string> cubin = linker().link(kFixturePtx, arch);
    INFO(cubin.status().message());
    REQUIRE(cubin.isOk());
    CHECK(cubin->rfind("\x7f"
                       "ELF",
                       0) == 0);
    CHECK(cubin->find("attnc_fixture_attention") != std::string::npos);
  }
  Result<std::string> bad =
      linker().link(".version 8.0\n.target sm_80\n.address_size 64\n"
                    ".visible .entry broken()\n{\n\tnot_an_instruction;\n}\n",
                    "sm_80");
  if (oldTmp)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.status().code() == ErrorCode::CompileError);
  CHECK_THAT(bad.status().message(),
             Catch::StartsWith("ptxas could not compile PTX for sm_80"));
  CHECK_THAT(bad.status().message(), Catch::Contains("not_an_instruction"));
  CHECK(std::filesystem::is_empty(scratch.path()));
}

TEST_CASE("nvJitLink turns PTX into cubins for both targets", "[nvjitlink]") {
  if (linker().library().empty()) {
    WARN("nvJitLink not found; its path is not tested");
    return;
  }
  for (const char *arch : {"sm_80", "sm_90a"}) {
    auto start = std::chrono::steady_clock::now();
    Result<std::string> cubin = linker().linkWithNvJitLink(kFixturePtx, arch);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    INFO(cubin.status().message());
    REQUIRE(cubin.isOk());
    std::printf("nvJitLink %s: %zu-byte cubin in %.1f ms\n", arch,
                cubin->size(), ms);
    CHECK(cubin->rfind("\x7f"
                       "ELF",
                       0) == 0);
    CHECK(cubin->find("attnc_fixture_attention") != std::string::npos);
  }
}

TEST_CASE("nvJitLink errors carry its log", "[nvjitlink]") {
  if (linker().library().empty()) {
    WARN("nvJitLink not found; its path is not tested");
    return;
  }
  Result<std::string> cubin = linker().linkWithNvJitLink(
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry broken()\n{\n\tnot_an_instruction;\n}\n",
      "sm_80");
  REQUIRE_FALSE(cubin.isOk());
  CHECK(cubin.status().code() == ErrorCode::CompileError);
  std::printf("nvJitLink error: %s\n", cubin.status().message().c_str());
  CHECK_THAT(cubin.status().message(),
             Catch::StartsWith("nvJitLink could not compile PTX for sm_80"));
  CHECK(cubin.status().message().size() >
        std::string("nvJitLink could not compile PTX for sm_80").size() + 30);
}

TEST_CASE("a bundle-style resolve caches the cubin beside the PTX",
          "[nvjitlink]") {
  struct PtxCompiler : KernelCompiler {
    Result<CompiledKernel> compile(const KernelSpec &spec) override {
      CompiledKernel kernel;
      kernel.ptx = kFixturePtx;
      kernel.meta.entry = "attnc_fixture_attention";
      kernel.meta.arch = spec.arch;
      kernel.meta.block = {64, 1, 1};
      kernel.meta.gridRule = abi::kGridRuleAttentionFwd;
      kernel.meta.blockM = 64;
      kernel.meta.params = attentionFwdV1Params();
      return kernel;
    }
  } compiler;
  TempDir dir;
  DiskCache cache(dir.path());
  ResolveOptions options;
  options.compiler = &compiler;
  options.cubinLinker = &linker();
  KernelSpec spec = sampleSpec();
  Result<ResolvedKernel> resolved =
      resolveKernel(cache, spec, "build", options);
  REQUIRE(resolved.isOk());
  CHECK(exists(resolved->entry.dir + "/kernel.cubin"));
  REQUIRE(resolved->entry.meta.findFile("kernel.cubin"));
  // Read back (verified) without the compiler or the linker.
  Result<ResolvedKernel> again =
      resolveKernel(cache, spec, "build", ResolveOptions{});
  REQUIRE(again.isOk());
  CHECK(again->entry.cubin == resolved->entry.cubin);
  CHECK(again->entry.cubin.rfind("\x7f"
                                 "ELF",
                                 0) == 0);
}

int main(int argc, char **argv) {
  Result<const CubinLinker *> loaded = CubinLinker::load();
  if (!loaded.isOk()) {
    std::printf("skipped: %s\n", loaded.status().message().c_str());
    return 77;
  }
  std::printf("using ptxas '%s', nvJitLink '%s' (%s)\n",
              (*loaded)->ptxas().c_str(), (*loaded)->library().c_str(),
              (*loaded)->version().c_str());
  return Catch::Session().run(argc, argv);
}
