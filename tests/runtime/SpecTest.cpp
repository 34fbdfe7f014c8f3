//===- SpecTest.cpp - KernelSpec canonical form, key, JSON ----------------===//

#include "TestSupport.h"

#include "attnc/runtime/Hash.h"
#include "attnc/runtime/Spec.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

using namespace attnc;
using attnc::test::sampleSpec;

TEST_CASE("scales that round to the same float are one kernel", "[spec]") {
  // 1/sqrt(128) as C++ computes it, as Python's 128 ** -0.5 gives it (one
  // ulp apart in double), and the default: the kernel multiplies in f32.
  KernelSpec a = sampleSpec(), b = sampleSpec(), d = sampleSpec();
  a.headDim = b.headDim = d.headDim = 128;
  a.scale = 0.08838834764831843;
  b.scale = 0.08838834764831845;
  CHECK(a.canonical() == b.canonical());
  CHECK(a.canonical() == d.canonical());
  CHECK_THAT(a.canonical(), Catch::Contains(";scale=0.088388346;"));
  // A scale one float apart is another kernel.
  b.scale = double(std::nextafter(float(*a.scale), 1.0f));
  CHECK(a.canonical() != b.canonical());
}

TEST_CASE("causal with a window (left, -1) is causal with (left, 0)",
          "[spec]") {
  // FlashAttention's convention for causal=True, window=(left, -1).
  KernelSpec a = sampleSpec(), b = sampleSpec();
  a.causal = b.causal = true;
  a.windowLeft = b.windowLeft = 64;
  a.windowRight = -1;
  b.windowRight = 0;
  CHECK(a.canonical() == b.canonical());
  // Without causal, (64, -1) is another window than (64, 0).
  a.causal = b.causal = false;
  CHECK(a.canonical() != b.canonical());
  // Causal without a left bound: no window either way.
  a.causal = true;
  a.windowLeft = -1;
  CHECK_THAT(a.canonical(), Catch::Contains(";window_right=-1;"));
}

TEST_CASE("canonical spec string prints every field in a fixed order",
          "[spec]") {
  CHECK(sampleSpec().canonical() ==
        "op=attention_fwd;dtype=bf16;heads=8;kv_heads=2;head_dim=64;"
        "causal=0;window_left=-1;window_right=-1;softcap=0;scale=0.125;"
        "has_lse=0;arch=sm_90a;custom_ir=none;block_m=0;block_n=0;stages=0;"
        "warps=0");

  KernelSpec spec = sampleSpec();
  spec.dtype = "fp16";
  spec.headDim = 128;
  spec.causal = true;
  spec.windowLeft = 256;
  spec.windowRight = 0;
  spec.softcap = 30.0;
  spec.scale = 0.1;
  spec.hasLse = true;
  spec.arch = "sm_80";
  spec.customIr = "func.func @f() { return }";
  spec.tuning = {128, 64, 3, 8};
  CHECK(spec.canonical() ==
        "op=attention_fwd;dtype=fp16;heads=8;kv_heads=2;head_dim=128;"
        "causal=1;window_left=256;window_right=0;softcap=30;scale=0.1;"
        "has_lse=1;arch=sm_80;custom_ir=" +
            xxh3_128("func.func @f() { return }").hex() +
            ";block_m=128;block_n=64;stages=3;warps=8");
}

