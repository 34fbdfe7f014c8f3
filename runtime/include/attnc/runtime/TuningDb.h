//===- TuningDb.h - tuned kernel configurations per device and problem -*- C++
//-*-===//
//
// `attnc tune` sweeps tile sizes on a GPU and records the fastest correct
// configuration per (GPU name, arch, spec, problem-size bucket) in a JSON
// database; the runtime consults it when it picks a configuration, and falls
// back to a heuristic where it has no entry. The chosen configuration is the
// spec's `tuning`, so it is part of the kernel's cache key.
//
// File format:
//   {"version": 1, "records": [{"gpu": "NVIDIA H200", "arch": "sm_90a",
//     "spec": "<canonical spec, tuning zeroed>", "bucket": "prefill kv<=4096",
//     "tuning": {"block_m": 64, "block_n": 64, "stages": 0, "warps": 0},
//     "ms": 2.13, "tflops": 258.1, "heuristic_ms": 2.40, "splits": 0}, ...]}
// ("heuristic_ms": the heuristic default's time in the same sweep, for the
// gain; "splits": decode's split count, a launch-time knob, 0 = the
// runtime's choice; both optional.)
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_TUNINGDB_H
#define ATTNC_RUNTIME_TUNINGDB_H

#include "attnc/runtime/Spec.h"
#include "attnc/runtime/Status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnc {

struct ProblemSize {
  int64_t batch = 1;
  int64_t seqQ = 1;
  int64_t seqKV = 1;
};

/// Sizes that behave alike share a bucket: decode (seq_q <= 16) or prefill,
/// and seq_kv rounded up to a power of two from 1024 to 131072 (or above);
/// decode also rounds the batch up to a power of two (its grid, and so its
/// best split count, scales with the batch).
std::string problemBucket(const ProblemSize &size);

/// The batch a decode bucket stands for: the power of two at or above it.
int64_t decodeBucketBatch(int64_t batch);

struct TuningRecord {
  std::string gpu;    // the device name, e.g. "NVIDIA H200"
  std::string arch;   // "sm_80", "sm_90a"
  std::string spec;   // canonical spec string with the tuning zeroed
  std::string bucket; // problemBucket()
  TuningConfig tuning;
  double ms = 0;          // median time of the sweep's problem
  double tflops = 0;      // for the reader; not used to rank
  double heuristicMs = 0; // the heuristic default in the same sweep; 0: unknown
  int64_t splits = 0;     // decode: split count to launch with; 0: runtime's
};

/// The canonical string a record keys on: the spec without its tuning.
std::string untunedSpecKey(const KernelSpec &spec);

class TuningDb {
public:
  static Result<TuningDb> parse(std::string_view json,
                                const std::string &where = "tuning database");
  std::string serialize() const;
  static Result<TuningDb> load(const std::string &path);
  /// Writes a temporary file beside `path` and renames it into place.
  Status save(const std::string &path) const;

  /// Keeps the faster of `record` and the entry it replaces.
  void record(const TuningRecord &record);
  const TuningRecord *find(const std::string &gpu, const std::string &arch,
                           const std::string &spec,
                           const std::string &bucket) const;
  /// Adds every record of `other`; per key, the faster wins.
  void merge(const TuningDb &other);
  size_t size() const { return records_.size(); }
  const std::map<std::string, TuningRecord> &records() const {
    return records_;
  }

private:
  std::map<std::string, TuningRecord> records_; // gpu|arch|spec|bucket
};

/// The default tiles and schedule. mma.sync (H200, bench/NOTES.md): up to
/// head dim 128, 128 query rows on 4 warps, 64-key tiles at head dims 64
/// and 128 (32 with a left window at 128), 32 at 96; above 128, 64 rows on
/// 4 warps with 32-key tiles. sm_90a, head dims 64-256: wgmma on the tma
/// schedule, 128 query rows (192 at D64 without a soft-cap) by 128 keys up
/// to D128 and 64 above, 2 stages. Its grid and epilogue are chosen here
/// for the compiler too (defaultTileOptions reads them): persistent CTAs
/// without a left window up to head dim 192 when causal, and at D128, else
/// "tiles"; O stored by TMA. A left window at D256 takes mma.sync.
TuningConfig heuristicTuning(const KernelSpec &spec);

struct TuningChoice {
  TuningConfig tuning;
  int64_t decodeSplits = 0; // decode: DecodeArgs::numSplits (0: runtime's)
  bool fromDatabase = false;
  // The built-in size rule (decodeSizeRule) chose `tuning`: like a database
  // entry, it becomes the spec's tuning.
  bool fromSizeRule = false;
  std::string why; // one line for logs and `attnc tune choose`
};

/// The built-in choice for a decode size without a database entry, or
/// nullopt (the compiler's default then), when the launch must split to fill
/// the GPU (bucket batch x kv_heads < smCount) on sm_90a at head dim 128 with
/// pages a multiple of 32 keys and at most 8 live rows per program: with
/// pages a multiple of 128 keys, 128-key tiles over 4 warps along the keys,
/// 2 stages, one program per SM; else 32-key tiles, 3 stages, about two
/// programs per SM (decodeProgramsPerSm). Measured on the H200
/// (bench/NOTES.md, the decode sweeps of 2026-12-03); the
/// sweeps did not favour a rule at B = 64 (one split) or page 16 (a tile
/// spans pages). smCount 0: unknown, no rule.
std::optional<TuningConfig>
decodeSizeRule(const KernelSpec &spec, const ProblemSize &size, int smCount);

/// Every tuning decodeSizeRule can choose for `spec` at some size on some
/// GPU (at most one today: it depends on the page size alone): what a
/// bundle of `spec` must hold beside the spec itself, so that the runtime
/// never asks for a variant nobody compiled.
std::vector<TuningConfig> decodeSizeRuleVariants(const KernelSpec &spec);
/// Those variants as specs (none when `spec` names its own tuning, which
/// the runtime then always uses): what `attnc bundle` and a precompile add
/// beside `spec`.
std::vector<KernelSpec> sizeRuleVariantSpecs(const KernelSpec &spec);

/// The spec's own tuning when it has one; else the database's entry for
/// (gpu, arch, spec, bucket of `size`); else decodeSizeRule (when smCount
/// is known); else the heuristic.
TuningChoice chooseTuning(const TuningDb *db, const std::string &gpu,
                          const KernelSpec &spec, const ProblemSize &size,
                          int smCount = 0);

} // namespace attnc

#endif // ATTNC_RUNTIME_TUNINGDB_H
