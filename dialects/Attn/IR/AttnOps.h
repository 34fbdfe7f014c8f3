//===- AttnOps.h - operations and attributes of attn -----------*- C++ -*-===//
#ifndef ATTNC_DIALECTS_ATTN_IR_ATTNOPS_H
#define ATTNC_DIALECTS_ATTN_IR_ATTNOPS_H

#include "dialects/Attn/IR/AttnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Attn/IR/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Attn/IR/AttnAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Attn/IR/AttnOps.h.inc"

#endif
