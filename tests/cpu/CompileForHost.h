//===- CompileForHost.h - An attention forward, compiled for the CPU -----===//
//
// What the CPU numerics tests of the forward share: attn IR (built from a
// config, or parsed) -> tile -> host kernel, whose entry is the tile kernel
// (it keeps the attention function's name).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_CPU_COMPILEFORHOST_H
#define ATTNC_TESTS_CPU_COMPILEFORHOST_H

#include "compiler/Frontend/BuildAttnIR.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Target/Host/HostJIT.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace attnc::test {

/// `ir` when not empty, else the attention `cfg` describes, tiled
/// blockM x blockN and JIT-compiled for this CPU. `ctx` (with attnc's
/// dialects loaded) must outlive the kernel.
inline llvm::Expected<std::unique_ptr<HostKernel>>
compileAttentionForHost(mlir::MLIRContext &ctx, const AttentionConfig &cfg,
                        const std::string &ir, int64_t blockM, int64_t blockN) {
  auto error = [](const char *what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
  };
  auto module = ir.empty() ? buildAttentionModule(ctx, cfg)
                           : mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  if (!module)
    return error("the attention IR does not parse or verify");
  mlir::PassManager pm(&ctx);
  buildTilePipeline(pm, {blockM, blockN});
  if (mlir::failed(pm.run(*module)))
    return error("the tile pipeline failed");
  std::string entry;
  module->walk([&](mlir::func::FuncOp fn) {
    if (fn->hasAttr("tile.launch"))
      entry = fn.getName().str();
  });
  if (entry.empty())
    return error("no tile kernel (no function with tile.launch)");
  return HostKernel::compile(*module, entry);
}

} // namespace attnc::test

#endif // ATTNC_TESTS_CPU_COMPILEFORHOST_H
