//===- TuneSpace.h - the candidate configurations `attnc tune` sweeps -*- C++
//-*-===//
//
// Every knob a sweep varies is listed by tuneKnobs(), one entry per knob
// with its values for a spec, so that a new knob (say a K/V ring depth via
// TuningConfig::stages) is one more entry there. enumerateCandidates() takes
// the cartesian product, puts the runtime's default (the heuristic) first,
// and marks the combinations a mapping cannot take as dropped, with the
// reason, before anything is compiled.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_TUNESPACE_H
#define ATTNC_COMPILER_DRIVER_TUNESPACE_H

#include "attnc/runtime/TunePlan.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace attnc {

struct TuneKnob {
  std::string name; // "mapping", "block_m", "block_n", "warps", "stages",
                    // "kv_sync", "grid", "epilogue", "splits"
  std::vector<std::string> values;
  // Sets the knob to values[i] on a candidate.
  std::function<void(TuneCandidate &, const std::string &value)> apply;
};

/// The knobs swept for `spec` (op attention_fwd or decode) and their values.
/// `overrides` (knob name -> values) replaces a knob's values; an unknown
/// name or a value that is not a number (except for "mapping", "kv_sync",
/// "grid" and "epilogue") is an error.
Result<std::vector<TuneKnob>> tuneKnobs(
    const KernelSpec &spec,
    const std::map<std::string, std::vector<std::string>> &overrides = {});

/// Why a mapping cannot take the candidate ("" when it can): checked before
/// compiling.
std::string staticRejection(const KernelSpec &spec,
                            const TuneCandidate &candidate);

/// The heuristic default ("c0", tuning zero) then every combination of the
/// knobs, ids "c1", "c2", ...; rejected ones carry `dropped`.
Result<std::vector<TuneCandidate>> enumerateCandidates(
    const KernelSpec &spec,
    const std::map<std::string, std::vector<std::string>> &overrides = {});

/// Shared memory per block an sm_XX device lets a kernel opt in to.
int64_t smemLimitBytes(const std::string &arch);

} // namespace attnc

#endif
