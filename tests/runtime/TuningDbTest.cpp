//===- TuningDbTest.cpp - the tuning database and the config choice -------===//
#include "TestSupport.h"

#include "attnc/runtime/Decode.h"
#include "attnc/runtime/TuningDb.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

using namespace attnc;
using attnc::test::TempDir;

namespace {
KernelSpec spec128() {
  KernelSpec s;
  s.heads = 16;
  s.kvHeads = 16;
  s.headDim = 128;
  s.arch = "sm_90a";
  return s;
}

TuningRecord rec(const KernelSpec &s, const std::string &bucket, int64_t blockN,
                 double ms) {
  TuningRecord r;
  r.gpu = "NVIDIA H200";
  r.arch = s.arch;
  r.spec = untunedSpecKey(s);
  r.bucket = bucket;
  r.tuning.blockM = 64;
  r.tuning.blockN = blockN;
  r.ms = ms;
  r.tflops = 100.0 / ms;
  return r;
}
} // namespace

TEST_CASE("problem sizes fall into power-of-two buckets", "[tuning]") {
  CHECK(problemBucket({1, 1, 100}) == "decode b<=1 kv<=1024");
  CHECK(problemBucket({1, 16, 1024}) == "decode b<=1 kv<=1024");
  CHECK(problemBucket({48, 1, 16384}) == "decode b<=64 kv<=16384");
  CHECK(problemBucket({1, 17, 1025}) == "prefill kv<=2048");
  CHECK(problemBucket({4, 4096, 4096}) == "prefill kv<=4096");
  CHECK(problemBucket({1, 4096, 131072}) == "prefill kv<=131072");
  CHECK(problemBucket({1, 1, 131073}) == "decode b<=1 kv>131072");
}

TEST_CASE("the tuning is not part of the record key", "[tuning]") {
  KernelSpec a = spec128(), b = spec128();
  b.tuning.blockN = 32;
  CHECK(untunedSpecKey(a) == untunedSpecKey(b));
  b.causal = true;
  CHECK(untunedSpecKey(a) != untunedSpecKey(b));
}

TEST_CASE("records keep the faster entry; merge takes the faster per key",
          "[tuning]") {
  KernelSpec s = spec128();
  TuningDb db;
  db.record(rec(s, "prefill kv<=4096", 64, 2.0));
  db.record(rec(s, "prefill kv<=4096", 32, 3.0)); // slower: ignored
  REQUIRE(db.size() == 1);
  CHECK(db.find("NVIDIA H200", "sm_90a", untunedSpecKey(s), "prefill kv<=4096")
            ->tuning.blockN == 64);

  TuningDb other;
  other.record(rec(s, "prefill kv<=4096", 128, 1.5)); // faster: wins
  other.record(rec(s, "prefill kv<=16384", 32, 9.0)); // new bucket
  db.merge(other);
  CHECK(db.size() == 2);
  CHECK(db.find("NVIDIA H200", "sm_90a", untunedSpecKey(s), "prefill kv<=4096")
            ->tuning.blockN == 128);
  CHECK(db.find("NVIDIA H100", "sm_90a", untunedSpecKey(s),
                "prefill kv<=4096") == nullptr);
}

TEST_CASE("the database round-trips through its file", "[tuning]") {
  KernelSpec s = spec128();
  TuningDb db;
  db.record(rec(s, "prefill kv<=4096", 64, 2.25));
  db.record(rec(s, "decode b<=1 kv<=1024", 32, 0.5));
  TempDir dir;
  std::string path = dir.path() + "/tuning.json";
  REQUIRE(db.save(path).isOk());
  Result<TuningDb> back = TuningDb::load(path);
  REQUIRE(back.isOk());
  CHECK(back->serialize() == db.serialize());
  const TuningRecord *r = back->find("NVIDIA H200", "sm_90a", untunedSpecKey(s),
                                     "decode b<=1 kv<=1024");
  REQUIRE(r);
  CHECK(r->tuning.blockN == 32);
  CHECK(r->ms == 0.5);

  // Saving again replaces the file whole (written beside it, then renamed):
  // nothing is left beside it, and a save into a missing directory fails
  // with the path and leaves nothing behind.
  TuningDb smaller;
  smaller.record(rec(s, "prefill kv<=4096", 16, 1.0));
  REQUIRE(smaller.save(path).isOk());
  Result<TuningDb> again = TuningDb::load(path);
  REQUIRE(again.isOk());
  CHECK(again->serialize() == smaller.serialize());
  CHECK(std::filesystem::directory_iterator(dir.path()) !=
        std::filesystem::directory_iterator());
  int files = 0;
  for (const auto &e : std::filesystem::directory_iterator(dir.path())) {
    CHECK(e.path().filename() == "tuning.json");
    ++files;
  }
  CHECK(files == 1);
  Status missing = smaller.save(dir.path() + "/no-such-dir/tuning.json");
  REQUIRE_FALSE(missing.isOk());
  CHECK_THAT(missing.message(), Catch::Contains("no-such-dir/tuning.json"));
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/no-such-dir"));
}

