//===- TileToWGMMA.cpp - tiles onto warpgroups with wgmma (sm_90a) --------===//
//
// The Hopper mapping, first step (issue #6): one consumer warpgroup (128
// threads) per 64 query rows; S = Q·Kᵀ and O += P·V as wgmma.mma_async
// m64nNk16 with f32 accumulators.
//
// Shared memory. Q, K and V tiles are staged by cp.async into the 128-byte
// swizzled, K-major layout wgmma reads through matrix descriptors: a tile of
// R rows x D columns is D/64 column blocks of R rows x 128 bytes; in a block,
// row r's 16-byte chunk c sits at chunk c ^ (r % 8) (the hardware applies the
// XOR to address bits [4,7) from bits [7,10), so each buffer is 1024-byte
// aligned). Descriptors:
//   Q (A, K-major) and K (B, K-major): start = block + 32·(k16 step % 4)
//     bytes, SBO = 1024 (8-row groups), LBO unused (1).
//   V (B of P·V, [keys, D] is N-major: transpose bit set): LBO = R·128 bytes
//     (the next 64 columns of D), SBO = 1024 (the next 8 keys); k16 step j
//     starts 16 rows (2048 bytes) further.
// Registers. Warp w of the block owns rows 16w + g and 16w + g + 8 (lane =
// 4g + t): the wgmma accumulator of m64nN gives warp w % 4 of a warpgroup
// the rows of an m16n8 mma.sync C fragment per n8 tile, so S, P and O use
// the C layout of the mma.sync mapping (vector<2x2xf32> per n8 tile), and P
// in the C layout of two adjacent n8 tiles is the register A fragment of a
// k16 step (four bf16x2/f16x2 registers). Row statistics are reduced over
// the quad with shuffles.
// P·V takes A from registers: upstream's nvvm.wgmma.mma_async only has the
// descriptor-A form, so that one instruction is built here as llvm.inline_asm
// (as convert-nvvm-to-llvm builds the descriptor form); QKᵀ uses the
// upstream op.
// Schedule (correctness first): K is copied one iteration ahead, V's copy
// runs under QKᵀ and the softmax; each wgmma batch is waited for at once.
// TMA, warp specialisation, setmaxnreg and ping-pong are the next steps
// (bench/NOTES-hopper.md).
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/FragmentMath.h"
#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/Conversion/TileToGPU/TileEmitter.h"
#include "compiler/Conversion/TileToGPU/WGMMASupport.h"
#include "compiler/LaunchABI.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/TileGPU/IR/TileGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

#include <limits>
#include <optional>

namespace attnc {
#define GEN_PASS_DEF_MAPTILETOWGMMA
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;
using gpu_emit::f32Const;

namespace {

/// The per-thread registers of one tile value (FragmentMath.h; a warp holds
/// one m16 slice of its warpgroup's 64 rows: mTiles = 1).
using gpu_emit::Frags;

/// How the K/V rings are filled and synchronised: the kernel schedule's
/// kv_sync (#tgpu.wgmma_schedule).
using tgpu::KVSync;

using wgmma::kProducerThreads;
using wgmma::RegisterSplit;
using wgmma::registerSplit;

/// The KV loop of a kernel whose bounds are the same for every work item:
/// from 0 to a value computed before the first program id, in steps of
/// block_n (no causal or window bound). Persistent blocks cut such a loop
/// into pieces for the stream-K tail; null when the kernel has none.
static scf::ForOp itemInvariantKVLoop(func::FuncOp kernel,
                                      tile::LaunchAttr launch) {
  Block &body = kernel.getBody().front();
  Operation *firstPid = nullptr;
  scf::ForOp loop;
  for (Operation &op : body) {
    if (!firstPid && isa<tile::ProgramIdOp>(op))
      firstPid = &op;
    if (auto f = dyn_cast<scf::ForOp>(op)) {
      if (loop)
        return {};
      loop = f;
    }
  }
  if (!loop || !firstPid)
    return {};
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lb || *lb != 0 || !step || *step != launch.getBlockN())
    return {};
  Value ub = loop.getUpperBound();
  if (Operation *def = ub.getDefiningOp())
    return def->getBlock() == &body && def->isBeforeInBlock(firstPid)
               ? loop
               : scf::ForOp();
  return cast<BlockArgument>(ub).getOwner() == &body ? loop : scf::ForOp();
}

class WGMMAEmitter : public gpu_emit::TileEmitter<WGMMAEmitter> {
public:
  WGMMAEmitter(func::FuncOp kernel, gpu::GPUFuncOp gpuFunc,
               tile::LaunchAttr launch, ArrayRef<Value> buffers,
               tgpu::WgmmaScheduleAttr schedule, Value barriers,
               ArrayRef<Value> tensorMaps, Value oTensorMap,
               int64_t oStagingBytes, ArrayRef<Value> streamKArgs)
      : TileEmitter(kernel, gpuFunc, launch, buffers),
        kvStages(schedule.getKvStages()), barriers(barriers),
        mbarriers(schedule.getKvSync() != KVSync::barrier),
        producer(schedule.hasProducer()), pingPong(schedule.takesTurns()),
        persistent(schedule.getGrid() == tgpu::Grid::persistent),
        tensorMaps(tensorMaps.begin(), tensorMaps.end()),
        oTensorMap(oTensorMap), oStagingBytes(oStagingBytes),
        // FlashAttention-4's threshold: 8 in log2 units, probabilities
        // <= 256.
        rescaleThreshold(
            schedule.getRescale() == tgpu::Rescale::threshold ? 8.f : 0.f) {
    // The schedule's parameters, then the workspace (none: no tail).
    streamK = !streamKArgs.empty();
    if (streamK) {
      skParams.assign(streamKArgs.begin(), streamKArgs.end() - 1);
      workspace = streamKArgs.back();
    }
  }

  /// One block per tile (the walk of TileEmitter), or with `persistent` a
  /// loop over work items in each role.
  LogicalResult emit() {
    return persistent ? emitPersistent() : TileEmitter::emit();
  }

  // The mapping's part of the walk (see TileEmitter.h).
  void setUp();
  LogicalResult emitRowLoad(tile::LoadOp op);
  LogicalResult emitStage(tile::LoadOp op);
  LogicalResult emitDot(tile::DotOp op);
  LogicalResult emitScore(tile::ScoreOp op);
  // The softmax arithmetic on fragments: FragmentMath's, one m16 tile.
  LogicalResult emitSoftmaxUpdate(tile::SoftmaxUpdateOp op) {
    return math().softmaxUpdate(op);
  }
  LogicalResult emitRescale(tile::RescaleOp op,
                            function_ref<void()> awaitAcc = nullptr) {
    return math().rescale(op, awaitAcc);
  }
  LogicalResult emitTrunc(arith::TruncFOp op) { return math().trunc(op); }
  /// P from its 16-bit accumulator layout to its dot-operand layout: the C
  /// fragments of two adjacent n8 tiles are, register for register, the A
  /// fragment of one k16 step, so no element moves (FragmentMath::trunc
  /// already packs them as A fragments).
  LogicalResult emitConvertLayout(tgpu::ConvertLayoutOp op) {
    const Frags &from = frags[op.getSource()];
    if (!isa<tgpu::DotOperandLayoutAttr>(tgpu::layoutOf(op.getResult())) ||
        from.kind != Frags::A)
      return op.emitError("the wgmma mapping converts only a 16-bit "
                          "accumulator to its dot operand");
    frags[op.getResult()] = from;
    return success();
  }
  LogicalResult emitFinalize(tile::FinalizeOp op) {
    return math().finalize(op);
  }
  LogicalResult emitStore(tile::StoreOp op);
  /// epilogue=tma: O through shared memory and a TMA store (see its
  /// definition).
  LogicalResult emitTmaStore(tile::StoreOp op);
  LogicalResult emitFor(scf::ForOp op);
  LogicalResult emitConstant(arith::ConstantOp op) {
    return math().constant(op);
  }
  /// With a producer warpgroup the walk ends inside the consumers' branch:
  /// the kernel returns after it.
  LogicalResult emitReturn() {
    if (roleSplit)
      b.setInsertionPointAfter(roleSplit);
    gpu::ReturnOp::create(b, loc);
    return success();
  }

private:
  gpu_emit::FragmentMath math() {
    return gpu_emit::FragmentMath(b, loc, /*mTiles=*/1, frags,
                                  /*skipUnitRescale=*/true, rescaleThreshold);
  }
  Value idx(int64_t v) { return gpu_emit::indexConst(b, loc, v); }
  Value i64(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, idx(y)) : x; }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, idx(y));
  }
  Value row2(Value v, int64_t i) {
    return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i});
  }
  Value elem(Value v, int64_t i, int64_t j) {
    return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i, j});
  }

  /// cp.async of rows [row, row + R) of a [B, H, S, D] view into `buf` (or
  /// stage `stage` of the ring `buf`) in the swizzled layout, zero past the
  /// sequence end and wherever `live` is false; no commit. The copying
  /// threads are `copier` of `copiers` (every thread of the consumer
  /// warpgroups, or the producer warpgroup).
  void issueStage(tile::LoadOp op, Value buf, Value row, Value copier,
                  int64_t copiers, Value stage = {}, Value live = {});
  /// Threads of the warpgroups that compute (2 · block_m).
  int64_t consumerThreads() const { return 2 * launch.getBlockM(); }
  void commitGroup() { NVVM::CpAsyncCommitGroupOp::create(b, loc); }
  /// cp.async.wait_group(pending), then the proxy fence and a barrier: the
  /// copies of every thread are visible to wgmma.
  void waitForCopies(int64_t pending);
  /// The descriptor of the bytes at `offset` (+ `dynOffset` bytes) in `buf`.
  Value descriptor(Value buf, int64_t offset, int64_t lbo, int64_t sbo,
                   Value dynOffset = {});
  /// Issues S = Q·Kᵀ (both from shared memory) for this warpgroup's 64
  /// rows as one commit group; the accumulators are valid after the wait.
  Value issueQK(Value q, Value k, Value kOffset, int64_t n, int64_t d);
  /// Issues O += P·V with P in registers (A fragments), V from shared
  /// memory, as one commit group.
  Value issuePV(ArrayRef<Value> p, Value v, Value vOffset, int64_t keys,
                ArrayRef<Value> acc, int64_t d);
  void waitWGMMA(int64_t pending) {
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, pending);
  }
  /// The n8 tiles of an accumulator struct of `n` f32 (after its wait).
  SmallVector<Value> unpack(Value acc, int64_t n);
  LogicalResult emitKVLoop(scf::ForOp op);
  /// persistent: the barriers, the role split and setmaxnreg once, then in
  /// each role a loop over the block's work items that walks the kernel
  /// from its program ids to the epilogue (the producer's walk keeps only
  /// the loads).
  LogicalResult emitPersistent();
  /// The kernel argument whose tile.param is `name` (null without one).
  Value paramArg(StringRef name);
  /// The address (i64) of byte `offset` of the frame's scratch bytes.
  Value scratchAddress(int64_t offset);
  /// The address (i64) of a shared-memory buffer's first byte.
  Value bufferAddress(Value buf);

  // The mbarrier objects: slot `kind` x kv-stages + `stage` (kinds kFull*
  // / kEmpty*, after them Q's full and, persistent, Q's empty barrier).
  enum BarrierKind { kFullK = 0, kEmptyK = 1, kFullV = 2, kEmptyV = 3 };
  Value barrierAt(int64_t kind, Value stage);
  Value qFullBarrier() { return barrierAt(4, idx(0)); }
  Value qEmptyBarrier() { return barrierAt(4, idx(1)); }
  /// Thread 0 initialises every barrier (full: `fullArrivals` each; empty:
  /// one arrival per consumer warp), then a CTA barrier.
  void initBarriers(int64_t fullArrivals);
  /// The named barrier of this consumer warpgroup's turn (1 + warpgroup).
  Value turnBarrierOf();

  DenseMap<Value, Frags> frags;
  DenseMap<Value, Value> baseDesc; // buffer -> its descriptor at offset 0
  Value tid, lane, g, t4, rowInTile, qRowBytes; // qRowBytes: warpgroup's Q rows
  unsigned nextStage = 0;
  int64_t kvStages;
  // Per-stage full/empty mbarriers instead of one CTA barrier per tile
  // (kv-sync=mbarrier and the producer schedules): their bytes, at the end
  // of the dynamic shared memory (null with kv-sync=barrier).
  Value barriers, barBase; // barBase: their address (i64)
  bool mbarriers;
  // kv-sync=producer/pingpong/tma: a producer warpgroup after the
  // consumers.
  bool producer, pingPong;
  // Persistent blocks (kv-sync=tma): which role's walk is being emitted
  // (Whole: the one walk of a block per tile), and per work item what the
  // block's items before it left: ringPhases, per ring stage s the parity
  // of its uses (bit s) and whether it was used (bit kStageUsedBit + s);
  // qItems, the Q loads. The KV loop leaves the item's tile count (0
  // without a tile) in itemTiles.
  bool persistent;
  enum class Walk { Whole, Producer, Consumer } walk = Walk::Whole;
  static constexpr int64_t kStageUsedBit = 16;
  Value ringPhases, qItems, itemTiles;
  /// ringPhases after an item of `tiles` KV tiles (tile t in stage t mod S).
  Value advanceRingPhases(Value tiles);
  // Stream-K tail (persistent blocks whose KV loop bounds are the same for
  // every item, with a workspace at launch; see emitPersistent): the
  // block's current piece, KV tiles [pieceLo, pieceHi) of an item of
  // itemKVTiles (index values; null: the whole loop), and what the fixup
  // after the KV loop needs: the first tail unit of the piece's item and
  // this block (i32).
  bool streamK = false;
  scf::ForOp streamKLoop; // the kernel's KV loop (tile level)
  Value workspace;        // the kernel's workspace parameter (!llvm.ptr)
  Value pieceLo, pieceHi, itemKVTiles, itemFirstUnit, blockId32;
  // The schedule's parameters (i32, abi::kAttentionStreamKParams order).
  SmallVector<Value> skParams;
  Value skRounds() { return skParams[0]; }
  Value skRoundRem() { return skParams[1]; }
  Value skUnits() { return skParams[2]; }
  Value skUnitsRem() { return skParams[3]; }
  Value skTiles() { return skParams[4]; }
  /// floor(x / T) for 0 <= x < 2^31 (i32): abi::magicDivide with the
  /// runtime's abi::magicDivisor(T) (x itself when T = 1).
  Value divideByTiles(Value x) {
    auto wide = arith::MulUIExtendedOp::create(b, loc, x, skParams[5]);
    Value q = arith::ShRUIOp::create(b, loc, wide.getHigh(), skParams[6]);
    Value one = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, skTiles(),
        arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1));
    return arith::SelectOp::create(b, loc, one, x, q);
  }
  /// After the consumers' KV loop of a piece: a piece that does not start
  /// the item leaves its partial (O unnormalised, m, l) in its block's
  /// workspace slot; one that starts it but does not end it merges the
  /// other pieces' partials into its own. Returns the condition under which
  /// the rest of the walk (the epilogue) runs: the piece starts its item.
  Value emitStreamKFixup(tile::FinalizeOp fin);
  // kv-sync=tma: the Q, K and V tensor maps (kernel parameters).
  SmallVector<Value> tensorMaps;
  // epilogue=tma: O's tensor map (null: O from registers), and the bytes
  // of O's staging buffer at the start of the scratch bytes (persistent;
  // 0: O is staged in Q's buffer, qBuffer).
  Value oTensorMap;
  int64_t oStagingBytes;
  Value qBuffer;
  // The Q load the producer issues (deferred from emitRowLoad) and the
  // branch that splits the block into producer and consumers.
  tile::LoadOp qLoad;
  Value qRow;
  scf::IfOp roleSplit;
  // rescale=threshold: the log2 growth of a row's max tolerated before O
  // is rescaled (0: exact).
  float rescaleThreshold;
};