TEST_CASE("the cache key is stable", "[spec]") {
  // A golden value: if this changes, every deployed cache is invalidated;
  // bump kCacheLayoutVersion on purpose, then update it here.
  CHECK(cacheKey("test-build", sampleSpec().canonical()) ==
        "04df2d540d368d229ea84680fb51355e");
  CHECK(cacheKey("test-build", sampleSpec().canonical()) ==
        cacheKey("test-build", sampleSpec().canonical()));
  // The key hashes the key-format version first: entries written under the
  // FNV-1a keys of format v1 are never looked up (the same inputs gave
  // 9e369da001012409410d131e314ce49f), so they are not misread.
  FieldHasher v1Fields;
  v1Fields.updateField("attnc-cache-v1");
  v1Fields.updateField("test-build");
  v1Fields.updateField(sampleSpec().canonical());
  CHECK(cacheKey("test-build", sampleSpec().canonical()) !=
        v1Fields.digest().hex());
  CHECK(cacheKey("test-build", sampleSpec().canonical()) !=
        "9e369da001012409410d131e314ce49f");
  // Nor are entries of format v2, whose meta.json (meta_version 2) lacks
  // the fields a v3 runtime reads (the same inputs gave
  // de9ef11a7f08583f93a4e7cf7287a0e0).
  FieldHasher v2Fields;
  v2Fields.updateField("attnc-cache-v2");
  v2Fields.updateField("test-build");
  v2Fields.updateField(sampleSpec().canonical());
  CHECK(v2Fields.digest().hex() == "de9ef11a7f08583f93a4e7cf7287a0e0");
  CHECK(cacheKey("test-build", sampleSpec().canonical()) !=
        v2Fields.digest().hex());
}

TEST_CASE("an absent scale and an explicit 1/sqrt(d) are one kernel",
          "[spec]") {
  KernelSpec implicit = sampleSpec();
  KernelSpec explicitScale = sampleSpec();
  explicitScale.scale = 1.0 / std::sqrt(64.0);
  CHECK(implicit.canonical() == explicitScale.canonical());
  KernelSpec nanScale = sampleSpec();
  nanScale.scale = std::nan("");
  CHECK(nanScale.canonical() == implicit.canonical());
  CHECK(implicit.effectiveScale() == 0.125);
}

TEST_CASE("every spec field and the build id change the key", "[spec]") {
  using Mutation = std::function<void(KernelSpec &)>;
  const std::vector<std::pair<const char *, Mutation>> mutations = {
      {"op", [](KernelSpec &s) { s.op = "attention_bwd"; }},
      {"dtype", [](KernelSpec &s) { s.dtype = "fp16"; }},
      {"heads", [](KernelSpec &s) { s.heads = 16; }},
      {"kv_heads", [](KernelSpec &s) { s.kvHeads = 8; }},
      {"head_dim",
       [](KernelSpec &s) {
         s.headDim = 128;
         s.scale = 0.125; // keep the scale fixed: only head_dim changes
       }},
      {"causal", [](KernelSpec &s) { s.causal = true; }},
      {"window_left", [](KernelSpec &s) { s.windowLeft = 128; }},
      {"window_right", [](KernelSpec &s) { s.windowRight = 0; }},
      {"softcap", [](KernelSpec &s) { s.softcap = 50.0; }},
      {"scale", [](KernelSpec &s) { s.scale = 0.5; }},
      {"has_lse", [](KernelSpec &s) { s.hasLse = true; }},
      {"arch", [](KernelSpec &s) { s.arch = "sm_80"; }},
      {"custom_ir", [](KernelSpec &s) { s.customIr = "module {}"; }},
      {"block_m", [](KernelSpec &s) { s.tuning.blockM = 128; }},
      {"block_n", [](KernelSpec &s) { s.tuning.blockN = 64; }},
      {"stages", [](KernelSpec &s) { s.tuning.stages = 2; }},
      {"warps", [](KernelSpec &s) { s.tuning.warps = 4; }},
  };
  const KernelSpec base = sampleSpec();
  const std::string baseCanonical = base.canonical();

  // One mutation per canonical field, so a new field without a test here
  // fails this check.
  size_t fields =
      1 + std::count(baseCanonical.begin(), baseCanonical.end(), ';');
  CHECK(mutations.size() == fields);

  std::set<std::string> keys = {cacheKey("b1", baseCanonical)};
  for (const auto &[name, mutate] : mutations) {
    KernelSpec spec = base;
    mutate(spec);
    INFO("field " << name);
    std::string canonical = spec.canonical();
    CHECK(canonical != baseCanonical);
    CHECK(canonical.find(std::string(name) + "=") != std::string::npos);
    CHECK(keys.insert(cacheKey("b1", canonical)).second);
    CHECK_FALSE(spec == base);
    CHECK(KernelSpecHash()(spec) != KernelSpecHash()(base));
  }
  CHECK(keys.insert(cacheKey("b2", baseCanonical)).second);
  // Sinks: a field printed only when set (the other specs keep their keys).
  KernelSpec sinks = base;
  sinks.sinks = true;
  CHECK(sinks.canonical().find(";sinks=1;") != std::string::npos);
  CHECK(keys.insert(cacheKey("b1", sinks.canonical())).second);
  CHECK(KernelSpecHash()(sinks) != KernelSpecHash()(base));
  // Varlen likewise.
  CHECK(base.canonical().find("varlen") == std::string::npos);
  KernelSpec varlen = base;
  varlen.varlen = true;
  CHECK(varlen.canonical().find(";varlen=1;") != std::string::npos);
  CHECK(keys.insert(cacheKey("b1", varlen.canonical())).second);
  CHECK(KernelSpecHash()(varlen) != KernelSpecHash()(base));
  CHECK_FALSE(varlen == base);
  // Custom IR content, not just presence, matters.
  KernelSpec ir1 = base, ir2 = base;
  ir1.customIr = "module { a }";
  ir2.customIr = "module { b }";
  CHECK(ir1.canonical() != ir2.canonical());
}