TEST_CASE("malformed databases are rejected with the place", "[tuning]") {
  auto bad = [](const char *text) {
    Result<TuningDb> r = TuningDb::parse(text, "db");
    REQUIRE_FALSE(r.isOk());
    return r.status().message();
  };
  CHECK_THAT(bad("{\"version\": 2, \"records\": []}"),
             Catch::Contains("version 2 is not supported"));
  CHECK_THAT(bad("{\"version\": 1}"), Catch::Contains("records"));
  CHECK_THAT(bad("{\"version\": 1, \"records\": [{\"gpu\": \"x\", \"arch\": "
                 "\"sm_90a\", \"spec\": \"s\", \"bucket\": \"b\", \"ms\": 1, "
                 "\"tuning\": {\"block_q\": 64}}]}"),
             Catch::Contains("db.records[0].tuning"));
  CHECK_THAT(bad("{\"version\": 1, \"records\": [{\"gpu\": \"x\", \"arch\": "
                 "\"sm_90a\", \"spec\": \"s\", \"bucket\": \"b\", \"ms\": 0, "
                 "\"tuning\": {}}]}"),
             Catch::Contains("positive time"));
  CHECK_FALSE(TuningDb::load("/nonexistent/tuning.json").isOk());
}

TEST_CASE("the choice: the spec's own tuning, the database, the heuristic",
          "[tuning]") {
  KernelSpec s = spec128();
  TuningDb db;
  db.record(rec(s, "prefill kv<=4096", 32, 2.0));

  TuningChoice hit = chooseTuning(&db, "NVIDIA H200", s, {4, 4096, 4096});
  CHECK(hit.fromDatabase);
  CHECK(hit.tuning.blockN == 32);
  CHECK_THAT(hit.why, Catch::Contains("prefill kv<=4096"));

  TuningChoice other = chooseTuning(&db, "NVIDIA H200", s, {1, 16384, 16384});
  CHECK_FALSE(other.fromDatabase);
  // sm_90a, D128: the wgmma tiles (2 consumer warpgroups of 64 rows, 2-tile
  // rings filled by TMA).
  CHECK(other.tuning.blockM == 128);
  CHECK(other.tuning.blockN == 128);
  CHECK(other.tuning.stages == 2);
  CHECK(other.tuning.kvSync == "tma");
  KernelSpec ampere = s;
  ampere.arch = "sm_80";
  TuningConfig mma =
      chooseTuning(&db, "NVIDIA H200", ampere, {1, 16384, 16384}).tuning;
  CHECK(mma.blockM == 128);
  CHECK(mma.blockN == 64); // causal or not
  CHECK(mma.warps == 4);
  CHECK(mma.kvSync.empty());
  KernelSpec ampereCausal = ampere;
  ampereCausal.causal = !ampere.causal;
  CHECK(chooseTuning(&db, "NVIDIA H200", ampereCausal, {1, 16384, 16384})
            .tuning.blockN == 64);
  // A window's left bound adds to the masks' registers: 32 keys.
  KernelSpec ampereWindow = ampere;
  ampereWindow.causal = true;
  ampereWindow.windowLeft = 256;
  CHECK(chooseTuning(&db, "NVIDIA H200", ampereWindow, {1, 16384, 16384})
            .tuning.blockN == 32);
  ampereWindow.causal = false;
  ampereWindow.windowLeft = -1;
  ampereWindow.windowRight = 16; // a right bound only: as causal
  CHECK(chooseTuning(&db, "NVIDIA H200", ampereWindow, {1, 16384, 16384})
            .tuning.blockN == 64);
  CHECK_THAT(other.why, Catch::Contains("no database entry"));

  // D256: wgmma 128x64 with two K/V stages on sm_90a, 64x32 on sm_80.
  KernelSpec d256 = s;
  d256.headDim = 256;
  TuningConfig h256 =
      chooseTuning(nullptr, "NVIDIA H200", d256, {1, 4096, 4096}).tuning;
  CHECK(h256.blockM == 128);
  CHECK(h256.blockN == 64);
  CHECK(h256.warps == 0);
  CHECK(h256.stages == 2);
  CHECK(h256.kvSync == "tma");
  // One CTA per item at D256: the persistent item loop's registers would
  // make the consumers spill.
  CHECK(h256.grid == "tiles");
  // O by TMA beside the tma schedule, on every grid.
  CHECK(h256.epilogue == "tma");
  // wgmma takes no left window at D256: mma.sync, which has no kv_sync
  // (nor grid).
  KernelSpec d256Window = d256;
  d256Window.windowLeft = 128;
  TuningConfig h256Window =
      chooseTuning(nullptr, "NVIDIA H200", d256Window, {1, 4096, 4096}).tuning;
  CHECK(h256Window.kvSync.empty());
  CHECK(h256Window.grid.empty());
  CHECK(h256Window.epilogue.empty());
  KernelSpec named = d256; // the heuristic's tuning is a valid spec's
  named.tuning = h256;
  CHECK(validateSpec(named).isOk());
  KernelSpec causal = d256; // persistent CTAs: the same epilogue
  causal.headDim = 128;
  causal.causal = true;
  TuningConfig h128Causal =
      chooseTuning(nullptr, "NVIDIA H200", causal, {1, 4096, 4096}).tuning;
  CHECK(h128Causal.grid == "persistent");
  CHECK(h128Causal.epilogue == "tma");
  named.tuning = h128Causal;
  CHECK(validateSpec(named).isOk());
  d256.arch = "sm_80";
  TuningConfig h256Ampere =
      chooseTuning(nullptr, "NVIDIA A100", d256, {1, 4096, 4096}).tuning;
  CHECK(h256Ampere.blockN == 32);
  CHECK(h256Ampere.epilogue.empty()); // mma.sync: no kv_sync, no epilogue knob
  // D64 on sm_90a: three consumer warpgroups (192 rows) by 128 keys, except
  // with a soft-cap, whose tanh would spill at their 160 registers.
  KernelSpec d64 = s;
  d64.headDim = 64;
  TuningConfig h64 =
      chooseTuning(nullptr, "NVIDIA H200", d64, {1, 4096, 4096}).tuning;
  CHECK(h64.blockM == 192);
  CHECK(h64.blockN == 128);
  CHECK(h64.kvSync == "tma");
  d64.softcap = 30.0;
  TuningConfig h64Softcap =
      chooseTuning(nullptr, "NVIDIA H200", d64, {1, 4096, 4096}).tuning;
  CHECK(h64Softcap.blockM == 128);
  CHECK(h64Softcap.blockN == 128);
  named = d64;
  named.tuning = h64;
  CHECK(validateSpec(named).isOk());

  KernelSpec pinned = s;
  pinned.tuning.blockN = 16;
  TuningChoice own = chooseTuning(&db, "NVIDIA H200", pinned, {4, 4096, 4096});
  CHECK(own.tuning.blockN == 16);
  CHECK(own.why == "the spec names its tuning");
}