void WGMMAEmitter::setUp() {
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  Value warp = arith::DivUIOp::create(b, loc, tid, idx(32));
  g = arith::DivUIOp::create(b, loc, lane, idx(4));
  t4 = arith::RemUIOp::create(b, loc, lane, idx(4));
  rowInTile = add(mul(warp, 16), g);
  // Warpgroup w's A operand starts 64 rows (8 KiB per column block) in.
  Value wg = arith::DivUIOp::create(b, loc, tid, idx(128));
  qRowBytes = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                         mul(wg, 64 * wgmma::kSwizzleBytes));
  // The descriptor of each buffer's start (start address >> 4 in bits
  // [0, 14), 128-byte swizzle in bits [62, 64)).
  for (Value buf : buffers) {
    Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf);
    Value addr = arith::IndexCastOp::create(b, loc, b.getI64Type(), ptr);
    Value field = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, addr, i64(4)), i64(0x3FFF));
    baseDesc[buf] = arith::OrIOp::create(b, loc, field, i64(int64_t(1) << 62));
  }
  if (persistent) // the KV loops of both roles use it
    barBase = scratchAddress(oStagingBytes);
}

Value WGMMAEmitter::bufferAddress(Value buf) {
  return arith::IndexCastOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf));
}

Value WGMMAEmitter::scratchAddress(int64_t offset) {
  Value base = bufferAddress(barriers);
  return offset ? arith::AddIOp::create(b, loc, base, i64(offset)) : base;
}

Value WGMMAEmitter::barrierAt(int64_t kind, Value stage) {
  Value slot = add(stage, kind * kvStages);
  Value addr = arith::AddIOp::create(
      b, loc, barBase,
      arith::IndexCastOp::create(b, loc, b.getI64Type(), mul(slot, 8)));
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), addr);
}

void WGMMAEmitter::initBarriers(int64_t fullArrivals) {
  const int64_t S = kvStages;
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, idx(0));
  gpu_emit::emitIfThen(b, loc, first, [&] {
    Value perCopier =
        LLVM::ConstantOp::create(b, loc, b.getI32Type(), fullArrivals);
    Value perWarp = LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                             consumerThreads() / 32);
    // The rings' 4 x S, then Q's full barrier (with a producer) and its
    // empty one (persistent: every consumer thread arrives after its item's
    // last Q·Kᵀ, before the producer loads the next item's Q).
    int64_t count = 4 * S + (producer ? 1 : 0) + (persistent ? 1 : 0);
    for (int64_t i = 0; i < count; ++i) {
      int64_t kind = i / S;
      bool qEmpty = i > 4 * S;
      bool empty = i < 4 * S ? kind == kEmptyK || kind == kEmptyV : qEmpty;
      Value arrivals = qEmpty ? LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                                         consumerThreads())
                       : empty ? perWarp
                               : perCopier;
      NVVM::MBarrierInitOp::create(b, loc, barrierAt(0, idx(i)), arrivals,
                                   Value());
    }
    // TMA completes the full barriers through the async proxy: make the
    // initialisation visible to it (fence.mbarrier_init).
    if (!tensorMaps.empty())
      NVVM::FenceMbarrierInitOp::create(b, loc);
  });
  // Initialised before anyone arrives or waits (every user is in this
  // block, so the CTA barrier orders them; no cluster).
  gpu::BarrierOp::create(b, loc);
}

Value WGMMAEmitter::turnBarrierOf() {
  Value wg = arith::DivUIOp::create(b, loc, tid, idx(128));
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), add(wg, 1));
}

Value WGMMAEmitter::paramArg(StringRef name) {
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
    if (auto p = kernel.getArgAttrOfType<StringAttr>(i, "tile.param");
        p && p.getValue() == name)
      return map.lookup(kernel.getArgument(i));
  return {};
}

Value WGMMAEmitter::descriptor(Value buf, int64_t offset, int64_t lbo,
                               int64_t sbo, Value dynOffset) {
  int64_t fields = ((offset >> 4) & 0x3FFF) | ((lbo >> 4) & 0x3FFF) << 16 |
                   ((sbo >> 4) & 0x3FFF) << 32;
  Value desc = arith::AddIOp::create(b, loc, baseDesc.lookup(buf), i64(fields));
  if (dynOffset) // a ring stage: whole 1 KiB atoms, so no carry out of [0,14)
    desc = arith::AddIOp::create(
        b, loc, desc, arith::ShRUIOp::create(b, loc, dynOffset, i64(4)));
  return desc;
}

void WGMMAEmitter::issueStage(tile::LoadOp op, Value buf, Value row,
                              Value copier, int64_t copiers, Value stage,
                              Value live) {
  auto t = op.getResult().getType();
  int64_t rows = t.getDimSize(0), dim = t.getDimSize(1);
  Value view = map.lookup(op.getSource());
  Value batch = map.lookup(op.getBatch()), head = map.lookup(op.getHead());
  int64_t chunksPerRow = dim / 8;
  Value seq = memref::DimOp::create(b, loc, view, 2);
  // One 16-byte chunk: column chunk c of tile row r.
  auto copyChunk = [&](Location l, Value r, Value c) {
    // Swizzled element offset: column block, row, chunk ^ (row % 8).
    Value block = arith::DivUIOp::create(b, l, c, idx(8));
    Value swz =
        arith::XOrIOp::create(b, l, arith::RemUIOp::create(b, l, c, idx(8)),
                              arith::RemUIOp::create(b, l, r, idx(8)));
    Value flat = add(add(mul(block, rows * wgmma::kSwizzleElems),
                         mul(r, wgmma::kSwizzleElems)),
                     mul(swz, 8));
    Value dstRow = arith::DivUIOp::create(b, l, flat, idx(dim));
    Value dstCol = arith::RemUIOp::create(b, l, flat, idx(dim));
    Value seqRow = add(row, r);
    Value inside =
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, seqRow, seq);
    if (live)
      inside = arith::AndIOp::create(b, l, inside, live);
    // Past the end: read 0 of 8 elements (zero fill) from a valid
    // address (the last row).
    Value srcRow = arith::MinSIOp::create(
        b, l, seqRow, arith::SubIOp::create(b, l, seq, idx(1)));
    Value n = arith::SelectOp::create(b, l, inside, idx(8), idx(0));
    SmallVector<Value> dst{dstRow, dstCol};
    if (stage)
      dst.insert(dst.begin(), stage);
    nvgpu::DeviceAsyncCopyOp::create(
        b, l, nvgpu::DeviceAsyncTokenType::get(b.getContext()), buf, dst, view,
        ValueRange{batch, head, srcRow, mul(c, 8)}, b.getIndexAttr(8), n,
        b.getUnitAttr()); // .cg: L2 only
  };
  scf::ForOp::create(
      b, loc, copier, idx(rows * chunksPerRow), idx(copiers), ValueRange{},
      [&](OpBuilder &lb, Location l, Value chunk, ValueRange) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        copyChunk(l, arith::DivUIOp::create(b, l, chunk, idx(chunksPerRow)),
                  arith::RemUIOp::create(b, l, chunk, idx(chunksPerRow)));
        scf::YieldOp::create(b, l);
      });
}

void WGMMAEmitter::waitForCopies(int64_t pending) {
  NVVM::CpAsyncWaitGroupOp::create(b, loc, int32_t(pending));
  // cp.async wrote through the generic proxy; wgmma reads through the async
  // proxy: order the two, then make every thread's copies visible.
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b, loc);
}

LogicalResult WGMMAEmitter::emitRowLoad(tile::LoadOp op) {
  // Q: the first buffer (the frame stages row-owned tiles too), in a commit
  // group of its own that the KV loop's first wait covers.
  // With a producer warpgroup, the producer copies it in the KV loop.
  Value buf = buffers[nextStage++];
  frags[op.getResult()] = {Frags::Staged, {buf}};
  qBuffer = buf;
  if (producer) {
    qLoad = op;
    qRow = map.lookup(op.getRow());
    return success();
  }
  issueStage(op, buf, map.lookup(op.getRow()), tid, consumerThreads());
  commitGroup();
  return success();
}

LogicalResult WGMMAEmitter::emitStage(tile::LoadOp op) {
  return op.emitError("the wgmma mapping stages K/V tiles only in the KV "
                      "loop of an attention kernel");
}

/// The struct of `n` f32 that nvvm.wgmma.mma_async carries accumulators in.
static LLVM::LLVMStructType accStruct(MLIRContext *ctx, int64_t n) {
  return LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(n, Float32Type::get(ctx)));
}

/// n8 tiles of vector<2x2xf32> from wgmma's flat accumulator registers
/// (d[4j + 2r + c] = row g + 8r, column 8j + 2t + c).
static SmallVector<Value> tilesFromFlat(OpBuilder &b, Location loc,
                                        ArrayRef<Value> flat) {
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  SmallVector<Value> tiles;
  for (size_t j = 0; j < flat.size(); j += 4)
    tiles.push_back(
        vector::FromElementsOp::create(b, loc, cT, flat.slice(j, 4)));
  return tiles;
}

SmallVector<Value> WGMMAEmitter::unpack(Value acc, int64_t n) {
  SmallVector<Value> flat;
  for (int64_t i = 0; i < n; ++i)
    flat.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
  return tilesFromFlat(b, loc, flat);
}

Value WGMMAEmitter::issueQK(Value q, Value k, Value kOffset, int64_t n,
                            int64_t d) {
  MLIRContext *ctx = b.getContext();
  Type elt = cast<MemRefType>(q.getType()).getElementType();
  int64_t qRows = cast<MemRefType>(q.getType()).getDimSize(0);
  auto ptx = elt.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  auto structT = accStruct(ctx, n / 2);
  Value acc = LLVM::ZeroOp::create(b, loc, structT);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (int64_t kk = 0; kk < d / 16; ++kk) {
    int64_t block = kk / 4, within = (kk % 4) * 32;
    Value descA = arith::AddIOp::create(
        b, loc,
        descriptor(q, block * qRows * wgmma::kSwizzleBytes + within, 16,
                   wgmma::kSwizzleAtomBytes),
        arith::ShRUIOp::create(b, loc, qRowBytes, i64(4)));
    Value descB = descriptor(k, block * n * wgmma::kSwizzleBytes + within, 16,
                             wgmma::kSwizzleAtomBytes, kOffset);
    acc = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, structT, acc, descA, descB,
        NVVM::MMAShapeAttr::get(ctx, 64, n, 16),
        NVVM::WGMMATypesAttr::get(ctx, ptx),
        NVVM::WGMMATypesAttr::get(ctx, ptx),
        NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, kk ? NVVM::WGMMAScaleOut::one
                                             : NVVM::WGMMAScaleOut::zero),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row), // A K-major
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col), // B K-major
        NVVM::MMAIntOverflowAttr());
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return acc;
}

