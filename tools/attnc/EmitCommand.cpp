//===- EmitCommand.cpp - attnc emit ---------------------------------------===//
#include "tools/attnc/Commands.h"
#include "tools/attnc/OutputFile.h"

#include "attnc/runtime/Launch.h"

#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/Frontend/BuildAttnIR.h"
#include "compiler/Frontend/BuildDecodeIR.h"
#include "compiler/Frontend/BuildElementwiseIR.h"
#include "compiler/Pipelines/MappingChoice.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Target/NVPTX/EmitPTX.h"
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/core.h>

using namespace mlir;

namespace attnc::cli {

void addEmitCommand(CLI::App &app, EmitOptions &o) {
  CLI::App *emit = app.add_subcommand(
      "emit", "Build (from flags) or read (from a .mlir file) attn IR and "
              "lower it to the stage named by --emit");
  emit->add_option("input", o.input,
                   "attn IR file (.mlir); without it the IR is built from "
                   "the flags below")
      ->check(CLI::ExistingFile);
  emit->add_option("--op", o.op, "Operation to build")
      ->check(CLI::IsMember({"attention", "decode", "kv-append", "lse-merge",
                             "add-rmsnorm", "silu-mul", "gelu-mul", "rope"}));
  emit->add_option("--hidden", o.hidden,
                   "Row length d of an elementwise op's output (silu-mul and "
                   "gelu-mul read rows of 2d)")
      ->check(CLI::Range(int64_t(1), kMaxHidden));
  emit->add_option("--eps", o.eps, "RMSNorm epsilon (add-rmsnorm)")
      ->check(CLI::PositiveNumber);
  emit->add_option("--rotary-dim", o.rotaryDim,
                   "--op rope: rotated columns of each head (0: --head-dim; "
                   "the rest pass through)")
      ->check(CLI::Range(int64_t(0), int64_t(1024)));
  emit->add_option("--rope-style", o.ropeStyle,
                   "--op rope: neox (pairs i, i + rotary_dim/2) or gptj "
                   "(pairs 2i, 2i + 1)")
      ->check(CLI::IsMember({"neox", "gptj"}));
  emit->add_option("--positions", o.positions,
                   "--op rope: element type of the positions")
      ->check(CLI::IsMember({"i64", "i32"}));
  emit->add_option("--heads", o.attention.heads, "Query heads")
      ->check(CLI::Range(int64_t(1), kMaxHeads));
  emit->add_option("--kv-heads", o.attention.kvHeads,
                   "Key/value heads (GQA/MQA when fewer than --heads)")
      ->check(CLI::Range(int64_t(1), kMaxHeads));
  emit->add_option("--head-dim", o.attention.headDim, "Head dimension")
      ->check(CLI::Range(int64_t(1), int64_t(1024)));
  emit->add_option("--dtype", o.attention.dtype, "Input/output element type")
      ->check(CLI::IsMember({"bf16", "fp16"}));
  emit->add_flag("--causal", o.attention.causal,
                 "Causal mask (bottom-right aligned)");
  emit->add_option("--window", o.window,
                   "Sliding window L,R (-1 = unbounded on that side)");
  emit->add_option("--softcap", o.attention.softcap,
                   "Soft-cap c: s = c*tanh(s/c)");
  emit->add_option("--scale", o.attention.scale,
                   "Softmax scale (default 1/sqrt(head dim))");
  emit->add_flag("!--no-lse", o.attention.withLse,
                 "Do not return the log-sum-exp");
  emit->add_flag("--sinks", o.attention.sinks,
                 "Attention sinks: one learnt logit per query head in the "
                 "softmax's denominator (the kernel takes a 'sinks' array)");
  emit->add_flag("--varlen", o.attention.varlen,
                 "Varlen prefill: packed [total, heads, head_dim] sequences "
                 "with cu_seqlens_q/k (the kernel takes both arrays); with "
                 "--page-size, K/V from a paged cache through a block table "
                 "and kv_lens instead of cu_seqlens_k");
  emit->add_option("--arch", o.arch, "Target")
      ->check(CLI::IsMember({"sm_80", "sm_90a"}));
  emit->add_option("--emit", o.stage, "Stage to emit")
      ->check(CLI::IsMember({"attn", "tile", "llvm", "ptx"}));
  emit->add_option("-o,--output", o.output,
                   "Output file (default: standard output)");
  emit->add_flag("--print-ir-after-all", o.printIrAfterAll,
                 "Print the IR after every pass to standard error");
  emit->add_flag("--summary", o.summary,
                 "Print registers/shared memory/spills (from ptxas) and the "
                 "roofline of the kernel");
  emit->add_option("--seq-len", o.seqLen, "Sequence length used by --summary")
      ->check(CLI::Range(int64_t(1), abi::kMaxSeqLen));
  emit->add_option("--batch", o.batch, "Batch size used by --summary")
      ->check(CLI::Range(int64_t(1), int64_t(65535)));
  emit->add_option("--mapping", o.mapping,
                   "GPU mapping: auto (wgmma on sm_90a where supported, else "
                   "mma.sync), wgmma, mma (tensor cores) or simt (baseline)")
      ->check(CLI::IsMember({"auto", "wgmma", "mma", "simt"}));
  emit->add_option("--kv-sync", o.kvSync,
                   "wgmma mapping: how the K/V rings are filled and "
                   "synchronised: mbarrier (every thread copies; per-stage "
                   "full/empty mbarriers), barrier (one CTA barrier per "
                   "tile), producer (a producer warpgroup copies, the "
                   "consumers get its registers), pingpong (producer, and "
                   "the consumer warpgroups take turns on the tensor cores) "
                   "or tma (pingpong with TMA copies by one producer thread; "
                   "the runtime passes the tensor maps)")
      ->check(CLI::IsMember(
          {"barrier", "mbarrier", "producer", "pingpong", "tma"}));
  emit->add_option("--rescale", o.rescale,
                   "wgmma mapping: when O is rescaled as a row's running max "
                   "grows: threshold (past 2^8, FlashAttention-4's; the "
                   "default) or exact (at every growth)")
      ->check(CLI::IsMember({"threshold", "exact"}));
  emit->add_option("--grid", o.grid,
                   "wgmma mapping with --kv-sync tma: tiles (one block per "
                   "query tile, head and batch; the default) or persistent "
                   "(min(work items, SMs) blocks looping over the items)")
      ->check(CLI::IsMember({"tiles", "persistent"}));
  emit->add_option("--epilogue", o.epilogue,
                   "wgmma mapping with --kv-sync tma: how O is written: "
                   "registers (each thread stores its accumulator) or tma "
                   "(staged in shared memory, stored by a TMA copy of the "
                   "o_tmap tensor map; the default)")
      ->check(CLI::IsMember({"registers", "tma"}));
  emit->add_flag("--no-stream-k", o.noStreamK,
                 "wgmma mapping with --grid persistent: no stream-K tail "
                 "(no workspace parameter; the last round runs whole items)");
  emit->add_option("--block-m", o.blockM,
                   "Query rows per program (row kernels: rows per program)")
      ->check(CLI::Range(int64_t(1), int64_t(1024)));
  emit->add_option("--min-blocks-per-sm", o.minBlocksPerSm,
                   "Row kernels: blocks that must fit one SM at once "
                   "(ptxas caps registers to fit; 0: no cap)")
      ->check(CLI::Range(0, 32));
  emit->add_option("--block-n", o.blockN,
                   "Keys per KV tile (row kernels: threads per row)")
      ->check(CLI::Range(int64_t(1), int64_t(1024)));
  emit->add_option("--warps", o.warps,
                   "Warps per program (mma: block_m / warps = 16 or 32 query "
                   "rows per warp; --op decode: warps along the keys of each "
                   "K/V tile, 1, 2, 4 or 8, block_n / warps keys each)")
      ->check(CLI::Range(int64_t(1), int64_t(32)));
  emit->add_option("--stages", o.stages,
                   "Tiles in each shared-memory K/V ring: attention 2-4 "
                   "(default 2); --op decode 1 (copy each tile where it is "
                   "used) to 4 (the next 3 in flight), default 3")
      ->check(CLI::Range(1, 4));
  emit->add_option("--page-size", o.pageSize,
                   "--op decode, --op attention --varlen (paged prefill): "
                   "tokens per page of the paged KV cache")
      ->check(CLI::Range(int64_t(1), kMaxPageSize));
  emit->add_option("--max-q-len", o.maxQLen,
                   "--op decode: most query rows per sequence (1..16)")
      ->check(CLI::Range(1, 16));
}

/// The largest IR file emit reads (a kernel's IR is a few KiB).
constexpr uint64_t kMaxInputBytes = 64ull << 20;

/// Parses "L,R" into the config's window; false on malformed text.
static bool parseWindow(const std::string &text, AttentionConfig &cfg) {
  long long l = 0, r = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lld,%lld%c", &l, &r, &tail) != 2)
    return false;
  cfg.windowLeft = l;
  cfg.windowRight = r;
  return true;
}

static OwningOpRef<ModuleOp> loadInput(MLIRContext &ctx, EmitOptions &o,
                                       llvm::SourceMgr &sourceMgr) {
  if (!o.input.empty()) {
    std::string text;
    if (std::string err = readInputFile(o.input, kMaxInputBytes, text);
        !err.empty()) {
      fmt::print(stderr, "attnc: error: {}\n", err);
      return nullptr;
    }
    // The parser stops at a NUL as at the end of the buffer: what follows
    // would be dropped without a word.
    if (size_t nul = text.find('\0'); nul != std::string::npos) {
      fmt::print(stderr,
                 "attnc: error: '{}' holds a NUL byte at offset {}: not "
                 "an IR text file\n",
                 o.input, nul);
      return nullptr;
    }
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      fmt::print(stderr, "attnc: error: '{}' is empty: no IR to compile\n",
                 o.input);
      return nullptr;
    }
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text, o.input), llvm::SMLoc());
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
    if (module && module->getBody()->empty()) {
      fmt::print(stderr,
                 "attnc: error: '{}' holds no operation (only comments?): "
                 "no IR to compile\n",
                 o.input);
      return nullptr;
    }
    return module;
  }
  if (o.op == "add-rmsnorm" || o.op == "silu-mul" || o.op == "gelu-mul") {
    ElementwiseConfig config;
    config.op = o.op == "add-rmsnorm" ? "add_rmsnorm"
                : o.op == "silu-mul"  ? "silu_mul"
                                      : "gelu_mul";
    config.hidden = o.hidden;
    config.dtype = o.attention.dtype;
    config.eps = o.eps;
    return buildElementwiseModule(ctx, config);
  }
  if (o.op == "kv-append") // the cache's KV heads, head dim, page size
    return buildKVAppendModule(ctx, {o.attention.kvHeads, o.attention.headDim,
                                     o.attention.dtype, o.pageSizeOr16()});
  if (o.op == "lse-merge")
    return buildLseMergeModule(ctx, o.attention);
  if (o.op == "rope") {
    ElementwiseConfig config;
    config.op = "rope";
    config.dtype = o.attention.dtype;
    config.heads = o.attention.heads;
    config.kvHeads = o.attention.kvHeads;
    config.headSize = o.attention.headDim;
    config.rotaryDim = o.rotaryDim;
    config.isNeox = o.ropeStyle == "neox";
    config.positionBits = o.positions == "i32" ? 32 : 64;
    return buildElementwiseModule(ctx, config);
  }
  if (o.op != "attention" && o.op != "decode") {
    fmt::print(stderr,
               "attnc: error: --op {} is not implemented yet (builders: "
               "attention, decode, add-rmsnorm, silu-mul, gelu-mul, rope)\n",
               o.op);
    return nullptr;
  }
  if (!o.window.empty() && !parseWindow(o.window, o.attention)) {
    fmt::print(stderr,
               "attnc: error: --window expects two integers L,R (e.g. "
               "4096,0), got '{}'\n",
               o.window);
    return nullptr;
  }
  if (o.op == "decode")
    return buildDecodeModule(ctx, {o.attention, o.pageSizeOr16(), o.maxQLen});
  if (o.pageSize > 0) {
    if (!o.attention.varlen) {
      fmt::print(stderr, "attnc: error: --op attention takes --page-size "
                         "only with --varlen (paged prefill)\n");
      return nullptr;
    }
    o.attention.pageSize = o.pageSize;
  }
  return buildAttentionModule(ctx, o.attention);
}

