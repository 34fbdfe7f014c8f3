//===- SpecCompiler.cpp - the runtime's compiler hook, backed by MLIR -----===//
#include "compiler/Driver/SpecCompiler.h"

#include "attnc/runtime/Decode.h"
#include "attnc/runtime/Launch.h"
#include "compiler/Frontend/BuildAttnIR.h"
#include "compiler/LaunchABI.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Target/NVPTX/EmitPTX.h"
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

attnc::AttentionConfig attnc::attentionConfigOf(const KernelSpec &spec) {
  AttentionConfig c;
  c.heads = spec.heads;
  c.kvHeads = spec.kvHeads;
  c.headDim = spec.headDim;
  c.dtype = spec.dtype;
  c.causal = spec.causal;
  if (spec.windowLeft >= 0 || spec.windowRight >= 0) {
    c.windowLeft = spec.windowLeft;
    c.windowRight = spec.windowRight;
  }
  if (spec.softcap > 0)
    c.softcap = static_cast<float>(spec.softcap);
  if (spec.scale)
    c.scale = static_cast<float>(*spec.scale);
  c.withLse = spec.hasLse;
  return c;
}

attnc::Result<attnc::CompiledKernel>
attnc::SpecCompiler::compile(const KernelSpec &spec) {
  if (spec.op == "decode")
    return compileDecode(spec);
  if (spec.op != "attention_fwd")
    return Status(ErrorCode::InvalidArgument,
                  "attnc can compile only ops 'attention_fwd' and 'decode' "
                  "so far, not '" +
                      spec.op + "'");
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();
  ctx.printOpOnDiagnostic(false);
  std::string diagnostics;
  ScopedDiagnosticHandler collect(&ctx, [&](Diagnostic &d) {
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d.str() << "\n";
    return success();
  });
  auto fail = [&](const std::string &what) {
    return Status(ErrorCode::CompileError, what + " for spec '" +
                                               spec.canonical() + "'\n" +
                                               diagnostics);
  };

  OwningOpRef<ModuleOp> module =
      spec.customIr.empty() ? buildAttentionModule(ctx, attentionConfigOf(spec))
                            : parseSourceString<ModuleOp>(spec.customIr, &ctx);
  if (!module)
    return fail("the attention does not verify");

  int64_t headDim = spec.headDim;
  module->walk([&](attn::AttentionOp op) { headDim = op.getHeadDim(); });
  TileOptions tile = defaultTileOptions(GPUMapping::MMA, headDim,
                                        spec.tuning.blockM, spec.tuning.blockN);
  PassManager pm(&ctx);
  buildTilePipeline(pm, tile);
  buildMMAPipeline(pm);
  if (failed(pm.run(*module)))
    return fail("lowering failed");
  FailureOr<std::string> ptx = emitPTX(*module, spec.arch);
  if (failed(ptx))
    return fail("PTX emission failed");

  CompiledKernel out;
  out.ptx = std::move(*ptx);
  KernelMetadata &meta = out.meta;
  meta.entry = "attention_fwd";
  meta.arch = spec.arch;
  meta.block = {2 * tile.blockM, 1, 1}; // one warp per 16 query rows
  meta.gridRule = kAttentionFwdRule;
  meta.blockM = tile.blockM;
  meta.dynamicSmem = 0; // K/V staging buffers are static shared memory
  meta.params = attentionFwdV1Params();
  return out;
}

attnc::DecodeConfig attnc::decodeConfigOf(const KernelSpec &spec) {
  DecodeConfig c;
  c.attention = attentionConfigOf(spec);
  c.pageSize = spec.pageSize;
  c.maxQLen = spec.maxQLen;
  return c;
}

int64_t attnc::decodeSplitRows(const KernelSpec &spec) {
  int64_t group = spec.kvHeads > 0 ? spec.heads / spec.kvHeads : 1;
  return (group * spec.maxQLen + 15) / 16 * 16;
}

attnc::Result<attnc::CompiledKernel>
attnc::SpecCompiler::compileDecode(const KernelSpec &spec) {
  if (!spec.customIr.empty())
    return Status(ErrorCode::Unsupported,
                  "op 'decode' is built from its spec; custom IR is not "
                  "supported for it yet");
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();
  ctx.printOpOnDiagnostic(false);
  std::string diagnostics;
  ScopedDiagnosticHandler collect(&ctx, [&](Diagnostic &d) {
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d.str() << "\n";
    return success();
  });
  auto fail = [&](const std::string &what) {
    return Status(ErrorCode::CompileError, what + " for spec '" +
                                               spec.canonical() + "'\n" +
                                               diagnostics);
  };
  OwningOpRef<ModuleOp> module = buildDecodeModule(ctx, decodeConfigOf(spec));
  if (!module)
    return fail("the decode does not verify");
  DecodeTileOptions tile;
  if (spec.tuning.blockN > 0)
    tile.blockN = spec.tuning.blockN;
  tile.maxQLen = spec.maxQLen;
  PassManager pm(&ctx);
  buildDecodeTilePipeline(pm, tile);
  buildMMAPipeline(pm);
  if (failed(pm.run(*module)))
    return fail("lowering failed");
  FailureOr<std::string> ptx = emitPTX(*module, spec.arch);
  if (failed(ptx))
    return fail("PTX emission failed");

  CompiledKernel out;
  out.ptx = std::move(*ptx);
  KernelMetadata &meta = out.meta;
  int64_t rows = decodeSplitRows(spec);
  meta.entry = "decode_split"; // and decode_combine (Decode.h)
  meta.arch = spec.arch;
  meta.block = {2 * rows, 1, 1}; // one warp per 16 packed query rows
  meta.gridRule = kDecodeSplitRule;
  meta.blockM = rows;
  meta.dynamicSmem = 0;
  meta.params = decodeSplitV1Params();
  return out;
}