TEST_CASE("decode size rule: where the launch must split", "[tuning][decode]") {
  KernelSpec s;
  s.op = "decode";
  s.heads = 32;
  s.kvHeads = 8;
  s.headDim = 128;
  s.pageSize = 256;
  s.maxQLen = 1;
  s.arch = "sm_90a";
  auto rule = [&](const KernelSpec &spec, int64_t batch, int sms = 132) {
    return decodeSizeRule(spec, {batch, 1, 32768}, sms);
  };
  // B1 and B16 (8 and 128 KV heads' programs on 132 SMs) split: pages a
  // multiple of 128 keys take 128-key tiles over 4 warps along the keys.
  for (int64_t b : {1, 9, 16}) {
    auto t = rule(s, b);
    REQUIRE(t);
    CHECK(t->blockN == 128);
    CHECK(t->warps == 4);
    CHECK(t->stages == 2);
    // ... and that is one program per SM for the split count.
    CHECK(decodeProgramsPerSm(t->blockN, t->stages) == 1);
  }
  // Pages of 32 or 64 keys: 32-key tiles, 3 stages, two programs per SM.
  for (int64_t page : {32, 64, 96}) {
    KernelSpec small = s;
    small.pageSize = page;
    auto t = rule(small, 16);
    REQUIRE(t);
    CHECK(t->blockN == 32);
    CHECK(t->warps == 0);
    CHECK(t->stages == 3);
    CHECK(decodeProgramsPerSm(t->blockN, t->stages) == 2);
  }
  // One split fills the GPU (the bucket's batch 32 or 64): the default.
  CHECK_FALSE(rule(s, 17));
  CHECK_FALSE(rule(s, 64));
  CHECK_FALSE(rule(s, 1, 0)); // SM count unknown
  KernelSpec other = s;
  other.pageSize = 16; // a 32-key tile would span two pages
  CHECK_FALSE(rule(other, 1));
  other = s;
  other.headDim = 64;
  CHECK_FALSE(rule(other, 1));
  other = s;
  other.arch = "sm_80";
  CHECK_FALSE(rule(other, 1));
  other = s;
  other.maxQLen = 4; // 16 live rows per program
  CHECK_FALSE(rule(other, 1));
  other = s;
  other.op = "attention_fwd";
  CHECK_FALSE(rule(other, 1));

  // chooseTuning: after the database, before the heuristic; a spec with its
  // own tuning keeps it.
  TuningChoice c = chooseTuning(nullptr, "NVIDIA H200", s, {16, 1, 32768}, 132);
  CHECK(c.fromSizeRule);
  CHECK_FALSE(c.fromDatabase);
  CHECK(c.tuning.blockN == 128);
  CHECK_THAT(c.why, Catch::Contains("decode size rule"));
  CHECK_THAT(c.why, Catch::Contains("128-key tiles, 4 warp(s) along the keys"));
  CHECK_FALSE(
      chooseTuning(nullptr, "NVIDIA H200", s, {16, 1, 32768}).fromSizeRule);
  KernelSpec pinned = s;
  pinned.tuning.blockN = 16;
  TuningChoice own =
      chooseTuning(nullptr, "NVIDIA H200", pinned, {16, 1, 32768}, 132);
  CHECK_FALSE(own.fromSizeRule);
  CHECK(own.tuning.blockN == 16);
  TuningDb db;
  TuningRecord r;
  r.gpu = "NVIDIA H200";
  r.arch = "sm_90a";
  r.spec = untunedSpecKey(s);
  r.bucket = problemBucket({16, 1, 32768});
  r.tuning.blockN = 16;
  r.ms = 1.0;
  db.record(r);
  TuningChoice fromDb =
      chooseTuning(&db, "NVIDIA H200", s, {16, 1, 32768}, 132);
  CHECK(fromDb.fromDatabase);
  CHECK(fromDb.tuning.blockN == 16);
}