Value WGMMAEmitter::issuePV(ArrayRef<Value> p, Value v, Value vOffset,
                            int64_t keys, ArrayRef<Value> acc, int64_t d) {
  Type elt = cast<MemRefType>(v.getType()).getElementType();
  int64_t nAcc = d / 2;
  SmallVector<Value> flat;
  for (Value tileReg : acc)
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 2; ++c)
        flat.push_back(elem(tileReg, r, c));
  // wgmma.mma_async.sync.aligned.m64n{d}k16.f32.T.T {d...}, {a0..a3},
  // b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-b: the register-A
  // form, V N-major (transposed). Operands: the accumulators (outputs tied
  // to inputs), then 4 A registers, the descriptor, scale-d.
  std::string asmText;
  llvm::raw_string_ostream os(asmText);
  os << "{\n.reg .pred p;\nsetp.ne.b32 p, $" << (2 * nAcc + 5)
     << ", 0;\nwgmma.mma_async.sync.aligned.m64n" << d << "k16.f32."
     << (elt.isBF16() ? "bf16.bf16" : "f16.f16") << " {";
  for (int64_t i = 0; i < nAcc; ++i)
    os << (i ? ", $" : "$") << i;
  os << "}, {$" << 2 * nAcc << ", $" << 2 * nAcc + 1 << ", $" << 2 * nAcc + 2
     << ", $" << 2 * nAcc + 3 << "}, $" << 2 * nAcc + 4 << ", p, 1, 1, 1;\n}\n";
  std::string constraints;
  for (int64_t i = 0; i < nAcc; ++i)
    constraints += "=f,";
  for (int64_t i = 0; i < nAcc; ++i)
    constraints += std::to_string(i) + ",";
  constraints += "r,r,r,r,l,n";
  auto structT = accStruct(b.getContext(), nAcc);
  Value one = LLVM::ConstantOp::create(b, loc, b.getI32Type(), 1);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  Value result;
  for (int64_t j = 0; j < keys / 16; ++j) {
    SmallVector<Value> operands(flat);
    for (int64_t i = 0; i < 4; ++i)
      operands.push_back(
          LLVM::BitcastOp::create(b, loc, b.getI32Type(), row2(p[j], i)));
    // Keys [16j, 16j + 16): two 8-key groups, 2 KiB in.
    operands.push_back(descriptor(v, j * 16 * wgmma::kSwizzleBytes,
                                  keys * wgmma::kSwizzleBytes,
                                  wgmma::kSwizzleAtomBytes, vOffset));
    operands.push_back(one);
    auto asmOp =
        gpu_emit::inlinePtx(b, loc, structT, operands, asmText, constraints);
    result = asmOp.getResult(0);
    for (int64_t i = 0; i < nAcc; ++i)
      flat[i] = LLVM::ExtractValueOp::create(b, loc, result, i);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return result;
}

LogicalResult WGMMAEmitter::emitDot(tile::DotOp op) {
  return op.emitError("the wgmma mapping expects its tile.dots in the KV "
                      "loop of an attention kernel (Q·Kᵀ, then P·V)");
}

LogicalResult WGMMAEmitter::emitScore(tile::ScoreOp op) {
  Value q0 = map.lookup(op.getQ0()), k0 = map.lookup(op.getK0());
  // One m16 tile per warp: rows g and g + 8 of the warp's 16.
  Value rows[2] = {add(q0, rowInTile), add(add(q0, rowInTile), 8)};
  Value col0 = add(k0, mul(t4, 2));
  return math().score(
      op, map, launch.getBlockM(), [&](int64_t, int64_t r) { return rows[r]; },
      col0);
}

LogicalResult WGMMAEmitter::emitStore(tile::StoreOp op) {
  if (oTensorMap && frags[op.getValue()].kind == Frags::C)
    return emitTmaStore(op);
  Value q0 = map.lookup(op.getRow());
  return math().store(op, map, t4, [&](int64_t, int64_t r) {
    return add(add(q0, rowInTile), 8 * r);
  });
}

// epilogue=tma. Each consumer warpgroup writes its 64 rows of O (bf16/f16,
// the C layout of the accumulators) into the staging buffer in the
// 128-byte swizzled layout TMA reads (the layout of Q: D/64 column blocks
// of block_m rows x 128 bytes, 16-byte chunk c of row r at c ^ (r % 8)),
// with stmatrix.x4 (four 8x8 matrices per instruction: n8 tiles 2p and
// 2p + 1, rows g and g + 8 of each; a matrix's 8 rows land in 8 distinct
// chunks of 8 consecutive rows, so no bank conflicts); then the proxy
// fence and the warpgroup's own named barrier, and its first thread
// stores the D/64 boxes of 64 columns x 64 rows with
// cp.async.bulk.tensor (rows past the sequence end are not written: the
// tensor map's bounds). The staging buffer is Q's with one block per tile
// (a warpgroup's Q rows are read by its own Q·Kᵀ only, all waited for),
// and a buffer of its own with persistent blocks (the producer refills Q
// during the epilogue): there, before writing, the first thread waits until
// the previous item's store has read it, and the block's last store is
// waited for after the item loop. ncu counted 50% excess sectors on the
// register stores (16 of every 32 bytes per instruction).
//
// Persistent blocks avoid the two `.aligned` instructions here, stmatrix
// and bar.sync: each thread stores its fragments with st.shared.b32 into
// the same layout, and the warpgroup meets at a non-aligned barrier.sync.
// With either of them after a causal KV loop (whose length ptxas cannot
// prove warp-uniform) ptxas wraps that loop for reconvergence and takes
// its counter and wgmma descriptors out of the uniform datapath: D128 828
// SASS instructions per KV tile against 752 (bench/NOTES-hopper.md, "Left
// (in order)" item 6, 2026-12-03; guarded by tests/ptxas'
// sass_uniform_loop_test.py).
LogicalResult WGMMAEmitter::emitTmaStore(tile::StoreOp op) {
  const Frags &o = frags[op.getValue()];
  const int64_t blockM = launch.getBlockM();
  const int64_t n8 = int64_t(o.regs.size()), d = 8 * n8;
  // Persistent: the addresses below are the same for every item; hoisted
  // out of the item loop they would stay live across the KV loop, and the
  // consumers would spill the item loop's bounds (D128: 12 B).
  Value tid = persistent ? gpu_emit::opaqueIndex(b, loc, this->tid) : this->tid;
  Value lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  Value wg = arith::DivUIOp::create(b, loc, tid, idx(128));
  Value first = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, loc, tid, idx(128)), idx(0));
  // Named barriers: 0 is the block's, 1 + w the turns; then one per
  // warpgroup for its epilogue.
  auto asI32 = [&](Value v) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
  };
  Value epilogueBarrier = asI32(add(wg, 1 + consumerThreads() / 128));
  Value wgThreads = LLVM::ConstantOp::create(b, loc, b.getI32Type(), 128);
  auto syncWarpgroup = [&] {
    if (!persistent) {
      NVVM::BarrierOp::create(b, loc, TypeRange{}, epilogueBarrier, wgThreads,
                              NVVM::BarrierReductionAttr(), Value());
      return;
    }
    // The memory clobber keeps LLVM from moving shared-memory accesses
    // across it, as it would not move them across bar.sync.
    gpu_emit::inlinePtx(b, loc, TypeRange{},
                        ValueRange{epilogueBarrier, wgThreads},
                        "barrier.sync $0, $1;", "r,r,~{memory}");
  };
  Value staging = persistent ? scratchAddress(0) : bufferAddress(qBuffer);
  if (persistent) {
    gpu_emit::emitIfThen(b, loc, first, [&] {
      NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, b.getUnitAttr());
    });
    syncWarpgroup();
  }
  Value warpInGroup = arith::RemUIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, tid, idx(32)), idx(4));
  Value warpRows = add(mul(wg, 64), mul(warpInGroup, 16));
  auto sharedPtrT = LLVM::LLVMPointerType::get(b.getContext(), 3);
  if (persistent) {
    // Lane (g, t) holds columns 8j + 2t, 8j + 2t + 1 of rows g and g + 8
    // of its warp's 16 for each n8 tile j: 4 bytes at chunk (j % 8) ^ g
    // (the row's index mod 8 is g), byte 4t, of column block j / 8.
    Value fragRow = arith::DivUIOp::create(b, loc, lane, idx(4));
    Value fragCol = arith::RemUIOp::create(b, loc, lane, idx(4));
    Value threadBase = arith::AddIOp::create(
        b, loc, staging,
        arith::IndexCastOp::create(
            b, loc, b.getI64Type(),
            add(mul(add(warpRows, fragRow), wgmma::kSwizzleBytes),
                mul(fragCol, 4))));
    for (int64_t j = 0; j < n8; ++j) {
      Value chunk = arith::XOrIOp::create(b, loc, fragRow, idx(j % 8));
      for (int64_t h = 0; h < 2; ++h) {
        Value at = arith::AddIOp::create(
            b, loc, threadBase,
            arith::IndexCastOp::create(
                b, loc, b.getI64Type(),
                add(mul(chunk, 16), (j / 8) * blockM * wgmma::kSwizzleBytes +
                                        8 * h * wgmma::kSwizzleBytes)));
        LLVM::StoreOp::create(
            b, loc,
            LLVM::BitcastOp::create(b, loc, b.getI32Type(), row2(o.regs[j], h)),
            LLVM::IntToPtrOp::create(b, loc, sharedPtrT, at));
      }
    }
  } else {
    // Lane l gives the row address of matrix l / 8, row l % 8: matrix m
    // holds n8 tile 2p + m / 2, rows g + 8 (m % 2).
    Value m = arith::DivUIOp::create(b, loc, lane, idx(8));
    Value rowInMatrix = arith::RemUIOp::create(b, loc, lane, idx(8));
    Value row =
        add(add(warpRows, mul(arith::RemUIOp::create(b, loc, m, idx(2)), 8)),
            rowInMatrix);
    Value laneBase = arith::AddIOp::create(
        b, loc, staging,
        arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                   mul(row, wgmma::kSwizzleBytes)));
    // Chunk (2 (p % 4) + m / 2) ^ (row % 8) = 2 (p % 4) ^ (m / 2 ^ row % 8).
    Value chunkXor = arith::XOrIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, m, idx(2)), rowInMatrix);
    for (int64_t p = 0; p < n8 / 2; ++p) {
      int64_t block = p / 4;
      Value chunk = arith::XOrIOp::create(b, loc, chunkXor, idx(2 * (p % 4)));
      Value at = arith::AddIOp::create(
          b, loc, laneBase,
          arith::IndexCastOp::create(
              b, loc, b.getI64Type(),
              add(mul(chunk, 16), block * blockM * wgmma::kSwizzleBytes)));
      SmallVector<Value> sources;
      for (int64_t i = 0; i < 4; ++i)
        sources.push_back(LLVM::BitcastOp::create(
            b, loc, b.getI32Type(), row2(o.regs[2 * p + i / 2], i % 2)));
      NVVM::StMatrixOp::create(
          b, loc, LLVM::IntToPtrOp::create(b, loc, sharedPtrT, at), sources,
          NVVM::MMALayout::row,
          NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
          NVVM::LdStMatrixEltType::B16);
    }
  }
  // The shared stores went through the generic proxy; TMA reads through the
  // async one: fence, then every thread of the warpgroup has written.
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  syncWarpgroup();
  Value q0 = map.lookup(op.getRow());
  Value batch = map.lookup(op.getBatch()), head = map.lookup(op.getHead());
  gpu_emit::emitIfThen(b, loc, first, [&] {
    Value wgRows = mul(wg, 64);
    Value src0 = arith::AddIOp::create(
        b, loc, staging,
        arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                   mul(wgRows, wgmma::kSwizzleBytes)));
    for (int64_t block = 0; block < d / wgmma::kSwizzleElems; ++block) {
      Value src = arith::AddIOp::create(
          b, loc, src0, i64(block * blockM * wgmma::kSwizzleBytes));
      Value coords[] = {LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                                 block * wgmma::kSwizzleElems),
                        asI32(add(q0, wgRows)), asI32(head), asI32(batch)};
      NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
          b, loc, oTensorMap, LLVM::IntToPtrOp::create(b, loc, sharedPtrT, src),
          ValueRange(coords), /*l2CacheHint=*/Value(),
          NVVM::TMAStoreModeAttr::get(b.getContext(), NVVM::TMAStoreMode::TILE),
          /*predicate=*/Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
    // One block per tile: the block must not exit (its shared memory going
    // to the next block) before the store has read the buffer.
    if (!persistent)
      NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, b.getUnitAttr());
  });
  return success();
}

