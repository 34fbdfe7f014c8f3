//===- attnc-opt.cpp - mlir-opt with every attnc dialect and pass ---------===//
//
// The driver lit tests use: parse, run passes, print, -verify-diagnostics.
//
//===----------------------------------------------------------------------===//
#include "compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  attnc::registerAllDialects(registry);
  attnc::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attnc optimizer driver\n", registry));
}