TEST_CASE("spec validation explains what is wrong", "[spec]") {
  auto error = [](std::function<void(KernelSpec &)> mutate) {
    KernelSpec spec = sampleSpec();
    mutate(spec);
    Status status = validateSpec(spec);
    CHECK(status.code() == ErrorCode::InvalidArgument);
    return status.message();
  };
  CHECK(validateSpec(sampleSpec()).isOk());
  CHECK(error([](KernelSpec &s) { s.op = "matmul"; }) ==
        "invalid kernel spec: op \"matmul\" is not supported (expected "
        "\"attention_fwd\", \"decode\", \"lse_merge\", \"kv_append\", "
        "\"silu_mul\", \"gelu_mul\", \"add_rmsnorm\" or \"rope\")");
  CHECK(error([](KernelSpec &s) { s.dtype = "fp32"; }) ==
        "invalid kernel spec: dtype \"fp32\" is not supported (expected "
        "\"bf16\" or \"fp16\")");
  CHECK(error([](KernelSpec &s) { s.heads = 0; }) ==
        "invalid kernel spec: heads must be >= 1 (got 0)");
  CHECK(error([](KernelSpec &s) { s.kvHeads = 3; }) ==
        "invalid kernel spec: heads (8) must be a multiple of kv_heads (3)");
  CHECK(error([](KernelSpec &s) { s.headDim = -1; }) ==
        "invalid kernel spec: head_dim must be >= 1 (got -1)");
  CHECK(error([](KernelSpec &s) { s.windowLeft = -2; }) ==
        "invalid kernel spec: window_left must be >= 0, or -1 for unbounded "
        "(got -2)");
  CHECK(error([](KernelSpec &s) { s.softcap = -1; }) ==
        "invalid kernel spec: softcap must be finite and >= 0, 0 meaning "
        "none (got -1)");
  CHECK(error([](KernelSpec &s) { s.scale = 0.0; }) ==
        "invalid kernel spec: scale must be finite and > 0 (got 0)");
  CHECK(error([](KernelSpec &s) { s.arch = "sm_75"; }) ==
        "invalid kernel spec: arch \"sm_75\" is not supported (expected "
        "\"sm_80\" or \"sm_90a\")");
  CHECK(error([](KernelSpec &s) {
          s.op = "kv_append";
          s.pageSize = 16;
          s.sinks = true;
        }) == "invalid kernel spec: sinks are an attention_fwd and decode "
              "field; op \"kv_append\" takes none");
  CHECK(error([](KernelSpec &s) {
          s.op = "decode";
          s.pageSize = 16;
          s.varlen = true;
        }) == "invalid kernel spec: varlen is an attention_fwd field; op "
              "\"decode\" takes none");
  {
    // kv_sync "tma", the persistent grid and the TMA store of O are varlen
    // schedules (the TMA copies take each sequence's first row; items read
    // their sequence; a warpgroup's rows past the end are stored from
    // registers).
    KernelSpec tma = sampleSpec();
    tma.varlen = true;
    tma.tuning.kvSync = "tma";
    tma.tuning.grid = "persistent";
    tma.tuning.epilogue = "tma";
    CHECK(validateSpec(tma).isOk());
  }
  CHECK(error([](KernelSpec &s) { s.tuning.stages = -1; }) ==
        "invalid kernel spec: tuning.stages must be >= 0, 0 meaning default "
        "(got -1)");
}

