//===- EmitPTX.cpp - NVVM-level IR to PTX, in process ---------------------===//
//
// The gpu.module goes through upstream's serialization steps
// (mlir::LLVM::ModuleToObject: translate to LLVM IR, link bitcode libraries,
// optimise, NVPTX codegen), with attnc choosing the libraries: libdevice from
// attnc's configured path when the module calls into it, nothing otherwise.
// Upstream's NVVM target instead links libdevice from whatever CUDA_ROOT,
// CUDA_HOME or CUDA_PATH says at each call, and leaves the calls unresolved
// (an `.extern .func __nv_...` that ptxas rejects) when none is set.
//
//===----------------------------------------------------------------------===//
#include "compiler/Target/NVPTX/EmitPTX.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Target/LLVM/ModuleToObject.h"
#include "mlir/Target/LLVM/NVVM/Utils.h"

#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

#ifndef ATTNC_DEFAULT_LIBDEVICE
#define ATTNC_DEFAULT_LIBDEVICE "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
#endif

using namespace mlir;

llvm::StringRef attnc::ptxFeaturesFor(llvm::StringRef chip) {
  // sm_90a's wgmma/setmaxnreg need PTX 8.0+; one ISA for all keeps the
  // output predictable. CUDA 13.0's ptxas accepts up to 9.0.
  (void)chip;
  return "+ptx80";
}

std::string attnc::libdevicePath() {
  if (const char *file = std::getenv("ATTNC_LIBDEVICE"); file && *file)
    return file;
  for (const char *var : {"ATTNC_CUDA_HOME", "CUDA_HOME"}) {
    const char *home = std::getenv(var);
    if (!home || !*home)
      continue;
    llvm::SmallString<256> path(home);
    llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
    return std::string(path);
  }
  return ATTNC_DEFAULT_LIBDEVICE;
}

namespace {

/// Whether `name` is a libdevice function (libdevice defines only `__nv_*`).
bool isLibdeviceName(llvm::StringRef name) { return name.starts_with("__nv_"); }

/// The libdevice functions `gpuModule` declares without defining them: what
/// the GPU-to-NVVM conversion makes of math ops it has no intrinsic for.
SmallVector<std::string> libdeviceCalls(gpu::GPUModuleOp gpuModule) {
  SmallVector<std::string> names;
  for (auto fn : gpuModule.getOps<LLVM::LLVMFuncOp>())
    if (fn.isExternal() && isLibdeviceName(fn.getName()))
      names.push_back(fn.getName().str());
  return names;
}

/// Upstream's serialization steps with attnc's choice of libraries: links
/// `libdevice` (a path; empty: nothing) only where the module needs it, then
/// makes PTX as upstream's NVVM target does for its `isa` format.
class PTXSerializer : public LLVM::ModuleToObject {
public:
  PTXSerializer(gpu::GPUModuleOp gpuModule, NVVM::NVVMTargetAttr target,
                std::string libdevice)
      : ModuleToObject(*gpuModule, target.getTriple(), target.getChip(),
                       target.getFeatures(), target.getO()),
        libdevice(std::move(libdevice)) {}

  std::optional<std::string> ptx;

protected:
  std::optional<SmallVector<std::unique_ptr<llvm::Module>>>
  loadBitcodeFiles(llvm::Module &llvmModule) override {
    SmallVector<std::unique_ptr<llvm::Module>> libs;
    if (libdevice.empty())
      return libs;
    std::unique_ptr<llvm::Module> lib =
        loadBitcodeFile(llvmModule.getContext(), libdevice);
    if (!lib) { // loadBitcodeFile said why
      getOperation().emitError()
          << "cannot read libdevice from '" << libdevice
          << "': set ATTNC_LIBDEVICE to libdevice.10.bc or ATTNC_CUDA_HOME "
             "to the CUDA toolkit";
      return std::nullopt;
    }
    libs.push_back(std::move(lib));
    return libs;
  }

  /// A libdevice call the link left unresolved (a name libdevice does not
  /// define) would reach ptxas as an `.extern .func`: caught here instead.
  void handleModulePostLink(llvm::Module &llvmModule) override {
    for (llvm::Function &fn : llvmModule.functions())
      if (fn.isDeclaration() && isLibdeviceName(fn.getName()))
        unresolved.push_back(fn.getName().str());
  }

  FailureOr<SmallVector<char, 0>>
  moduleToObject(llvm::Module &llvmModule) override {
    if (!unresolved.empty()) {
      InFlightDiagnostic diag = getOperation().emitError()
                                << "libdevice (" << libdevice
                                << ") does not define";
      for (const std::string &name : unresolved)
        diag << " " << name;
      return diag;
    }
    FailureOr<llvm::TargetMachine *> machine = getOrCreateTargetMachine();
    if (failed(machine))
      return getOperation().emitError()
             << "no NVPTX target machine for " << triple << " " << chip;
    FailureOr<SmallString<0>> isa = translateModuleToISA(
        llvmModule, **machine, [&] { return getOperation().emitError(); });
    if (failed(isa))
      return failure();
    ptx = std::string(isa->str());
    return SmallVector<char, 0>();
  }

private:
  std::string libdevice;
  SmallVector<std::string> unresolved;
};

} // namespace

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

  // A math op no conversion lowered (math.ipowi, math.clampf) would fail in
  // the translation with a message about dialect registration.
  WalkResult leftover = gpuModule.walk([](Operation *op) {
    if (!isa<math::MathDialect>(op->getDialect()))
      return WalkResult::advance();
    op->emitOpError() << "has no GPU lowering (NVVM, libdevice or an LLVM "
                         "intrinsic): write it with arith ops";
    return WalkResult::interrupt();
  });
  if (leftover.wasInterrupted())
    return failure();

  // Math ops in score, mask and map regions become libdevice calls
  // (__nv_expf, ...): libdevice is linked in before the optimisation
  // pipeline, which inlines the functions used and drops the rest. A module
  // without such calls links nothing, so its PTX does not depend on where
  // (or whether) libdevice is installed.
  std::string libdevice;
  if (SmallVector<std::string> calls = libdeviceCalls(gpuModule);
      !calls.empty()) {
    libdevice = libdevicePath();
    if (!llvm::sys::fs::is_regular_file(libdevice)) {
      InFlightDiagnostic diag = gpuModule.emitError()
                                << "the kernel's math ops call libdevice (";
      llvm::interleaveComma(calls, diag);
      diag << "), but libdevice is not a file at '" << libdevice
           << "': set ATTNC_LIBDEVICE to libdevice.10.bc or ATTNC_CUDA_HOME "
              "to the CUDA toolkit";
      return failure();
    }
  }

  NVVM::SerializeGPUModuleBase::init(); // the NVPTX back end, once
  PTXSerializer serializer(gpuModule, target, libdevice);
  if (!serializer.run() || !serializer.ptx)
    return failure(); // diagnostics on the gpu.module say why
  return std::move(*serializer.ptx);
}
