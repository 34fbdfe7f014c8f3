//===- WGMMASupport.h - what the sm_90a wgmma mapping can take --*- C++ -*-===//
//
// The variants the wgmma mapping handles, asked both by the mapping
// (diagnostic at the kernel) and by the drivers before they pick it (they
// fall back to mma.sync and say why).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CONVERSION_TILETOGPU_WGMMASUPPORT_H
#define ATTNC_COMPILER_CONVERSION_TILETOGPU_WGMMASUPPORT_H

#include "attnc/abi/TensorMaps.h"
#include "dialects/Tile/IR/TileOps.h"
#include "dialects/TileGPU/IR/TileGPUDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace attnc::wgmma {

/// The 128-byte swizzle of the tensor maps TMA fills shared memory through
/// (the runtime builds them: abi/TensorMaps.h): rows of 64 16-bit elements,
/// a period of 8 rows. Every swizzled shared tile uses it, TMA-filled or
/// not.
inline constexpr int64_t kSwizzleBytes = abi::kTensorMapSwizzleBytes;
inline constexpr int64_t kSwizzleElems = abi::kTensorMapBoxCols;
inline constexpr int64_t kSwizzleAtomBytes = abi::kTensorMapSwizzleAtomBytes;
/// Dynamic shared memory an sm_90 block may opt in to (227 KiB).
inline constexpr int64_t kSmemLimit = 227 * 1024;

/// The layouts the mapping holds an attention kernel's tiles in, for
/// block_m query rows: accumulators (S, P, O) of block_m / 64 warpgroups,
/// their row statistics (max, sum, alpha, LSE), P's 16-bit A operand, and
/// Q, K and V in shared memory, 128-byte swizzled in 64-column blocks.
/// attnc-assign-layouts gives them; the mapping accepts no others.
struct TileLayouts {
  mlir::Attribute acc, stats, operand, shared;
  TileLayouts(mlir::MLIRContext *ctx, int64_t blockM);
};

/// Threads of the producer warpgroup (kv-sync producer / pingpong).
inline constexpr int64_t kProducerThreads = 128;

/// setmaxnreg counts. A block of T threads starts with E registers per
/// thread, E = 65536 / T in multiples of 8 (at most 240; ptxas gives a
/// kernel with setmaxnreg exactly that, tests/ptxas checks it). The
/// producer drops to `producer` (its copies' index arithmetic: 40 for 128
/// threads' cp.async addresses, 24, the least setmaxnreg takes, for one
/// thread's TMA coordinates or beside three consumer warpgroups), and the
/// consumer warpgroups take what it frees, so the block never asks for more
/// than it holds: setmaxnreg.inc waits until the registers are free, and
/// would wait forever otherwise. (At 128 rows: 40 / 232, by TMA 24 / 240;
/// D256 with a softcap spills at 232.)
struct RegisterSplit {
  int32_t entry, producer, consumer;
};
inline RegisterSplit registerSplit(int64_t consumerThreads, bool tma) {
  auto down8 = [](int64_t r) { return int32_t(r / 8 * 8); };
  int32_t entry = std::min<int32_t>(
      240, down8(65536 / (consumerThreads + kProducerThreads)));
  int32_t producer = tma || consumerThreads >= 384 ? 24 : 40;
  int32_t consumer =
      std::min<int32_t>(240, entry + down8((entry - producer) *
                                           kProducerThreads / consumerThreads));
  return {entry, producer, consumer};
}

/// Whether persistent blocks are the default at these tiles (kv-sync tma):
/// the item loop keeps a few more values live across the KV loop, which
/// the consumers' 240 registers hold beside O (D/2 per thread), S and P
/// (3/4 x block_n) up to 160 of them: D64-D192 at the default tiles; D256
/// x 64 keys and D128 x 176 keys spill (ptxas; bench/NOTES-hopper.md,
/// "persistent CTAs", 2026-12-01).
inline bool persistentFits(int64_t headDim, int64_t blockN) {
  return headDim / 2 + 3 * blockN / 4 <= 160;
}

/// Shared memory the mapping uses: the Q tile and rings of `stages` K and
/// V tiles (16-bit elements).
inline int64_t smemBytes(int64_t headDim, int64_t blockM, int64_t blockN,
                         int64_t stages) {
  return (blockM + 2 * stages * blockN) * headDim * 2;
}

/// epilogue=tma with persistent blocks: O's staging buffer (block_m rows of
/// O in the 128-byte swizzled layout), beside the tiles; one block per tile
/// stages O in Q's buffer instead.
inline int64_t oStagingBytes(int64_t headDim, int64_t blockM) {
  return blockM * headDim * 2;
}

/// Whether epilogue=tma fits these tiles: with persistent blocks O's
/// staging buffer must fit beside the Q tile and the K/V rings (D128 at
/// 128x176 or with 3 stages, and D256, do not); one block per tile stages
/// O in Q's buffer. The drivers' default falls back to registers where it
/// does not; named, the mapping refuses it.
inline bool tmaEpilogueFits(int64_t headDim, int64_t blockM, int64_t blockN,
                            int64_t stages, bool persistent) {
  return !persistent || smemBytes(headDim, blockM, blockN, stages) +
                                oStagingBytes(headDim, blockM) <=
                            kSmemLimit;
}

/// Whether the drivers' default stores O by TMA (tuning.epilogue unset):
/// wherever it fits, persistent blocks included. Their TMA store avoids the
/// .aligned stmatrix/bar.sync that would take a causal KV loop out of the
/// uniform datapath (see emitTmaStore), and it is at least as fast as the
/// register store: D64 causal 421.1 against 414.3 TFLOP/s (H200, B4 S4k),
/// D192 causal's KV loop 524 SASS instructions per tile against 527 (not
/// measured on the GPU; bench/NOTES-hopper.md, "the TMA epilogue
/// everywhere it fits", 2026-12-03).
inline bool tmaEpilogueByDefault(int64_t headDim, int64_t blockM,
                                 int64_t blockN, int64_t stages,
                                 bool persistent) {
  return tmaEpilogueFits(headDim, blockM, blockN, stages, persistent);
}

/// Why a variant cannot take the wgmma mapping ("" when it can), as the end
/// of a sentence "the wgmma mapping ...".
/// `leftWindow`: the variant has a sliding window with a left bound (at
/// head dim 256 its index arithmetic and the accumulator spill).
/// `pageSize`: K/V come from a paged cache of that page size (0: not
/// paged), copied by TMA in boxes of abi::pagedBoxRows rows.
std::string unsupportedReason(int64_t headDim, int64_t blockM, int64_t blockN,
                              int64_t elementBits, int64_t stages,
                              bool leftWindow = false, int64_t pageSize = 0);

/// The same for a tile kernel (its Q/K/V tile shapes and launch).
std::string unsupportedReason(mlir::func::FuncOp kernel,
                              attnc::tile::LaunchAttr launch, int64_t stages);

} // namespace attnc::wgmma

#endif
