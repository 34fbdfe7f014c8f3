//===- SpecCompiler.cpp - the runtime's compiler hook, backed by MLIR -----===//
#include "compiler/Driver/SpecCompiler.h"

#include "attnc/runtime/CacheOps.h"
#include "attnc/runtime/Decode.h"
#include "attnc/runtime/Launch.h"
#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/Frontend/BuildAttnIR.h"
#include "compiler/Frontend/BuildElementwiseIR.h"
#include "compiler/LaunchABI.h"
#include "compiler/Pipelines/MappingChoice.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/RowwiseABI.h"
#include "compiler/Target/NVPTX/EmitPTX.h"
#include "dialects/Attn/IR/AttnOps.h"
#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace {

DialectRegistry allDialects() {
  DialectRegistry registry;
  attnc::registerAllDialects(registry);
  return registry;
}

/// What every compile of a spec needs: a context with all of attnc's
/// dialects, whose diagnostics are collected into the compile error.
struct CompileSession {
  explicit CompileSession(const attnc::KernelSpec &spec)
      : spec(spec), ctx(allDialects(), MLIRContext::Threading::DISABLED),
        collect(&ctx, [this](Diagnostic &d) {
          llvm::raw_string_ostream os(diagnostics);
          os << d.getLocation() << ": " << d.str() << "\n";
          return success();
        }) {
    ctx.loadAllAvailableDialects();
    ctx.printOpOnDiagnostic(false);
  }

  attnc::Status fail(const std::string &what) const {
    return attnc::Status(attnc::ErrorCode::CompileError,
                         what + " for spec '" + spec.canonical() + "'\n" +
                             diagnostics);
  }

  /// The last step of every op's compile: the passes `build` adds, run over
  /// `module`, then PTX for the spec's arch.
  attnc::Result<std::string>
  lowerToPTX(ModuleOp module, function_ref<void(OpPassManager &)> build) {
    PassManager pm(&ctx);
    build(pm);
    if (failed(pm.run(module)))
      return fail("lowering failed");
    FailureOr<std::string> ptx = attnc::emitPTX(module, spec.arch);
    if (failed(ptx))
      return fail("PTX emission failed");
    return std::move(*ptx);
  }

  const attnc::KernelSpec &spec;
  MLIRContext ctx;
  std::string diagnostics;
  ScopedDiagnosticHandler collect;
};

/// The metadata's name of a captured tensor's element type (the names the
/// C ABI's attnc_capture.dtype uses).
std::string captureDtypeName(Type t) {
  if (t.isBF16())
    return "bf16";
  if (t.isF16())
    return "f16";
  if (t.isF32())
    return "f32";
  return "i" + std::to_string(t.getIntOrFloatBitWidth());
}

} // namespace

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
  c.sinks = spec.sinks;
  c.varlen = spec.varlen;
  if (spec.varlen)
    c.pageSize = spec.pageSize; // paged varlen: K/V are the caches
  return c;
}

