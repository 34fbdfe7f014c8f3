//===- SpecCompiler.h - the runtime's compiler hook, backed by MLIR -*- C++
//-*-===//
#ifndef ATTNC_COMPILER_DRIVER_SPECCOMPILER_H
#define ATTNC_COMPILER_DRIVER_SPECCOMPILER_H

#include "attnc/runtime/Compiler.h"
#include "compiler/Frontend/AttentionConfig.h"
#include "compiler/Frontend/BuildDecodeIR.h"

namespace attnc {

/// The attention a runtime spec describes, as the frontend's configuration.
AttentionConfig attentionConfigOf(const KernelSpec &spec);

/// The decode (op "decode") a runtime spec describes.
DecodeConfig decodeConfigOf(const KernelSpec &spec);
/// Packed query rows of a decode split program: heads / kv_heads x
/// max_q_len, rounded up to 16.
int64_t decodeSplitRows(const KernelSpec &spec);

/// Compiles runtime kernel specs with attnc's pipelines: attn -> tile ->
/// (GPU mapping) -> PTX, with the launch metadata the runtime needs. Each
/// call uses its own MLIRContext, so one instance may serve several threads.
class SpecCompiler : public KernelCompiler {
public:
  Result<CompiledKernel> compile(const KernelSpec &spec) override;

private:
  /// compile() without the final check of the metadata's parameters
  /// against the PTX.
  Result<CompiledKernel> compileOp(const KernelSpec &spec);
  /// Op "decode": one module with decode_split and decode_combine.
  Result<CompiledKernel> compileDecode(const KernelSpec &spec);
};

} // namespace attnc

#endif