/// The attention KV loop as the wgmma schedule takes it: K and V staged at
/// the induction variable, S = Q·Kᵀ with Q from before the loop, the
/// softmax ops, and last O = P·V + rescale(O, α) yielded.
struct KVLoop {
  tile::LoadOp k, v;
  tile::DotOp qk, pv;
  tile::RescaleOp rescale;
  unsigned accArg; // the iter arg that carries O
};

static FailureOr<KVLoop> matchKVLoop(scf::ForOp op) {
  KVLoop m;
  Operation *last = op.getBody()->getTerminator()->getPrevNode();
  auto pv = dyn_cast_or_null<tile::DotOp>(last);
  if (!pv || pv.getTransposeB() || !pv.getAcc() || !pv->hasOneUse())
    return failure();
  m.pv = pv;
  m.rescale = pv.getAcc().getDefiningOp<tile::RescaleOp>();
  auto arg = dyn_cast<BlockArgument>(m.rescale ? m.rescale.getAcc() : Value());
  if (!m.rescale || !m.rescale->hasOneUse() || !arg ||
      arg.getOwner() != op.getBody() || !arg.hasOneUse() ||
      arg.getArgNumber() == 0)
    return failure();
  m.accArg = arg.getArgNumber() - 1;
  if (op.getBody()->getTerminator()->getOperand(m.accArg) != pv.getResult())
    return failure();
  for (auto dot : op.getBody()->getOps<tile::DotOp>())
    if (dot != pv && dot.getTransposeB() && !dot.getAcc() &&
        op.isDefinedOutsideOfLoop(dot.getLhs()))
      m.qk = dot;
  SmallVector<tile::LoadOp> staged = gpu_emit::prefetchableLoads(op);
  if (!m.qk || staged.size() != 2)
    return failure();
  m.k = m.qk.getRhs().getDefiningOp<tile::LoadOp>();
  m.v = pv.getRhs().getDefiningOp<tile::LoadOp>();
  if (!m.k || !m.v || !llvm::is_contained(staged, m.k) ||
      !llvm::is_contained(staged, m.v) || m.k == m.v)
    return failure();
  return m;
}

LogicalResult WGMMAEmitter::emitFor(scf::ForOp op) {
  if (failed(matchKVLoop(op)))
    return op.emitError("the wgmma mapping expects the attention KV loop "
                        "(K and V tiles, Q·Kᵀ, softmax, then P·V into the "
                        "rescaled accumulator)");
  return emitKVLoop(op);
}

