//===- TileGPUOps.cpp - operations of the tgpu dialect --------------------===//
#include "dialects/TileGPU/IR/TileGPUDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace attnc::tgpu;

#define GET_OP_CLASSES
#include "dialects/TileGPU/IR/TileGPUOps.cpp.inc"

void TgpuDialect::registerOps() {
  addOperations<
#define GET_OP_LIST
#include "dialects/TileGPU/IR/TileGPUOps.cpp.inc"
      >();
}

LogicalResult ConvertLayoutOp::verify() {
  Attribute from = layoutOf(getSource()), to = layoutOf(getResult());
  if (!from || !to)
    return emitOpError() << "converts between two layouts; both tiles need "
                            "one";
  if (from == to)
    return emitOpError() << "converts a tile to the layout it has";
  return success();
}
