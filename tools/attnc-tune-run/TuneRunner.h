//===- TuneRunner.h - the running half of an autotuning sweep ---*- C++ -*-===//
//
// Runtime only (no LLVM/MLIR): loads a sweep plan and its bundle, and per
// problem makes fresh random inputs (several sets when one is smaller than
// 4x the L2 cache, rotated between timed launches), checks each kept
// candidate against a float64 reference on sampled rows (relative L2) with
// the output poisoned before the launch and every element checked for
// NaN/Inf, times the correct ones with CUDA events (warm-up, median), and
// records the fastest per (GPU, arch, spec, bucket) in a TuningDb.
// Used by attnc-tune-run (runtime-only, for a GPU machine without the
// compiler) and `attnc tune run`.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TOOLS_ATTNC_TUNE_RUN_TUNERUNNER_H
#define ATTNC_TOOLS_ATTNC_TUNE_RUN_TUNERUNNER_H

#include <cstdint>
#include <string>

namespace attnc {

struct TuneRunOptions {
  std::string planPath;
  std::string bundleDir; // empty: "bundle" beside the plan
  std::string dbPath;    // the tuning database to write (merged if present)
  std::string tablePath; // optional: the results table as Markdown
  std::string shard = "0/1";
  std::string gpuName; // empty: the device's name
  int device = 0;
  int minReps = 10, maxReps = 50;
  double timedSeconds = 0.15; // per candidate and problem, within the reps
  double maxRelL2 = 1e-2;     // bf16/fp16 outputs
  uint64_t seed = 0;          // 0: from the clock (printed)
};

/// Runs the sweep; returns the exit code (0; 1 on an error or when no
/// candidate of a problem was correct; 77 without a CUDA device).
int runTuneSweep(const TuneRunOptions &options);

} // namespace attnc

#endif