/// A fused elementwise kernel: attn row ops -> row kernel -> PTX. The
/// metadata comes from the tile-level kernel (launch rule, schedule and the
/// named parameters).
static attnc::Result<attnc::CompiledKernel>
compileRowKernel(const attnc::KernelSpec &spec) {
  using namespace attnc;
  CompileSession session(spec);
  MLIRContext &ctx = session.ctx;
  auto fail = [&](const std::string &what) { return session.fail(what); };
  ElementwiseConfig config;
  config.op = spec.op;
  config.hidden = spec.hidden;
  config.dtype = spec.dtype;
  config.eps = spec.eps;
  config.heads = spec.heads;
  config.kvHeads = spec.kvHeads;
  config.headSize = spec.headDim;
  config.rotaryDim = spec.rotaryDim;
  config.isNeox = spec.isNeox;
  config.positionBits = spec.positionBits;
  OwningOpRef<ModuleOp> module =
      spec.customIr.empty() ? buildElementwiseModule(ctx, config)
                            : parseSourceString<ModuleOp>(spec.customIr, &ctx);
  if (!module)
    return fail("the elementwise op does not verify");
  PassManager tilePm(&ctx);
  RowOptions rows;
  rows.threadsPerRow = spec.tuning.blockN;
  rows.rowsPerProgram = spec.tuning.blockM;
  rows.minBlocksPerSm = spec.tuning.minBlocksPerSm;
  buildRowTilePipeline(tilePm, rows);
  if (failed(tilePm.run(*module)))
    return fail("fusion failed");

  CompiledKernel out;
  KernelMetadata &meta = out.meta;
  int kernels = 0;
  module->walk([&](func::FuncOp fn) {
    auto launch = fn->getAttrOfType<tile::LaunchAttr>("tile.launch");
    if (!launch || launch.getRule() != abi::kGridRuleRowwise)
      return;
    ++kernels;
    meta.entry = fn.getName().str();
    meta.block = {launch.getBlockN() * launch.getBlockM(), 1, 1};
    meta.blockM = launch.getBlockM();
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      KernelParam p;
      if (auto name = fn.getArgAttrOfType<StringAttr>(i, "tile.param"))
        p.name = name.getValue().str();
      p.kind = isa<MemRefType>(fn.getArgument(i).getType()) ? ParamKind::Ptr
                                                            : ParamKind::I64;
      meta.params.push_back(p);
    }
  });
  if (kernels != 1)
    return fail("expected one row kernel, got " + std::to_string(kernels));
  meta.arch = spec.arch;
  meta.gridRule = abi::kGridRuleRowwise;
  meta.dynamicSmem = 0; // reduction buffers are static shared memory

  ATTNC_ASSIGN_OR_RETURN(out.ptx,
                         session.lowerToPTX(*module, [](OpPassManager &pm) {
                           buildRowGPUPipeline(pm);
                         }));
  return out;
}

/// Op "kv_append": attn.kv_append -> its row kernel -> 16-byte vector
/// copies (KVAppendToGPU) -> PTX.
static attnc::Result<attnc::CompiledKernel>
compileKVAppend(const attnc::KernelSpec &spec) {
  using namespace attnc;
  CompileSession session(spec);
  MLIRContext &ctx = session.ctx;
  auto fail = [&](const std::string &what) { return session.fail(what); };
  KVAppendConfig config;
  config.kvHeads = spec.kvHeads;
  config.headDim = spec.headDim;
  config.dtype = spec.dtype;
  config.pageSize = spec.pageSize;
  OwningOpRef<ModuleOp> module = buildKVAppendModule(ctx, config);
  if (!module)
    return fail("the kv_append does not verify");
  PassManager pm(&ctx);
  buildDecodeTilePipeline(pm, {});
  if (failed(pm.run(*module)))
    return fail("tiling failed");
  CompiledKernel out;
  KernelMetadata &meta = out.meta;
  module->walk([&](func::FuncOp fn) {
    auto launch = fn->getAttrOfType<tile::LaunchAttr>("tile.launch");
    if (!launch || launch.getRule() != abi::kGridRuleKVAppend)
      return;
    meta.entry = fn.getName().str();
    meta.block = {launch.getBlockN() * launch.getBlockM(), 1, 1};
    meta.blockM = launch.getBlockM();
  });
  if (meta.entry.empty())
    return fail("no kv_append kernel");
  meta.arch = spec.arch;
  meta.gridRule = abi::kGridRuleKVAppend;
  meta.params = kvAppendV1Params();
  ATTNC_ASSIGN_OR_RETURN(out.ptx,
                         session.lowerToPTX(*module, [](OpPassManager &pm) {
                           buildKVAppendGPUPipeline(pm);
                         }));
  return out;
}

