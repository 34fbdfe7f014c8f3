//===- TunePlanTest.cpp - sweep plans, sharding, tuned specs --------------===//
#include "TestSupport.h"

#include "attnc/runtime/TunePlan.h"
#include "attnc/runtime/TuningDb.h"

#include <catch2/catch.hpp>
#include <set>

using namespace attnc;
using attnc::test::TempDir;

namespace {

TuneCandidate cand(const std::string &id, int64_t bm, int64_t bn,
                   bool heuristic = false, std::string dropped = "") {
  TuneCandidate c;
  c.id = id;
  c.tuning.blockM = bm;
  c.tuning.blockN = bn;
  c.heuristic = heuristic;
  c.dropped = std::move(dropped);
  return c;
}

SweepPlan samplePlan() {
  SweepPlan plan;
  plan.buildId = "test-build";
  TuneGroup prefill;
  prefill.name = "prefill D128 causal";
  prefill.spec.heads = prefill.spec.kvHeads = 16;
  prefill.spec.headDim = 128;
  prefill.spec.causal = true;
  prefill.problems = {{16, 1024, 1024}, {4, 4096, 4096}, {1, 16384, 16384}};
  prefill.candidates = {cand("c0", 0, 0, true), cand("c1", 64, 64),
                        cand("c2", 128, 64), cand("c3", 128, 128),
                        cand("c4", 128, 32, false, "ptxas: spills (8 bytes)")};
  prefill.candidates[2].tuning.mapping = "mma";
  prefill.candidates[2].tuning.warps = 8;
  TuneGroup decode;
  decode.name = "decode D128 p256";
  decode.spec.op = "decode";
  decode.spec.heads = 32;
  decode.spec.kvHeads = 8;
  decode.spec.headDim = 128;
  decode.spec.pageSize = 256;
  decode.spec.maxQLen = 1;
  decode.problems = {{1, 1, 131072}, {64, 1, 4096}};
  decode.candidates = {cand("c0", 0, 0, true), cand("c1", 0, 16),
                       cand("c2", 0, 32)};
  decode.candidates[2].splits = 16;
  plan.groups = {prefill, decode};
  return plan;
}

} // namespace

TEST_CASE("a sweep plan round-trips through its file", "[tune]") {
  SweepPlan plan = samplePlan();
  plan.groups[0].candidates[1].registers = 168;
  plan.groups[0].candidates[1].smemBytes = 49152;
  plan.groups[0].candidates[1].mapping = "wgmma";
  TempDir dir;
  std::string path = dir.path() + "/plan.json";
  REQUIRE(plan.save(path).isOk());
  Result<SweepPlan> back = SweepPlan::load(path);
  REQUIRE(back.isOk());
  CHECK(back->serialize() == plan.serialize());
  REQUIRE(back->groups.size() == 2);
  CHECK(back->groups[0].spec == plan.groups[0].spec);
  CHECK(back->groups[0].candidates[2].tuning.mapping == "mma");
  CHECK(back->groups[0].candidates[4].dropped == "ptxas: spills (8 bytes)");
  CHECK(back->groups[1].candidates[2].splits == 16);
  CHECK(back->groups[1].problems[1].batch == 64);
}

TEST_CASE("a candidate's label names its schedule, grid and epilogue",
          "[tune]") {
  TuneCandidate c = cand("c7", 128, 128);
  c.tuning.mapping = "wgmma";
  CHECK(c.label() == "wgmma 128x128");
  c.tuning.kvSync = "tma";
  c.tuning.grid = "persistent";
  CHECK(c.label() == "wgmma 128x128 tma persistent");
  c.tuning.epilogue = "tma";
  CHECK(c.label() == "wgmma 128x128 tma persistent epilogue tma");
  c.tuning.kvSync.clear();
  c.tuning.grid.clear();
  c.tuning.epilogue = "registers";
  CHECK(c.label() == "wgmma 128x128 epilogue registers");
  // The plan's file keeps it.
  SweepPlan plan = samplePlan();
  plan.groups[0].candidates[3].tuning = c.tuning;
  Result<SweepPlan> back = SweepPlan::parse(plan.serialize(), "plan");
  REQUIRE(back.isOk());
  CHECK(back->groups[0].candidates[3].tuning.epilogue == "registers");
  CHECK(back->groups[0].candidates[3].label() == c.label());
}

