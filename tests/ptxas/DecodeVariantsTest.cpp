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

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <tuple>

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
  // One warp per 16 packed rows and warp along the keys.
  CHECK(k->meta.block[0] ==
        2 * k->meta.blockM * std::max<int64_t>(1, spec.tuning.warps));
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
    // Warps along the keys: 4 x 32 keys, 8 x 16 keys, and 2 x 2 (row warps
    // x key warps) with q_len 4 and causal.
    spec = decode(32, 8, 128, "bf16", 256, 1, arch);
    spec.tuning = {.blockN = 128, .stages = 3, .warps = 4};
    assembles(spec);
    spec = decode(32, 8, 128, "bf16", 16, 1, arch);
    spec.tuning = {.blockN = 128, .stages = 2, .warps = 8};
    spec.softcap = 30.0;
    assembles(spec);
    spec = decode(16, 2, 128, "fp16", 64, 4, arch);
    spec.tuning = {.blockN = 64, .stages = 3, .warps = 2};
    spec.causal = true;
    assembles(spec);
    // Sinks: the combine kernel takes them after its contract's parameters
    // (SpecCompiler checks both kernels' PTX parameters against what the
    // runtime packs).
    spec = decode(64, 8, 64, "bf16", 16, 1, arch);
    spec.sinks = true;
    assembles(spec);
  }
}

namespace {

/// Compiles and assembles a one-kernel module; no spills.
void assemblesOne(const KernelSpec &spec, const char *entry) {
  INFO("spec " << spec.canonical());
  SpecCompiler compiler;
  Result<CompiledKernel> k = compiler.compile(spec);
  if (!k.isOk())
    FAIL(k.status().message());
  CHECK(k->meta.entry == entry);
  PtxasResult r = runPtxas(k->ptx, spec.arch, ATTNC_PTXAS_PATH);
  INFO(r.log);
  REQUIRE(r.ok);
  REQUIRE(r.kernels.size() == 1);
  const KernelResources &res = r.kernels.front();
  std::printf("%-6s %-4s D=%-3lld page %-3lld %-10s %3lld registers %6lld B "
              "smem, %lld threads, spills %lld/%lld B\n",
              spec.arch.c_str(), spec.dtype.c_str(), (long long)spec.headDim,
              (long long)spec.pageSize, res.name.c_str(),
              (long long)res.registers, (long long)res.sharedBytes,
              (long long)k->meta.block[0], (long long)res.spillStoreBytes,
              (long long)res.spillLoadBytes);
  CHECK_FALSE(res.spills());
}

} // namespace

// The sweep's compiled knobs (tuning.block_n, tuning.stages): each must
// compile and assemble; the defaults must not spill (the others are
// reported, since the sweep times them anyway).
TEST_CASE("decode sweep variants assemble for sm_90a", "[ptxas][decode]") {
  // The GPU sweep's knobs (tests/gpu/DecodeGpuTest.cpp sweepKnobs).
  // (block_n, stages, warps along the keys)
  const std::tuple<int64_t, int64_t, int64_t> knobs[] = {
      {0, 0, 0},  {16, 1, 0},  {32, 1, 0},  {16, 2, 0}, {16, 4, 0},
      {32, 2, 0}, {32, 3, 0},  {32, 4, 0},  {64, 2, 0}, {64, 2, 2},
      {64, 3, 2}, {128, 2, 4}, {128, 3, 4}, {128, 2, 8}};
  for (int64_t page : {16, 256})
    for (auto [bn, st, warps] : knobs) {
      KernelSpec spec = decode(32, 8, 128, "bf16", page, 1, "sm_90a");
      spec.hasLse = false;
      spec.tuning.blockN = bn;
      spec.tuning.stages = st;
      spec.tuning.warps = warps;
      INFO("spec " << spec.canonical());
      SpecCompiler compiler;
      Result<CompiledKernel> k = compiler.compile(spec);
      if (!k.isOk())
        FAIL(k.status().message());
      PtxasResult r = runPtxas(k->ptx, spec.arch, ATTNC_PTXAS_PATH);
      INFO(r.log);
      REQUIRE(r.ok);
      for (const KernelResources &res : r.kernels) {
        std::printf("sweep page %-3lld block_n %-3lld stages %lld warps %lld "
                    "%-15s %3lld registers, dynamic smem %lld B, spills "
                    "%lld/%lld B\n",
                    (long long)page, (long long)(bn ? bn : 16),
                    (long long)(st ? st : 3), (long long)(warps ? warps : 1),
                    res.name.c_str(), (long long)res.registers,
                    (long long)k->meta.dynamicSmem,
                    (long long)res.spillStoreBytes,
                    (long long)res.spillLoadBytes);
        // The default and the ring variants the sweep may promote.
        if (bn <= 16 || st >= 2)
          CHECK_FALSE(res.spills());
      }
    }
}

TEST_CASE("kv_append and lse_merge assemble without spills",
          "[ptxas][decode]") {
  for (const char *arch : {"sm_80", "sm_90a"}) {
    for (auto [hkv, d, page, dtype] :
         {std::tuple<int64_t, int64_t, int64_t, const char *>{8, 128, 16,
                                                              "bf16"},
          {1, 64, 1, "fp16"},
          {4, 256, 64, "bf16"}}) {
      KernelSpec s;
      s.op = "kv_append";
      s.heads = s.kvHeads = hkv;
      s.headDim = d;
      s.dtype = dtype;
      s.pageSize = page;
      s.arch = arch;
      assemblesOne(s, "kv_append");
    }
    KernelSpec m;
    m.op = "lse_merge";
    m.heads = m.kvHeads = 32;
    m.headDim = 128;
    m.hasLse = true;
    m.arch = arch;
    assemblesOne(m, "lse_merge");
  }
}