/// Whether the module holds a decode (split-KV kernel + combine) or an
/// attn.lse_merge (lowered by the same pass and mapping).
static bool hasDecode(ModuleOp module) {
  bool found = false;
  module.walk([&](Operation *op) {
    if (isa<attn::DecodeOp, attn::LseMergeOp>(op))
      found = true;
  });
  return found;
}

/// Whether the module holds an attn.kv_append (its own row-copy mapping).
static bool hasKVAppend(ModuleOp module) {
  bool found = false;
  module.walk([&](attn::KVAppendOp) { found = true; });
  return found;
}

/// Whether the module holds fused elementwise (row) ops rather than
/// attention.
static bool hasRowOps(ModuleOp module) {
  bool rows = false;
  module.walk([&](Operation *op) {
    if (isa<attn::MapOp, attn::ReduceOp, attn::SliceOp, attn::SiluMulOp,
            attn::GeluMulOp, attn::AddRMSNormOp, attn::RopeOp>(op))
      rows = true;
  });
  return rows;
}

/// The head dim of the module's attention (for tile-size defaults).
static int64_t headDimOf(ModuleOp module) {
  int64_t d = 128;
  module.walk([&](attn::AttentionOp op) { d = op.getHeadDim(); });
  return d;
}

/// The bit width of the module's attention elements (16 unless stated).
static int64_t elementBitsOf(ModuleOp module) {
  int64_t bits = 16;
  module.walk([&](attn::AttentionOp op) {
    bits = op.getElementType().getIntOrFloatBitWidth();
  });
  return bits;
}

