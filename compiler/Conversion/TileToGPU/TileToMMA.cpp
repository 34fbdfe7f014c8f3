//===- TileToMMA.cpp - tiles onto warps with mma.sync m16n8k16 ------------===//
//
// The pass attnc-map-tile-to-mma, and the mapping's KV loop and stores;
// MMAEmitter.h describes the mapping.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/MMAEmitter.h"
#include "compiler/LaunchABI.h"
#include "compiler/Transforms/Passes.h"

namespace attnc {
#define GEN_PASS_DEF_MAPTILETOMMA
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;
using namespace attnc::mma;

LogicalResult MMAEmitter::emitStore(tile::StoreOp op) {
  Value q0 = map.lookup(op.getRow());
  // Register-bound kernels (positionsInBranch): the lane's first row, then
  // constants, which is what let ptxas allocate D128's without spills.
  Value rowBase = positionsInBranch ? add(q0, rowInTile) : Value();
  auto store = [&] {
    return math().store(op, map, t4, [&](int64_t mt, int64_t r) {
      return rowBase ? add(rowBase, 16 * mt + 8 * r) : add(q0, rowOf(mt, r));
    });
  };
  if (keyWarps == 1)
    return store();
  // Key warp 0 holds the merged state (mergeKeyWarps); the others store
  // nothing.
  LogicalResult result = success();
  gpu_emit::emitIfThen(b, loc, isFirstKeyWarp, [&] { result = store(); });
  return result;
}

LogicalResult MMAEmitter::emitFor(scf::ForOp op) {
  SmallVector<tile::LoadOp> ahead;
  if (rings.empty())
    ahead = gpu_emit::prefetchableLoads(op);
  for (tile::LoadOp load : ahead) {
    if (nextStage >= buffers.size() ||
        cast<MemRefType>(buffers[nextStage].getType()).getRank() != 3)
      return load.emitError("no ring buffer for a copied-ahead tile");
    rings.push_back({load, buffers[nextStage++], -1, {}, {}});
  }
  const int64_t S = ringDepth();
  // Prologue: tiles 0 .. S - 2 of each ring into stages 0 .. S - 2, one
  // group per tile (past the loop's end: the first row, never read).
  Value lb = map.lookup(op.getLowerBound()),
        ub = map.lookup(op.getUpperBound()), step = map.lookup(op.getStep());
  for (int64_t s = 0; s + 1 < S; ++s) {
    Value row = lb;
    if (s > 0) {
      Value at = stepsAhead(lb, s, step);
      Value live =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, at, ub);
      row = arith::SelectOp::create(b, loc, live, at, lb);
    }
    for (Ring &r : rings) {
      issueStage(r.load, stageView(r.buf, idx(s)), row, /*barrier=*/false);
      if (s == 0)
        r.firstGroup = committedGroups - 1;
    }
  }
  // Paged tiles (a decode split), each over one or a few whole pages: the
  // block-table lookups of a tile would sit between the loop's barrier and
  // its copies, an L2 round trip per tile on the critical path. Instead the
  // pages of the tile iteration j copies (j where it stands, j + S - 1 in a
  // ring) are loaded in iteration j - 1 and carried; K and V of a row share
  // them.
  struct CarriedPages {
    tile::LoadOp load;
    size_t slot, count; // iter_args [slot, slot + count) after the fragments
  };
  SmallVector<CarriedPages> carriedPages;
  SmallVector<Value> pageInits;
  // Tiles ahead of the iteration's own that iteration j copies.
  const int64_t lead = S - 1;
  for (auto load : op.getBody()->getOps<tile::LoadOp>()) {
    auto viewT = dyn_cast<MemRefType>(load.getSource().getType());
    int64_t rows = load.getResult().getType().getDimSize(0);
    int64_t count = viewT && !ShapedType::isDynamic(viewT.getDimSize(2))
                        ? gpu_emit::tilePageCount(rows, viewT.getDimSize(2))
                        : 0;
    if (!load.isPaged() || !load.getLength() ||
        load.getRow() != op.getInductionVar() || count == 0 ||
        !llvm::all_of(
            ValueRange{load.getBatch(), load.getBlockTable(), load.getLength()},
            [&](Value v) { return op.isDefinedOutsideOfLoop(v); }))
      continue;
    auto same = llvm::find_if(carriedPages, [&](CarriedPages &c) {
      tile::LoadOp o = c.load;
      return o.getBlockTable() == load.getBlockTable() &&
             o.getBatch() == load.getBatch() &&
             o.getLength() == load.getLength() && c.count == size_t(count) &&
             cast<MemRefType>(o.getSource().getType()).getDimSize(2) ==
                 viewT.getDimSize(2);
    });
    if (same != carriedPages.end()) {
      carriedPages.push_back({load, same->slot, same->count});
      continue;
    }
    carriedPages.push_back({load, pageInits.size(), size_t(count)});
    llvm::append_range(pageInits, gpu_emit::tilePagesOf(
                                      b, loc, map.lookup(load.getBlockTable()),
                                      map.lookup(load.getBatch()),
                                      stepsAhead(lb, lead, step),
                                      map.lookup(load.getLength()),
                                      viewT.getDimSize(2), count));
  }
  // Q into registers: its copy was committed before the ring's, so waiting
  // for it leaves the ring's first tiles (and the page lookups above) in
  // flight.
  loadPendingQ();
  // Loop-carried fragments travel as a flat list of registers (then the
  // carried pages).
  SmallVector<Value> inits;
  SmallVector<std::pair<Frags::Kind, size_t>> shapes;
  for (Value v : op.getInitArgs()) {
    const Frags &f = frags[v];
    shapes.push_back({f.kind, f.regs.size()});
    llvm::append_range(inits, f.regs);
  }
  const size_t fragRegs = inits.size();
  llvm::append_range(inits, pageInits);
  auto loop = scf::ForOp::create(b, loc, map.lookup(op.getLowerBound()),
                                 map.lookup(op.getUpperBound()),
                                 map.lookup(op.getStep()), inits);
  map.map(op.getInductionVar(), loop.getInductionVar());
  auto unflatten = [&](ValueRange flat, ValueRange tileValues) {
    size_t at = 0;
    for (auto [i, v] : llvm::enumerate(tileValues)) {
      auto [kind, n] = shapes[i];
      frags[v] = {kind, SmallVector<Value>(flat.slice(at, n))};
      at += n;
    }
  };
  unflatten(loop.getRegionIterArgs(), op.getRegionIterArgs());
  SmallVector<Value> nextPages;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    if (!pageInits.empty()) {
      Value next = stepsAhead(loop.getInductionVar(), lead + 1, loop.getStep());
      for (CarriedPages &c : carriedPages) {
        auto args = loop.getRegionIterArgs().slice(fragRegs + c.slot, c.count);
        pageAhead[c.load] = SmallVector<Value>(args.begin(), args.end());
        if (c.slot < nextPages.size())
          continue;
        llvm::append_range(
            nextPages,
            gpu_emit::tilePagesOf(
                b, loc, map.lookup(c.load.getBlockTable()),
                map.lookup(c.load.getBatch()), next,
                map.lookup(c.load.getLength()),
                cast<MemRefType>(c.load.getSource().getType()).getDimSize(2),
                c.count));
      }
    }
    if (!ahead.empty()) {
      // Iteration j computes on stage j % S and fills stage (j + S - 1) % S,
      // the one tile j - 1 held.
      ringLoop = loop;
      nextIssued = false;
      Value j = arith::DivUIOp::create(
          b, loc,
          arith::SubIOp::create(b, loc, loop.getInductionVar(),
                                loop.getLowerBound()),
          loop.getStep());
      // In 32 bits: a 64-bit remainder by 3 is ~15 instructions per
      // iteration (the decode split kernel's loop is issue-bound).
      auto mod = [&](Value x) -> Value {
        Type i32 = b.getI32Type();
        Value r = arith::RemUIOp::create(
            b, loc, arith::IndexCastUIOp::create(b, loc, i32, x),
            arith::ConstantIntOp::create(b, loc, i32, S));
        return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), r);
      };
      Value stage = mod(j), other = mod(add(j, S - 1));
      for (Ring &r : rings) {
        r.current = stageView(r.buf, stage);
        r.next = stageView(r.buf, other);
        // Every iteration commits one group per ring, so the tile's group
        // stands as far from the newest when an iteration begins as tile
        // 0's did after the prologue.
        groupOf[r.current] = r.firstGroup;
      }
    }
    for (Operation &nested : op.getBody()->without_terminator())
      if (failed(emitOp(nested)))
        return failure();
    SmallVector<Value> yields;
    for (Value v : op.getBody()->getTerminator()->getOperands())
      llvm::append_range(yields, frags[v].regs);
    llvm::append_range(yields, nextPages);
    scf::YieldOp::create(b, loc, yields);
  }
  for (CarriedPages &c : carriedPages)
    pageAhead.erase(c.load);
  unflatten(loop.getResults().take_front(fragRegs), op.getResults());
  if (!ahead.empty()) {
    // The last iteration's look-ahead copies: drain them before leaving.
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    for (Ring &r : rings) {
      groupOf.erase(r.current);
      groupOf.erase(r.next);
    }
    rings.clear();
    if (keyWarps > 1)
      return mergeKeyWarps(op);
  }
  return success();
}

