//===- RowwiseABI.h - the parameters of fused elementwise kernels -*- C++
//-*-===//
//
// The contract between fused row kernels (`attnc-fuse-elementwise`) and the
// runtime, launch rule `rowwise_v1`: one pointer per tensor (the kernel's
// inputs, then its outputs, each named by its `tile.param`), then `rows`
// (i64), then `<name>_stride` (i64, elements between rows) for every
// `[rows, d]` tensor; `[d]` tensors (weights) have no stride. Grid:
// (ceil(rows / block_m), 1, 1); block: block_n · block_m threads (block_n
// threads per row, block_m rows per program).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_ROWWISEABI_H
#define ATTNC_COMPILER_ROWWISEABI_H

#include <algorithm>
#include <cstdint>

namespace attnc {

inline constexpr const char *kRowwiseRule = "rowwise_v1";

/// Elements per vector access (16 bytes of a 16-bit type).
inline constexpr int64_t kRowVector = 8;

/// The longest row a row kernel takes (the runtime's kMaxHidden): each
/// thread's share of a row is unrolled, so 10^9 elements compiled for
/// minutes.
inline constexpr int64_t kMaxRowLength = 65536;

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