TEST_CASE("specs round-trip through JSON", "[spec]") {
  KernelSpec plain = sampleSpec();
  KernelSpec full = sampleSpec();
  full.causal = true;
  full.windowLeft = 64;
  full.softcap = 20.5;
  full.scale = 0.3;
  full.hasLse = true;
  full.customIr = "module {\n  \"quoted\" \\ \n}";
  full.tuning = {64, 128, 2, 4};
  full.sinks = true;
  full.varlen = true;
  for (const KernelSpec &spec : {plain, full}) {
    Result<KernelSpec> back = specFromJson(specToJson(spec));
    REQUIRE(back.isOk());
    CHECK(*back == spec);
    CHECK(back->canonical() == spec.canonical());
  }
  Result<std::vector<KernelSpec>> file =
      parseSpecFile(writeSpecFile({plain, full}));
  REQUIRE(file.isOk());
  REQUIRE(file->size() == 2);
  CHECK((*file)[0] == plain);
  CHECK((*file)[1] == full);
}

TEST_CASE("spec files fill defaults and reject unknown keys", "[spec]") {
  Result<std::vector<KernelSpec>> specs = parseSpecFile(R"({
    "specs": [
      {"dtype": "bf16", "heads": 32, "head_dim": 128},
      {"dtype": "fp16", "heads": 32, "kv_heads": 8, "head_dim": 64,
       "causal": true, "scale": null, "arch": "sm_80",
       "tuning": {"block_m": 128}}
    ]
  })");
  REQUIRE(specs.isOk());
  const KernelSpec &first = (*specs)[0];
  CHECK(first.op == "attention_fwd");
  CHECK(first.kvHeads == 32);
  CHECK(first.windowLeft == -1);
  CHECK_FALSE(first.scale.has_value());
  CHECK(first.arch == "sm_90a");
  CHECK((*specs)[1].tuning.blockM == 128);
  CHECK((*specs)[1].tuning.blockN == 0);

  auto error = [](std::string_view text) {
    Result<std::vector<KernelSpec>> result = parseSpecFile(text);
    REQUIRE_FALSE(result.isOk());
    return result.status().message();
  };
  CHECK(error(R"({"specs": [{"dtype": "bf16", "heads": 8, "head_dim": 64,
                             "casual": true}]})") ==
        "specs[0]: unknown key \"casual\"");
  CHECK(error(R"({"specs": [], "extra": 1})") ==
        "spec file: unknown key \"extra\"");
  CHECK(error(R"({"spec": []})") ==
        "spec file: missing required key \"specs\"");
  CHECK(error(R"({"specs": [{"dtype": "bf16", "head_dim": 64}]})") ==
        "specs[0]: missing required key \"heads\"");
  CHECK(error(R"({"specs": [{"dtype": "bf16", "heads": "8",
                             "head_dim": 64}]})") ==
        "specs[0].heads: expected integer but found string");
  CHECK(error(R"({"specs": [{"dtype": "bf16", "heads": 8, "head_dim": 64,
                             "scale": "auto"}]})") ==
        "specs[0].scale: expected number or null but found string");
  CHECK(error(R"({"specs": [{"dtype": "bf16", "heads": 8, "head_dim": 64,
                             "tuning": {"blockm": 64}}]})") ==
        "specs[0].tuning: unknown key \"blockm\"");
  CHECK(error(R"({"specs": [{"dtype": "bf16", "heads": 8, "kv_heads": 3,
                             "head_dim": 64}]})") ==
        "specs[0]: invalid kernel spec: heads (8) must be a multiple of "
        "kv_heads (3)");
  CHECK(error(R"({"specs": [1]})") ==
        "specs[0]: expected an object but found integer");
  CHECK(error("{\"specs\": [}").rfind("JSON parse error at line 1", 0) == 0);
}

