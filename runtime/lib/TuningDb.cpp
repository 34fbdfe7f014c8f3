//===- TuningDb.cpp - tuned kernel configurations per device and problem --===//
#include "attnc/runtime/TuningDb.h"

#include "attnc/runtime/Json.h"
#include "attnc/runtime/JsonReader.h"

#include "FileSystem.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>

namespace attnc {

int64_t decodeBucketBatch(int64_t batch) {
  int64_t bound = 1;
  while (bound < batch)
    bound *= 2;
  return bound;
}

std::string problemBucket(const ProblemSize &size) {
  std::string kind = size.seqQ <= 16 ? "decode" : "prefill";
  if (kind == "decode")
    kind += " b<=" + std::to_string(decodeBucketBatch(size.batch));
  if (size.seqKV > 131072)
    return kind + " kv>131072";
  int64_t bound = 1024;
  while (bound < size.seqKV)
    bound *= 2;
  return kind + " kv<=" + std::to_string(bound);
}

std::string untunedSpecKey(const KernelSpec &spec) {
  KernelSpec untuned = spec;
  untuned.tuning = TuningConfig{};
  return untuned.canonical();
}

static std::string recordKey(const std::string &gpu, const std::string &arch,
                             const std::string &spec,
                             const std::string &bucket) {
  return gpu + "|" + arch + "|" + spec + "|" + bucket;
}

void TuningDb::record(const TuningRecord &r) {
  std::string key = recordKey(r.gpu, r.arch, r.spec, r.bucket);
  auto it = records_.find(key);
  if (it == records_.end()) {
    records_[key] = r;
    return;
  }
  // The heuristic's time: the smaller of the two sweeps' (a conservative
  // gain), when both measured it.
  double heuristic = it->second.heuristicMs;
  if (r.heuristicMs > 0 && (heuristic <= 0 || r.heuristicMs < heuristic))
    heuristic = r.heuristicMs;
  if (r.ms < it->second.ms)
    it->second = r;
  it->second.heuristicMs = heuristic;
}

const TuningRecord *TuningDb::find(const std::string &gpu,
                                   const std::string &arch,
                                   const std::string &spec,
                                   const std::string &bucket) const {
  auto it = records_.find(recordKey(gpu, arch, spec, bucket));
  return it == records_.end() ? nullptr : &it->second;
}

void TuningDb::merge(const TuningDb &other) {
  for (const auto &[key, r] : other.records_)
    record(r);
}

std::string TuningDb::serialize() const {
  Json records = Json::array();
  for (const auto &[key, r] : records_) {
    Json item = Json::object();
    item.set("gpu", r.gpu);
    item.set("arch", r.arch);
    item.set("spec", r.spec);
    item.set("bucket", r.bucket);
    item.set("tuning", tuningToJson(r.tuning));
    item.set("ms", r.ms);
    item.set("tflops", r.tflops);
    if (r.heuristicMs > 0)
      item.set("heuristic_ms", r.heuristicMs);
    if (r.splits > 0)
      item.set("splits", r.splits);
    records.push(std::move(item));
  }
  Json doc = Json::object();
  doc.set("version", 1);
  doc.set("records", std::move(records));
  return writeJson(doc) + "\n";
}

Result<TuningDb> TuningDb::parse(std::string_view json,
                                 const std::string &where) {
  ATTNC_ASSIGN_OR_RETURN(Json doc, parseJson(json));
  JsonObjectReader reader(doc, where);
  int64_t version = 0;
  reader.getInt("version", version, true);
  const Json *list = reader.getValue("records", Json::Kind::Array, true);
  ATTNC_RETURN_IF_ERROR(reader.finish());
  if (version != 1)
    return Status(ErrorCode::ParseError, where + ": version " +
                                             std::to_string(version) +
                                             " is not supported (expected 1)");
  TuningDb db;
  const Json::Array &items = list->asArray();
  for (size_t i = 0; i < items.size(); ++i) {
    std::string at = where + ".records[" + std::to_string(i) + "]";
    JsonObjectReader item(items[i], at);
    TuningRecord r;
    item.getString("gpu", r.gpu, true);
    item.getString("arch", r.arch, true);
    item.getString("spec", r.spec, true);
    item.getString("bucket", r.bucket, true);
    item.getNumber("ms", r.ms, true);
    item.getNumber("tflops", r.tflops, false);
    item.getNumber("heuristic_ms", r.heuristicMs, false);
    item.getInt("splits", r.splits, false);
    const Json *tuning = item.getValue("tuning", Json::Kind::Object, true);
    ATTNC_RETURN_IF_ERROR(item.finish());
    ATTNC_ASSIGN_OR_RETURN(r.tuning, tuningFromJson(*tuning, at + ".tuning"));
    if (!(r.ms > 0))
      return Status(ErrorCode::ParseError,
                    at + ".ms: expected a positive time in milliseconds");
    if (r.splits < 0 || r.splits > 256)
      return Status(ErrorCode::ParseError,
                    at + ".splits: expected 0 (the runtime's choice) to 256");
    db.record(r);
  }
  return db;
}

Result<TuningDb> TuningDb::load(const std::string &path) {
  ATTNC_ASSIGN_OR_RETURN(std::string text, fs::readFile(path, 64u << 20));
  return parse(text, path);
}

Status TuningDb::save(const std::string &path) const {
  return fs::replaceFile(path, serialize());
}

TuningConfig heuristicTuning(const KernelSpec &spec) {
  TuningConfig t;
  // A paged cache goes by TMA in boxes of whole swizzle atoms inside a page
  // (abi::pagedBoxRows): pages of a multiple of 8 rows; other pages take
  // the mma.sync tiles below (cp.async, a table lookup per 16 bytes).
  const bool pagedTma = spec.pageSize == 0 || spec.pageSize % 8 == 0;
  if (spec.arch == "sm_90a" && spec.headDim % 64 == 0 && spec.headDim <= 256 &&
      pagedTma) {
    // The wgmma mapping with warp specialisation by TMA (kv_sync "tma": one
    // producer thread, two consumer warpgroups taking turns). H200, D128
    // S4k (bench/NOTES-hopper.md, 2026-12-01): 128x128 s2 650 TFLOP/s
    // non-causal and 558 causal against 434 / 357 for 192x64 on per-stage
    // mbarriers; 128x176 654 / 546, 192x64 647 / 514. D256 128x64 698 / 569
    // (128x80: 733 / 595, but it spills); D192 takes D256's tiles.
    // D64: 192 query rows (three consumer warpgroups) by 128 keys, as
    // FlashAttention-3 does: a D64 tile's GEMMs are half a D128 tile's, so
    // one warpgroup's softmax no longer hides under the other's GEMMs; a
    // third keeps the tensor cores fed. H100 (attnc-tune-run, B4 S4k / B1
    // S16k causal): 525 / 472-531 TFLOP/s against 461 / 462 at 128x128;
    // 1.07-1.09x cuDNN against 0.96x / 0.98x (bench/NOTES-hopper.md,
    // 2026-12-06). Not with a soft-cap: its tanh needs more than the 160
    // registers three consumer warpgroups can have, and it spills.
    t.blockM = spec.headDim == 64 && spec.softcap == 0.0 ? 192 : 128;
    t.blockN = spec.headDim <= 128 ? 128 : 64;
    t.stages = 2;
    // wgmma takes no left window bound at D256 (WGMMASupport.h): mma.sync
    // with these tiles then, which has no kv_sync.
    if (spec.windowLeft < 0 || spec.headDim <= 192) {
      t.kvSync = "tma";
      // The grid and O's epilogue of the tma kernels, from the A/B of all
      // four at B4 S4k on the H200 (bench/NOTES-hopper.md, 2026-12-02,
      // TFLOP/s; tiles / persistent, O from registers / by TMA):
      //   D128          644.6 / 652.2 tiles, 657.1 / 676.9 persistent
      //   D128 causal   559.2 / 574.0 tiles, 595.7 / 615.6 persistent
      //   D64           450.5 / 456.9 tiles, 449.4 / 452.5 persistent
      //   D64 causal    396.1 / 404.1 tiles, 415.4 / 397.6 persistent
      // Persistent CTAs (min(work items, SMs) CTAs looping over pairs of
      // items, a long and a short causal query tile together) for causal
      // attention without a left window bound up to D192, and at D128
      // without the mask too; never at D256, where the item loop's
      // registers make the consumers spill (persistentFits). The TMA store
      // of O wherever its staging fits (the compiler's
      // tmaEpilogueByDefault; D64 causal persistent 421.1 against 414.3
      // TFLOP/s with registers, H200). The one place both defaults
      // are switched: defaultTileOptions (Pipelines.cpp) reads them.
      t.grid = spec.windowLeft < 0 && spec.headDim <= 192 &&
                       (spec.causal || spec.headDim == 128)
                   ? "persistent"
                   : "tiles";
      t.epilogue = "tma";
    }
    // Varlen kernels take the dense kernel's tiles, TMA copies and grid:
    // persistent items read their sequence from cu_seqlens (those past a
    // shorter sequence's tiles end at once). O goes from registers, bounded
    // at each sequence's end. The TMA store (a warpgroup whose rows lie
    // inside the sequence by TMA, the rest from registers) is an opt-in
    // (tuning.epilogue "tma") until it is measured: both stores side by
    // side spill 8-176 B with three consumer warpgroups, causal, windows,
    // soft-cap or sinks up to D128 and soft-cap at D256 (ptxas -v), and
    // keep the sequence's view metadata live across the KV loop (D128: 632
    // SASS instructions per KV tile against 621). Three consumer
    // warpgroups with a left window bound and causal (or a right bound)
    // spill 132-144 B even so: 128 rows there. Off the TMA schedule (a
    // left window bound at D256), the mma.sync tiles above.
    if (spec.varlen && t.kvSync == "tma") {
      t.epilogue = "registers";
      if (t.blockM == 192 && spec.windowLeft >= 0)
        t.blockM = 128;
      // Paged: one block per query tile (the persistent item walk does not
      // carry a sequence's key count and block-table row).
      if (spec.pageSize > 0)
        t.grid = "tiles";
    }
    return t;
  } else if (spec.headDim <= 128) {
    t.blockM = 128;
    // 64-key tiles spill at 32 rows per warp above head dim 64, except at
    // D128, where the ldmatrix offsets are immediates (H200 D128 S4k 352.8
    // TFLOP/s against 303 at 32 keys). The D128 kernels spill 8 B (40 B
    // causal) and are still the fastest measured: causal 295 against
    // 251-253 at 32 keys, non-causal 360 (bench/NOTES.md, 2026-11-29/30).
    // A window's left bound adds to the masks' registers (16-44 B more), so
    // windows keep 32 keys.
    t.blockN = spec.headDim == 128 ? (spec.windowLeft >= 0 ? 32 : 64)
               : spec.headDim > 64 ? 32
                                   : 64;
  } else {
    t.blockM = 64;
    t.blockN = 32;
  }
  t.warps = 4;
  return t;
}

std::optional<TuningConfig>
decodeSizeRule(const KernelSpec &spec, const ProblemSize &size, int smCount) {
  if (spec.op != "decode" || spec.arch != "sm_90a" || spec.headDim != 128 ||
      spec.pageSize <= 0 || spec.pageSize % 32 != 0 || smCount <= 0 ||
      spec.kvHeads <= 0)
    return std::nullopt;
  // Live rows of a program: the query heads of one KV head times the query
  // rows per sequence (the measured kernel has 4).
  const int64_t rows =
      spec.heads / spec.kvHeads * std::max<int64_t>(1, spec.maxQLen);
  if (rows > 8)
    return std::nullopt;
  // The bucket's batch, so that every size of one bucket gets one answer
  // (callers cache per bucket).
  if (decodeBucketBatch(size.batch) * spec.kvHeads >= smCount)
    return std::nullopt; // one split fills the GPU
  TuningConfig t;
  if (spec.pageSize % 128 == 0) {
    // 128-key tiles, four warps along the keys, two stages: one block per
    // SM keeps two 64 KiB tiles in flight (B1 1.03x, B16 1.02x the 32-key
    // rule in the H200 tune; bench/NOTES.md, 2026-12-03 "warps along the
    // keys").
    t.blockN = 128;
    t.warps = 4;
    t.stages = 2;
  } else {
    // 32-key tiles, three stages, about two programs per SM (the H200
    // sweep of bench/NOTES.md, 2026-12-03).
    t.blockN = 32;
    t.stages = 3;
  }
  return t;
}

std::vector<TuningConfig> decodeSizeRuleVariants(const KernelSpec &spec) {
  // The size enters the rule only through "one split fills the GPU": ask
  // with a problem that never does.
  if (auto t = decodeSizeRule(spec, ProblemSize{1, 1, 1},
                              std::numeric_limits<int>::max()))
    return {*t};
  return {};
}

std::vector<KernelSpec> sizeRuleVariantSpecs(const KernelSpec &spec) {
  std::vector<KernelSpec> out;
  if (!(spec.tuning == TuningConfig{}))
    return out;
  for (const TuningConfig &t : decodeSizeRuleVariants(spec)) {
    KernelSpec variant = spec;
    variant.tuning = t;
    if (!(variant == spec))
      out.push_back(std::move(variant));
  }
  return out;
}

TuningChoice chooseTuning(const TuningDb *db, const std::string &gpu,
                          const KernelSpec &spec, const ProblemSize &size,
                          int smCount) {
  TuningChoice choice;
  if (!(spec.tuning == TuningConfig{})) {
    choice.tuning = spec.tuning;
    choice.why = "the spec names its tuning";
    return choice;
  }
  std::string bucket = problemBucket(size);
  if (db) {
    if (const TuningRecord *r =
            db->find(gpu, spec.arch, untunedSpecKey(spec), bucket)) {
      choice.tuning = r->tuning;
      choice.decodeSplits = r->splits;
      choice.fromDatabase = true;
      choice.why = "tuning database: fastest on " + gpu + " for " + bucket;
      if (r->tuning == TuningConfig{})
        choice.why += " (the compiler's default won the sweep)";
      if (r->heuristicMs > 0)
        choice.why += ", " +
                      std::to_string(r->heuristicMs / r->ms).substr(0, 4) +
                      "x the heuristic";
      return choice;
    }
  }
  if (auto t = decodeSizeRule(spec, size, smCount)) {
    choice.tuning = *t;
    choice.fromSizeRule = true;
    choice.why =
        std::string(db ? "no database entry for " + gpu + ", " + bucket + "; "
                       : "no tuning database; ") +
        "decode size rule: " + std::to_string(size.batch) + " x " +
        std::to_string(spec.kvHeads) + " KV heads split over " +
        std::to_string(smCount) + " SMs: " + std::to_string(t->blockN) +
        "-key tiles, " + std::to_string(std::max<int64_t>(1, t->warps)) +
        " warp(s) along the keys, " + std::to_string(t->stages) + " stages";
    return choice;
  }
  choice.tuning = heuristicTuning(spec);
  choice.why =
      std::string(db ? "no database entry for " + gpu + ", " + bucket + "; "
                     : "no tuning database; ") +
      "heuristic for head dim " + std::to_string(spec.headDim);
  return choice;
}

} // namespace attnc