/// The path line's words for a wgmma KV-loop schedule (tuning.kv_sync).
static const char *kvSyncSummary(tgpu::KVSync kvSync) {
  if (kvSync == tgpu::KVSync::barrier)
    return ", K/V rings on a CTA barrier per tile";
  if (kvSync == tgpu::KVSync::producer)
    return ", a producer warpgroup fills the K/V rings (setmaxnreg), "
           "consumers on per-stage mbarriers";
  if (kvSync == tgpu::KVSync::pingpong)
    return ", a producer warpgroup fills the K/V rings (setmaxnreg), "
           "consumer warpgroups in ping-pong on named barriers";
  if (kvSync == tgpu::KVSync::tma)
    return ", one producer thread fills the K/V rings by TMA (tensor maps "
           "as kernel parameters), consumer warpgroups in ping-pong";
  return ", K/V rings on per-stage mbarriers";
}

int runEmit(EmitOptions &o) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  // The diagnostic's location and message say enough; the generic dump of
  // the op that would follow only confuses a CLI user.
  ctx.printOpOnDiagnostic(false);

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler fileDiagnostics(sourceMgr, &ctx);
  // IR built from flags has no file to point into: say which command built
  // it instead of printing an empty location.
  ScopedDiagnosticHandler flagDiagnostics(&ctx, [](Diagnostic &d) {
    if (isa<FileLineColLoc>(d.getLocation()))
      return failure(); // let the SourceMgr handler show the source line
    if (d.getSeverity() == DiagnosticSeverity::Error)
      fmt::print(stderr, "attnc emit: error: {}\n", d.str());
    else if (d.getSeverity() == DiagnosticSeverity::Note)
      fmt::print(stderr, "attnc emit: note: {}\n", d.str());
    return success();
  });
  OwningOpRef<ModuleOp> module = loadInput(ctx, o, sourceMgr);
  if (!module)
    return 1;
  // The summary describes the attention as written, before lowering.
  OwningOpRef<ModuleOp> originalAttention(cast<ModuleOp>((*module)->clone()));

  PassManager pm(&ctx);
  if (o.printIrAfterAll) {
    ctx.disableMultithreading();
    pm.enableIRPrinting();
  }
  const bool rows = hasRowOps(*module);
  bool decodeModule = hasDecode(*module);
  const AttentionVariant variant = attentionVariantOf(*module);
  TileOptions tile = defaultTileOptions(
      o.mapping == "simt" ? GPUMapping::SIMT : GPUMapping::MMA,
      headDimOf(*module), variant, o.blockM, o.blockN, o.warps, o.stages,
      o.mapping == "auto" || o.mapping == "wgmma" ? o.arch : std::string());
  if (decodeModule) { // one warp per 16 packed query rows and key warp
    tile = TileOptions{};
    tile.decodeKeyWarps = o.warps > 0 ? o.warps : 1;
  }
  const bool appendModule = hasKVAppend(*module);
  if (appendModule) {
    if (o.stage != "attn")
      buildDecodeTilePipeline(pm, {});
    if (o.stage == "llvm" || o.stage == "ptx") {
      fmt::print(stderr,
                 "attnc: {} path: KV append (16-byte vector row "
                 "copies)\n",
                 o.arch);
      buildKVAppendGPUPipeline(pm);
    }
  } else if (rows) {
    // --block-n: threads per row, --block-m: rows per program.
    RowOptions rowOptions;
    rowOptions.threadsPerRow = o.blockN;
    rowOptions.rowsPerProgram = o.blockM;
    rowOptions.minBlocksPerSm = o.minBlocksPerSm;
    if (o.stage != "attn")
      buildRowTilePipeline(pm, rowOptions);
    if (o.stage == "llvm" || o.stage == "ptx") {
      fmt::print(stderr,
                 "attnc: {} path: row kernel (16-byte vectors, "
                 "shuffle reductions)\n",
                 o.arch);
      buildRowGPUPipeline(pm);
    }
  } else if (o.stage != "attn" && decodeModule) {
    DecodeTileOptions decode;
    if (o.blockN > 0)
      decode.blockN = o.blockN;
    decode.maxQLen = o.maxQLen;
    if (o.stages > 0) // 1-4: the option's range check
      decode.stages = o.stages;
    buildDecodeTilePipeline(pm, decode);
  } else if (o.stage != "attn")
    buildTilePipeline(pm, tile);
  if (!rows && !appendModule && (o.stage == "llvm" || o.stage == "ptx")) {
    if (o.mapping == "simt") {
      fmt::print(stderr,
                 "attnc: {} path: SIMT (one query row per thread, "
                 "no tensor cores)\n",
                 o.arch);
      buildSIMTPipeline(pm);
    } else {
      MappingChoice choice = chooseTensorCoreMapping(
          o.arch, headDimOf(*module), elementBitsOf(*module), tile,
          /*leftWindow=*/variant.windowLeft >= 0, variant.pageSize);
      if (decodeModule) {
        choice.mapping = GPUMapping::MMA;
        choice.why = "decode's split-KV kernels have no wgmma mapping yet";
      }
      if (o.mapping == "wgmma" && choice.mapping != GPUMapping::WGMMA) {
        fmt::print(stderr, "attnc emit: error: --mapping wgmma: {}\n",
                   choice.why);
        return 1;
      }
      if (o.mapping == "mma") {
        choice.mapping = GPUMapping::MMA;
        choice.why = "--mapping mma";
      }
      // The wgmma mapping's own options (--kv-sync barrier aside): an error
      // when another mapping was chosen.
      auto wgmmaOption = [&](const char *flag, const std::string &value,
                             bool anyMapping) {
        if (value.empty() || anyMapping || choice.mapping == GPUMapping::WGMMA)
          return true;
        fmt::print(stderr,
                   "attnc emit: error: {} {} needs the wgmma mapping: {}\n",
                   flag, value, choice.why);
        return false;
      };
      // CLI11 checked the values (IsMember); an unknown one is a bug here.
      if (!wgmmaOption("--kv-sync", o.kvSync, o.kvSync == "barrier") ||
          !wgmmaOption("--rescale", o.rescale, false) ||
          !wgmmaOption("--grid", o.grid, o.grid == "tiles") ||
          !wgmmaOption("--epilogue", o.epilogue, o.epilogue == "registers"))
        return 1;
      if (!o.kvSync.empty())
        tile.kvSync = *tgpu::symbolizeKVSync(o.kvSync);
      if (!o.rescale.empty())
        tile.rescale = *tgpu::symbolizeRescale(o.rescale);
      const bool tmaSchedule = tile.kvSync == tgpu::KVSync::tma;
      // --grid: persistent CTAs exist on the tma schedule only (kv-sync
      // unset resolves to tma at block_m >= 128); tiles is every mapping's
      // grid; unset, the default's grid where the schedule is tma.
      auto notTma = [&](const char *flag, const char *what) {
        fmt::print(stderr,
                   "attnc emit: error: {} needs --kv-sync tma (only the TMA "
                   "schedule {}), but the schedule is {}{}\n",
                   flag, what, tgpu::stringifyKVSync(tile.kvSync),
                   o.kvSync.empty() ? " (the default at block_m " +
                                          std::to_string(tile.blockM) +
                                          "; tma needs block_m >= 128)"
                                    : std::string());
        return 1;
      };
      if (o.grid == "persistent" && !tmaSchedule)
        return notTma("--grid persistent", "has persistent CTAs");
      if (!o.grid.empty())
        tile.grid = *tgpu::symbolizeGrid(o.grid);
      // --epilogue: the TMA store of O exists on the tma schedule only, as
      // persistent CTAs do; registers is every mapping's epilogue; unset,
      // the default's where the schedule is tma.
      if (o.epilogue == "tma" && !tmaSchedule)
        return notTma("--epilogue tma", "stores O by TMA");
      if (!o.epilogue.empty())
        tile.epilogue = *tgpu::symbolizeEpilogue(o.epilogue);
      tile.streamK = !o.noStreamK;
      settleWgmmaSchedule(tile, choice.mapping, headDimOf(*module),
                          /*epilogueRequested=*/!o.epilogue.empty());
      if (choice.mapping == GPUMapping::WGMMA)
        fmt::print(stderr,
                   "attnc: {} path: wgmma m64nNk16 (one warpgroup per 64 "
                   "query rows; {}){}, rescale {}, grid {}, epilogue {}\n",
                   o.arch, choice.why, kvSyncSummary(tile.kvSync),
                   tgpu::stringifyRescale(tile.rescale),
                   tgpu::stringifyGrid(tile.grid),
                   tgpu::stringifyEpilogue(tile.epilogue));
      else if (decodeModule)
        fmt::print(stderr,
                   "attnc: {} path: mma.sync m16n8k16 (sm_80+ tensor "
                   "cores; {}), {} warp(s) along the keys of each K/V "
                   "tile\n",
                   o.arch, choice.why, tile.decodeKeyWarps);
      else
        fmt::print(stderr,
                   "attnc: {} path: mma.sync m16n8k16 (sm_80+ tensor "
                   "cores; {}), {}x{} tiles, {} rows per warp, Q in {}\n",
                   o.arch, choice.why, tile.blockM, tile.blockN,
                   tile.rowsPerWarp,
                   tile.qInSmem ? "shared memory" : "registers");
      buildMappingPipeline(pm, choice.mapping, tile);
    }
  }
  if (failed(pm.run(*module)))
    return 1;

  std::string text;
  if (o.stage == "ptx") {
    FailureOr<std::string> ptx = emitPTX(*module, o.arch);
    if (failed(ptx))
      return 1;
    text = std::move(*ptx);
  } else {
    llvm::raw_string_ostream os(text);
    module->print(os);
    os << "\n";
  }

  // Written whole to a temporary file and renamed over the output, before
  // anything else is printed: an interrupted run (a full disk, a signal, a
  // reader of stderr gone) leaves the old file or none, never a partial one.
  if (std::string err =
          writeOutputFile(o.output.empty() ? "-" : o.output, text);
      !err.empty()) {
    fmt::print(stderr, "attnc: error: cannot write the output: {}\n", err);
    return 1;
  }
  if (!o.output.empty())
    fmt::print(stderr, "attnc: wrote {} to {}\n",
               o.stage == "ptx" ? "PTX" : o.stage + " IR", o.output);
  if (o.summary && (rows || appendModule)) {
    fmt::print(stderr, "attnc: --summary describes attention kernels only; "
                       "run ptxas on the PTX for a row kernel\n");
  } else if (o.summary) {
    std::string reason = "--emit " + o.stage + " produces no PTX";
    if (o.stage == "ptx" && o.output.empty())
      reason = "PTX went to standard output; use -o to keep it";
    bool kept = o.stage == "ptx" && !o.output.empty();
    SummaryInput summary{
        o,      *originalAttention,          kept ? o.output : "",
        reason, kept ? text : std::string(), {}};
    if (auto all =
            (*module)->getAttrOfType<DictionaryAttr>("attnc.launch_info"))
      for (NamedAttribute kernel : all)
        if (auto info = gpu_emit::launchInfo(*module, kernel.getName()))
          summary.launch[kernel.getName().str()] = {info->dynamicSmem,
                                                    info->threads};
    printSummary(summary);
  }
  return 0;
}

} // namespace attnc::cli