TEST_CASE("malformed plans are rejected with the place", "[tune]") {
  auto bad = [](const std::string &text) {
    Result<SweepPlan> r = SweepPlan::parse(text, "plan");
    REQUIRE_FALSE(r.isOk());
    return r.status().message();
  };
  std::string group = R"({"name": "g", "spec": {"op": "attention_fwd",
      "dtype": "bf16", "arch": "sm_90a",
      "heads": 16, "head_dim": 128}, "problems": [{"batch": 1, "seq_q": 8,
      "seq_kv": 8}], "candidates": [)";
  CHECK_THAT(
      bad(R"({"version": 1, "groups": [)" + group +
          R"({"id": "c0", "tuning": {}}, {"id": "c0", "tuning": {}}]}]})"),
      Catch::Contains("plan.groups[0].candidates[1].id") &&
          Catch::Contains("not unique"));
  CHECK_THAT(bad(R"({"version": 1, "groups": [)" + group +
                 R"({"id": "c0", "tuning": {}, "splits": 999}]}]})"),
             Catch::Contains("splits"));
  CHECK_THAT(bad(R"({"version": 1, "groups": [)" + group +
                 R"({"id": "c0", "tuning": {"block_x": 1}}]}]})"),
             Catch::Contains("candidates[0].tuning"));
  CHECK_THAT(bad(R"({"version": 2, "groups": []})"),
             Catch::Contains("version 2"));
}

TEST_CASE("jobs skip dropped candidates; shards split them deterministically",
          "[tune]") {
  SweepPlan plan = samplePlan();
  std::vector<TuneJob> all = sweepJobs(plan);
  // prefill: 3 problems x 4 kept; decode: 2 problems x 3.
  REQUIRE(all.size() == 3 * 4 + 2 * 3);
  for (const TuneJob &j : all)
    CHECK(plan.groups[j.group].candidates[j.candidate].dropped.empty());

  const int n = 3;
  std::multiset<std::tuple<size_t, size_t, size_t>> seen;
  for (int i = 0; i < n; ++i) {
    std::vector<TuneJob> a = shardJobs(plan, all, i, n);
    CHECK(a == shardJobs(plan, all, i, n)); // deterministic
    for (size_t k = 0; k < a.size(); ++k) {
      const TuneJob &j = a[k];
      const TuneCandidate &c = plan.groups[j.group].candidates[j.candidate];
      // Every problem a shard runs starts with its baseline.
      bool first =
          k == 0 || a[k - 1].group != j.group || a[k - 1].problem != j.problem;
      if (first)
        CHECK(c.heuristic);
      if (!c.heuristic)
        seen.insert({j.group, j.problem, j.candidate});
    }
  }
  // The non-baseline jobs are split exactly: each once, none lost.
  size_t nonBaseline = 0;
  for (const TuneJob &j : all)
    if (!plan.groups[j.group].candidates[j.candidate].heuristic) {
      ++nonBaseline;
      CHECK(seen.count({j.group, j.problem, j.candidate}) == 1);
    }
  CHECK(seen.size() == nonBaseline);
  CHECK(shardJobs(plan, all, 0, 1) == all);
}

TEST_CASE("--shard takes i/n", "[tune]") {
  int i = -1, n = -1;
  REQUIRE(parseShard("1/4", i, n).isOk());
  CHECK(i == 1);
  CHECK(n == 4);
  for (const char *bad : {"4/4", "-1/2", "1", "a/b", "1/0", "1/2x", ""})
    CHECK_FALSE(parseShard(bad, i, n).isOk());
}

