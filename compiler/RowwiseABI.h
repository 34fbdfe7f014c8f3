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

struct RowSchedule {
  int64_t threadsPerRow = 1;
  int64_t rowsPerProgram = 1;
};

/// Threads per row and rows per program for a row of `d` elements: about
/// four 16-byte vectors per thread and input (enough loads in flight, the
/// row stays in registers), at most 256 threads per row; short rows share a
/// program so that a block has at least 128 threads.
inline RowSchedule defaultRowSchedule(int64_t d) {
  int64_t chunks = std::max<int64_t>(1, d / kRowVector);
  int64_t t = 1;
  while (t * 2 <= std::min<int64_t>(256, std::max<int64_t>(1, chunks / 4)))
    t *= 2;
  return {t, t < 128 ? 128 / t : 1};
}

} // namespace attnc

#endif
