//===- WGMMAVariantsTest.cpp - sm_90a variants through the wgmma mapping --===//
//
// Every sm_90a variant the wgmma mapping takes (head dims 64 and 128, bf16 and
// fp16, no mask / causal / window + softcap, GQA, with and without LSE, one
// and two warpgroups) compiles through the runtime's compiler hook with the
// mapping named in its metadata, carries wgmma in its PTX, and assembles for
// sm_90a without spills; the variants it does not take fall back to
// mma.sync and say why.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver/SpecCompiler.h"
#include "compiler/Target/NVPTX/Ptxas.h"

#include <catch2/catch.hpp>
#include <cstdio>

using namespace attnc;

namespace {
KernelSpec sm90(int64_t d, const char *dtype) {
  KernelSpec s;
  s.heads = 8;
  s.kvHeads = 2;
  s.headDim = d;
  s.dtype = dtype;
  s.arch = "sm_90a";
  s.hasLse = true;
  return s;
}

CompiledKernel compiled(const KernelSpec &spec) {
  INFO("spec " << spec.canonical());
  Result<CompiledKernel> k = SpecCompiler().compile(spec);
  if (!k.isOk())
    FAIL(k.status().message());
  return *k;
}

void assemblesWithWGMMA(const KernelSpec &spec, const char *what) {
  INFO("spec " << spec.canonical());
  CompiledKernel k = compiled(spec);
  CHECK(k.meta.mapping == "wgmma");
  CHECK(k.meta.block[0] == 2 * k.meta.blockM);
  CHECK(k.ptx.find("wgmma.mma_async.sync.aligned.m64n") != std::string::npos);
  CHECK(k.ptx.find("wgmma.fence.sync.aligned") != std::string::npos);
  CHECK(k.ptx.find("fence.proxy.async.shared::cta") != std::string::npos);
  PtxasResult r = runPtxas(k.ptx, spec.arch, ATTNC_PTXAS_PATH);
  INFO(r.log);
  REQUIRE(r.ok);
  REQUIRE(r.kernels.size() == 1);
  const KernelResources &res = r.kernels[0];
  std::printf("wgmma  %-4s D=%-3lld %3lldx%-3lld %-24s %3lld registers %6lld B "
              "dynamic smem, spills %lld/%lld B\n",
              spec.dtype.c_str(), (long long)spec.headDim,
              (long long)k.meta.blockM,
              (long long)(spec.tuning.blockN ? spec.tuning.blockN : 64), what,
              (long long)res.registers, (long long)k.meta.dynamicSmem,
              (long long)res.spillStoreBytes, (long long)res.spillLoadBytes);
  CHECK(res.registers > 0);
  CHECK_FALSE(res.spills());
}
} // namespace

TEST_CASE("sm_90a variants take the wgmma mapping and assemble without spills",
          "[ptxas][wgmma]") {
  for (int64_t d : {64, 128})
    for (const char *dtype : {"bf16", "fp16"}) {
      KernelSpec plain = sm90(d, dtype);
      assemblesWithWGMMA(plain, "no mask");
      KernelSpec causal = plain;
      causal.causal = true;
      assemblesWithWGMMA(causal, "causal");
      KernelSpec w = plain;
      w.windowLeft = 128;
      w.windowRight = 0;
      w.softcap = 30.0;
      w.hasLse = false;
      assemblesWithWGMMA(w, "window+softcap, no LSE");
    }
  KernelSpec two = sm90(128, "bf16"); // two warpgroups
  two.causal = true;
  two.tuning.blockM = 128;
  two.tuning.blockN = 32;
  assemblesWithWGMMA(two, "causal, 2 warpgroups");
  // 64 KiB of tiles: past the 48 KiB of static shared memory.
  KernelSpec big = sm90(128, "bf16");
  big.tuning.blockM = 128;
  big.tuning.blockN = 64;
  assemblesWithWGMMA(big, "2 warpgroups, 64 KiB dynamic shared memory");
  KernelSpec wide = sm90(64, "bf16");
  wide.tuning.blockM = 128;
  wide.tuning.blockN = 128;
  assemblesWithWGMMA(wide, "2 warpgroups, n128");
}

TEST_CASE("sm_90a variants the wgmma mapping cannot take fall back to "
          "mma.sync",
          "[ptxas][wgmma]") {
  for (int64_t d : {96, 192, 256}) {
    CompiledKernel k = compiled(sm90(d, "bf16"));
    CHECK(k.meta.mapping == "mma.sync");
    CHECK(k.meta.mappingWhy.find("fallback") != std::string::npos);
    CHECK(k.ptx.find("wgmma") == std::string::npos);
  }
  KernelSpec ampere = sm90(128, "bf16");
  ampere.arch = "sm_80";
  CHECK(compiled(ampere).meta.mapping == "mma.sync");
}