TEST_CASE("the plan's estimate grows with the problem", "[tune]") {
  SweepPlan plan = samplePlan();
  double small = estimateSweepSeconds(plan, {{0, 0, 1}});
  double large = estimateSweepSeconds(plan, {{0, 2, 1}});
  CHECK(small > 0);
  CHECK(large > small);
  CHECK(estimateSweepSeconds(plan, sweepJobs(plan)) < 300);
}

TEST_CASE("a tuned mapping is part of the key only when set", "[tune]") {
  KernelSpec spec = samplePlan().groups[0].spec;
  std::string untuned = spec.canonical();
  CHECK(untuned.find("mapping") == std::string::npos);
  KernelSpec mma = spec;
  mma.tuning.mapping = "mma";
  CHECK_THAT(mma.canonical(), Catch::EndsWith(";mapping=mma"));
  CHECK(cacheKey("b", mma.canonical()) != cacheKey("b", untuned));
  CHECK(KernelSpecHash{}(mma) != KernelSpecHash{}(spec));
  CHECK(untunedSpecKey(mma) == untunedSpecKey(spec));
  REQUIRE(validateSpec(mma).isOk());
  KernelSpec bad = spec;
  bad.tuning.mapping = "tensor";
  CHECK_THAT(validateSpec(bad).message(), Catch::Contains("tuning.mapping"));
  bad.tuning.mapping = "wgmma";
  bad.arch = "sm_80";
  CHECK_THAT(validateSpec(bad).message(), Catch::Contains("sm_90a"));
  // Spec files carry it.
  Result<TuningConfig> t = tuningFromJson(tuningToJson(mma.tuning), "tuning");
  REQUIRE(t.isOk());
  CHECK(t->mapping == "mma");
}

TEST_CASE("records carry the baseline's time and decode's split count",
          "[tune]") {
  KernelSpec s = samplePlan().groups[1].spec;
  TuningRecord r;
  r.gpu = "NVIDIA H200";
  r.arch = "sm_90a";
  r.spec = untunedSpecKey(s);
  r.bucket = problemBucket({64, 1, 4096});
  CHECK(r.bucket == "decode b<=64 kv<=4096");
  r.tuning.blockN = 16;
  r.splits = 8;
  r.ms = 0.5;
  r.heuristicMs = 0.6;
  TuningDb a;
  a.record(r);
  Result<TuningDb> back = TuningDb::parse(a.serialize());
  REQUIRE(back.isOk());
  CHECK(back->serialize() == a.serialize());

  // Another shard: slower best, faster baseline. The faster best wins; the
  // baseline kept is the smaller (a conservative gain).
  TuningRecord other = r;
  other.tuning.blockN = 32;
  other.splits = 0;
  other.ms = 0.55;
  other.heuristicMs = 0.58;
  TuningDb b;
  b.record(other);
  a.merge(b);
  const TuningRecord *m = a.find(r.gpu, r.arch, r.spec, r.bucket);
  REQUIRE(m);
  CHECK(m->tuning.blockN == 16);
  CHECK(m->splits == 8);
  CHECK(m->heuristicMs == 0.58);

  TuningChoice c = chooseTuning(&a, "NVIDIA H200", s, {48, 1, 3000});
  CHECK(c.fromDatabase);
  CHECK(c.decodeSplits == 8);
  CHECK(c.tuning.blockN == 16);
  CHECK_THAT(c.why, Catch::Contains("x the heuristic"));
  // Another batch bucket: the heuristic, the runtime's own split count.
  TuningChoice miss = chooseTuning(&a, "NVIDIA H200", s, {1, 1, 4096});
  CHECK_FALSE(miss.fromDatabase);
  CHECK(miss.decodeSplits == 0);
  // A spec that names only a mapping names its tuning.
  KernelSpec named = samplePlan().groups[0].spec;
  named.tuning.mapping = "mma";
  CHECK(chooseTuning(&a, "NVIDIA H200", named, {1, 4096, 4096}).why ==
        "the spec names its tuning");
}