// The schedule (S = kvStages, tile j of the loop):
//   prologue  copy K_0 .. K_{S-2} and V_0 .. V_{S-3}, one group per tile
//   iter j    wait for K_j and V_{j-1}; barrier (every warpgroup is past
//             iteration j-1, so K_{j-1} and V_{j-2} are free); copy K_{j+S-1}
//             and V_{j+S-2} into their stages; issue QKᵀ_j, then
//             P_{j-1}·V_{j-1} into O; wait for QKᵀ_j only; score and softmax of
//             tile j under the P·V wgmma; wait for it; O = α_j · O; P_j stays
//             in registers
//   epilogue  O += P_last · V_last
// so the softmax of a tile runs while the tensor cores do the previous
// tile's P·V (FlashAttention-3's intra-warpgroup overlap), and the copies
// of K and V run S - 1 tiles ahead. The first tile is peeled (no P·V
// before it), and the whole loop is skipped when it has no tile (fully
// masked rows keep O = 0, m = -inf, l = 0).
// kv-sync=mbarrier replaces the per-tile wait + CTA barrier: iteration j
// waits on the full barriers of K_j and V_{j-1} (every thread's copies
// landed), and each copy into a stage first waits on that stage's empty
// barrier (every thread released the tile it held); K_j is released after
// the wait for QKᵀ_j, V_{j-1} after the wait for P·V. No commit groups
// for the rings then (Q keeps its own); tests/unit/mbarrier_protocol_sim.py
// models the protocol.
LogicalResult WGMMAEmitter::emitKVLoop(scf::ForOp op) {
  KVLoop kv = *matchKVLoop(op);
  const int64_t S = kvStages;
  if (nextStage + 2 > buffers.size())
    return op.emitError("more staged tiles than workgroup buffers");
  // The frame carves the rings in the order of the loads.
  bool kFirst = kv.k->isBeforeInBlock(kv.v);
  Value kRing = buffers[nextStage + (kFirst ? 0 : 1)];
  Value vRing = buffers[nextStage + (kFirst ? 1 : 0)];
  nextStage += 2;
  Value qBuf = frags[kv.qk.getLhs()].regs[0];
  int64_t n = kv.qk.getResult().getType().getDimSize(1);
  int64_t d = cast<MemRefType>(qBuf.getType()).getDimSize(1);
  int64_t keys = kv.v.getResult().getType().getDimSize(0);
  int64_t kStageBytes = n * d * 2, vStageBytes = keys * d * 2;

  Value lb = map.lookup(op.getLowerBound()),
        ub = map.lookup(op.getUpperBound());
  Value step = map.lookup(op.getStep());
  // A stream-K piece runs tiles [pieceLo, pieceHi) of the loop.
  if (pieceLo && walk != Walk::Whole) {
    Value first = add(lb, arith::MulIOp::create(b, loc, pieceLo, step));
    ub = arith::MinUIOp::create(
        b, loc, ub, add(lb, arith::MulIOp::create(b, loc, pieceHi, step)));
    lb = first;
  }
  auto tileRow = [&](Value t) { // lb + t · step
    return add(lb, arith::MulIOp::create(b, loc, t, step));
  };
  // Tile t of the loop sits in stage t mod S of each ring, also in a
  // persistent block's later items: the stage (and so every wgmma
  // descriptor) derives from the loop counter alone, which ptxas keeps in
  // the uniform datapath. (Counting slots across items instead, stage
  // (base + t) mod S, makes ptxas rebuild each descriptor per thread, R2UR
  // before every HGMMA: 633 SASS instructions per tile against 555;
  // bench/NOTES-hopper.md, "persistent CTAs", 2026-12-01.) Only the barrier
  // waits read what the earlier items left (ringPhases).
  const bool itemWalk = walk != Walk::Whole;
  auto stageOf = [&](Value t) {
    return arith::RemUIOp::create(b, loc, t, idx(S));
  };
  // Persistent: bit `bit0` + stage of ringPhases, as an index 0 or 1.
  auto ringPhaseBit = [&](Value t, int64_t bit0) -> Value {
    Value at = add(stageOf(t), bit0);
    return arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, ringPhases, at), idx(1));
  };
  auto stageBytes = [&](Value stage, int64_t bytes) {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                      mul(stage, bytes));
  };
  // With mbarriers: 4·S objects, [full K, empty K, full V, empty V] x
  // stage. full[s] completes when every thread's copies into stage s
  // landed (one cp.async.mbarrier.arrive.noinc per thread: .noinc makes the
  // async arrival count against the init count, = threads); empty[s] when
  // every warp's wgmma reads of it completed (one mbarrier.arrive per warp,
  // by lane 0 after the warp's wgmma wait; init count = warps). Stage s
  // holds tiles s, s + S, ...: tile t's use is phase t / S, so its parity
  // is (t / S) & 1, and refilling it waits for the phase before, the
  // parity (t / S + 1) & 1 (for t >= S only: a fresh barrier would pass a
  // wait for parity 1 anyway, but t < S needs no wait).
  // They live in the frame's scratch bytes after the K/V rings, inside the
  // dynamic shared memory: a static workgroup attribution would be laid out
  // after the dynamic-memory symbol, i.e. on top of Q's first row (the hang
  // of the first kv-sync=mbarrier attempt, bench/NOTES-hopper.md).
  // kv-sync=producer/pingpong: the producer warpgroup's 128 threads copy
  // (Q too, on a full barrier of its own after the rings' objects) and
  // arrive on the full barriers; the consumers only wait and release.
  const int64_t threads = consumerThreads();
  const int64_t copiers = producer ? kProducerThreads : threads;
  // kv-sync=tma: one thread's arrive.expect_tx per phase; the bytes of the
  // tile's TMA copies complete it.
  const bool tma = !tensorMaps.empty();
  const int64_t fullArrivals = tma ? 1 : copiers;
  Value copier = tid; // this thread's index among the copiers
  if (mbarriers && !persistent)
    barBase = scratchAddress(oStagingBytes);
  auto sharedPtrT = LLVM::LLVMPointerType::get(b.getContext(), 3);
  auto asParity = [&](Value phase) -> Value { // phase & 1 as i32
    return arith::IndexCastOp::create(
        b, loc, b.getI32Type(), arith::AndIOp::create(b, loc, phase, idx(1)));
  };
  // Tile t is its stage's use t / S of the loop (+ the earlier items'
  // uses, persistent): the phase its full barrier completes.
  auto parityOf = [&](Value t, int64_t phaseOffset) -> Value {
    Value phase = add(arith::DivUIOp::create(b, loc, t, idx(S)), phaseOffset);
    if (itemWalk)
      phase = add(phase, ringPhaseBit(t, 0));
    return asParity(phase);
  };
  // A try_wait.parity loop (the op's inline PTX spins until the phase
  // completed), with CUTLASS's suspend-time hint of 10 ms.
  auto waitBarrier = [&](Value addr, Value parity) {
    NVVM::MBarrierTryWaitParityOp::create(
        b, loc, addr, parity,
        LLVM::ConstantOp::create(b, loc, b.getI32Type(), 0x989680));
  };
  // full: one arrival per copying thread (its own copies); empty: one per
  // consumer warp. (Persistent: once per block, before the role split.)
  if (mbarriers && !persistent)
    initBarriers(fullArrivals);
  // Before tile t (K or V) goes into its stage: every consumer warp
  // released the tile the stage held (t - S, or an earlier item's;
  // nothing to wait for before the stage's first use).
  auto emptyWait = [&](bool isK, Value t) {
    Value reused =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, t, idx(S));
    if (itemWalk)
      reused = arith::OrIOp::create(
          b, loc, reused,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                ringPhaseBit(t, kStageUsedBit), idx(0)));
    gpu_emit::emitIfThen(b, loc, reused, [&] {
      waitBarrier(barrierAt(isK ? kEmptyK : kEmptyV, stageOf(t)),
                  parityOf(t, 1));
    });
  };
  // kv-sync=tma: the TMA copies of rows [row, row + R) of `load`'s view
  // (one box of 64 columns x R rows per column block, 128-byte swizzle:
  // the layout the descriptors read) into `buf` (+ `offset` bytes: a ring
  // stage), completing on `bar`, which first expects their bytes. Rows past
  // the sequence end read as zeros (the tensor map's bounds).
  auto tmaTile = [&](tile::LoadOp load, Value buf, Value row, Value offset,
                     Value bar, Value tensorMap) {
    auto tt = load.getResult().getType();
    int64_t rows = tt.getDimSize(0), dim = tt.getDimSize(1);
    NVVM::MBarrierArriveExpectTxOp::create(
        b, loc, Type(), bar,
        LLVM::ConstantOp::create(b, loc, b.getI32Type(), rows * dim * 2),
        NVVM::MemScopeKind::CTA, /*relaxed=*/false, Value());
    Value base = arith::IndexCastOp::create(
        b, loc, b.getI64Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf));
    if (offset)
      base = arith::AddIOp::create(b, loc, base, offset);
    auto asI32 = [&](Value v) {
      return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
    };
    Value coords[] = {Value(), asI32(row), asI32(map.lookup(load.getHead())),
                      asI32(map.lookup(load.getBatch()))};
    auto clusterPtrT = LLVM::LLVMPointerType::get(b.getContext(), 7);
    for (int64_t block = 0; block < dim / wgmma::kSwizzleElems; ++block) {
      Value at = arith::AddIOp::create(
          b, loc, base, i64(block * rows * wgmma::kSwizzleBytes));
      Value dst = LLVM::IntToPtrOp::create(b, loc, sharedPtrT, at);
      coords[0] = LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                           block * wgmma::kSwizzleElems);
      NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
          b, loc, LLVM::AddrSpaceCastOp::create(b, loc, clusterPtrT, dst),
          tensorMap, ValueRange(coords), bar, ValueRange{}, Value(), Value(),
          NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false,
          NVVM::CTAGroupKindAttr(), Value());
    }
  };
  // Copies of tile t (K or V) into its stage, nothing past the loop's end.
  // With mbarriers: first wait until every thread has released the tile
  // the stage held (t - S), then arrive on the stage's full barrier when
  // this thread's copies land.
  auto copyTile = [&](tile::LoadOp load, Value ring, Value t) {
    Value row = tileRow(t);
    Value live =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, ub);
    bool isK = load == kv.k;
    if (mbarriers)
      emptyWait(isK, t);
    issueStage(load, ring, row, copier, copiers, stageOf(t), live);
    if (mbarriers)
      NVVM::CpAsyncMBarrierArriveOp::create(
          b, loc, barrierAt(isK ? kFullK : kFullV, stageOf(t)),
          /*noinc=*/true);
  };
  // Before wgmma reads tile t of a ring: its copies have landed (every
  // thread's), and the async proxy sees them.
  auto waitTile = [&](bool isK, Value t) {
    waitBarrier(barrierAt(isK ? kFullK : kFullV, stageOf(t)), parityOf(t, 0));
  };
  auto fenceProxy = [&]() {
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
  };
  // One arrive per warp, by lane 0: it follows the warp-aligned
  // wgmma.wait_group, so every lane of the warp is past its reads (32x
  // fewer shared-memory atomics on one word than an arrive per thread).
  Value laneZero;
  if (mbarriers)
    laneZero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, idx(0));
  auto release = [&](bool isK, Value t) {
    Value addr = barrierAt(isK ? kEmptyK : kEmptyV, stageOf(t));
    gpu_emit::emitIfThen(b, loc, laneZero, [&] {
      NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(), addr, Value());
    });
  };

  // kv-sync=pingpong: consumer warpgroup w issues its wgmmas between a
  // bar.sync on named barrier 1 + w and a bar.arrive on the next
  // warpgroup's (both counting the two warpgroups' 256 threads), so the
  // warpgroups take turns on the tensor cores and each one's softmax runs
  // under the other's GEMMs (FlashAttention-3's ping-pong). Warpgroup 0
  // arrives once on its own barrier first, to go first; the last
  // warpgroup does not arrive after its last turn, so every barrier ends
  // with as many arrivals as waits.
  const int64_t consumerGroups = threads / 128;
  Value turnBarrier, nextBarrier, notLastGroup;
  if (pingPong) {
    Value wg = arith::DivUIOp::create(b, loc, tid, idx(128));
    auto asI32 = [&](Value v) {
      return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
    };
    turnBarrier = asI32(add(wg, 1));
    nextBarrier = asI32(add(
        arith::RemUIOp::create(b, loc, add(wg, 1), idx(consumerGroups)), 1));
    notLastGroup = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, wg,
                                         idx(consumerGroups - 1));
  }
  Value turnThreads = LLVM::ConstantOp::create(b, loc, b.getI32Type(), 2 * 128);
  auto takeTurn = [&]() {
    if (pingPong)
      NVVM::BarrierOp::create(b, loc, TypeRange{}, turnBarrier, turnThreads,
                              NVVM::BarrierReductionAttr(), Value());
  };
  auto passTurn = [&](bool last) {
    if (!pingPong)
      return;
    if (!last) {
      NVVM::BarrierArriveOp::create(b, loc, nextBarrier, turnThreads);
      return;
    }
    gpu_emit::emitIfThen(b, loc, notLastGroup, [&] {
      NVVM::BarrierArriveOp::create(b, loc, nextBarrier, turnThreads);
    });
  };

  // The loop state: the tile loop's iter args, then P of the previous tile.
  SmallVector<std::pair<Frags::Kind, size_t>> shapes;
  SmallVector<Value> inits;
  for (Value v : op.getInitArgs()) {
    const Frags &f = frags[v];
    shapes.push_back({f.kind, f.regs.size()});
    llvm::append_range(inits, f.regs);
  }
  size_t stateRegs = inits.size();
  auto unflatten = [&](ValueRange flat, ValueRange tileValues) {
    size_t at = 0;
    for (auto [i, v] : llvm::enumerate(tileValues)) {
      auto [kind, count] = shapes[i];
      frags[v] = {kind, SmallVector<Value>(flat.slice(at, count))};
      at += count;
    }
  };
  auto yielded = [&]() { // after a body: the new state, O before its P·V
    SmallVector<Value> out;
    for (auto [i, v] :
         llvm::enumerate(op.getBody()->getTerminator()->getOperands()))
      llvm::append_range(out, i == kv.accArg
                                  ? frags[kv.rescale.getResult()].regs
                                  : frags[v].regs);
    return out;
  };

  // One iteration at `iv` with the state `state` (the P of the previous
  // tile after the tile loop's iter args, or none on the first).
  // A stream-K piece's loop counts tiles (t from 1) and derives the key
  // position from them: counting positions from its dynamic first key
  // takes the loop's counter and wgmma descriptors out of ptxas's uniform
  // datapath (654 SASS instructions per tile against 616).
  const bool countTiles = bool(pieceLo) && walk != Walk::Whole;
  auto body = [&](Value at, ValueRange state, bool first) -> LogicalResult {
    Value iv = countTiles ? tileRow(at) : at;
    map.map(op.getInductionVar(), iv);
    unflatten(state.take_front(stateRegs), op.getRegionIterArgs());
    SmallVector<Value> pPrev(state.drop_front(stateRegs));
    Value t = countTiles
                  ? at
                  : Value(arith::DivUIOp::create(
                        b, loc, arith::SubIOp::create(b, loc, iv, lb), step));
    Value oAcc;
    for (Operation &nested : op.getBody()->without_terminator()) {
      loc = nested.getLoc();
      if (&nested == kv.k || &nested == kv.v || &nested == kv.rescale)
        continue;
      if (&nested == kv.qk) {
        if (mbarriers) {
          // Q: the producer's full barrier, or its own commit group of
          // every thread's copies.
          // (Persistent: the block's qItems-th Q, parity qItems & 1.)
          if (first && producer)
            waitBarrier(
                qFullBarrier(),
                itemWalk ? asParity(qItems)
                         : LLVM::ConstantOp::create(b, loc, b.getI32Type(), 0));
          else if (first)
            waitForCopies(0);
          waitTile(/*isK=*/true, t);
          if (!first)
            waitTile(/*isK=*/false, arith::SubIOp::create(b, loc, t, idx(1)));
          fenceProxy();
          if (!producer) { // the tiles S - 1 ahead, by every thread
            copyTile(kv.k, kRing, add(t, S - 1));
            copyTile(kv.v, vRing, add(t, S - 2));
          }
        } else { // kv-sync=barrier: cp.async groups, no mbarriers
          waitForCopies(S - 2);
          copyTile(kv.k, kRing, add(t, S - 1));
          copyTile(kv.v, vRing, add(t, S - 2));
          commitGroup();
        }
        takeTurn();
        Value s =
            issueQK(qBuf, kRing, stageBytes(stageOf(t), kStageBytes), n, d);
        if (!first) {
          Value prev = arith::SubIOp::create(b, loc, t, idx(1));
          oAcc =
              issuePV(pPrev, vRing, stageBytes(stageOf(prev), vStageBytes),
                      keys, frags[op.getRegionIterArgs()[kv.accArg]].regs, d);
        }
        passTurn(/*last=*/false);
        waitWGMMA(first ? 0 : 1); // QKᵀ_j; P·V_{j-1} runs on
        if (mbarriers)
          release(/*isK=*/true, t);
        frags[kv.qk.getResult()] = {Frags::C, unpack(s, n / 2)};
        continue;
      }
      if (&nested == kv.pv) {
        // TMA schedule: the wait for P·V_{j-1} (and V_{j-1}'s release) goes
        // where O is first read, inside each arm of the rescale's vote
        // branch, not after the softmax in its basic block. ptxas schedules
        // a wgmma.wait_group near the top of its block, so in the softmax's
        // block it would run before the first exponential and the softmax
        // of tile j would not overlap P·V_{j-1}; in the arms it stays after
        // the softmax. Same SASS size and uniform datapath at D128/D256,
        // +7-8% at D128 (H200; bench/NOTES-hopper.md, "the P·V wait after
        // the softmax it overlaps", 2026-12-06). Without the branch
        // (D < 128) it is emitted before the multiplies. The cp.async
        // schedules keep the wait before the branch (not measured; D256
        // causal pingpong spills 8 B with it in the arms).
        auto awaitPV = [&] {
          waitWGMMA(0);
          if (mbarriers)
            release(/*isK=*/false, arith::SubIOp::create(b, loc, t, idx(1)));
        };
        if (!first) {
          if (!tma)
            awaitPV();
          frags[kv.rescale.getAcc()] = {Frags::C, unpack(oAcc, d / 2)};
        }
        loc = kv.rescale.getLoc();
        if (failed(emitRescale(kv.rescale,
                               first || !tma ? function_ref<void()>()
                                             : function_ref<void()>(awaitPV))))
          return failure();
        continue;
      }
      if (failed(emitOp(nested)))
        return failure();
    }
    return success();
  };

  Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lb, ub);
  // The loop's tiles, 0 without one (persistent: what advances the rings'
  // phases).
  auto tileCount = [&] {
    return arith::SelectOp::create(
        b, loc, any,
        arith::CeilDivUIOp::create(b, loc,
                                   arith::SubIOp::create(b, loc, ub, lb), step),
        idx(0));
  };
  // The producer's copies: Q, then every tile of the loop in order, K then
  // V: by TMA from the one elected thread, or each producer thread's share
  // by cp.async. Persistent: this is the elected thread's walk, and the
  // block's previous Q must have been read (Q's empty barrier) first.
  auto emitProducerCopies = [&] {
    Value who = any;
    if (tma && !itemWalk)
      who = arith::AndIOp::create(
          b, loc, any,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, copier,
                                idx(0)));
    gpu_emit::emitIfThen(b, loc, who, [&] {
      if (tma) {
        if (itemWalk) {
          Value reused = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                               qItems, idx(0));
          gpu_emit::emitIfThen(b, loc, reused, [&] {
            waitBarrier(qEmptyBarrier(), asParity(arith::SubIOp::create(
                                             b, loc, qItems, idx(1))));
          });
        }
        tmaTile(qLoad, qBuf, qRow, Value(), qFullBarrier(), tensorMaps[0]);
      } else {
        issueStage(qLoad, qBuf, qRow, copier, copiers);
        NVVM::CpAsyncMBarrierArriveOp::create(b, loc, qFullBarrier(),
                                              /*noinc=*/true);
      }
      Value tiles = arith::CeilDivUIOp::create(
          b, loc, arith::SubIOp::create(b, loc, ub, lb), step);
      scf::ForOp::create(
          b, loc, idx(0), tiles, idx(1), ValueRange{},
          [&](OpBuilder &fb, Location fl, Value t, ValueRange) {
            OpBuilder::InsertionGuard fg(b);
            b.setInsertionPoint(fb.getInsertionBlock(), fb.getInsertionPoint());
            for (bool isK : {true, false}) {
              tile::LoadOp load = isK ? kv.k : kv.v;
              Value ring = isK ? kRing : vRing;
              if (!tma) {
                copyTile(load, ring, t);
                continue;
              }
              Value stage = stageOf(t);
              emptyWait(isK, t);
              tmaTile(load, ring, tileRow(t),
                      stageBytes(stage, isK ? kStageBytes : vStageBytes),
                      barrierAt(isK ? kFullK : kFullV, stage),
                      tensorMaps[isK ? 1 : 2]);
            }
            scf::YieldOp::create(b, fl);
          });
      if (!tma) {      // nothing waits for the copies' groups: finish them
        commitGroup(); // before the thread exits
        NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
      }
    });
  };
  if (walk == Walk::Producer) { // persistent: the loads are all it has
    emitProducerCopies();
    itemTiles = tileCount();
    return success();
  }
  if (producer && !itemWalk) {
    // The block splits by warpgroup: the producer (the last one) copies Q
    // and every K/V tile of the loop in order, each into its stage once the
    // consumers released it; the consumers run the loop below and the rest
    // of the kernel (the walk goes on inside their branch). setmaxnreg
    // moves registers from the producer to the consumers.
    RegisterSplit regs = registerSplit(threads, tma);
    Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                             tid, idx(threads));
    roleSplit = scf::IfOp::create(b, loc, TypeRange{}, isProducer,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard pg(b);
      b.setInsertionPoint(roleSplit.thenBlock()->getTerminator());
      NVVM::SetMaxRegisterOp::create(b, loc, regs.producer,
                                     NVVM::SetMaxRegisterAction::decrease);
      copier = arith::SubIOp::create(b, loc, tid, idx(threads));
      emitProducerCopies();
    }
    b.setInsertionPoint(roleSplit.elseBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, loc, regs.consumer,
                                   NVVM::SetMaxRegisterAction::increase);
  }
  auto guard = scf::IfOp::create(b, loc, TypeRange(ValueRange(inits)), any,
                                 /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(guard.elseBlock());
    if (!producer)
      NVVM::CpAsyncWaitGroupOp::create(b, loc, 0); // Q's copy
    scf::YieldOp::create(b, loc, inits);

    b.setInsertionPointToStart(guard.thenBlock());
    // Warpgroup 0 takes the first turn (persistent: once per block).
    if (pingPong && !itemWalk) {
      Value first = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq,
          arith::DivUIOp::create(b, loc, tid, idx(128)), idx(0));
      gpu_emit::emitIfThen(b, loc, first, [&] {
        NVVM::BarrierArriveOp::create(b, loc, turnBarrier, turnThreads);
      });
    }
    // Prologue: tiles 0 .. S-2 of K and 0 .. S-3 of V, one group each
    // (the producer's loop instead, when there is one).
    for (int64_t i = 0; !producer && i + 1 < S; ++i) {
      copyTile(kv.k, kRing, idx(i));
      if (i >= 1)
        copyTile(kv.v, vRing, idx(i - 1));
      if (!mbarriers)
        commitGroup();
    }
    if (failed(body(countTiles ? idx(0) : lb, inits, /*first=*/true)))
      return failure();
    SmallVector<Value> state = yielded();
    llvm::append_range(state, frags[kv.pv.getLhs()].regs);
    auto loop =
        countTiles
            ? scf::ForOp::create(
                  b, loc, idx(1),
                  arith::CeilDivUIOp::create(
                      b, loc, arith::SubIOp::create(b, loc, ub, lb), step),
                  idx(1), state)
            : scf::ForOp::create(b, loc, add(lb, step), ub, step, state);
    {
      OpBuilder::InsertionGuard lg(b);
      b.setInsertionPointToStart(loop.getBody());
      if (failed(body(loop.getInductionVar(), loop.getRegionIterArgs(),
                      /*first=*/false)))
        return failure();
      SmallVector<Value> next = yielded();
      llvm::append_range(next, frags[kv.pv.getLhs()].regs);
      scf::YieldOp::create(b, loc, next);
    }
    // Epilogue: O += P_last · V_last.
    unflatten(ValueRange(loop.getResults()).take_front(stateRegs),
              op.getResults());
    SmallVector<Value> pLast(
        ValueRange(loop.getResults()).drop_front(stateRegs));
    Value tLast = arith::DivUIOp::create(
        b, loc,
        arith::SubIOp::create(b, loc, arith::SubIOp::create(b, loc, ub, lb),
                              idx(1)),
        step);
    // Persistent: every Q·Kᵀ of the item has been waited for, so Q may be
    // overwritten by the next item's (released here rather than at the
    // last tile's wait: a compare in the loop and its bound cost the
    // consumers registers, and the epilogue still covers the next Q's
    // load). Every thread arrives, not lane 0 of each warp: with the
    // lane-0 arrive (a branch or a predicate) ptxas keeps the next items'
    // KV loop out of the uniform datapath (its counter, stages and every
    // wgmma descriptor in vector registers, R2UR before each HGMMA: D64
    // 619 SASS instructions per tile against 561).
    if (itemWalk)
      NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(), qEmptyBarrier(),
                                     Value());
    if (mbarriers) {
      waitTile(/*isK=*/false, tLast);
      fenceProxy();
    } else {
      waitForCopies(0);
    }
    takeTurn();
    Value o = issuePV(pLast, vRing, stageBytes(stageOf(tLast), vStageBytes),
                      keys, frags[op.getResult(kv.accArg)].regs, d);
    // Persistent: turns run on across items, and the next item's producer
    // refills this V stage.
    passTurn(/*last=*/!itemWalk);
    waitWGMMA(0);
    if (itemWalk)
      release(/*isK=*/false, tLast);
    frags[op.getResult(kv.accArg)] = {Frags::C, unpack(o, d / 2)};
    if (mbarriers && !producer) { // the copies past the end (zero bytes)
      commitGroup(); // are not waited for by anyone: finish them before the
      NVVM::CpAsyncWaitGroupOp::create(b, loc, 0); // block exits
    }
    SmallVector<Value> results;
    for (Value r : op.getResults())
      llvm::append_range(results, frags[r].regs);
    scf::YieldOp::create(b, loc, results);
  }
  unflatten(guard.getResults(), op.getResults());
  if (itemWalk)
    itemTiles = tileCount();
  return success();
}