TEST_CASE("decode size rule variants: what a bundle must hold",
          "[tuning][decode]") {
  KernelSpec s;
  s.op = "decode";
  s.heads = 32;
  s.kvHeads = 8;
  s.headDim = 128;
  s.maxQLen = 1;
  s.arch = "sm_90a";
  // Every answer the rule gives at any batch and SM count is among the
  // variants, and every variant is an answer at some size.
  for (int64_t page : {16, 32, 64, 128, 256, 100}) {
    s.pageSize = page;
    INFO("page " << page);
    std::vector<TuningConfig> variants = decodeSizeRuleVariants(s);
    std::vector<TuningConfig> seen;
    for (int64_t batch : {1, 2, 3, 4, 8, 16, 64, 256})
      for (int sms : {1, 16, 78, 132, 264})
        if (auto t = decodeSizeRule(s, {batch, 1, 32768}, sms)) {
          CHECK(std::find(variants.begin(), variants.end(), *t) !=
                variants.end());
          if (std::find(seen.begin(), seen.end(), *t) == seen.end())
            seen.push_back(*t);
        }
    CHECK(seen.size() == variants.size());
  }
  // No rule, no variant: page 16, another head dim, sm_80, prefill.
  s.pageSize = 16;
  CHECK(decodeSizeRuleVariants(s).empty());
  s.pageSize = 64;
  REQUIRE(decodeSizeRuleVariants(s).size() == 1);
  s.headDim = 64;
  CHECK(decodeSizeRuleVariants(s).empty());
  s.headDim = 128;
  s.arch = "sm_80";
  CHECK(decodeSizeRuleVariants(s).empty());
  s.arch = "sm_90a";
  s.op = "attention_fwd";
  CHECK(decodeSizeRuleVariants(s).empty());
}