/// Op "lse_merge": attn.lse_merge -> its tile kernel -> the mma.sync
/// mapping's combine path -> PTX.
static attnc::Result<attnc::CompiledKernel>
compileLseMerge(const attnc::KernelSpec &spec) {
  using namespace attnc;
  CompileSession session(spec);
  MLIRContext &ctx = session.ctx;
  auto fail = [&](const std::string &what) { return session.fail(what); };
  OwningOpRef<ModuleOp> module =
      buildLseMergeModule(ctx, attentionConfigOf(spec));
  if (!module)
    return fail("the lse_merge does not verify");
  CompiledKernel out;
  ATTNC_ASSIGN_OR_RETURN(out.ptx,
                         session.lowerToPTX(*module, [](OpPassManager &pm) {
                           buildDecodeTilePipeline(pm, {});
                           buildMMAPipeline(pm);
                         }));
  KernelMetadata &meta = out.meta;
  meta.entry = "lse_merge";
  meta.arch = spec.arch;
  std::optional<gpu_emit::KernelLaunchInfo> info =
      gpu_emit::launchInfo(*module, meta.entry);
  if (!info)
    return fail("the lse_merge kernel has no launch geometry");
  meta.block = {info->threads, 1, 1};
  meta.blockM = abi::kLseMergeRows;
  meta.dynamicSmem = info->dynamicSmem;
  meta.gridRule = abi::kGridRuleLseMerge;
  meta.params = lseMergeV1Params();
  return out;
}

/// The PTX parameter list of `entry` must be the metadata's, one for one:
/// the runtime packs parameters by the metadata alone, and a kernel with a
/// parameter it does not know reads garbage (or fails to launch). Counts
/// and sizes (tensor maps: 128-byte aggregates).
static attnc::Status
checkParamsAgainstPtx(const std::string &ptx, const std::string &entry,
                      const std::vector<attnc::KernelParam> &params) {
  using attnc::ErrorCode;
  using attnc::Status;
  const std::string head = ".entry " + entry + "(";
  size_t begin = ptx.find(head);
  if (begin == std::string::npos)
    return Status(ErrorCode::CompileError, "the PTX has no .entry " + entry);
  begin += head.size();
  size_t end = ptx.find(')', begin);
  std::vector<size_t> sizes; // bytes of each .param, in order
  for (size_t at = ptx.find(".param", begin); at < end;
       at = ptx.find(".param", at + 6)) {
    size_t lineEnd = std::min(ptx.find_first_of(",\n", at), end);
    std::string decl = ptx.substr(at, lineEnd - at);
    if (decl.find('[') != std::string::npos)
      sizes.push_back(std::stoul(decl.substr(decl.find('[') + 1)));
    else if (decl.find("64 ") != std::string::npos)
      sizes.push_back(8);
    else
      sizes.push_back(4);
  }
  std::string listed;
  for (const attnc::KernelParam &p : params)
    listed += (listed.empty() ? "" : ", ") + p.name;
  if (sizes.size() != params.size())
    return Status(ErrorCode::CompileError,
                  "kernel " + entry + " takes " + std::to_string(sizes.size()) +
                      " parameters but its metadata lists " +
                      std::to_string(params.size()) + " (" + listed + ")");
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] != attnc::paramKindSize(params[i].kind))
      return Status(ErrorCode::CompileError,
                    "kernel " + entry + "'s parameter " + std::to_string(i) +
                        " has " + std::to_string(sizes[i]) +
                        " bytes but the metadata's '" + params[i].name + "' " +
                        std::to_string(attnc::paramKindSize(params[i].kind)));
  return Status::ok();
}

attnc::Result<attnc::CompiledKernel>
attnc::SpecCompiler::compile(const KernelSpec &spec) {
  Result<CompiledKernel> kernel = compileOp(spec);
  if (!kernel.isOk())
    return kernel;
  const std::string where = "spec '" + spec.canonical() + "'";
  ATTNC_RETURN_IF_ERROR(checkParamsAgainstPtx(kernel->ptx, kernel->meta.entry,
                                              kernel->meta.params)
                            .withContext(where));
  // Decode's second kernel: the combine contract's parameters, then the
  // sinks when the spec has them (runtime/lib/Decode.cpp packs them so).
  if (spec.op == "decode") {
    std::vector<KernelParam> combine = decodeCombineV1Params();
    if (spec.sinks)
      combine.push_back({abi::kAttentionSinksParam, ParamKind::Ptr});
    ATTNC_RETURN_IF_ERROR(
        checkParamsAgainstPtx(kernel->ptx, abi::kDecodeCombineEntry, combine)
            .withContext(where));
  }
  return kernel;
}

