//===- WGMMAVariantsTest.cpp - sm_90a variants through the wgmma mapping --===//
//
// Every sm_90a variant the wgmma mapping takes (head dims 64-256, bf16 and
// fp16, no mask / causal / window + softcap, GQA, with and without LSE, one
// and two warpgroups) compiles through the runtime's compiler hook with the
// mapping named in its metadata, carries wgmma in its PTX, and assembles for
// sm_90a without spills; the variants it does not take fall back to
// mma.sync and say why.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Launch.h"
#include "attnc/runtime/Metadata.h"
#include "compiler/Conversion/TileToGPU/WGMMASupport.h"
#include "compiler/Driver/SpecCompiler.h"
#include "compiler/Target/NVPTX/Ptxas.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <tuple>

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

/// sm90(d, dtype) with tiles, ring depth, causality and a kv_sync schedule.
KernelSpec tunedSpec(int64_t d, const char *dtype, bool causal, int64_t blockM,
                     int64_t blockN, int64_t stages, const char *kvSync) {
  KernelSpec s = sm90(d, dtype);
  s.causal = causal;
  s.tuning.blockM = blockM;
  s.tuning.blockN = blockN;
  s.tuning.stages = stages;
  s.tuning.kvSync = kvSync;
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
  // The default schedule: TMA with a producer warpgroup at two consumer
  // warpgroups or more, the mbarrier rings below; the metadata names it.
  const bool tma =
      k.meta.mappingWhy.find("; kv_sync tma,") != std::string::npos;
  CHECK(tma == (spec.tuning.kvSync.empty() ? k.meta.blockM >= 128
                                           : spec.tuning.kvSync == "tma"));
  CHECK(k.meta.block[0] == 2 * k.meta.blockM + (tma ? 128 : 0));
  CHECK((k.ptx.find("cp.async.bulk.tensor.4d") != std::string::npos) == tma);
  CHECK(k.ptx.find("wgmma.mma_async.sync.aligned.m64n") != std::string::npos);
  CHECK(k.ptx.find("wgmma.fence.sync.aligned") != std::string::npos);
  CHECK(k.ptx.find("fence.proxy.async.shared::cta") != std::string::npos);
  PtxasResult r = runPtxas(k.ptx, spec.arch, ATTNC_PTXAS_PATH);
  INFO(r.log);
  REQUIRE(r.ok);
  REQUIRE(r.kernels.size() == 1);
  const KernelResources &res = r.kernels[0];
  std::printf("wgmma  %-4s D=%-3lld %-24s %3lld registers %6lld B "
              "dynamic smem, spills %lld/%lld B (%s)\n",
              spec.dtype.c_str(), (long long)spec.headDim, what,
              (long long)res.registers, (long long)k.meta.dynamicSmem,
              (long long)res.spillStoreBytes, (long long)res.spillLoadBytes,
              k.meta.mappingWhy.c_str());
  CHECK(res.registers > 0);
  // With a producer, the block holds exactly the registers setmaxnreg
  // hands around (fewer at entry and setmaxnreg.inc would wait forever).
  if (tma)
    CHECK(res.registers ==
          wgmma::registerSplit(2 * k.meta.blockM, /*tma=*/true).entry);
  CHECK_FALSE(res.spills());
}
} // namespace

TEST_CASE("sm_90a variants take the wgmma mapping and assemble without spills",
          "[ptxas][wgmma]") {
  for (int64_t d : {64, 128, 192, 256})
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
      if (d <= 192) {
        assemblesWithWGMMA(w, "window+softcap, no LSE");
      } else { // would spill: mma.sync, and the reason says so
        CompiledKernel k = compiled(w);
        CHECK(k.meta.mapping == "mma.sync");
        CHECK_THAT(k.meta.mappingWhy, Catch::Contains("sliding window"));
        KernelSpec s = w;
        s.windowLeft = -1; // softcap alone stays on wgmma
        assemblesWithWGMMA(s, "softcap, no LSE");
      }
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
  // The mbarrier rings (no producer) at the default tiles, on request.
  for (int64_t d : {128, 256}) {
    KernelSpec rings = sm90(d, "bf16");
    rings.causal = true;
    rings.softcap = 30.0;
    rings.tuning.kvSync = "mbarrier";
    assemblesWithWGMMA(rings, "causal+softcap, mbarrier");
  }
}

