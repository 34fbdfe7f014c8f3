//===- FragmentMath.h - softmax arithmetic on accumulator fragments -*- C++
//-*-===//
//
// The mma.sync and wgmma mappings hold S, P, O and the row statistics in the
// same per-warp layout: a warp owns `mTiles` m16 row tiles (wgmma: one, the
// warp's 16 rows of its warpgroup's 64), each as n8 tiles of the m16n8 C
// layout (lane 4g + t holds rows g and g + 8, columns 2t, 2t + 1). So the
// online softmax, the rescale, P's conversion to an A operand, tile
// constants and the finalize are one piece of code for both; only the dots
// and the staging differ.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CONVERSION_TILETOGPU_FRAGMENTMATH_H
#define ATTNC_COMPILER_CONVERSION_TILETOGPU_FRAGMENTMATH_H

#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace attnc::gpu_emit {

/// A tile value as this thread's registers.
struct Frags {
  enum Kind {
    A,       // [mt][k16 chunk] vector<4x2xT>: an A operand (Q, or P)
    C,       // [mt][n8 tile] vector<2x2xf32>: an accumulator (S, P, O)
    RowStat, // [mt][2] f32: the statistic of rows g and g + 8
    Staged,  // [0] the shared-memory buffer of a tile
  } kind;
  llvm::SmallVector<mlir::Value> regs;
  // Nonzero on the scores of a plain tile.score (no softcap, no score_mod)
  // whose only user is softmax_update: the registers hold the raw QKᵀ (or
  // -inf where masked) and the log2-domain score is reg x logScale, folded
  // into the exponent as one FMA (FlashAttention-2's scale_softmax_log2).
  float logScale = 0.f;
};

/// The fragment ops of one emitter: reads and writes its value -> fragments
/// map, builds with its builder at its current location.
class FragmentMath {
public:
  /// `skipUnitRescale`: rescale branches around the multiplies when every
  /// lane of the warp has alpha = 1 (no row's max grew: exact, see
  /// rescale), for head dims of 128 and more; the warp must be converged
  /// there.
  /// `rescaleThreshold` > 0: softmax_update keeps a row's old max (alpha
  /// = 1, O left as it is) unless the new one exceeds it by more than that
  /// many log2 units (FlashAttention-4's; the result is the same, the
  /// probabilities are then at most 2^threshold, and the unit-rescale skip
  /// above fires on most tiles instead of a few).
  /// `deadUpperRows`: register row 1 of every m16 tile (query rows g + 8)
  /// is padding that no store reads (the decode split kernel's group of at
  /// most 8 rows): softmax_update gives it p = 0, alpha = 1 and leaves its
  /// max and sum as they were, so its exponentials, reductions and O
  /// rescale fold away.
  FragmentMath(mlir::OpBuilder &b, const mlir::Location &loc, int64_t mTiles,
               llvm::DenseMap<mlir::Value, Frags> &frags,
               bool skipUnitRescale = false, float rescaleThreshold = 0.f,
               bool deadUpperRows = false)
      : b(b), loc(loc), mTiles(mTiles), frags(frags),
        skipUnitRescale(skipUnitRescale), rescaleThreshold(rescaleThreshold),
        deadUpperRows(deadUpperRows) {}

  /// tile.score on S's C fragments: register row r of m16 tile mt is query
  /// row row(mt, r) (absolute), register column c of n8 tile nt is key
  /// col0() + 8 nt + c; both are called where the scores are built, in
  /// each branch that reads positions (masks or a score_mod): col0 once,
  /// then row for each (mt, r). Tiles no mask
  /// touches (gpu_emit::tileNeedsMasks over blockM rows) skip the mask
  /// arithmetic.
  mlir::LogicalResult
  score(tile::ScoreOp op, const mlir::IRMapping &map, int64_t blockM,
        llvm::function_ref<mlir::Value(int64_t mt, int64_t r)> row,
        llvm::function_ref<mlir::Value()> col0);
  /// tile.store of C fragments (O) or row statistics (LSE, one lane of
  /// each quad) into a [B, H, S(, D)] view, rows past its sequence left
  /// out: register row r of m16 tile mt is query row row(mt, r) (absolute),
  /// lane 4g + t holds columns 2t, 2t + 1 of each n8 tile.
  mlir::LogicalResult
  store(tile::StoreOp op, const mlir::IRMapping &map, mlir::Value t4,
        llvm::function_ref<mlir::Value(int64_t mt, int64_t r)> row);
  mlir::LogicalResult softmaxUpdate(tile::SoftmaxUpdateOp op);
  /// `awaitAcc` (optional): emitted where the accumulator is first read,
  /// in each arm of the unit-rescale branch (the accumulator is still being
  /// written by an asynchronous wgmma until then).
  mlir::LogicalResult rescale(tile::RescaleOp op,
                              llvm::function_ref<void()> awaitAcc = nullptr);
  /// P (C layout, f32) -> the A operand of P·V in bf16/f16.
  mlir::LogicalResult trunc(mlir::arith::TruncFOp op);
  /// f32 splat tile constants (the loop state's initial values).
  mlir::LogicalResult constant(mlir::arith::ConstantOp op);
  /// `map` gives the per-thread value of the op's sink.
  mlir::LogicalResult finalize(tile::FinalizeOp op, const mlir::IRMapping &map);

private:
  mlir::Value row2(mlir::Value v, int64_t i) { // register i of [N x 2]
    return mlir::vector::ExtractOp::create(b, loc, v,
                                           llvm::ArrayRef<int64_t>{i});
  }
  mlir::Value elem(mlir::Value v, int64_t i, int64_t j) {
    return mlir::vector::ExtractOp::create(b, loc, v,
                                           llvm::ArrayRef<int64_t>{i, j});
  }
  mlir::Value fromRows(mlir::VectorType t, llvm::ArrayRef<mlir::Value> rows) {
    return gpu_emit::fromRows(b, loc, t, rows);
  }
  mlir::Value quadReduce(mlir::Value x, bool max) {
    return gpu_emit::quadReduce(b, loc, x, max);
  }

  mlir::OpBuilder &b;
  const mlir::Location &loc;
  /// Max or sum of `xs`, left to right.
  mlir::Value chainReduce(llvm::SmallVector<mlir::Value> xs, bool max);

  const int64_t mTiles;
  llvm::DenseMap<mlir::Value, Frags> &frags;
  const bool skipUnitRescale;
  const float rescaleThreshold;
  const bool deadUpperRows;
};

} // namespace attnc::gpu_emit

#endif
