//===- OnlineSoftmax.h - the online-softmax loop over K/V tiles -*- C++ -*-===//
//
// FlashAttention's inner loop at the tile level, shared by attn.attention's
// forward kernel (attnc-tile-attention) and decode's split kernel
// (attnc-tile-decode): for the K/V tiles at keys [lo, hi) in steps of
// block_n, S = Q·Kᵀ, the caller's tile.score (scale, masks, softcap),
// the online update of the row max m and sum l, O rescaled by alpha, and
// O += P·V with P in the input type; then tile.finalize. The n×n score
// matrix never exists.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_TRANSFORMS_ONLINESOFTMAX_H
#define ATTNC_COMPILER_TRANSFORMS_ONLINESOFTMAX_H

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/IR/Builders.h"

namespace attnc {

/// What differs between the kernels: how a K or V tile is loaded (plain or
/// paged views, length bounds) and how the raw scores become tile.score
/// (its masks, regions and attributes). Each builds at b's insertion point.
struct OnlineSoftmaxTiles {
  llvm::function_ref<mlir::Value(mlir::Value k0)> loadK, loadV;
  llvm::function_ref<mlir::Value(mlir::Value s, mlir::Value k0)> score;
};

/// The loop for the [rows, head_dim] query tile `qTile`; returns the
/// tile.finalize of its state (O in `outElt`, LSE), with the attention sink
/// `sink` (an f32 logit) when given. An empty range leaves O = 0, m = -inf,
/// l = 0, which finalize turns into O = 0, LSE = -inf (or the sink).
tile::FinalizeOp buildOnlineSoftmaxLoop(mlir::OpBuilder &b, mlir::Location loc,
                                        mlir::Value qTile, mlir::Value lo,
                                        mlir::Value hi, int64_t blockN,
                                        mlir::Type outElt,
                                        const OnlineSoftmaxTiles &tiles,
                                        mlir::Value sink = {});

} // namespace attnc

#endif
