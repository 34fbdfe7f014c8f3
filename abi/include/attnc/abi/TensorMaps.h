//===- TensorMaps.h - the boxes and swizzle of TMA tensor maps --*- C++ -*-===//
//
// Part of the compiler/runtime contract (attnc/abi): the tensor maps a TMA
// kernel takes by value (kAttentionTensorMapParams, LaunchParams.h) are
// built by the runtime (cuTensorMapEncodeTiled) but read by the kernel's
// copies into shared memory, whose layout (the swizzle the wgmma
// descriptors assume, the box the copy moves and the mbarrier's expected
// bytes) the compiler fixed. The box's rows are the kernel's tile and
// travel per parameter in the metadata (`box_rows`); everything else is
// fixed here.
//
// A map views a logical [B, H, S, D] tensor as 4 dims, innermost first
// (D, S, H, B); its box is kTensorMapBoxCols columns x box_rows rows x 1 x
// 1, in kTensorMapSwizzle's layout. Rows past S read as zeros (no OOB
// fill value), and a store leaves them unwritten.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_ABI_TENSORMAPS_H
#define ATTNC_ABI_TENSORMAPS_H

#include <cstdint>

namespace attnc::abi {

/// The shared-memory swizzles TMA offers (CUtensorMapSwizzle's order).
enum class TensorMapSwizzle : uint8_t { None, B32, B64, B128 };

/// The swizzle of every attention tensor map: the 128-byte one, whose rows
/// of 128 bytes are the K-major rows the wgmma descriptors read.
inline constexpr TensorMapSwizzle kTensorMapSwizzle = TensorMapSwizzle::B128;
inline constexpr int64_t kTensorMapSwizzleBytes = 128;
/// Bytes of one element (bf16 or f16) in a map.
inline constexpr int64_t kTensorMapElementBytes = 2;
/// Columns of a box: one swizzled row of 16-bit elements.
inline constexpr int64_t kTensorMapBoxCols =
    kTensorMapSwizzleBytes / kTensorMapElementBytes;
/// The swizzle pattern repeats every 8 rows of 128 bytes (an "atom"), so
/// swizzled shared buffers are aligned to it.
inline constexpr int64_t kTensorMapSwizzleAtomBytes =
    8 * kTensorMapSwizzleBytes;
/// The most rows of a box (TMA's limit of 256 per box dimension).
inline constexpr int64_t kTensorMapMaxBoxRows = 256;
/// A paged cache (paged varlen attention) is mapped as [pages, H,
/// page_size, D]: a K/V tile of `blockN` rows is copied in boxes that each
/// lie in one page, gcd(page_size, blockN) rows, at row offsets that keep
/// the swizzle's 8-row atoms whole. 0 where that box is not a multiple of 8
/// rows (such kernels copy without TMA).
inline constexpr int64_t pagedBoxRows(int64_t pageSize, int64_t blockN) {
  int64_t a = pageSize, b = blockN;
  while (b != 0) {
    int64_t r = a % b;
    a = b;
    b = r;
  }
  return a > 0 && a % 8 == 0 && a <= kTensorMapMaxBoxRows ? a : 0;
}
/// Rows of O's box (epilogue "tma"): one consumer warpgroup's 64 rows.
inline constexpr int64_t kAttentionOutputTensorMapBoxRows = 64;
/// TMA needs the base and every stride a multiple of 16 bytes, strides
/// below 2^40.
inline constexpr int64_t kTensorMapAlignBytes = 16;
inline constexpr int64_t kTensorMapStrideLimitBytes = int64_t(1) << 40;
/// sizeof(CUtensorMap), and its alignment as a kernel parameter.
inline constexpr int64_t kTensorMapBytes = 128;
inline constexpr int64_t kTensorMapParamAlign = 64;

} // namespace attnc::abi

#endif // ATTNC_ABI_TENSORMAPS_H