TEST_CASE("sm_90a variants the wgmma mapping cannot take fall back to "
          "mma.sync",
          "[ptxas][wgmma]") {
  for (int64_t d : {96}) {
    CompiledKernel k = compiled(sm90(d, "bf16"));
    CHECK(k.meta.mapping == "mma.sync");
    CHECK(k.meta.mappingWhy.find("fallback") != std::string::npos);
    CHECK(k.ptx.find("wgmma") == std::string::npos);
  }
  // The wgmma mapping's own knobs on a variant it cannot take: an error
  // that names the knob (kv_sync barrier aside: mma.sync syncs so anyway).
  for (auto [kvSync, rescale, knob] :
       {std::tuple{"tma", "", "tuning.kv_sync \"tma\""},
        std::tuple{"", "exact", "tuning.rescale \"exact\""}}) {
    KernelSpec s = sm90(96, "bf16");
    s.tuning.kvSync = kvSync;
    s.tuning.rescale = rescale;
    Result<CompiledKernel> bad = SpecCompiler().compile(s);
    REQUIRE_FALSE(bad.isOk());
    CHECK_THAT(bad.status().message(),
               Catch::Contains(std::string(knob) +
                               " needs the wgmma mapping, but mma.sync was "
                               "chosen: fallback"));
  }
  KernelSpec barrier = sm90(96, "bf16");
  barrier.tuning.kvSync = "barrier";
  CHECK(compiled(barrier).meta.mapping == "mma.sync");
  KernelSpec ampere = sm90(128, "bf16");
  ampere.arch = "sm_80";
  CHECK(compiled(ampere).meta.mapping == "mma.sync");
}

TEST_CASE("tuning.grid: the metadata's grid rule, and persistent refused off "
          "the tma schedule",
          "[ptxas][wgmma][grid]") {
  // Tiles by name, and the default without a causal mask at D64, at D256 and at
  // tiles whose registers leave no room for the item loop
  // (persistentFits): attention_fwd_v1, named last in mapping_why.
  KernelSpec named = sm90(128, "bf16"), wide = named, d256 = sm90(256, "bf16");
  named.causal = wide.causal = d256.causal = true;
  named.tuning.grid = "tiles";
  wide.tuning = {128, 176, 2, 0};
  for (const KernelSpec &s : {named, sm90(64, "bf16"), d256, wide}) {
    CompiledKernel k = compiled(s);
    INFO(s.canonical());
    CHECK(k.meta.gridRule == "attention_fwd_v1");
    CHECK_THAT(k.meta.mappingWhy,
               Catch::EndsWith(", grid tiles, epilogue tma"));
  }
  // Persistent on the tma schedule (the default for causal attention at
  // D64-D192's default tiles, or named): the same parameters and block
  // under the persistent grid rule.
  for (const char *kvSync : {"", "tma"}) {
    KernelSpec s = sm90(128, "bf16");
    s.causal = true;
    s.tuning.kvSync = kvSync;
    s.tuning.grid = kvSync[0] ? "persistent" : ""; // the default
    CompiledKernel k = compiled(s);
    CHECK(k.meta.gridRule == "attention_fwd_persistent_v1");
    CHECK_THAT(k.meta.mappingWhy,
               Catch::EndsWith(", grid persistent, epilogue tma"));
    KernelSpec tiles = s;
    tiles.tuning.grid = "tiles";
    CompiledKernel t = compiled(tiles);
    CHECK(k.meta.params == t.meta.params);
    CHECK(k.meta.block == t.meta.block);
    CHECK(k.meta.blockM == t.meta.blockM);
  }
  // Persistent where the schedule is not tma: block_m 64 takes mbarrier by
  // default; a variant wgmma does not take falls back to mma.sync.
  KernelSpec narrow = sm90(128, "bf16");
  narrow.tuning.blockM = 64;
  narrow.tuning.grid = "persistent";
  Result<CompiledKernel> bad = SpecCompiler().compile(narrow);
  REQUIRE_FALSE(bad.isOk());
  CHECK_THAT(bad.status().message(),
             Catch::StartsWith("tuning.grid \"persistent\" needs kv_sync "
                               "\"tma\" (only the TMA schedule has persistent "
                               "CTAs), but kv_sync is \"mbarrier\" (the "
                               "default at block_m 64; tma needs block_m >= "
                               "128)"));
  KernelSpec d96 = sm90(96, "bf16");
  d96.tuning.grid = "persistent";
  bad = SpecCompiler().compile(d96);
  REQUIRE_FALSE(bad.isOk());
  CHECK_THAT(bad.status().message(),
             Catch::StartsWith("tuning.grid \"persistent\" needs the wgmma "
                               "mapping, but mma.sync was chosen: fallback"));
  // tiles on a fallback variant: mma.sync's grid anyway.
  d96.tuning.grid = "tiles";
  CHECK(compiled(d96).meta.gridRule == "attention_fwd_v1");
}

