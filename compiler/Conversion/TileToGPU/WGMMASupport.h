//===- WGMMASupport.h - what the sm_90a wgmma mapping can take --*- C++ -*-===//
//
// The variants the wgmma mapping handles so far, asked both by the mapping
// (diagnostic at the kernel) and by the drivers before they pick it (they
// fall back to mma.sync and say why).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CONVERSION_TILETOGPU_WGMMASUPPORT_H
#define ATTNC_COMPILER_CONVERSION_TILETOGPU_WGMMASUPPORT_H

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>

namespace attnc::wgmma {

/// 128-byte swizzle: rows of 64 16-bit elements, a period of 8 rows.
inline constexpr int64_t kSwizzleBytes = 128;
inline constexpr int64_t kSwizzleElems = 64;
inline constexpr int64_t kSwizzleAtomBytes = 1024;
/// Dynamic shared memory an sm_90 block may opt in to (227 KiB).
inline constexpr int64_t kSmemLimit = 227 * 1024;

/// Shared memory the mapping uses: the Q tile and rings of `stages` K and
/// V tiles (16-bit elements).
inline int64_t smemBytes(int64_t headDim, int64_t blockM, int64_t blockN,
                         int64_t stages) {
  return (blockM + 2 * stages * blockN) * headDim * 2;
}

/// Why a variant cannot take the wgmma mapping ("" when it can), as the end
/// of a sentence "the wgmma mapping ...".
/// `leftWindow`: the variant has a sliding window with a left bound (at
/// head dim 256 its index arithmetic and the accumulator spill).
std::string unsupportedReason(int64_t headDim, int64_t blockM, int64_t blockN,
                              int64_t elementBits, int64_t stages,
                              bool leftWindow = false);

/// The same for a tile kernel (its Q/K/V tile shapes and launch).
std::string unsupportedReason(mlir::func::FuncOp kernel,
                              attnc::tile::LaunchAttr launch, int64_t stages);

} // namespace attnc::wgmma

#endif
