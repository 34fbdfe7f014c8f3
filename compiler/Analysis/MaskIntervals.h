//===- MaskIntervals.h - What a mask region yields over a tile -*- C++ -*-===//
//
// Interval evaluation of a mask region (attn.attention's or tile.score's):
// given ranges for its integer arguments (the query rows and keys of a
// tile), emits the scalar ops that decide at run time whether the region
// may yield true and whether it may yield false anywhere in the tile. A
// tile where it cannot yield false needs no per-element mask; keys where it
// cannot yield true need not be visited. This is what lets causal, windows
// and prefix-LM written as mask_mods skip tiles and run interior tiles
// unmasked as the built-in flags do.
//
// Sound by construction: integers are tracked as [lo, hi] with a static
// bound on their magnitude (so that the 64-bit arithmetic of the bounds
// never wraps) and a static sign; an op the evaluation does not know (a
// float, a load from a captured tensor, an unsigned op on a possibly
// negative value) makes its result unknown, and an unknown yield says
// nothing.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_ANALYSIS_MASKINTERVALS_H
#define ATTNC_COMPILER_ANALYSIS_MASKINTERVALS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Region.h"

#include <optional>

namespace attnc::mask_intervals {

/// An index range [lo, hi] (both index values, inclusive) of a
/// non-negative argument below 2^31 (a position, batch or head).
struct PositionRange {
  mlir::Value lo, hi;
};

/// The positions [first, last] of a sequence of length `seq` as a region
/// sees them: each clamped to [0, seq - 1] (rows and keys past the end are
/// masked or never stored; the regions see the last one instead).
PositionRange clampedRange(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value first, mlir::Value last,
                           mlir::Value seq);

/// Whether the region may yield true / false (i1 values).
struct Outcome {
  mlir::Value mayBeTrue, mayBeFalse;
};

/// Emits at `b`'s insertion point the evaluation of the mask region
/// `region` (arguments: batch, head, query row, key, then captured
/// tensors) with its first four arguments in `args`. std::nullopt when the
/// yield is unknown whatever the ranges (the region reads a captured
/// tensor or computes in floats on the way to its result): then every
/// element needs the region.
std::optional<Outcome> evaluate(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Region &region,
                                llvm::ArrayRef<PositionRange> args);

/// Whether evaluate() can say anything about `region` (without emitting).
bool isAnalyzable(mlir::Region &region);

} // namespace attnc::mask_intervals

#endif // ATTNC_COMPILER_ANALYSIS_MASKINTERVALS_H