// The stream-K fixup (emitPersistent). The workspace holds one u32 flag per
// (block, consumer warpgroup), padded to 256 bytes, then per (block,
// warpgroup) a slot of D/8 + 1 chunks of 128 x 16 bytes: chunk q holds each
// thread's n8 tile q of O (unnormalised, f32), the last one its rows' m and
// l, thread t at 16 t (abi::streamKWorkspaceLayout, attnc/abi). A
// block has at most one piece that does not start its item (the first of
// its tail), so the block's slot is that piece's. The piece's warpgroup
// writes it, meets at its barrier, and its first thread publishes the flag
// with a release store; in the block with the item's first piece every
// thread polls each later slot's flag (acquire loads) until its warp has
// seen it set, the warpgroup meets, its first thread clears the flag for
// the next launch, and every thread folds the slot into its registers with
// the LSE weights (slots of blocks c + 1 .. the block of the item's last
// unit). Only a later block's first piece is ever waited for, so blocks
// cannot wait in a cycle (and a later block not yet resident gets an SM
// when an earlier one exits).
Value WGMMAEmitter::emitStreamKFixup(tile::FinalizeOp fin) {
  const int64_t warpgroups = consumerThreads() / 128;
  Frags accF = frags[fin.getAcc()], mF = frags[fin.getMax()],
        lF = frags[fin.getSum()];
  const int64_t n8 = int64_t(accF.regs.size()), chunks = n8 + 1;
  Type i64T = b.getI64Type(), f32 = b.getF32Type();
  auto v4 = VectorType::get({4}, f32);
  auto c2x2 = cast<VectorType>(accF.regs.front().getType());
  auto globalPtrT = LLVM::LLVMPointerType::get(b.getContext(), 1);
  auto toI64 = [&](Value v) {
    return arith::IndexCastUIOp::create(b, loc, i64T, v);
  };
  auto add64 = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y);
  };
  auto mul64 = [&](Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, i64(y));
  };
  Value tidO = gpu_emit::opaqueIndex(b, loc, tid);
  Value wgIdx = arith::DivUIOp::create(b, loc, tidO, idx(128));
  Value wg = toI64(wgIdx);
  Value inGroup = arith::RemUIOp::create(b, loc, tidO, idx(128));
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, inGroup, idx(0));
  Value grid64 = toI64(gpu::GridDimOp::create(b, loc, gpu::Dimension::x));
  Value base = LLVM::PtrToIntOp::create(b, loc, i64T, workspace);
  Value flagBytes = arith::AndIOp::create(
      b, loc,
      add64(mul64(grid64, abi::kStreamKFlagBytes * warpgroups),
            i64(abi::kWorkspaceAlign - 1)),
      i64(-abi::kWorkspaceAlign));
  auto slotOf = [&](Value block64) {
    return add64(mul64(block64, warpgroups), wg);
  };
  auto flagAt = [&](Value block64) {
    return add64(base, mul64(slotOf(block64), abi::kStreamKFlagBytes));
  };
  Value threadOffset = mul64(toI64(inGroup), abi::kStreamKThreadBytes);
  auto chunkAt = [&](Value block64, int64_t q) -> Value {
    Value at =
        add64(add64(base, flagBytes),
              add64(mul64(slotOf(block64), chunks * abi::kStreamKChunkBytes),
                    add64(i64(q * abi::kStreamKChunkBytes), threadOffset)));
    return LLVM::IntToPtrOp::create(b, loc, globalPtrT, at);
  };
  Value epilogueBarrier = arith::IndexCastOp::create(
      b, loc, b.getI32Type(), add(wgIdx, 1 + warpgroups));
  Value wgThreads = LLVM::ConstantOp::create(b, loc, b.getI32Type(), 128);
  auto inlineAsm = [&](ValueRange operands, StringRef text,
                       StringRef constraints) {
    gpu_emit::inlinePtx(b, loc, TypeRange{}, operands, text, constraints);
  };
  // Non-aligned (see emitTmaStore), with a memory clobber.
  auto syncWarpgroup = [&] {
    inlineAsm({epilogueBarrier, wgThreads}, "barrier.sync $0, $1;",
              "r,r,~{memory}");
  };
  Value block64 = arith::ExtUIOp::create(b, loc, i64T, blockId32);
  Value starts =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, pieceLo, idx(0));
  Value ends = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, pieceHi,
                                     itemKVTiles);
  Value notStarts = arith::XOrIOp::create(
      b, loc, starts, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));

  // A piece after the item's first: its partial into the block's slot.
  gpu_emit::emitIfThen(b, loc, notStarts, [&] {
    for (int64_t q = 0; q < n8; ++q)
      LLVM::StoreOp::create(
          b, loc,
          vector::ShuffleOp::create(b, loc, row2(accF.regs[q], 0),
                                    row2(accF.regs[q], 1),
                                    ArrayRef<int64_t>{0, 1, 2, 3}),
          chunkAt(block64, q), /*alignment=*/16);
    Value stats = vector::FromElementsOp::create(
        b, loc, v4, ValueRange{mF.regs[0], mF.regs[1], lF.regs[0], lF.regs[1]});
    LLVM::StoreOp::create(b, loc, stats, chunkAt(block64, n8),
                          /*alignment=*/16);
    syncWarpgroup();
    gpu_emit::emitIfThen(b, loc, first, [&] {
      inlineAsm({flagAt(block64),
                 arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1)},
                "st.release.gpu.global.u32 [$0], $1;", "l,r,~{memory}");
    });
  });

  // The item's first piece, when it does not end it: merge the others.
  SmallVector<Value> state;
  llvm::append_range(state, accF.regs);
  state.append({mF.regs[0], mF.regs[1], lF.regs[0], lF.regs[1]});
  Value merges = arith::AndIOp::create(
      b, loc, starts,
      arith::XOrIOp::create(
          b, loc, ends,
          arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
  auto ifOp = scf::IfOp::create(b, loc, TypeRange(ValueRange(state)), merges,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, state);
    b.setInsertionPointToStart(ifOp.thenBlock());
    // The block of the item's last unit u: blocks c < q_rem hold q + 1
    // units, the others q.
    Type i32 = b.getI32Type();
    auto c32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, loc, i32, v);
    };
    Value q1 = arith::AddIOp::create(b, loc, skUnits(), c32(1));
    Value u = arith::SubIOp::create(
        b, loc,
        arith::AddIOp::create(
            b, loc, itemFirstUnit,
            arith::IndexCastUIOp::create(b, loc, i32, itemKVTiles)),
        c32(1));
    Value big = arith::MulIOp::create(b, loc, skUnitsRem(), q1);
    Value lastBlock32 = arith::SelectOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, u, big),
        arith::DivUIOp::create(b, loc, u, q1),
        arith::AddIOp::create(
            b, loc, skUnitsRem(),
            arith::DivUIOp::create(
                b, loc, arith::SubIOp::create(b, loc, u, big),
                arith::MaxUIOp::create(b, loc, skUnits(), c32(1)))));
    Value lastBlock = arith::ExtUIOp::create(b, loc, i64T, lastBlock32);
    auto loop = scf::ForOp::create(b, loc, add64(block64, i64(1)),
                                   add64(lastBlock, i64(1)), i64(1), state);
    {
      OpBuilder::InsertionGuard lg(b);
      b.setInsertionPointToStart(loop.getBody());
      Value other = loop.getInductionVar();
      ValueRange cur = loop.getRegionIterArgs();
      // Every thread polls the flag (acquire) until the whole warp has
      // seen it set: a warp-uniform loop by the vote. (One thread's spin,
      // a divergent loop, takes the KV loop out of ptxas's uniform
      // datapath: 698 SASS instructions per tile against 617.)
      Value flag =
          LLVM::IntToPtrOp::create(b, loc, globalPtrT, Value(flagAt(other)));
      auto spin = scf::WhileOp::create(b, loc, TypeRange{}, ValueRange{});
      {
        OpBuilder::InsertionGuard sg(b);
        Block *before = b.createBlock(&spin.getBefore());
        auto ld = gpu_emit::inlinePtx(b, loc, b.getI32Type(), ValueRange{flag},
                                      "ld.acquire.gpu.global.u32 $0, [$1];",
                                      "=r,l,~{memory}");
        Value set = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ne, ld.getResult(0),
            arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
        Value all = NVVM::VoteSyncOp::create(
            b, loc, b.getI1Type(),
            LLVM::ConstantOp::create(b, loc, b.getI32Type(), -1), set,
            NVVM::VoteSyncKindAttr::get(b.getContext(),
                                        NVVM::VoteSyncKind::all));
        Value again = arith::XOrIOp::create(
            b, loc, all,
            arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
        scf::ConditionOp::create(b, loc, again, ValueRange{});
        b.createBlock(&spin.getAfter());
        scf::YieldOp::create(b, loc);
      }
      // Every warp has seen it: the first thread clears it for the next
      // launch.
      syncWarpgroup();
      gpu_emit::emitIfThen(b, loc, first, [&] {
        inlineAsm({flagAt(other),
                   arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0)},
                  "st.relaxed.gpu.global.u32 [$0], $1;", "l,r,~{memory}");
      });
      auto load = [&](int64_t q) -> Value {
        return LLVM::LoadOp::create(b, loc, v4, chunkAt(other, q),
                                    /*alignment=*/16, /*isVolatile=*/true);
      };
      Value stats = load(n8);
      auto lane4 = [&](Value v, int64_t i) {
        return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i});
      };
      Value negInf = f32Const(b, loc, -std::numeric_limits<float>::infinity());
      Value zero = f32Const(b, loc, 0.f);
      SmallVector<Value> next(cur.begin(), cur.end());
      Value wMine[2], wOther[2];
      for (int64_t r = 0; r < 2; ++r) {
        Value mMine = cur[n8 + r], mOther = lane4(stats, r);
        Value mNew = arith::MaximumFOp::create(b, loc, mMine, mOther);
        Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                           mNew, negInf);
        auto weight = [&](Value mv) -> Value {
          return arith::SelectOp::create(
              b, loc, none, zero,
              gpu_emit::exp2(b, loc, arith::SubFOp::create(b, loc, mv, mNew)));
        };
        wMine[r] = weight(mMine);
        wOther[r] = weight(mOther);
        next[n8 + r] = mNew;
        next[n8 + 2 + r] = arith::AddFOp::create(
            b, loc, arith::MulFOp::create(b, loc, cur[n8 + 2 + r], wMine[r]),
            arith::MulFOp::create(b, loc, lane4(stats, 2 + r), wOther[r]));
      }
      auto pairT = VectorType::get({2}, f32);
      for (int64_t q = 0; q < n8; ++q) {
        Value theirs = load(q); // row 0: c0, c1; row 1: c0, c1
        SmallVector<Value> rows;
        for (int64_t r = 0; r < 2; ++r) {
          Value mine = arith::MulFOp::create(
              b, loc, row2(cur[q], r),
              vector::BroadcastOp::create(b, loc, pairT, wMine[r]));
          Value theirRow = vector::ShuffleOp::create(
              b, loc, theirs, theirs, ArrayRef<int64_t>{2 * r, 2 * r + 1});
          Value other = arith::MulFOp::create(
              b, loc, theirRow,
              vector::BroadcastOp::create(b, loc, pairT, wOther[r]));
          rows.push_back(arith::AddFOp::create(b, loc, mine, other));
        }
        next[q] = gpu_emit::fromRows(b, loc, c2x2, rows);
      }
      scf::YieldOp::create(b, loc, next);
    }
    scf::YieldOp::create(b, loc, loop.getResults());
  }
  ValueRange merged = ifOp.getResults();
  frags[fin.getAcc()] = {Frags::C, SmallVector<Value>(merged.take_front(n8))};
  frags[fin.getMax()] = {mF.kind, {merged[n8], merged[n8 + 1]}};
  frags[fin.getSum()] = {lF.kind, {merged[n8 + 2], merged[n8 + 3]}};
  return starts;
}

