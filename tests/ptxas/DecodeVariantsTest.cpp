//===- DecodeVariantsTest.cpp - every decode variant assembles ------------===//
//
// Compiles decode variants through the runtime's compiler hook (attn.decode
// -> split kernel + combine -> mma.sync mapping -> PTX) and assembles each
// for sm_80 and sm_90a: page sizes 1 to 256, q_len 1 and 4 (GQA packing of
// 4 to 64 rows), head dims 64 and 128, bf16/fp16, causal, softcap. Both
// kernels must not spill; registers and shared memory are reported.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver/SpecCompiler.h"
#include "compiler/Target/NVPTX/Ptxas.h"

#include <catch2/catch.hpp>
#include <cstdio>

using namespace attnc;

namespace {

KernelSpec decode(int64_t hq, int64_t hkv, int64_t d, const char *dtype,
                  int64_t page, int64_t maxQLen, const char *arch) {
  KernelSpec s;
  s.op = "decode";
  s.heads = hq;
  s.kvHeads = hkv;
  s.headDim = d;
  s.dtype = dtype;
  s.arch = arch;
  s.hasLse = true;
  s.pageSize = page;
  s.maxQLen = maxQLen;
  return s;
}

void assembles(const KernelSpec &spec) {
  INFO("spec " << spec.canonical());
  SpecCompiler compiler;
  Result<CompiledKernel> k = compiler.compile(spec);
  if (!k.isOk())
    FAIL(k.status().message());
  CHECK(k->meta.entry == "decode_split");
  CHECK(k->meta.block[0] == 2 * k->meta.blockM);
  PtxasResult r = runPtxas(k->ptx, spec.arch, ATTNC_PTXAS_PATH);
  INFO(r.log);
  REQUIRE(r.ok);
  REQUIRE(r.kernels.size() == 2); // decode_split and decode_combine
  for (const KernelResources &res : r.kernels) {
    std::printf("%-6s %-4s D=%-3lld page %-3lld rows %-2lld %-8s %-16s %3lld "
                "registers %6lld B smem, spills %lld/%lld B\n",
                spec.arch.c_str(), spec.dtype.c_str(), (long long)spec.headDim,
                (long long)spec.pageSize, (long long)k->meta.blockM,
                spec.causal ? "causal" : (spec.softcap > 0 ? "softcap" : "-"),
                res.name.c_str(), (long long)res.registers,
                (long long)res.sharedBytes, (long long)res.spillStoreBytes,
                (long long)res.spillLoadBytes);
    CHECK(res.registers > 0);
    CHECK_FALSE(res.spills());
  }
}

} // namespace

TEST_CASE("decode variants assemble for sm_80 and sm_90a without spills",
          "[ptxas][decode]") {
  for (const char *arch : {"sm_80", "sm_90a"}) {
    for (int64_t page : {1, 16, 64, 256})
      assembles(decode(32, 8, 128, "bf16", page, 1, arch));
    KernelSpec spec = decode(8, 2, 128, "fp16", 16, 4, arch);
    spec.causal = true;
    assembles(spec); // 16 rows
    spec = decode(32, 2, 64, "bf16", 16, 4, arch);
    spec.softcap = 30.0;
    assembles(spec);                                  // 64 rows
    assembles(decode(8, 8, 64, "bf16", 32, 1, arch)); // MHA: 1 row of 16
  }
}