namespace {

class MapTileToMMAPass
    : public attnc::impl::MapTileToMMABase<MapTileToMMAPass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

/// The schedule `kernel` carries (#tgpu.mma_schedule), or null.
static tgpu::MmaScheduleAttr scheduleOf(Operation *kernel) {
  return kernel->getAttrOfType<tgpu::MmaScheduleAttr>(tgpu::kScheduleAttrName);
}

void MapTileToMMAPass::runOnOperation() {
  // Every kernel needs its schedule (attnc-choose-mma-schedule); the
  // staging of shared-memory tiles and whether row-owned tiles are staged
  // are one choice for the module (mapKernelsToGPU lays out every kernel's
  // buffers alike).
  std::optional<tgpu::Staging> staging;
  bool stageQ = false;
  for (auto kernel : getOperation().getOps<func::FuncOp>()) {
    auto launch = kernel->getAttrOfType<tile::LaunchAttr>("tile.launch");
    if (!launch)
      continue;
    tgpu::MmaScheduleAttr schedule = scheduleOf(kernel);
    if (!schedule) {
      kernel.emitError("the mma.sync mapping needs the kernel's "
                       "#tgpu.mma_schedule (run attnc-choose-mma-schedule "
                       "first)");
      return signalPassFailure();
    }
    if (staging && *staging != schedule.getStaging()) {
      kernel.emitError("the mma.sync mapping stages the tiles of every "
                       "kernel of a module alike: padded and swizzled "
                       "schedules in one module");
      return signalPassFailure();
    }
    staging = schedule.getStaging();
    // The decode split kernel stages its Q (MMAEmitter::qStagedOnce).
    stageQ |=
        schedule.getQInSmem() || launch.getRule() == abi::kGridRuleDecodeSplit;
  }
  const bool swizzle = staging == tgpu::Staging::swizzled;
  auto rowsOf = [&](func::FuncOp kernel) {
    return scheduleOf(kernel).getRowsPerWarp();
  };
  if (failed(gpu_emit::mapKernelsToGPU(
          getOperation(), swizzle ? 0 : kRowPad, /*stageRowOwned=*/stageQ,
          [&](func::FuncOp kernel, tile::LaunchAttr launch) {
            return 32 * launch.getBlockM() / rowsOf(kernel) *
                   scheduleOf(kernel).getKeyWarps();
          },
          [&](func::FuncOp kernel, gpu::GPUFuncOp gpuFunc,
              tile::LaunchAttr launch,
              ArrayRef<Value> buffers) -> LogicalResult {
            tgpu::MmaScheduleAttr schedule = scheduleOf(kernel);
            const int64_t rows = schedule.getRowsPerWarp();
            bool aligned = launch.getBlockM() % rows == 0;
            kernel.walk([&](tile::LoadOp load) {
              auto t = load.getResult().getType();
              aligned &= t.getDimSize(0) % 16 == 0 &&
                         (t.getRank() == 1 || t.getDimSize(1) % 16 == 0);
            });
            if (!aligned)
              return kernel.emitError()
                     << "the mma.sync mapping needs a block_m that is a "
                        "multiple of "
                     << rows
                     << " and tile sizes and head dims that are "
                        "multiples of 16";
            int64_t keyWarps = schedule.getKeyWarps();
            if (launch.getBlockN() % (16 * keyWarps) != 0)
              return kernel.emitError()
                     << "decode-key-warps " << keyWarps
                     << " needs K/V tiles of a multiple of " << 16 * keyWarps
                     << " keys (16 per warp), not " << launch.getBlockN();
            return MMAEmitter(kernel, gpuFunc, launch, buffers, rows / 16,
                              schedule.getQInSmem(), swizzle, keyWarps)
                .emit();
          },
          // K and V of the KV loop: rings of kv-stages tiles, or of the
          // decode split kernel's own stage count.
          [&](tile::LoadOp load) -> int64_t {
            auto loop = load->getParentOfType<scf::ForOp>();
            if (!loop ||
                !llvm::is_contained(gpu_emit::prefetchableLoads(loop), load))
              return 1;
            Operation *kernel = load->getParentOfType<FunctionOpInterface>();
            if (auto n = kernel->getAttrOfType<IntegerAttr>(kPrefetchPagedAttr);
                n && n.getInt() > 0)
              return n.getInt();
            return scheduleOf(kernel).getKvStages();
          },
          // Key warps: the states of warps 1..W-1 for the merge after the
          // KV loop (MMAEmitter::mergeKeyWarps), per row warp.
          [&](func::FuncOp kernel, tile::LaunchAttr launch) -> int64_t {
            int64_t keyWarps = scheduleOf(kernel).getKeyWarps();
            if (keyWarps == 1)
              return 0;
            int64_t headDim = 0;
            kernel.walk([&](tile::RescaleOp op) {
              headDim = cast<ShapedType>(op.getAcc().getType()).getDimSize(1);
            });
            int64_t rows = rowsOf(kernel);
            int64_t rowWarps = launch.getBlockM() / rows;
            return (keyWarps - 1) * rowWarps * 32 * 4 *
                   MMAEmitter::keyWarpStateFloats(rows / 16, headDim);
          })))
    signalPassFailure();
}

} // namespace
