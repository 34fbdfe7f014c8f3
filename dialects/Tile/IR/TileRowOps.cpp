//===- TileRowOps.cpp - verifiers of the tile row ops ---------------------===//
#include "dialects/Tile/IR/TileOps.h"

using namespace mlir;
using namespace attnc::tile;

/// A 1-D tile of `memref`'s element type, with one index per dimension.
static LogicalResult verifyRowAccess(Operation *op, MemRefType memref,
                                     size_t numIndices, ShapedType tileType) {
  if (tileType.getRank() != 1)
    return op->emitOpError() << "expected a 1-D tile, got " << Type(tileType);
  if (tileType.getElementType() != memref.getElementType())
    return op->emitOpError()
           << "expected the tile element type " << tileType.getElementType()
           << " to match the memory's " << memref.getElementType();
  if (static_cast<int64_t>(numIndices) != memref.getRank())
    return op->emitOpError()
           << "expected " << memref.getRank()
           << " indices (one per dimension), got " << numIndices;
  if (tileType.getDimSize(0) % 8 != 0)
    return op->emitOpError() << "expected a row length that is a multiple of "
                                "8 (16-byte vectors), got "
                             << tileType.getDimSize(0);
  return success();
}

LogicalResult LoadRowOp::verify() {
  if (failed(verifyRowAccess(*this, getSource().getType(), getIndices().size(),
                             getResult().getType())))
    return failure();
  int64_t repeat = getRepeat(), d = getResult().getType().getDimSize(0);
  if (repeat != 1 && repeat != 2)
    return emitOpError() << "expected repeat 1 or 2, got " << repeat;
  if (repeat == 2 && !getInterleaved() && (d / 2) % 8 != 0)
    return emitOpError() << "expected each half of a repeat = 2 row to be "
                            "whole 16-byte vectors (a multiple of 16 "
                            "elements), got "
                         << d;
  if (repeat == 1 && getInterleaved())
    return emitOpError() << "'interleaved' needs repeat = 2";
  return success();
}

LogicalResult RotatePairsOp::verify() {
  auto t = cast<RankedTensorType>(getInput().getType());
  if (t.getRank() != 1 || !t.getElementType().isF32())
    return emitOpError() << "expected a 1-D f32 tile, got " << Type(t);
  if (t.getDimSize(0) % (getInterleaved() ? 8 : 16) != 0)
    return emitOpError() << "expected a length that splits into pairs of "
                            "whole 16-byte vectors, got "
                         << t.getDimSize(0);
  return success();
}

LogicalResult StoreRowOp::verify() {
  return verifyRowAccess(*this, getDest().getType(), getIndices().size(),
                         getValue().getType());
}

LogicalResult ReduceRowOp::verify() {
  auto t = getInput().getType();
  if (t.getRank() != 1 || !t.getElementType().isF32())
    return emitOpError() << "expected a 1-D f32 tile, got " << Type(t);
  return success();
}
