//===- WGMMAEmitter.h - the sm_90a wgmma mapping (private) ----------------===//
//
// The Hopper mapping: one consumer warpgroup (128 threads) per 64 query
// rows; S = Q·Kᵀ and O += P·V as wgmma.mma_async m64nNk16 with f32
// accumulators.
//
// Shared memory. Q, K and V tiles are staged (cp.async or TMA) into the
// 128-byte swizzled, K-major layout wgmma reads through matrix descriptors
// (#tgpu.shared<swizzle = 128>): a tile of R rows x D columns is D/64 column
// blocks of R rows x 128 bytes; in a block, row r's 16-byte chunk c sits at
// chunk c ^ (r % 8) (the hardware applies the XOR to address bits [4,7) from
// bits [7,10), so each buffer is 1024-byte aligned). Descriptors:
//   Q (A, K-major) and K (B, K-major): start = block + 32·(k16 step % 4)
//     bytes, SBO = 1024 (8-row groups), LBO unused (1).
//   V (B of P·V, [keys, D] is N-major: transpose bit set): LBO = R·128 bytes
//     (the next 64 columns of D), SBO = 1024 (the next 8 keys); k16 step j
//     starts 16 rows (2048 bytes) further.
// Registers (#tgpu.wgmma). Warp w of the block owns rows 16w + g and
// 16w + g + 8 (lane = 4g + t): the wgmma accumulator of m64nN gives warp
// w % 4 of a warpgroup the rows of an m16n8 mma.sync C fragment per n8 tile,
// so S, P and O use the C layout of the mma.sync mapping (vector<2x2xf32>
// per n8 tile), and P in the C layout of two adjacent n8 tiles is the
// register A fragment of a k16 step (#tgpu.dot_operand: four bf16x2/f16x2
// registers). Row statistics (#tgpu.row_stats) are reduced over the quad
// with shuffles.
// P·V takes A from registers: upstream's nvvm.wgmma.mma_async only has the
// descriptor-A form, so that one instruction is built as llvm.inline_asm (as
// convert-nvvm-to-llvm builds the descriptor form); QKᵀ uses the upstream
// op.
// The schedule is the kernel's #tgpu.wgmma_schedule: how the K/V rings are
// filled and synchronised (kv_sync: CTA barriers, mbarriers, a producer
// warpgroup, ping-pong consumers, TMA), the ring depth, the grid (a block
// per tile, or persistent blocks with a stream-K tail), the epilogue and the
// rescale rule. bench/NOTES-hopper.md has the measurements behind them.
//
// This header is private to the mapping's files (TileToWGMMA.cpp, the pass;
// WGMMAOperands.cpp, copies, barriers and the wgmma instructions;
// WGMMAEpilogue.cpp, the stores of O; WGMMAKVLoop.cpp, the KV loop and its
// K/V rings; WGMMAPersistent.cpp, persistent blocks and the stream-K tail).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CONVERSION_TILETOGPU_WGMMAEMITTER_H
#define ATTNC_COMPILER_CONVERSION_TILETOGPU_WGMMAEMITTER_H

#include "compiler/Conversion/TileToGPU/FragmentMath.h"
#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/Conversion/TileToGPU/TileEmitter.h"
#include "compiler/Conversion/TileToGPU/WGMMASupport.h"

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

namespace attnc::wgmma {

// The mapping's files are written against MLIR's names.
using namespace mlir;
using gpu_emit::f32Const;

/// The per-thread registers of one tile value (FragmentMath.h; a warp holds
/// one m16 slice of its warpgroup's 64 rows: mTiles = 1).
using gpu_emit::Frags;

/// How the K/V rings are filled and synchronised: the kernel schedule's
/// kv_sync (#tgpu.wgmma_schedule).
using tgpu::KVSync;

/// The KV loop of a kernel whose bounds are the same for every work item:
/// from 0 to a value computed before the first program id, in steps of
/// block_n (no causal or window bound). Persistent blocks cut such a loop
/// into pieces for the stream-K tail; null when the kernel has none.
scf::ForOp itemInvariantKVLoop(func::FuncOp kernel, tile::LaunchAttr launch);

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
    return math().finalize(op, map);
  }
  LogicalResult emitStore(tile::StoreOp op);
  /// O from registers, bounded at the view's end.
  LogicalResult emitRegisterStore(tile::StoreOp op);
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
  /// The first row of a varlen kernel's per-sequence view (its offset over
  /// its row stride) in the packed tensor its tensor map addresses.
  Value viewFirstRow(Value view);

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

} // namespace attnc::wgmma

#endif // ATTNC_COMPILER_CONVERSION_TILETOGPU_WGMMAEMITTER_H