Value WGMMAEmitter::advanceRingPhases(Value tiles) {
  // Stage s held tiles s, s + S, ... of the item: ceil((tiles - s) / S) of
  // them, none when tiles <= s.
  const int64_t S = kvStages;
  Value phases = ringPhases;
  for (int64_t s = 0; s < S; ++s) {
    Value uses = arith::DivUIOp::create(b, loc, add(tiles, S - 1 - s), idx(S));
    Value flip = arith::ShLIOp::create(
        b, loc, arith::AndIOp::create(b, loc, uses, idx(1)), idx(s));
    Value used = arith::SelectOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, tiles, idx(s)),
        idx(int64_t(1) << (kStageUsedBit + s)), idx(0));
    phases = arith::OrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, phases, flip), used);
  }
  return phases;
}

// Persistent blocks: work item w = (query tile, head, batch) with the
// query tile fastest (as a grid of one block per tile launches them, so the
// blocks at work together read few heads' K/V: L2 keeps them); block c
// takes the pairs of items below (long and short together). The walk from the
// first program id to the return is emitted once per role inside a loop over
// the items, each role carrying the rings' per-stage phases and the Q loads
// so far (both compute the same tile counts, so their parities agree).
// tests/unit/producer_protocol_sim.py models the protocol (persistent
// mode).
LogicalResult WGMMAEmitter::emitPersistent() {
  startWalk();
  Block &ops = kernel.getBody().front();
  auto itemStart = llvm::find_if(
      ops, [](Operation &op) { return isa<tile::ProgramIdOp>(op); });
  if (itemStart == ops.end())
    return kernel.emitError("persistent blocks need a program id");
  // Views and tile constants: once per block.
  for (Operation &op : llvm::make_range(ops.begin(), itemStart))
    if (failed(emitOp(op)))
      return failure();
  int64_t heads = ShapedType::kDynamic;
  kernel.walk([&](tile::LoadOp load) {
    if (gpu_emit::isRowOwnedLoad(load))
      heads = cast<MemRefType>(load.getSource().getType()).getDimSize(1);
  });
  Value seqQ = paramArg("seq_q"), batch = paramArg("batch");
  if (!seqQ || !batch || ShapedType::isDynamic(heads))
    return kernel.emitError("persistent blocks need the seq_q and batch "
                            "parameters and a static head count");
  // The item loop counts in 32 bits (the runtime bounds the items below
  // 2^31): its values stay live across every KV loop, beside the
  // accumulators.
  Type i32 = b.getI32Type();
  auto c32 = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  auto to32 = [&](Value v) {
    return arith::IndexCastUIOp::create(b, loc, i32, v);
  };
  auto toIdx = [&](Value v) {
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
  };
  auto trunc32 = [&](Value v) {
    return arith::TruncIOp::create(b, loc, i32, v);
  };
  initBarriers(/*fullArrivals=*/1); // TMA: one expect_tx per phase
  if (streamK) {
    streamKLoop = itemInvariantKVLoop(kernel, launch);
    if (!streamKLoop)
      return kernel.emitError("the stream-K tail needs a KV loop whose "
                              "bounds are the same for every work item");
  }

  // Block c takes the item pairs (2p, 2p + 1) for p = c, c + G, ... (G =
  // gridDim.x), and inside a head item 2j is program 0 id j, item 2j + 1
  // id Q - 1 - j (Q query tiles): causal, a pair is one long and one short
  // tile (about Q + 1 KV tiles together), so equal pair counts balance the
  // blocks (a plain stride by G puts like lengths together: 1.5x the mean
  // at S16k, bench/NOTES-hopper.md). Its item count: 2 per pair, less the
  // last pair's second item when it is past the end.
  auto add32 = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y);
  };
  auto sub32 = [&](Value x, Value y) {
    return arith::SubIOp::create(b, loc, x, y);
  };
  auto mul32 = [&](Value x, Value y) {
    return arith::MulIOp::create(b, loc, x, y);
  };
  auto cmp32 = [&](arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  };
  // One role's loop over the block's items. Each role computes the item
  // count and walk itself, after the role split: values live across
  // setmaxnreg are spilled (the producer keeps 24 registers).
  auto itemLoop = [&](Walk role) -> LogicalResult {
    walk = role;
    Value qTiles = arith::CeilDivUIOp::create(b, loc, trunc32(seqQ),
                                              c32(launch.getBlockM()));
    Value items = arith::MulIOp::create(
        b, loc, arith::MulIOp::create(b, loc, qTiles, c32(heads)),
        trunc32(batch));
    Value block = to32(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x));
    Value grid = to32(gpu::GridDimOp::create(b, loc, gpu::Dimension::x));
    Value myItems, whole, tailStart, tailEnd, firstTailItem;
    if (!streamK) {
      Value pairs = arith::CeilDivUIOp::create(b, loc, items, c32(2));
      Value mine = arith::SelectOp::create(
          b, loc, cmp32(arith::CmpIPredicate::ult, block, pairs),
          arith::CeilDivUIOp::create(b, loc, sub32(pairs, block), grid),
          c32(0));
      Value lastSecond =
          add32(mul32(add32(block, mul32(grid, sub32(mine, c32(1)))), c32(2)),
                c32(1));
      myItems = arith::SelectOp::create(
          b, loc, cmp32(arith::CmpIPredicate::eq, mine, c32(0)), c32(0),
          sub32(mul32(mine, c32(2)),
                arith::ExtUIOp::create(
                    b, loc, i32,
                    cmp32(arith::CmpIPredicate::uge, lastSecond, items))));
    } else {
      // Every item has the same KV tiles (T): block c takes the whole items
      // c, c + G, ... of the full rounds, and the tail's items are cut into
      // pieces along the keys: as units (item, tile) in order, block c
      // takes units [s, e), s = c·q + min(c, q_rem), so that every block
      // ends within a tile of the others instead of some running one item
      // more (bench/NOTES-hopper.md, "the stream-K tail", 2026-12-03). The
      // runtime computes the schedule (StreamKSchedule; without a workspace
      // it has no tail and block c takes one whole item more when c <
      // round_rem): every value below comes from parameters and the block
      // index by 32-bit multiplies, adds and selects, so that ptxas keeps
      // the KV loop's bounds, counter and wgmma descriptors in the uniform
      // datapath (divisions, 64-bit ones especially, take them out: 640
      // SASS instructions per tile against 617).
      Value rem1 = arith::ExtUIOp::create(
          b, loc, i32, cmp32(arith::CmpIPredicate::ult, block, skRoundRem()));
      whole = add32(skRounds(), rem1);
      Value extra = arith::ExtUIOp::create(
          b, loc, i32, cmp32(arith::CmpIPredicate::ult, block, skUnitsRem()));
      tailStart = add32(mul32(block, skUnits()),
                        arith::MinUIOp::create(b, loc, block, skUnitsRem()));
      tailEnd = add32(tailStart, add32(skUnits(), extra));
      Value first = divideByTiles(tailStart);
      Value pieces = arith::SelectOp::create(
          b, loc, cmp32(arith::CmpIPredicate::ult, tailStart, tailEnd),
          add32(sub32(divideByTiles(sub32(tailEnd, c32(1))), first), c32(1)),
          c32(0));
      firstTailItem = first;
      myItems = add32(whole, pieces);
      blockId32 = block;
    }
    auto loop = scf::ForOp::create(b, loc, c32(0), myItems, c32(1),
                                   ValueRange{c32(0), c32(0)});
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value k = loop.getInductionVar();
    ringPhases = toIdx(loop.getRegionIterArgs()[0]);
    qItems = toIdx(loop.getRegionIterArgs()[1]);
    Value w;
    if (!streamK) {
      Value pair =
          add32(block, mul32(grid, arith::ShRUIOp::create(b, loc, k, c32(1))));
      w = add32(mul32(pair, c32(2)), arith::AndIOp::create(b, loc, k, c32(1)));
    } else {
      // Piece k: whole item c + G·k, or the tail's item j = s / T + p (p =
      // k - whole) from tile max(s - j·T, 0) to min(e - j·T, T).
      Value isWhole = cmp32(arith::CmpIPredicate::ult, k, whole);
      Value j = add32(firstTailItem, sub32(k, whole));
      w = arith::SelectOp::create(b, loc, isWhole, add32(block, mul32(grid, k)),
                                  add32(mul32(skRounds(), grid), j));
      Value tiles = skTiles();
      Value jFirst = mul32(j, tiles);
      Value lo =
          sub32(arith::MaxUIOp::create(b, loc, tailStart, jFirst), jFirst);
      Value hi =
          sub32(arith::MinUIOp::create(b, loc, tailEnd, add32(jFirst, tiles)),
                jFirst);
      pieceLo = toIdx(arith::SelectOp::create(b, loc, isWhole, c32(0), lo));
      pieceHi = toIdx(arith::SelectOp::create(b, loc, isWhole, tiles, hi));
      itemKVTiles = toIdx(tiles);
      itemFirstUnit = jFirst;
    }
    Value r = arith::RemUIOp::create(b, loc, w, qTiles);
    Value rest = arith::DivUIOp::create(b, loc, w, qTiles);
    Value j = arith::ShRUIOp::create(b, loc, r, c32(1));
    Value odd = cmp32(arith::CmpIPredicate::ne,
                      arith::AndIOp::create(b, loc, r, c32(1)), c32(0));
    Value tileId = arith::SelectOp::create(b, loc, odd,
                                           sub32(sub32(qTiles, c32(1)), j), j);
    Value pid[3] = {toIdx(tileId),
                    toIdx(arith::RemUIOp::create(b, loc, rest, c32(heads))),
                    toIdx(arith::DivUIOp::create(b, loc, rest, c32(heads)))};
    nextStage = 0;
    itemTiles = {};
    scf::IfOp epilogueIf; // stream-K: the epilogue of pieces that start
    for (Operation &op : llvm::make_range(itemStart, ops.end())) {
      loc = op.getLoc();
      if (auto p = dyn_cast<tile::ProgramIdOp>(op)) {
        map.map(p.getResult(), pid[p.getDim()]);
        continue;
      }
      if (isa<func::ReturnOp>(op))
        continue;
      // The producer keeps the scalar ops, Q's load and the KV loop.
      bool tileOp =
          isa<tile::StoreOp>(op) ||
          llvm::any_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>);
      if (role == Walk::Producer && tileOp &&
          !isa<scf::ForOp, tile::LoadOp>(op))
        continue;
      if (streamK && role == Walk::Consumer && isa<tile::FinalizeOp>(op)) {
        Value starts = emitStreamKFixup(cast<tile::FinalizeOp>(op));
        epilogueIf = scf::IfOp::create(b, loc, TypeRange{}, starts,
                                       /*withElseRegion=*/false);
        b.setInsertionPoint(epilogueIf.thenBlock()->getTerminator());
      }
      if (failed(emitOp(op)))
        return failure();
    }
    if (epilogueIf)
      b.setInsertionPointAfter(epilogueIf);
    if (!itemTiles)
      return kernel.emitError("persistent blocks need the attention KV loop");
    Value hadTiles = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                           itemTiles, idx(0));
    scf::YieldOp::create(
        b, loc,
        ValueRange{to32(advanceRingPhases(itemTiles)),
                   to32(add(qItems, arith::SelectOp::create(b, loc, hadTiles,
                                                            idx(1), idx(0))))});
    return success();
  };

  const int64_t threads = consumerThreads();
  RegisterSplit regs = registerSplit(threads, /*tma=*/true);
  Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                           tid, idx(threads));
  roleSplit = scf::IfOp::create(b, loc, TypeRange{}, isProducer,
                                /*withElseRegion=*/true);
  LogicalResult result = success();
  {
    // The producer: its one elected thread issues every item's copies.
    OpBuilder::InsertionGuard pg(b);
    b.setInsertionPoint(roleSplit.thenBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, loc, regs.producer,
                                   NVVM::SetMaxRegisterAction::decrease);
    Value elected = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                          idx(threads));
    gpu_emit::emitIfThen(b, loc, elected,
                         [&] { result = itemLoop(Walk::Producer); });
  }
  if (failed(result))
    return failure();
  {
    // The consumers: warpgroup 0 takes the first turn once, turns run on
    // across the items, and warpgroup 0 takes the last warpgroup's final
    // hand-off after its last item, so every named barrier ends balanced.
    OpBuilder::InsertionGuard cg(b);
    b.setInsertionPoint(roleSplit.elseBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, loc, regs.consumer,
                                   NVVM::SetMaxRegisterAction::increase);
    Value turnThreads =
        LLVM::ConstantOp::create(b, loc, b.getI32Type(), 2 * 128);
    Value group0 = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::DivUIOp::create(b, loc, tid, idx(128)), idx(0));
    gpu_emit::emitIfThen(b, loc, group0, [&] {
      NVVM::BarrierArriveOp::create(b, loc, turnBarrierOf(), turnThreads);
    });
    if (failed(itemLoop(Walk::Consumer)))
      return failure();
    // After the loop from a fresh (opaque) tid: the predicate above, kept
    // live across the item loop, would be spilled (epilogue=tma, D128: 4 B).
    Value tidAfter = gpu_emit::opaqueIndex(b, loc, tid);
    group0 = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::DivUIOp::create(b, loc, tidAfter, idx(128)), idx(0));
    // epilogue=tma: the block's last O store has read the staging buffer
    // before the block exits (its first thread per warpgroup committed it).
    if (oTensorMap) {
      Value firstOfGroup = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq,
          arith::RemUIOp::create(b, loc, tidAfter, idx(128)), idx(0));
      gpu_emit::emitIfThen(b, loc, firstOfGroup, [&] {
        NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, b.getUnitAttr());
      });
    }
    gpu_emit::emitIfThen(b, loc, group0, [&] {
      NVVM::BarrierOp::create(b, loc, TypeRange{}, turnBarrierOf(), turnThreads,
                              NVVM::BarrierReductionAttr(), Value());
    });
  }
  b.setInsertionPointAfter(roleSplit);
  gpu::ReturnOp::create(b, loc);
  return success();
}

