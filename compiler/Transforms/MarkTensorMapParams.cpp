//===- MarkTensorMapParams.cpp - TMA tensor maps as grid constants --------===//
//
// CUtensorMap is a 128-byte, 64-byte-aligned object the driver builds on
// the host; a kernel reads it from its parameter space (a __grid_constant__
// parameter) so that no device copy is needed and a launch allocates
// nothing. The wgmma mapping marks the kernel's tensor-map arguments by
// index (argument attributes do not survive the GPU-to-NVVM conversion);
// here, on the llvm.func, they become byval parameters NVPTX lays out in
// .param space.
//
//===----------------------------------------------------------------------===//
#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace attnc {
#define GEN_PASS_DEF_MARKTENSORMAPPARAMS
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;

namespace {

/// Bytes and alignment of a CUtensorMap (cuda.h: CU_TENSOR_MAP_NUM_QWORDS).
constexpr int64_t kTensorMapBytes = 128;
constexpr int64_t kTensorMapAlign = 64;

class MarkTensorMapParamsPass
    : public attnc::impl::MarkTensorMapParamsBase<MarkTensorMapParamsPass> {
public:
  void runOnOperation() override {
    getOperation().walk([&](LLVM::LLVMFuncOp fn) {
      auto args = fn->getAttrOfType<DenseI64ArrayAttr>("attnc.tensor_map_args");
      if (!args)
        return;
      Builder b(fn.getContext());
      for (int64_t i : args.asArrayRef()) {
        if (i < 0 || i >= int64_t(fn.getNumArguments()) ||
            !isa<LLVM::LLVMPointerType>(fn.getArgument(i).getType())) {
          fn.emitError() << "attnc.tensor_map_args names argument " << i
                         << ", which is not a pointer argument";
          return signalPassFailure();
        }
        fn.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(LLVM::LLVMArrayType::get(b.getI8Type(),
                                                             kTensorMapBytes)));
        fn.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                      b.getI64IntegerAttr(kTensorMapAlign));
        fn.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                      b.getUnitAttr());
      }
      fn->removeAttr("attnc.tensor_map_args");
    });
  }
};

} // namespace
