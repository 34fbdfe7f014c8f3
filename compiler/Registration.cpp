//===- Registration.cpp - every dialect and pass attnc knows --------------===//
#include "compiler/Registration.h"

#include "dialects/Attn/IR/AttnDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/Passes.h"

void attnc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<attn::AttnDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::math::MathDialect,
                  mlir::tensor::TensorDialect>();
}

void attnc::registerAllPasses() {
  // Upstream cleanups used by attnc's pipelines, so that lit tests can run
  // them in isolation.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
}
