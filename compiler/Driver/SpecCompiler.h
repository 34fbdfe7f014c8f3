//===- SpecCompiler.h - the runtime's compiler hook, backed by MLIR -*- C++
//-*-===//
#ifndef ATTNC_COMPILER_DRIVER_SPECCOMPILER_H
#define ATTNC_COMPILER_DRIVER_SPECCOMPILER_H

#include "attnc/runtime/Compiler.h"
#include "compiler/Frontend/AttentionConfig.h"

namespace attnc {

/// The attention a runtime spec describes, as the frontend's configuration.
AttentionConfig attentionConfigOf(const KernelSpec &spec);

/// Compiles runtime kernel specs with attnc's pipelines: attn -> tile ->
/// (GPU mapping) -> PTX, with the launch metadata the runtime needs. Each
/// call uses its own MLIRContext, so one instance may serve several threads.
class SpecCompiler : public KernelCompiler {
public:
  Result<CompiledKernel> compile(const KernelSpec &spec) override;
};

} // namespace attnc

#endif