TEST_CASE("tuning.kv_sync is part of the key only when set", "[spec]") {
  KernelSpec spec = sampleSpec();
  spec.op = "attention_fwd";
  spec.arch = "sm_90a";
  REQUIRE(validateSpec(spec).isOk());
  std::string plain = spec.canonical();
  CHECK(plain.find("kv_sync") == std::string::npos);
  KernelSpec mbar = spec;
  mbar.tuning.kvSync = "mbarrier";
  REQUIRE(validateSpec(mbar).isOk());
  CHECK(mbar.canonical().find(";kv_sync=mbarrier") != std::string::npos);
  CHECK(cacheKey("b", mbar.canonical()) != cacheKey("b", plain));
  CHECK(KernelSpecHash{}(mbar) != KernelSpecHash{}(spec));
  // Spec files carry it; unknown values, other ops and sm_80 are errors.
  Result<TuningConfig> t = tuningFromJson(tuningToJson(mbar.tuning), "tuning");
  REQUIRE(t.isOk());
  CHECK(t->kvSync == "mbarrier");
  KernelSpec bad = mbar;
  bad.tuning.kvSync = "fence";
  CHECK(validateSpec(bad).message().find("tuning.kv_sync \"fence\"") !=
        std::string::npos);
  bad = mbar;
  bad.arch = "sm_80";
  CHECK(validateSpec(bad).message().find("sm_90a") != std::string::npos);
  bad = mbar;
  bad.op = "silu_mul";
  bad.hidden = 64;
  CHECK(validateSpec(bad).message().find("attention_fwd") != std::string::npos);
  KernelSpec barrier = spec;
  barrier.tuning.kvSync = "barrier";
  CHECK(validateSpec(barrier).isOk());
}

TEST_CASE("tuning.rescale is part of the key only when set", "[spec]") {
  KernelSpec spec = sampleSpec();
  spec.op = "attention_fwd";
  spec.arch = "sm_90a";
  REQUIRE(validateSpec(spec).isOk());
  std::string plain = spec.canonical();
  CHECK(plain.find("rescale") == std::string::npos);
  KernelSpec exact = spec;
  exact.tuning.rescale = "exact";
  REQUIRE(validateSpec(exact).isOk());
  CHECK(exact.canonical().find(";rescale=exact") != std::string::npos);
  CHECK(cacheKey("b", exact.canonical()) != cacheKey("b", plain));
  CHECK(KernelSpecHash{}(exact) != KernelSpecHash{}(spec));
  Result<TuningConfig> t = tuningFromJson(tuningToJson(exact.tuning), "tuning");
  REQUIRE(t.isOk());
  CHECK(t->rescale == "exact");
  KernelSpec bad = exact;
  bad.tuning.rescale = "lazy";
  CHECK(validateSpec(bad).message().find("tuning.rescale \"lazy\"") !=
        std::string::npos);
  bad = exact;
  bad.arch = "sm_80";
  CHECK(validateSpec(bad).message().find("wgmma") != std::string::npos);
  KernelSpec threshold = spec;
  threshold.tuning.rescale = "threshold";
  CHECK(validateSpec(threshold).isOk());
}

