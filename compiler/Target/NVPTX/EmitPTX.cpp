//===- EmitPTX.cpp - NVVM-level IR to PTX, in process ---------------------===//
#include "compiler/Target/NVPTX/EmitPTX.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

llvm::StringRef attnc::ptxFeaturesFor(llvm::StringRef chip) {
  // sm_90a's wgmma/setmaxnreg need PTX 8.0+; one ISA for all keeps the
  // output predictable. CUDA 13.0's ptxas accepts up to 9.0.
  (void)chip;
  return "+ptx80";
}

FailureOr<std::string> attnc::emitPTX(ModuleOp module, llvm::StringRef chip,
                                      int optLevel) {
  MLIRContext *ctx = module.getContext();
  SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
  if (gpuModules.size() != 1)
    return module.emitError() << "expected exactly one gpu.module to emit "
                                 "PTX for, found "
                              << gpuModules.size();
  gpu::GPUModuleOp gpuModule = gpuModules.front();
  auto target = NVVM::NVVMTargetAttr::get(ctx, optLevel, "nvptx64-nvidia-cuda",
                                          chip, ptxFeaturesFor(chip));
  gpuModule.setTargetsAttr(ArrayAttr::get(ctx, {target}));

  PassManager pm(ctx);
  GpuModuleToBinaryPassOptions options;
  options.compilationTarget = "isa"; // PTX text; ptxas runs separately
  pm.addPass(createGpuModuleToBinaryPass(options));
  if (failed(pm.run(module)))
    return failure();

  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (Attribute obj : binary.getObjects())
      if (auto object = dyn_cast<gpu::ObjectAttr>(obj))
        return object.getObject().getValue().str();
  return module.emitError() << "gpu-module-to-binary produced no PTX object";
}