attnc::Result<attnc::CompiledKernel>
attnc::SpecCompiler::compileOp(const KernelSpec &spec) {
  if (spec.op == "decode")
    return compileDecode(spec);
  if (spec.op == "kv_append")
    return compileKVAppend(spec);
  if (spec.op == "lse_merge")
    return compileLseMerge(spec);
  if (isElementwiseOp(spec.op))
    return compileRowKernel(spec);
  if (spec.op != "attention_fwd")
    return Status(ErrorCode::InvalidArgument,
                  "attnc can compile only ops 'attention_fwd' and 'decode' "
                  "so far, not '" +
                      spec.op + "'");
  CompileSession session(spec);
  MLIRContext &ctx = session.ctx;
  auto fail = [&](const std::string &what) { return session.fail(what); };

  OwningOpRef<ModuleOp> module =
      spec.customIr.empty() ? buildAttentionModule(ctx, attentionConfigOf(spec))
                            : parseSourceString<ModuleOp>(spec.customIr, &ctx);
  if (!module)
    return fail("the attention does not verify");
  // The kernel keeps the name of the function that holds the attention
  // (attnc-tile-attention builds it under that name), and the runtime finds
  // it by the metadata's entry: any name will do, but a spec is one kernel.
  SmallVector<func::FuncOp> attentionFuncs;
  module->walk([&](func::FuncOp fn) {
    if (!fn.getOps<attn::AttentionOp>().empty())
      attentionFuncs.push_back(fn);
  });
  if (attentionFuncs.size() != 1) {
    std::string names;
    for (func::FuncOp fn : attentionFuncs)
      names += (names.empty() ? "@" : ", @") + fn.getName().str();
    return fail("expected one function holding an attn.attention, found " +
                std::to_string(attentionFuncs.size()) +
                (names.empty() ? std::string() : " (" + names + ")"));
  }
  const std::string entry = attentionFuncs.front().getName().str();

  int64_t headDim = spec.headDim;
  int64_t elementBits = 16;
  bool sinks = false, varlen = false, kvBounds = false;
  int64_t pageSize = 0;
  std::vector<CaptureDesc> captures;
  module->walk([&](attn::AttentionOp op) {
    kvBounds = op.hasKVBounds();
    pageSize = op.getPageSize();
    headDim = op.getHeadDim();
    elementBits = op.getElementType().getIntOrFloatBitWidth();
    sinks = op.hasSinks();
    varlen = op.isVarlen();
    for (Value capture : op.getCaptures()) {
      auto t = cast<RankedTensorType>(capture.getType());
      captures.push_back({captureDtypeName(t.getElementType()), t.getRank()});
    }
  });
  // The runtime passes (and checks) the sinks by the spec's word.
  if (sinks != spec.sinks)
    return fail(sinks ? "the IR's attn.attention takes sinks: the spec must "
                        "say sinks=true"
                      : "the spec says sinks=true but the IR's "
                        "attn.attention takes none");
  // Likewise the cu_seqlens and the packed layout of a varlen kernel.
  if (varlen != spec.varlen)
    return fail(varlen ? "the IR's attn.attention is varlen: the spec must "
                         "say varlen=true"
                       : "the spec says varlen=true but the IR's "
                         "attn.attention is not varlen");
  // And a paged cache's page size (the runtime checks the caches by it).
  if (varlen && pageSize != spec.pageSize)
    return fail(
        pageSize
            ? "the IR's attn.attention reads a paged cache of "
              "page size " +
                  std::to_string(pageSize) +
                  ": the spec must say page_size=" + std::to_string(pageSize)
            : "the spec says page_size=" + std::to_string(spec.pageSize) +
                  " but the IR's attn.attention is not paged");
  // A paged cache goes by TMA on sm_90a (the mapping falls back to
  // mma.sync where the pages cannot); the cp.async schedules have no paged
  // copies.
  if (pageSize && !spec.tuning.kvSync.empty() && spec.tuning.kvSync != "tma" &&
      spec.tuning.kvSync != "barrier")
    return fail("tuning.kv_sync \"" + spec.tuning.kvSync +
                "\" cannot copy a paged cache; a paged varlen kernel takes "
                "kv_sync tma (or unset)");
  TileOptions tile = defaultTileOptions(
      GPUMapping::MMA, headDim, attentionVariantOf(*module), spec.tuning.blockM,
      spec.tuning.blockN, spec.tuning.warps, spec.tuning.stages,
      // a forced mma.sync takes its tiles
      spec.tuning.mapping == "mma" ? std::string() : spec.arch);
  // sm_90a takes the wgmma mapping where it supports the variant; anything
  // else (and any other target) mma.sync. The metadata names the choice.
  MappingChoice choice =
      chooseTensorCoreMapping(spec.arch, headDim, elementBits, tile,
                              /*leftWindow=*/spec.windowLeft >= 0, pageSize);
  // A tuned spec may name its mapping (attnc tune sweeps both on sm_90a).
  if (spec.tuning.mapping == "mma" && choice.mapping != GPUMapping::MMA) {
    choice.mapping = GPUMapping::MMA;
    choice.name = mappingName(GPUMapping::MMA);
    choice.why = "the spec's tuning names mma.sync";
  } else if (spec.tuning.mapping == "wgmma" &&
             choice.mapping != GPUMapping::WGMMA) {
    return fail("tuning.mapping \"wgmma\" cannot be honoured: " + choice.why);
  }
  // The wgmma mapping's own knobs, the KV loop's synchronisation and the
  // rescale (only that mapping has them, so a spec naming one must get that
  // mapping; kv_sync "barrier" aside, which mma.sync does anyway).
  auto wgmmaKnob = [&](const char *name, const std::string &value,
                       bool anyMapping) -> std::optional<std::string> {
    if (!value.empty() && !anyMapping && choice.mapping != GPUMapping::WGMMA)
      return "tuning." + std::string(name) + " \"" + value +
             "\" needs the wgmma mapping, but " + std::string(choice.name) +
             " was chosen: " + choice.why;
    return std::nullopt;
  };
  if (auto err = wgmmaKnob("kv_sync", spec.tuning.kvSync,
                           spec.tuning.kvSync == "barrier"))
    return fail(*err);
  if (auto err = wgmmaKnob("rescale", spec.tuning.rescale, false))
    return fail(*err);
  if (!spec.tuning.kvSync.empty()) {
    std::optional<tgpu::KVSync> sync =
        tgpu::symbolizeKVSync(spec.tuning.kvSync);
    if (!sync)
      return fail("tuning.kv_sync \"" + spec.tuning.kvSync +
                  "\" is not barrier, mbarrier, producer, pingpong or tma");
    tile.kvSync = *sync;
  }
  if (!spec.tuning.rescale.empty()) {
    std::optional<tgpu::Rescale> rescale =
        tgpu::symbolizeRescale(spec.tuning.rescale);
    if (!rescale)
      return fail("tuning.rescale \"" + spec.tuning.rescale +
                  "\" is not threshold or exact");
    tile.rescale = *rescale;
  }
  const bool tmaSchedule = tile.kvSync == tgpu::KVSync::tma;
  const std::string kvSyncName = tgpu::stringifyKVSync(tile.kvSync).str();
  // The grid: "persistent" needs the wgmma mapping on the tma schedule (the
  // only one with persistent CTAs, so kv_sync unset must resolve to tma:
  // block_m >= 128); "tiles" one block per item; unset, defaultTileOptions'
  // choice (heuristicTuning's), kept only where the schedule is tma.
  if (spec.tuning.grid == "persistent") {
    if (choice.mapping != GPUMapping::WGMMA)
      return fail("tuning.grid \"persistent\" needs the wgmma mapping, but " +
                  std::string(choice.name) + " was chosen: " + choice.why);
    if (!tmaSchedule)
      return fail("tuning.grid \"persistent\" needs kv_sync \"tma\" (only "
                  "the TMA schedule has persistent CTAs), but kv_sync is \"" +
                  kvSyncName + "\"" +
                  (spec.tuning.kvSync.empty()
                       ? " (the default at block_m " +
                             std::to_string(tile.blockM) +
                             "; tma needs block_m >= 128)"
                       : std::string()));
    tile.grid = tgpu::Grid::persistent;
  } else if (spec.tuning.grid == "tiles") {
    tile.grid = tgpu::Grid::tiles;
  }
  // The epilogue: "tma" needs the wgmma mapping on the tma schedule (the
  // only one with O's tensor map), as the persistent grid does; "registers"
  // any schedule (and mma.sync's epilogue anyway, as "tiles" is its grid);
  // unset, defaultTileOptions' choice (heuristicTuning's), kept only where
  // the schedule is tma.
  if (spec.tuning.epilogue == "tma") {
    if (choice.mapping != GPUMapping::WGMMA)
      return fail("tuning.epilogue \"tma\" needs the wgmma mapping, but " +
                  std::string(choice.name) + " was chosen: " + choice.why);
    if (!tmaSchedule)
      return fail("tuning.epilogue \"tma\" needs kv_sync \"tma\" (only "
                  "the TMA schedule stores O by TMA), but kv_sync is \"" +
                  kvSyncName + "\"" +
                  (spec.tuning.kvSync.empty()
                       ? " (the default at block_m " +
                             std::to_string(tile.blockM) +
                             "; tma needs block_m >= 128)"
                       : std::string()));
    tile.epilogue = tgpu::Epilogue::tma;
  } else if (spec.tuning.epilogue == "registers") {
    tile.epilogue = tgpu::Epilogue::registers;
  }
  settleWgmmaSchedule(tile, choice.mapping, spec.headDim,
                      /*epilogueRequested=*/!spec.tuning.epilogue.empty());
  CompiledKernel out;
  ATTNC_ASSIGN_OR_RETURN(out.ptx,
                         session.lowerToPTX(*module, [&](OpPassManager &pm) {
                           buildTilePipeline(pm, tile);
                           buildMappingPipeline(pm, choice.mapping, tile);
                         }));
  KernelMetadata &meta = out.meta;
  meta.entry = entry;
  meta.arch = spec.arch;
  std::optional<gpu_emit::KernelLaunchInfo> info =
      gpu_emit::launchInfo(*module, meta.entry);
  if (!info)
    return fail("the mapping recorded no launch geometry for kernel @" +
                meta.entry);
  meta.block = {info->threads, 1, 1};
  meta.mapping = choice.name;
  meta.mappingWhy = choice.why;
  if (choice.mapping == GPUMapping::WGMMA)
    meta.mappingWhy += "; kv_sync " + kvSyncName + ", rescale " +
                       tgpu::stringifyRescale(tile.rescale).str() + ", grid " +
                       tgpu::stringifyGrid(tile.grid).str() + ", epilogue " +
                       tgpu::stringifyEpilogue(tile.epilogue).str();
  // Persistent: the same parameters, another grid (abi/GridRules.h).
  meta.gridRule = tile.persistent() ? abi::kGridRuleAttentionFwdPersistent
                                    : abi::kGridRuleAttentionFwd;
  meta.blockM = tile.blockM;
  meta.blockN = tile.blockN;
  meta.dynamicSmem = info->dynamicSmem; // Q/K/V staging buffers
  meta.params = attentionFwdV1Params();
  // The optional parameters the tile kernel added after the contract's, in
  // its order: the sinks, then the cu_seqlens (TileAttention).
  if (spec.sinks)
    meta.params.push_back({abi::kAttentionSinksParam, ParamKind::Ptr});
  if (varlen) // paged: cu_seqlens_q alone
    for (const char *name : abi::kAttentionCuSeqlensParams)
      if (!pageSize || name == abi::kAttentionCuSeqlensParams[0])
        meta.params.push_back({name, ParamKind::Ptr});
  if (kvBounds)
    meta.params.push_back({abi::kAttentionKVBoundsParam, ParamKind::Ptr});
  if (pageSize)
    for (KernelParam &p : contractParams(abi::kAttentionPagedParams))
      meta.params.push_back(std::move(p));
  // The captured tensors' data, sizes and strides (TileAttention), and what
  // the runtime checks each launch's tensors against.
  meta.captures = captures;
  for (unsigned k = 0; k < captures.size(); ++k) {
    meta.params.push_back({abi::captureParamName({k}), ParamKind::Ptr});
    for (auto part : {abi::CapturePart::Size, abi::CapturePart::Stride})
      for (unsigned d = 0; d < captures[k].rank; ++d)
        meta.params.push_back(
            {abi::captureParamName({k, part, d}), ParamKind::I64});
  }
  // kv_sync "tma": the tensor maps the mapping appended (q_tmap, k_tmap,
  // v_tmap), each for boxes of the kernel's tile rows.
  if (choice.mapping == GPUMapping::WGMMA && tmaSchedule)
    for (const char *name : abi::kAttentionTensorMapParams)
      meta.params.push_back(
          {name, ParamKind::TensorMap,
           name == abi::kAttentionTensorMapParams[0] ? tile.blockM
           : pageSize ? abi::pagedBoxRows(pageSize, tile.blockN) // per page
                      : tile.blockN});
  // epilogue "tma": O's tensor map after those (the mapping appends it
  // after v_tmap), boxes of one consumer warpgroup's rows.
  if (tile.epilogue == tgpu::Epilogue::tma)
    meta.params.push_back({abi::kAttentionOutputTensorMapParam,
                           ParamKind::TensorMap,
                           abi::kAttentionOutputTensorMapBoxRows});
  // Persistent blocks over items of equal KV length: the stream-K tail's
  // schedule (i32) and workspace, last (abi/LaunchParams.h).
  if (gpu_emit::hasStreamK(*module, meta.entry)) {
    for (const char *name : abi::kAttentionStreamKParams)
      meta.params.push_back({name, ParamKind::I32});
    meta.params.push_back({abi::kAttentionWorkspaceParam, ParamKind::Ptr});
  }
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
  CompileSession session(spec);
  MLIRContext &ctx = session.ctx;
  auto fail = [&](const std::string &what) { return session.fail(what); };
  OwningOpRef<ModuleOp> module = buildDecodeModule(ctx, decodeConfigOf(spec));
  if (!module)
    return fail("the decode does not verify");
  DecodeTileOptions tile;
  if (spec.tuning.blockN > 0)
    tile.blockN = spec.tuning.blockN;
  if (spec.tuning.stages > 0)
    tile.stages = spec.tuning.stages;
  tile.maxQLen = spec.maxQLen;
  TileOptions mma;
  mma.decodeKeyWarps = std::max<int64_t>(1, spec.tuning.warps);
  CompiledKernel out;
  ATTNC_ASSIGN_OR_RETURN(out.ptx,
                         session.lowerToPTX(*module, [&](OpPassManager &pm) {
                           buildDecodeTilePipeline(pm, tile);
                           buildMMAPipeline(pm, mma);
                         }));
  KernelMetadata &meta = out.meta;
  int64_t rows = decodeSplitRows(spec);
  meta.entry = "decode_split"; // and abi::kDecodeCombineEntry
  meta.arch = spec.arch;
  std::optional<gpu_emit::KernelLaunchInfo> info =
      gpu_emit::launchInfo(*module, meta.entry);
  if (!info || info->threads != 2 * rows * mma.decodeKeyWarps)
    return fail("the decode split kernel has no launch geometry of one warp "
                "per 16 packed query rows and key warp");
  meta.block = {info->threads, 1, 1};
  meta.gridRule = abi::kGridRuleDecodeSplit;
  meta.blockM = rows;
  // The split count is chosen at launch from these (decodeSplitsFor).
  meta.blockN = tile.blockN;
  meta.kvStages = tile.stages;
  meta.dynamicSmem = info->dynamicSmem; // K/V rings; the combine has none
  meta.params = decodeSplitV1Params();
  return out;
}
