//===- RowsToLinalg.h - tile row ops for the host path ----------*- C++ -*-===//
#ifndef ATTNC_COMPILER_CONVERSION_TILETOLINALG_ROWSTOLINALG_H
#define ATTNC_COMPILER_CONVERSION_TILETOLINALG_ROWSTOLINALG_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace attnc {

/// tile.load_row / store_row / reduce_row as element loops on tensors,
/// tensor.splat as linalg.fill, and math.rsqrt as 1 / sqrt (the host's
/// libm has no rsqrt).
void populateRowsToLinalgPatterns(mlir::RewritePatternSet &patterns);
void addRowsToLinalgIllegalOps(mlir::ConversionTarget &target);

} // namespace attnc

#endif
