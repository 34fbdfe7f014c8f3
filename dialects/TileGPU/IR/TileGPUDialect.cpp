//===- TileGPUDialect.cpp - the GPU-level tile dialect --------------------===//
#include "dialects/TileGPU/IR/TileGPUDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace attnc::tgpu;

#include "dialects/TileGPU/IR/TileGPUDialect.cpp.inc"

void TgpuDialect::initialize() {
  registerAttributes();
  registerOps();
}
