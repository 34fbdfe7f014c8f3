//===- TileDialect.h - the kernel-level tile dialect -----------*- C++ -*-===//
#ifndef ATTNC_DIALECTS_TILE_IR_TILEDIALECT_H
#define ATTNC_DIALECTS_TILE_IR_TILEDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "dialects/Tile/IR/TileDialect.h.inc"

namespace attnc::tile {
/// Unit attribute on a kernel function: its programs should start with
/// program id 0 varying slowest (all heads' and batches' dimension-0 tile 0
/// first). The set of programs is the same; only the start order, which
/// decides the tail of a grid whose programs differ in length, changes.
inline constexpr const char *kDim0MajorAttrName = "tile.dim0_major";
} // namespace attnc::tile

#endif