TEST_CASE("kv_sync mbarrier: the K/V rings on per-stage mbarriers assemble "
          "without spills, their objects inside the dynamic shared memory",
          "[ptxas][wgmma][mbarrier]") {
  struct Variant {
    int64_t d, blockM, blockN, stages;
    bool causal;
    const char *dtype;
  };
  const Variant variants[] = {
      {128, 128, 128, 2, false, "bf16"}, {128, 128, 128, 2, true, "bf16"},
      {128, 128, 64, 3, true, "bf16"},   {128, 192, 64, 4, false, "bf16"},
      {128, 64, 64, 3, true, "fp16"},    {64, 128, 128, 3, false, "fp16"},
      {64, 256, 64, 2, true, "bf16"}};
  for (const Variant &v : variants) {
    KernelSpec s = tunedSpec(v.d, v.dtype, v.causal, v.blockM, v.blockN,
                             v.stages, "mbarrier");
    INFO("spec " << s.canonical());
    CompiledKernel k = compiled(s);
    CHECK(k.meta.mapping == "wgmma");
    // 4 x stages objects of 8 bytes after Q and the two rings.
    CHECK(k.meta.dynamicSmem ==
          (v.blockM + 2 * v.stages * v.blockN) * v.d * 2 + 32 * v.stages);
    CHECK(k.ptx.find("mbarrier.init.shared.b64") != std::string::npos);
    CHECK(k.ptx.find("cp.async.mbarrier.arrive.noinc.shared.b64") !=
          std::string::npos);
    CHECK(k.ptx.find("mbarrier.try_wait.parity.shared.b64") !=
          std::string::npos);
    CHECK(k.ptx.find("__wg_") == std::string::npos); // no static array
    PtxasResult r = runPtxas(k.ptx, s.arch, ATTNC_PTXAS_PATH);
    INFO(r.log);
    REQUIRE(r.ok);
    REQUIRE(r.kernels.size() == 1);
    const KernelResources &res = r.kernels[0];
    std::printf("wgmma mbarrier %-4s D=%-3lld %3lldx%-3lld s%lld %-7s %3lld "
                "registers %6lld B dynamic + %lld B static smem, spills "
                "%lld/%lld B\n",
                v.dtype, (long long)v.d, (long long)v.blockM,
                (long long)v.blockN, (long long)v.stages,
                v.causal ? "causal" : "", (long long)res.registers,
                (long long)k.meta.dynamicSmem, (long long)res.sharedBytes,
                (long long)res.spillStoreBytes, (long long)res.spillLoadBytes);
    // Only the dynamic-memory symbol is static (1 byte, as without them).
    CHECK(res.sharedBytes <= 16);
    CHECK_FALSE(res.spills());
  }
  // Only the wgmma mapping has the knob: a spec that falls back says so.
  KernelSpec d96 = sm90(96, "bf16");
  d96.tuning.kvSync = "mbarrier";
  Result<CompiledKernel> bad = SpecCompiler().compile(d96);
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.status().message().find("tuning.kv_sync") != std::string::npos);
}

