//===- TunePresets.h - the sweeps `attnc tune plan --preset` names -*- C++
//-*-===//
#ifndef ATTNC_TOOLS_ATTNC_TUNEPRESETS_H
#define ATTNC_TOOLS_ATTNC_TUNEPRESETS_H

#include "attnc/runtime/TunePlan.h"

#include <string>
#include <vector>

namespace attnc::cli {

/// "peers-d128": PEERS.md's prefill cells at head dim 128 (S = 1k, 4k, 16k
/// with B*S = 16k tokens, H = 16; causal and not) and its decode cells (32
/// q / 8 KV heads, D = 128, pages of 256 tokens as bench/compare.py
/// passes them). "peers": also the D = 64 and D = 256 prefill cells.
Result<std::vector<TuneGroup>> tunePreset(const std::string &name,
                                          const std::string &arch);

/// "B:SQ:SKV,B:SQ:SKV,..." (decode: SQ = 1).
Result<std::vector<ProblemSize>> parseProblems(const std::string &text);

/// "prefill D128 causal", "decode D128 p256".
std::string groupName(const KernelSpec &spec);

} // namespace attnc::cli

#endif
