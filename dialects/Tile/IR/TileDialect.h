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

#endif
