//===- Registration.h - every dialect and pass attnc knows ------*- C++ -*-===//
#ifndef ATTNC_COMPILER_REGISTRATION_H
#define ATTNC_COMPILER_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace attnc {
/// Adds attn and every upstream dialect the attnc pipelines produce.
void registerAllDialects(mlir::DialectRegistry &registry);
/// Registers attnc's passes and pipelines with the global pass registry.
void registerAllPasses();
} // namespace attnc

#endif
