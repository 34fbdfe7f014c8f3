//===- TileOps.h - operations and attributes of tile -----------*- C++ -*-===//
#ifndef ATTNC_DIALECTS_TILE_IR_TILEOPS_H
#define ATTNC_DIALECTS_TILE_IR_TILEOPS_H

#include "dialects/Attn/IR/AttnOps.h"
#include "dialects/Tile/IR/TileDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_ATTRDEF_CLASSES
#include "dialects/Tile/IR/TileAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Tile/IR/TileOps.h.inc"

#endif