TEST_CASE("tuning.grid is part of the key only when set", "[spec]") {
  KernelSpec spec = sampleSpec();
  spec.op = "attention_fwd";
  spec.arch = "sm_90a";
  REQUIRE(validateSpec(spec).isOk());
  std::string plain = spec.canonical();
  CHECK(plain.find("grid") == std::string::npos);
  CHECK(tuningToJson(spec.tuning).find("grid") == nullptr);
  KernelSpec persistent = spec;
  persistent.tuning.grid = "persistent";
  REQUIRE(validateSpec(persistent).isOk());
  CHECK(persistent.canonical().find(";grid=persistent") != std::string::npos);
  CHECK(cacheKey("b", persistent.canonical()) != cacheKey("b", plain));
  CHECK(KernelSpecHash{}(persistent) != KernelSpecHash{}(spec));
  KernelSpec tiles = spec;
  tiles.tuning.grid = "tiles";
  REQUIRE(validateSpec(tiles).isOk());
  // "tiles" names the default's grid, but not the default's key: a spec
  // that names it keeps it when the default changes.
  CHECK(cacheKey("b", tiles.canonical()) != cacheKey("b", plain));
  CHECK(cacheKey("b", tiles.canonical()) !=
        cacheKey("b", persistent.canonical()));
  CHECK(KernelSpecHash{}(tiles) != KernelSpecHash{}(persistent));

  // Round trip: the tuning object and a whole spec file.
  Result<TuningConfig> t =
      tuningFromJson(tuningToJson(persistent.tuning), "tuning");
  REQUIRE(t.isOk());
  CHECK(t->grid == "persistent");
  persistent.tuning.kvSync = "tma";
  Result<std::vector<KernelSpec>> file =
      parseSpecFile(writeSpecFile({persistent, tiles}));
  REQUIRE(file.isOk());
  REQUIRE(file->size() == 2);
  CHECK((*file)[0] == persistent);
  CHECK((*file)[1] == tiles);
  Result<std::vector<KernelSpec>> parsed = parseSpecFile(R"({"specs": [
    {"op": "attention_fwd", "dtype": "bf16", "heads": 8, "head_dim": 128,
     "arch": "sm_90a", "tuning": {"kv_sync": "tma", "grid": "persistent"}}]})");
  REQUIRE(parsed.isOk());
  CHECK((*parsed)[0].tuning.grid == "persistent");

  // Invalid: an unknown value, another op or arch, a schedule other than
  // tma, a forced mma.sync.
  KernelSpec bad = spec;
  bad.tuning.grid = "waves";
  CHECK(validateSpec(bad).message().find("tuning.grid \"waves\"") !=
        std::string::npos);
  Result<std::vector<KernelSpec>> badFile = parseSpecFile(R"({"specs": [
    {"op": "attention_fwd", "dtype": "bf16", "heads": 8, "head_dim": 128,
     "tuning": {"grid": "waves"}}]})");
  REQUIRE_FALSE(badFile.isOk());
  CHECK_THAT(badFile.status().message(), Catch::Contains("tuning.grid"));
  bad = tiles;
  bad.arch = "sm_80";
  CHECK_THAT(validateSpec(bad).message(),
             Catch::Contains("tuning.grid applies to op \"attention_fwd\" on "
                             "arch \"sm_90a\" only"));
  bad = tiles;
  bad.op = "decode";
  bad.pageSize = 16;
  bad.maxQLen = 1;
  CHECK_THAT(validateSpec(bad).message(), Catch::Contains("tuning.grid"));
  for (const char *kvSync : {"mbarrier", "barrier", "producer", "pingpong"}) {
    bad = persistent;
    bad.tuning.kvSync = kvSync;
    INFO("kv_sync " << kvSync);
    CHECK_THAT(validateSpec(bad).message(),
               Catch::Contains("tuning.grid \"persistent\" needs "
                               "tuning.kv_sync \"tma\""));
    bad.tuning.grid = "tiles"; // any schedule has one block per item
    CHECK(validateSpec(bad).isOk());
  }
  bad = persistent;
  bad.tuning.kvSync.clear();
  bad.tuning.mapping = "mma";
  CHECK_THAT(validateSpec(bad).message(),
             Catch::Contains("needs the wgmma mapping"));
}

