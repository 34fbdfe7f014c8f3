//===- TileDialect.cpp - the kernel-level tile dialect --------------------===//
#include "dialects/Tile/IR/TileDialect.h"
#include "dialects/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace attnc::tile;

#include "dialects/Tile/IR/TileDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Tile/IR/TileAttrs.cpp.inc"

void TileDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Tile/IR/TileOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Tile/IR/TileAttrs.cpp.inc"
      >();
}
