//===- TunePlan.h - an autotuning sweep's plan, shared by both halves -*- C++
//-*-===//
//
// `attnc tune` runs in two halves that meet in a JSON plan: the planning
// half (needs the compiler) enumerates candidate configurations per group
// (one untuned spec and its problem sizes), compiles them into a bundle,
// drops those ptxas reports as spilling or over the shared-memory limit,
// and writes the plan; the running half (runtime only, on the GPU) checks
// and times the kept candidates per problem and writes a TuningDb.
//
// File format:
//   {"version": 1, "build_id": "...", "estimate_s": 95.0,
//    "groups": [{"name": "prefill D128 causal", "spec": {<spec file form>},
//                "problems": [{"batch": 4, "seq_q": 4096, "seq_kv": 4096}],
//                "candidates": [{"id": "c0", "heuristic": true,
//                   "tuning": {...}, "splits": 0, "mapping": "wgmma",
//                   "registers": 168, "spill_bytes": 0, "smem_bytes": 49152,
//                   "dropped": ""}, ...]}]}
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_TUNEPLAN_H
#define ATTNC_RUNTIME_TUNEPLAN_H

#include "attnc/runtime/Spec.h"
#include "attnc/runtime/Status.h"
#include "attnc/runtime/TuningDb.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnc {

struct TuneCandidate {
  std::string id;      // unique within its group, e.g. "c3"
  TuningConfig tuning; // compile-time knobs; all zero: the compiler default
  int64_t splits = 0;  // decode's launch-time split count; 0: runtime's
  // The configuration the runtime runs without a database entry (tuning
  // zero, splits zero): the baseline every gain is measured against.
  bool heuristic = false;
  // From the planning half: the mapping the compiler chose and what ptxas
  // said (the worst kernel of the module); -1 registers: not compiled.
  std::string mapping;
  int64_t registers = -1;
  int64_t spillBytes = 0;
  int64_t smemBytes = 0; // static + dynamic, bytes per block
  std::string dropped;   // why it is not run; empty: kept

  /// "wgmma 128x64", "mma 128x32 w4", "decode n32 s16", "default".
  std::string label() const;
};

struct TuneGroup {
  std::string name;
  KernelSpec spec; // untuned
  std::vector<ProblemSize> problems;
  std::vector<TuneCandidate> candidates; // kept and dropped
};

struct SweepPlan {
  std::string buildId; // the compiler build id the bundle was made with
  double estimateSeconds = 0;
  std::vector<TuneGroup> groups;

  static Result<SweepPlan> parse(std::string_view json,
                                 const std::string &where = "sweep plan");
  static Result<SweepPlan> load(const std::string &path);
  std::string serialize() const;
  Status save(const std::string &path) const;
};

/// The spec a candidate is compiled and looked up with.
KernelSpec candidateSpec(const TuneGroup &group,
                         const TuneCandidate &candidate);

/// FLOPs of an attention problem (4 B Hq Sq Skv D, halved when causal; the
/// PEERS.md convention), or the K+V bytes a decode reads.
double problemFlops(const KernelSpec &spec, const ProblemSize &size);
double decodeKvBytes(const KernelSpec &spec, const ProblemSize &size);

/// One timed run: a kept candidate on one problem.
struct TuneJob {
  size_t group = 0, problem = 0, candidate = 0;
  bool operator==(const TuneJob &) const = default;
};

/// Every (group, problem, kept candidate), group-major, problem, candidate.
std::vector<TuneJob> sweepJobs(const SweepPlan &plan);

/// Shard `index` of `count` (0-based): every count-th job from `index`, plus
/// the heuristic candidate of each (group, problem) the shard touches, so
/// that each shard measures its gain against the baseline in the same run.
/// Deterministic: the same plan and count give the same split anywhere.
std::vector<TuneJob> shardJobs(const SweepPlan &plan,
                               const std::vector<TuneJob> &jobs, int index,
                               int count);

/// Parses "i/n" (0 <= i < n).
Status parseShard(std::string_view text, int &index, int &count);

/// Seconds the running half takes for `jobs` on an H100/H200-class GPU:
/// per problem, inputs and the float64 reference rows; per job, loading,
/// the correctness launch and the timed launches.
double estimateSweepSeconds(const SweepPlan &plan,
                            const std::vector<TuneJob> &jobs);

} // namespace attnc

#endif // ATTNC_RUNTIME_TUNEPLAN_H
