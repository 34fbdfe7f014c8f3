//===- AttnDialect.h - the attn dialect -------------------------*- C++ -*-===//
#ifndef ATTNC_DIALECTS_ATTN_IR_ATTNDIALECT_H
#define ATTNC_DIALECTS_ATTN_IR_ATTNDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "dialects/Attn/IR/AttnDialect.h.inc"

#endif
