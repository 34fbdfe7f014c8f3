//===- FuzzIR.cpp - fuzz target: IR parser, verifiers and pipelines -------===//
//
// The input is IR text as `attnc emit FILE` reads it. Whatever parses and
// verifies is lowered as emit would lower it (attention: tiles, then one of
// the host, SIMT, mma.sync or wgmma mappings picked by the input's hash;
// decode, KV append and row kernels: their own pipelines) short of PTX.
// Diagnostics are expected and swallowed; a crash, an assertion or a
// verifier error after a pass that succeeded is a finding.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/FuzzTarget.h"

#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/Hashing.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

using namespace mlir;

namespace {

// Inputs that verified, and that went through a whole pipeline (printed
// at exit).
long verified = 0, lowered = 0;

MLIRContext *context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    attnc::registerAllDialects(registry);
    auto *c = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    c->printOpOnDiagnostic(false);
    c->getDiagEngine().registerHandler([](Diagnostic &) { return success(); });
    return c;
  }();
  return ctx;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  (void)context();
  std::atexit([] {
    std::printf("ir: %ld inputs verified, %ld lowered\n", verified, lowered);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // As emit: no NUL (the parser would stop there), at most 64 KiB here.
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  if (size > (1 << 16) || text.contains('\0'))
    return 0;
  MLIRContext *ctx = context();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, ctx);
  if (!module || failed(verify(*module)))
    return 0;
  ++verified;

  bool rows = false, decode = false, append = false, attention = false;
  module->walk([&](Operation *op) {
    if (isa<attnc::attn::MapOp, attnc::attn::ReduceOp, attnc::attn::SliceOp,
            attnc::attn::SiluMulOp, attnc::attn::GeluMulOp,
            attnc::attn::AddRMSNormOp, attnc::attn::RopeOp>(op))
      rows = true;
    else if (isa<attnc::attn::DecodeOp, attnc::attn::LseMergeOp>(op))
      decode = true;
    else if (isa<attnc::attn::KVAppendOp>(op))
      append = true;
    else if (isa<attnc::attn::AttentionOp>(op))
      attention = true;
  });
  const size_t pick = llvm::hash_value(text);
  PassManager pm(ctx);
  if (append) {
    attnc::buildDecodeTilePipeline(pm, {});
    attnc::buildKVAppendGPUPipeline(pm);
  } else if (rows) {
    attnc::buildRowTilePipeline(pm, {});
    attnc::buildRowGPUPipeline(pm);
  } else if (decode) {
    attnc::buildDecodeTilePipeline(pm, {});
    attnc::TileOptions tile;
    tile.decodeKeyWarps = 1;
    attnc::buildMMAPipeline(pm, tile);
  } else if (attention) {
    int64_t headDim = 128;
    module->walk(
        [&](attnc::attn::AttentionOp op) { headDim = op.getHeadDim(); });
    attnc::AttentionVariant variant = attnc::attentionVariantOf(*module);
    switch (pick % 4) {
    case 0:
      attnc::buildTilePipeline(
          pm,
          attnc::defaultTileOptions(attnc::GPUMapping::MMA, headDim, variant));
      attnc::buildHostPipeline(pm);
      break;
    case 1:
      attnc::buildTilePipeline(
          pm,
          attnc::defaultTileOptions(attnc::GPUMapping::SIMT, headDim, variant));
      attnc::buildSIMTPipeline(pm);
      break;
    case 2: {
      attnc::TileOptions tile =
          attnc::defaultTileOptions(attnc::GPUMapping::MMA, headDim, variant);
      attnc::buildTilePipeline(pm, tile);
      attnc::buildMMAPipeline(pm, tile);
      break;
    }
    default: {
      attnc::TileOptions tile = attnc::defaultTileOptions(
          attnc::GPUMapping::MMA, headDim, variant, 0, 0, 0, 0, "sm_90a");
      attnc::buildTilePipeline(pm, tile);
      attnc::buildWGMMAPipeline(pm, tile);
      break;
    }
    }
  } else {
    return 0;
  }
  if (failed(pm.run(*module)))
    return 0;
  ++lowered;
  if (failed(verify(*module)))
    fuzzFail("a pipeline succeeded but left IR that does not verify");
  return 0;
}