TEST_CASE("kv_sync producer / pingpong: a producer warpgroup, setmaxnreg "
          "within the block's registers, no spills",
          "[ptxas][wgmma][producer]") {
  struct Variant {
    int64_t d, blockM, blockN, stages;
    bool causal;
    const char *dtype, *sync;
  };
  const Variant variants[] = {{128, 128, 128, 2, false, "bf16", "producer"},
                              {128, 128, 128, 2, true, "bf16", "pingpong"},
                              {128, 128, 176, 2, true, "bf16", "pingpong"},
                              {128, 128, 128, 3, false, "fp16", "pingpong"},
                              {128, 192, 64, 2, true, "bf16", "producer"},
                              {128, 64, 64, 3, false, "bf16", "producer"},
                              {64, 128, 176, 3, true, "fp16", "pingpong"},
                              {64, 256, 64, 2, false, "bf16", "pingpong"},
                              {256, 128, 64, 2, true, "bf16", "pingpong"}};
  for (const Variant &v : variants) {
    KernelSpec s =
        tunedSpec(v.d, v.dtype, v.causal, v.blockM, v.blockN, v.stages, v.sync);
    INFO("spec " << s.canonical());
    CompiledKernel k = compiled(s);
    CHECK(k.meta.mapping == "wgmma");
    // The consumer warpgroups and the producer's; Q's full barrier after
    // the rings' 4 x stages objects (the scratch bytes in 16-byte units).
    CHECK(k.meta.block[0] == 2 * v.blockM + 128);
    CHECK(k.meta.dynamicSmem == (v.blockM + 2 * v.stages * v.blockN) * v.d * 2 +
                                    (8 * (4 * v.stages + 1) + 15) / 16 * 16);
    wgmma::RegisterSplit regs =
        wgmma::registerSplit(2 * v.blockM, /*tma=*/false);
    CHECK(k.ptx.find("setmaxnreg.dec.sync.aligned.u32 \t" +
                     std::to_string(regs.producer)) != std::string::npos);
    CHECK(k.ptx.find("setmaxnreg.inc.sync.aligned.u32 \t" +
                     std::to_string(regs.consumer)) != std::string::npos);
    CHECK(k.ptx.find(".minnctapersm 1") != std::string::npos);
    bool pingpong = std::string(v.sync) == "pingpong";
    CHECK((k.ptx.find("bar.arrive") != std::string::npos) == pingpong);
    PtxasResult r = runPtxas(k.ptx, s.arch, ATTNC_PTXAS_PATH);
    INFO(r.log);
    REQUIRE(r.ok);
    REQUIRE(r.kernels.size() == 1);
    const KernelResources &res = r.kernels[0];
    std::printf("wgmma %-8s %-4s D=%-3lld %3lldx%-3lld s%lld %-7s %3lld "
                "registers at entry (producer %d, consumers %d), %6lld B "
                "dynamic smem, spills %lld/%lld B\n",
                v.sync, v.dtype, (long long)v.d, (long long)v.blockM,
                (long long)v.blockN, (long long)v.stages,
                v.causal ? "causal" : "", (long long)res.registers,
                regs.producer, regs.consumer, (long long)k.meta.dynamicSmem,
                (long long)res.spillStoreBytes, (long long)res.spillLoadBytes);
    // The block holds exactly the registers the split hands around: fewer
    // at entry and setmaxnreg.inc would wait forever.
    CHECK(res.registers == regs.entry);
    CHECK(128 * regs.producer + 2 * v.blockM * regs.consumer <=
          (2 * v.blockM + 128) * regs.entry);
    CHECK(r.log.find("C7508") == std::string::npos); // setmaxnreg ignored
    CHECK_FALSE(res.spills());
  }
  // Ping-pong needs two consumer warpgroups.
  KernelSpec one = sm90(128, "bf16");
  one.tuning = {64, 64, 2, 0};
  one.tuning.kvSync = "pingpong";
  Result<CompiledKernel> bad = SpecCompiler().compile(one);
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.status().message().find("two consumer warpgroups") !=
        std::string::npos);
}