class MapTileToWGMMAPass
    : public attnc::impl::MapTileToWGMMABase<MapTileToWGMMAPass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

/// The schedule `kernel` carries (#tgpu.wgmma_schedule), or null.
static tgpu::WgmmaScheduleAttr scheduleOf(func::FuncOp kernel) {
  return kernel->getAttrOfType<tgpu::WgmmaScheduleAttr>(
      tgpu::kScheduleAttrName);
}

/// Whether the tiles of `kernel` carry the layouts this mapping lowers
/// (attnc-assign-layouts): 128-byte swizzled shared tiles, accumulators of
/// block_m / 64 warpgroups, their row statistics and P as their A operand.
static LogicalResult checkLayouts(func::FuncOp kernel,
                                  tile::LaunchAttr launch) {
  wgmma::TileLayouts l(kernel.getContext(), launch.getBlockM());
  Attribute expected[] = {l.acc, l.stats, l.operand, l.shared};
  WalkResult walk = kernel.walk([&](Operation *op) {
    for (Value v : op->getResults()) {
      if (!isa<RankedTensorType>(v.getType()))
        continue;
      Attribute layout = tgpu::layoutOf(v);
      if (!layout) {
        op->emitError("the wgmma mapping needs the layout of every tile "
                      "(run attnc-assign-layouts first)");
        return WalkResult::interrupt();
      }
      if (!llvm::is_contained(expected, layout)) {
        op->emitError() << "the wgmma mapping has no lowering for layout "
                        << layout << " in a kernel of block_m "
                        << launch.getBlockM();
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

void MapTileToWGMMAPass::runOnOperation() {
  // Every kernel needs its schedule; the callbacks below read it.
  for (auto kernel : getOperation().getOps<func::FuncOp>())
    if (kernel->hasAttr("tile.launch") && !scheduleOf(kernel)) {
      kernel.emitError("the wgmma mapping needs the kernel's schedule "
                       "(tgpu.schedule = #tgpu.wgmma_schedule<...>; run "
                       "attnc-assign-layouts first)");
      return signalPassFailure();
    }
  // epilogue=tma with persistent blocks: O's staging buffer, at the start
  // of the scratch bytes (1 KiB aligned: they follow the tiles).
  auto oStaging = [&](func::FuncOp kernel, tile::LaunchAttr launch) {
    tgpu::WgmmaScheduleAttr sched = scheduleOf(kernel);
    int64_t headDim = 0;
    kernel.walk([&](tile::LoadOp load) {
      if (gpu_emit::isRowOwnedLoad(load))
        headDim = load.getResult().getType().getDimSize(1);
    });
    return sched.getEpilogue() == tgpu::Epilogue::tma &&
                   sched.getGrid() == tgpu::Grid::persistent
               ? wgmma::oStagingBytes(headDim, launch.getBlockM())
               : int64_t(0);
  };
  // Q, K and V all in shared memory (Q first), unpadded: the 128-byte
  // swizzle spreads the rows over the banks instead. The frame aligns every
  // buffer to 1024 bytes, the swizzle's period.
  if (failed(gpu_emit::mapKernelsToGPU(
          getOperation(), /*rowPad=*/0, /*stageRowOwned=*/true,
          // One warpgroup per 64 query rows (+ the producer's).
          [&](func::FuncOp kernel, tile::LaunchAttr launch) {
            bool producer = scheduleOf(kernel).hasProducer();
            return 2 * launch.getBlockM() + (producer ? kProducerThreads : 0);
          },
          [&](func::FuncOp kernel, gpu::GPUFuncOp gpuFunc,
              tile::LaunchAttr launch,
              ArrayRef<Value> buffers) -> LogicalResult {
            tgpu::WgmmaScheduleAttr sched = scheduleOf(kernel);
            const KVSync sync = sched.getKvSync();
            const int64_t kvStages = sched.getKvStages();
            const bool tmaEpilogue = sched.getEpilogue() == tgpu::Epilogue::tma;
            const bool mbarriers = sync != KVSync::barrier;
            if (failed(checkLayouts(kernel, launch)))
              return failure();
            std::string why =
                wgmma::unsupportedReason(kernel, launch, kvStages);
            if (!why.empty())
              return kernel.emitError() << "the wgmma mapping " << why;
            if (int64_t staging = oStaging(kernel, launch)) {
              int64_t headDim = staging / (2 * launch.getBlockM());
              int64_t tiles = wgmma::smemBytes(headDim, launch.getBlockM(),
                                               launch.getBlockN(), kvStages);
              if (tiles + staging > wgmma::kSmemLimit)
                return kernel.emitError()
                       << "epilogue tma with persistent blocks needs O's "
                          "staging buffer ("
                       << staging << " bytes) beside the Q tile and K/V rings ("
                       << tiles
                       << " bytes), more than the 227 KiB of shared "
                          "memory a block can have";
            }
            if (sched.takesTurns() && launch.getBlockM() < 128)
              return kernel.emitError()
                     << "kv-sync " << tgpu::stringifyKVSync(sync)
                     << " needs two consumer warpgroups or more (block_m >= "
                        "128), not block_m "
                     << launch.getBlockM();
            // A kernel parameter after the others, named for the runtime
            // (tile.param); null when it cannot be added.
            OpBuilder ab(gpuFunc);
            auto ptrT = LLVM::LLVMPointerType::get(gpuFunc.getContext());
            auto appendParam = [&](const char *name, Type type) -> Value {
              unsigned at = gpuFunc.getNumArguments();
              if (failed(gpuFunc.insertArgument(
                      at, type,
                      ab.getDictionaryAttr(ab.getNamedAttr(
                          "tile.param", ab.getStringAttr(name))),
                      gpuFunc.getLoc())))
                return Value();
              return gpuFunc.getArgument(at);
            };
            // kv-sync=tma: the Q, K and V tensor maps follow the launch
            // ABI's parameters (q_tmap, k_tmap, v_tmap; built by the
            // runtime, passed by value: attnc-mark-tensor-map-params).
            SmallVector<Value> tensorMaps;
            if (sync == KVSync::tma) {
              SmallVector<int64_t> indices;
              SmallVector<const char *, 4> names(
                  abi::kAttentionTensorMapParams.begin(),
                  abi::kAttentionTensorMapParams.end());
              if (tmaEpilogue) // O's, after them
                names.push_back(abi::kAttentionOutputTensorMapParam);
              for (const char *name : names) {
                indices.push_back(gpuFunc.getNumArguments());
                Value map = appendParam(name, ptrT);
                if (!map)
                  return failure();
                tensorMaps.push_back(map);
              }
              gpuFunc->setAttr("attnc.tensor_map_args",
                               ab.getDenseI64ArrayAttr(indices));
            }
            // setmaxnreg moves registers only in a kernel whose count is
            // capped at entry: one block per SM, all its threads.
            if (sched.hasProducer())
              gpuFunc->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                               OpBuilder(gpuFunc).getI32IntegerAttr(1));
            Value barriers = mbarriers ? buffers.back() : Value();
            Value oTensorMap;
            if (tmaEpilogue)
              oTensorMap = tensorMaps.pop_back_val();
            // Persistent blocks over items of equal KV length: the
            // stream-K schedule (i32, computed by the runtime) and the
            // workspace, the last parameters.
            SmallVector<Value> streamKArgs;
            // Two consumer warpgroups only: three (block_m 192) have 160
            // registers each, and the tail's values spill (16 B, fp16
            // D128 192x64).
            if (sched.getStreamK() && launch.getBlockM() == 128 &&
                itemInvariantKVLoop(kernel, launch)) {
              for (const char *name : abi::kAttentionStreamKParams)
                streamKArgs.push_back(appendParam(name, ab.getI32Type()));
              streamKArgs.push_back(
                  appendParam(abi::kAttentionWorkspaceParam, ptrT));
              if (llvm::is_contained(streamKArgs, Value()))
                return failure();
              gpu_emit::recordStreamK(getOperation(), kernel.getName());
            }
            return WGMMAEmitter(kernel, gpuFunc, launch,
                                mbarriers ? buffers.drop_back() : buffers,
                                sched, barriers, tensorMaps, oTensorMap,
                                oStaging(kernel, launch), streamKArgs)
                .emit();
          },
          // K and V of the KV loop: rings of kv_stages tiles.
          [&](tile::LoadOp load) -> int64_t {
            auto loop = load->getParentOfType<scf::ForOp>();
            auto kernel = load->getParentOfType<func::FuncOp>();
            return loop && llvm::is_contained(gpu_emit::prefetchableLoads(loop),
                                              load)
                       ? scheduleOf(kernel).getKvStages()
                       : 1;
          },
          // O's staging buffer (persistent epilogue=tma), then the mbarrier
          // schedules' 4 x kv_stages objects of 8 bytes (+ Q's full barrier
          // with a producer, and its empty one when persistent).
          [&](func::FuncOp kernel, tile::LaunchAttr launch) -> int64_t {
            tgpu::WgmmaScheduleAttr sched = scheduleOf(kernel);
            if (sched.getKvSync() == KVSync::barrier)
              return oStaging(kernel, launch);
            return oStaging(kernel, launch) +
                   (4 * sched.getKvStages() + (sched.hasProducer() ? 1 : 0) +
                    (sched.getGrid() == tgpu::Grid::persistent ? 1 : 0)) *
                       8;
          })))
    signalPassFailure();
}

} // namespace