TEST_CASE("tuning.epilogue is part of the key only when set", "[spec]") {
  KernelSpec spec = sampleSpec();
  spec.op = "attention_fwd";
  spec.arch = "sm_90a";
  REQUIRE(validateSpec(spec).isOk());
  std::string plain = spec.canonical();
  CHECK(plain.find("epilogue") == std::string::npos);
  CHECK(tuningToJson(spec.tuning).find("epilogue") == nullptr);
  KernelSpec tma = spec;
  tma.tuning.epilogue = "tma";
  REQUIRE(validateSpec(tma).isOk());
  CHECK(tma.canonical().find(";epilogue=tma") != std::string::npos);
  CHECK(cacheKey("b", tma.canonical()) != cacheKey("b", plain));
  CHECK(KernelSpecHash{}(tma) != KernelSpecHash{}(spec));
  KernelSpec registers = spec;
  registers.tuning.epilogue = "registers";
  REQUIRE(validateSpec(registers).isOk());
  CHECK(registers.canonical().find(";epilogue=registers") != std::string::npos);
  // Either value names its kernel, not the default's: a spec that names one
  // keeps it when the default changes.
  CHECK(cacheKey("b", registers.canonical()) != cacheKey("b", plain));
  CHECK(cacheKey("b", registers.canonical()) != cacheKey("b", tma.canonical()));
  CHECK(KernelSpecHash{}(registers) != KernelSpecHash{}(tma));
  // Beside the grid: both in the key, in a fixed order.
  KernelSpec both = tma;
  both.tuning.grid = "persistent";
  REQUIRE(validateSpec(both).isOk());
  CHECK(both.canonical().find(";grid=persistent;epilogue=tma") !=
        std::string::npos);

  // Round trip: the tuning object and a whole spec file.
  Result<TuningConfig> t = tuningFromJson(tuningToJson(tma.tuning), "tuning");
  REQUIRE(t.isOk());
  CHECK(t->epilogue == "tma");
  CHECK(*t == tma.tuning);
  tma.tuning.kvSync = "tma";
  Result<std::vector<KernelSpec>> file =
      parseSpecFile(writeSpecFile({tma, registers, both}));
  REQUIRE(file.isOk());
  REQUIRE(file->size() == 3);
  CHECK((*file)[0] == tma);
  CHECK((*file)[1] == registers);
  CHECK((*file)[2] == both);
  Result<std::vector<KernelSpec>> parsed = parseSpecFile(R"({"specs": [
    {"op": "attention_fwd", "dtype": "bf16", "heads": 8, "head_dim": 128,
     "arch": "sm_90a", "tuning": {"kv_sync": "tma", "epilogue": "tma"}}]})");
  REQUIRE(parsed.isOk());
  CHECK((*parsed)[0].tuning.epilogue == "tma");
  CHECK((*parsed)[0].tuning.kvSync == "tma");

  // Invalid: an unknown value, another op or arch, a schedule other than
  // tma, a forced mma.sync.
  KernelSpec bad = spec;
  bad.tuning.epilogue = "smem";
  CHECK(validateSpec(bad).message() ==
        "invalid kernel spec: tuning.epilogue \"smem\" is not supported "
        "(expected \"registers\", "
        "\"tma\" or empty for the default)");
  Result<std::vector<KernelSpec>> badFile = parseSpecFile(R"({"specs": [
    {"op": "attention_fwd", "dtype": "bf16", "heads": 8, "head_dim": 128,
     "tuning": {"epilogue": "smem"}}]})");
  REQUIRE_FALSE(badFile.isOk());
  CHECK_THAT(badFile.status().message(), Catch::Contains("tuning.epilogue"));
  for (const char *value : {"registers", "tma"}) {
    INFO("epilogue " << value);
    bad = spec;
    bad.tuning.epilogue = value;
    bad.arch = "sm_80";
    CHECK_THAT(validateSpec(bad).message(),
               Catch::Contains("tuning.epilogue applies to op "
                               "\"attention_fwd\" on arch \"sm_90a\" only"));
    bad = spec;
    bad.tuning.epilogue = value;
    bad.op = "decode";
    bad.pageSize = 16;
    bad.maxQLen = 1;
    CHECK_THAT(validateSpec(bad).message(),
               Catch::Contains("tuning.epilogue applies to op "
                               "\"attention_fwd\""));
  }
  for (const char *kvSync : {"mbarrier", "barrier", "producer", "pingpong"}) {
    bad = tma;
    bad.tuning.kvSync = kvSync;
    INFO("kv_sync " << kvSync);
    CHECK(validateSpec(bad).message() ==
          "invalid kernel spec: tuning.epilogue \"tma\" needs tuning.kv_sync "
          "\"tma\" (got \"" +
              std::string(kvSync) + "\")");
    bad.tuning.epilogue = "registers"; // every schedule stores from registers
    CHECK(validateSpec(bad).isOk());
  }
  bad = tma;
  bad.tuning.kvSync.clear();
  bad.tuning.mapping = "mma";
  CHECK(validateSpec(bad).message() ==
        "invalid kernel spec: tuning.epilogue \"tma\" needs the wgmma mapping "
        "(tuning.mapping is "
        "\"mma\")");
  bad.tuning.epilogue = "registers"; // mma.sync's epilogue anyway
  CHECK(validateSpec(bad).isOk());
}

