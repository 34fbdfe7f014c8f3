//===- RowwiseABI.h - the schedule of fused elementwise kernels -*- C++ -*-===//
//
// Fused row kernels (`attnc-fuse-elementwise`) follow the launch rule
// abi::kGridRuleRowwise, whose parameters and limits are attnc/abi's
// (LaunchParams.h, GridRules.h); block: block_n · block_m threads (block_n
// threads per row, block_m rows per program). This header holds the
// compiler's choices for them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_ROWWISEABI_H
#define ATTNC_COMPILER_ROWWISEABI_H

#include "attnc/abi/GridRules.h"
#include "attnc/abi/LaunchParams.h"

#include <algorithm>
#include <cstdint>

namespace attnc {

/// Elements per vector access (abi::kRowVectorBytes of a 16-bit type).
inline constexpr int64_t kRowVector = abi::kRowVectorBytes / 2;

struct RowSchedule {
  int64_t threadsPerRow = 1;
  int64_t rowsPerProgram = 1;
};

/// Threads per row and rows per program for a row of `d` output elements:
/// about two 16-byte output vectors per thread (the fewest power-of-two
/// threads that leave each at most two, up to 1024), and blocks of at least
/// 512 threads from 64 threads per row up (shorter rows: 128; they share a
/// program). Measured on the H200 (schedule sweep of 2026-11-29, docs/devlog):
/// silu_and_mul 8192 x 14336 1024 x 1 (4.22 TB/s, 34 registers) vs 256 x 1
/// (3.47, 155 registers); add+rms_norm
/// 8192 x 4096 256 x 2 (3.81) vs 128 x 1 (3.68).
inline RowSchedule defaultRowSchedule(int64_t d) {
  int64_t chunks = std::max<int64_t>(1, d / kRowVector);
  int64_t t = 1;
  while (t < 1024 && 2 * t < chunks)
    t *= 2;
  return {t, std::max<int64_t>(1, (t >= 64 ? 512 : 128) / t)};
}

} // namespace attnc

#endif