TEST_CASE("kv_sync tma: one producer thread copies by TMA from tensor maps "
          "passed by value; no spills",
          "[ptxas][wgmma][tma]") {
  struct Variant {
    int64_t d, blockM, blockN, stages;
    bool causal;
    const char *dtype;
  };
  const Variant variants[] = {{128, 128, 128, 2, false, "bf16"},
                              {128, 128, 176, 2, true, "bf16"},
                              {128, 192, 64, 2, false, "fp16"},
                              {64, 128, 128, 3, true, "bf16"},
                              {256, 128, 64, 2, false, "bf16"}};
  for (const Variant &v : variants) {
    KernelSpec s =
        tunedSpec(v.d, v.dtype, v.causal, v.blockM, v.blockN, v.stages, "tma");
    INFO("spec " << s.canonical());
    CompiledKernel k = compiled(s);
    CHECK(k.meta.mapping == "wgmma");
    CHECK(k.meta.block[0] == 2 * v.blockM + 128);
    // The v1 parameters, then the tensor maps with their box rows: O's
    // after Q's, K's and V's where the default stores O by TMA (one
    // warpgroup's 64 rows): wherever O's staging fits (persistent CTAs
    // need a buffer of its own beside the rings).
    const bool persistent =
        k.meta.mappingWhy.find("grid persistent") != std::string::npos;
    const bool tmaO =
        wgmma::tmaEpilogueFits(v.d, v.blockM, v.blockN, v.stages, persistent);
    CHECK(
        k.meta.mappingWhy.find(tmaO ? "epilogue tma" : "epilogue registers") !=
        std::string::npos);
    // Persistent CTAs over items of equal KV length (no causal bound) take
    // the stream-K tail's seven i32 parameters and the workspace last.
    // (Two consumer warpgroups only: at block_m 192 the three have 160
    // registers each and the tail's values spill.)
    const bool streamK = persistent && !v.causal && v.blockM == 128;
    REQUIRE(k.meta.params.size() ==
            (tmaO ? 26u : 25u) +
                (streamK ? abi::kAttentionStreamKParams.size() + 1 : 0u));
    if (streamK) {
      size_t at = tmaO ? 26 : 25;
      for (const char *name : abi::kAttentionStreamKParams) {
        CHECK(k.meta.params[at].name == name);
        CHECK(k.meta.params[at++].kind == ParamKind::I32);
      }
      CHECK(k.meta.params[at].name == abi::kAttentionWorkspaceParam);
      CHECK(k.meta.params[at].kind == ParamKind::Ptr);
      CHECK(k.ptx.find("ld.acquire.gpu.global.u32") != std::string::npos);
      CHECK(k.ptx.find("st.release.gpu.global.u32") != std::string::npos);
      CHECK(k.ptx.find("vote.sync.all.pred") != std::string::npos);
    }
    const char *names[] = {"q_tmap", "k_tmap", "v_tmap", "o_tmap"};
    const int64_t boxRows[] = {v.blockM, v.blockN, v.blockN, 64};
    for (int t = 0; t < (tmaO ? 4 : 3); ++t) {
      CHECK(k.meta.params[22 + t].name == names[t]);
      CHECK(k.meta.params[22 + t].kind == ParamKind::TensorMap);
      CHECK(k.meta.params[22 + t].boxRows == boxRows[t]);
      CHECK(k.ptx.find(".param .align 64 .b8 attention_fwd_param_" +
                       std::to_string(22 + t) + "[128]") != std::string::npos);
    }
    // O through shared memory and a TMA store; LSE alone from registers.
    // One CTA per tile writes the staging buffer with stmatrix and syncs on
    // bar.sync; persistent CTAs with 4-byte shared stores and a non-aligned
    // barrier.sync (the .aligned forms take the causal KV loop out of the
    // uniform datapath, bench/NOTES-hopper.md, 2026-12-03).
    const bool persistentGrid =
        k.meta.mappingWhy.find("grid persistent") != std::string::npos;
    CHECK((k.ptx.find("stmatrix.sync.aligned.m8n8.x4.shared.b16") !=
           std::string::npos) == (tmaO && !persistentGrid));
    CHECK((k.ptx.find("barrier.sync %r") != std::string::npos) ==
          (tmaO && persistentGrid));
    CHECK((k.ptx.find("cp.async.bulk.tensor.4d.global.shared::cta.tile."
                      "bulk_group") != std::string::npos) == tmaO);
    CHECK((k.ptx.find("cp.async.bulk.wait_group.read") != std::string::npos) ==
          tmaO);
    if (tmaO) {
      KernelSpec registerStores = s;
      registerStores.tuning.epilogue = "registers";
      CompiledKernel r0 = compiled(registerStores);
      CHECK(r0.meta.params.size() ==
            25 + (streamK ? abi::kAttentionStreamKParams.size() + 1 : 0));
      CHECK(r0.ptx.find("cp.async.bulk.tensor.4d.global") == std::string::npos);
      CHECK(r0.ptx.find("stmatrix") == std::string::npos);
    }
    // D / 64 boxes per tile, each completing on the tile's full barrier,
    // which first expects the tile's bytes; no cp.async of tiles left.
    CHECK(k.ptx.find("cp.async.bulk.tensor.4d.shared::cluster.global.tile."
                     "mbarrier::complete_tx::bytes") != std::string::npos);
    CHECK(k.ptx.find("mbarrier.arrive.expect_tx.shared.b64") !=
          std::string::npos);
    CHECK(k.ptx.find("fence.mbarrier_init.release.cluster") !=
          std::string::npos);
    CHECK(k.ptx.find("cp.async.cg.shared.global") == std::string::npos);
    CHECK(k.ptx.find("bar.arrive") != std::string::npos); // ping-pong
    PtxasResult r = runPtxas(k.ptx, s.arch, ATTNC_PTXAS_PATH);
    INFO(r.log);
    REQUIRE(r.ok);
    REQUIRE(r.kernels.size() == 1);
    const KernelResources &res = r.kernels[0];
    wgmma::RegisterSplit regs =
        wgmma::registerSplit(2 * v.blockM, /*tma=*/true);
    // One thread's TMA coordinates: the least setmaxnreg takes.
    CHECK(regs.producer == 24);
    CHECK(k.ptx.find("setmaxnreg.dec.sync.aligned.u32 \t24") !=
          std::string::npos);
    CHECK(k.ptx.find("setmaxnreg.inc.sync.aligned.u32 \t" +
                     std::to_string(regs.consumer)) != std::string::npos);
    std::printf("wgmma tma %-4s D=%-3lld %3lldx%-3lld s%lld %-7s %3lld "
                "registers at entry, %6lld B dynamic smem, spills %lld/%lld "
                "B\n",
                v.dtype, (long long)v.d, (long long)v.blockM,
                (long long)v.blockN, (long long)v.stages,
                v.causal ? "causal" : "", (long long)res.registers,
                (long long)k.meta.dynamicSmem, (long long)res.spillStoreBytes,
                (long long)res.spillLoadBytes);
    CHECK(res.registers == regs.entry);
    CHECK_FALSE(res.spills());
  }
}

TEST_CASE("tuning.epilogue: the default's TMA store only where O's staging "
          "buffer fits beside the tiles",
          "[ptxas][wgmma][epilogue]") {
  // Persistent (causal) at three stages: Q 32 KiB + rings 192 KiB leave no
  // room for O's 32 KiB, so the default stores O from registers; named,
  // the mapping refuses it. One block per tile stages O in Q's buffer.
  KernelSpec s = sm90(128, "bf16");
  s.causal = true;
  s.tuning.stages = 3;
  CompiledKernel k = compiled(s);
  CHECK(k.meta.gridRule == "attention_fwd_persistent_v1");
  CHECK_THAT(k.meta.mappingWhy, Catch::EndsWith(", epilogue registers"));
  KernelSpec tiles = s;
  tiles.tuning.grid = "tiles";
  CHECK_THAT(compiled(tiles).meta.mappingWhy,
             Catch::EndsWith(", grid tiles, epilogue tma"));
  KernelSpec named = s;
  named.tuning.epilogue = "tma";
  Result<CompiledKernel> r = SpecCompiler().compile(named);
  REQUIRE_FALSE(r.isOk());
  CHECK_THAT(r.status().message(),
             Catch::Contains("O's staging buffer (32768 bytes)"));
}