TEST_CASE("sizes past the caps are refused, in specs and spec files",
          "[spec]") {
  // Each once compiled for minutes.
  KernelSpec rows;
  rows.op = "silu_mul";
  rows.hidden = 1000000000;
  CHECK_THAT(validateSpec(rows).message(),
             Catch::Contains("up to 65536, got 1000000000"));
  rows.hidden = kMaxHidden;
  CHECK(validateSpec(rows).isOk());

  KernelSpec att = sampleSpec();
  att.tuning.blockN = 1000000;
  CHECK_THAT(validateSpec(att).message(),
             Catch::Contains("tuning.block_m and tuning.block_n must be at "
                             "most 256"));
  att.tuning.blockN = 256;
  CHECK(validateSpec(att).isOk());
  att.tuning.stages = 9;
  CHECK_FALSE(validateSpec(att).isOk());
  att = sampleSpec();
  att.heads = att.kvHeads = 8192;
  CHECK_THAT(validateSpec(att).message(),
             Catch::Contains("heads must be at most 4096"));

  KernelSpec decode = sampleSpec();
  decode.op = "decode";
  decode.maxQLen = 1;
  decode.pageSize = 2000000;
  CHECK_THAT(validateSpec(decode).message(),
             Catch::Contains("page_size 1 to 1048576 (got 2000000)"));

  auto file = parseSpecFile(
      R"({"specs": [{"op": "attention_fwd", "dtype": "bf16", "heads": 8,
          "kv_heads": 8, "head_dim": 128, "tuning": {"block_n": 1000000}}]})");
  REQUIRE_FALSE(file.isOk());
  CHECK_THAT(file.status().message(), Catch::Contains("at most 256"));
}
