//===- MMAEmitter.h - the mma.sync mapping (private) ----------------------===//
//
// The tensor-core mapping for sm_80 and later (FlashAttention-2's layout).
// A program is a thread block of block_m / R warps; warp w owns query rows
// [Rw, Rw + R), R = 16·mt for mt m16 tiles per warp (1 or 2: with 2, each
// K/V fragment read from shared memory feeds two independent mma chains,
// FlashAttention-2's 128-row, 4-warp shape). Every tile then lives in
// registers in the fragment
// layouts of PTX's mma.sync.m16n8k16 (lane = 4·g + t, g = lane / 4,
// t = lane % 4):
//   A (16x16):  reg i of vector<4x2xT> = rows (g, g+8, g, g+8)[i], columns
//               2t, 2t+1 (+8 for regs 2, 3)
//   B (16x8):   reg i of vector<2x2xT> = rows 2t, 2t+1 (+8 for reg 1),
//               column g
//   C (16x8):   reg i of vector<2x2xf32> = row g (+8 for reg 1), columns
//               2t, 2t+1
// so S = Q·Kᵀ comes out in the C layout, and P = softmax(S) in the C layout
// of two adjacent n8 tiles is already the A fragment of P·V (no shuffle, no
// shared memory). Row statistics are reduced over the 4 lanes of a quad
// with shuffles. K and V tiles are staged in shared memory with padded rows
// (+8 elements) so that the 8 rows a B fragment reads fall in distinct
// banks. With q-in-smem, Q is staged the same way and its A fragments are
// read with ldmatrix at each QKᵀ instead of living in registers. The decode
// split kernel stages Q too, but reads its fragments into registers once,
// after the K/V ring's first copies are in flight (see emitFor).
// With decode-key-warps W > 1 the decode split kernel's block is W warps
// per row warp along the keys: every thread copies each K/V tile, warp
// (key k, row r) computes QKᵀ, the softmax and P·V on keys [k·N/W,
// (k+1)·N/W) of each N-key tile with an online state of its own, and after
// the KV loop the states merge through shared memory into key warp 0,
// which alone stores (see mergeKeyWarps).
// A tile value's registers are indexed [m16 tile][fragment]: A [mt][k16],
// C [mt][n8], row statistics [mt][2].
//
// This header is private to the mapping's files (TileToMMA.cpp, the pass,
// the KV loop and the stores; MMAOperands.cpp, the copies, the fragments
// and mma.sync; MMASplitKV.cpp, the decode kernel's merges: the split-KV
// combine step, the last split's arrival, the key warps).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CONVERSION_TILETOGPU_MMAEMITTER_H
#define ATTNC_COMPILER_CONVERSION_TILETOGPU_MMAEMITTER_H

#include "compiler/Conversion/TileToGPU/FragmentMath.h"
#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/Conversion/TileToGPU/TileEmitter.h"
#include "compiler/LaunchABI.h"

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace attnc::mma {

// The mapping's files are written against MLIR's names.
using namespace mlir;
using gpu_emit::f32Const;

/// Shared-memory rows are padded by 8 elements (16 bytes): row stride
/// (D + 8) · 2 bytes puts the 8 rows of a B fragment in distinct banks.
constexpr int64_t kRowPad = 8;

/// Prefill tiles at most this wide (elements per row) are copied by
/// unrolled cp.async sequences (see MMAEmitter::issueStage).
constexpr int64_t kUnrollCopiesMaxDim = 64;

using gpu_emit::Frags;

class MMAEmitter : public gpu_emit::TileEmitter<MMAEmitter> {
public:
  MMAEmitter(func::FuncOp kernel, gpu::GPUFuncOp gpuFunc,
             tile::LaunchAttr launch, ArrayRef<Value> buffers, int64_t mTiles,
             bool qInSmem, bool swizzle, int64_t keyWarps)
      : TileEmitter(kernel, gpuFunc, launch, buffers), mTiles(mTiles),
        keyWarps(keyWarps),
        blockThreads(2 * launch.getBlockM() / mTiles * keyWarps),
        rowWarps(blockThreads / 32 / keyWarps), qInSmem(qInSmem),
        qStagedOnce(launch.getRule() == abi::kGridRuleDecodeSplit),
        deadUpperRows(mTiles == 1 && atMostEightLiveRows(kernel)),
        positionsInBranch(
            fragmentFloats(kernel, mTiles, launch.getBlockN() / keyWarps) >=
            kPositionsInBranchFloats),
        swizzle(swizzle) {}

  /// f32 values per lane of a key warp's online state (acc, max, sum) for
  /// head dim `headDim`: what mergeKeyWarps passes through shared memory.
  static int64_t keyWarpStateFloats(int64_t mTiles, int64_t headDim) {
    return mTiles * headDim / 2 + 4 * mTiles;
  }

  // The mapping's part of the walk (see TileEmitter.h).
  void setUp();
  LogicalResult emitRowLoad(tile::LoadOp op);
  LogicalResult emitStage(tile::LoadOp op);
  LogicalResult emitDot(tile::DotOp op);
  LogicalResult emitScore(tile::ScoreOp op);
  // The softmax arithmetic on fragments: FragmentMath's.
  LogicalResult emitSoftmaxUpdate(tile::SoftmaxUpdateOp op) {
    return math().softmaxUpdate(op);
  }
  LogicalResult emitRescale(tile::RescaleOp op) { return math().rescale(op); }
  LogicalResult emitLseAccumulate(tile::LseAccumulateOp op);
  LogicalResult emitSplitArrive(tile::SplitArriveOp op);
  LogicalResult emitTrunc(arith::TruncFOp op) { return math().trunc(op); }
  LogicalResult emitFinalize(tile::FinalizeOp op) {
    return math().finalize(op, map);
  }
  LogicalResult emitStore(tile::StoreOp op);
  LogicalResult emitFor(scf::ForOp op);
  LogicalResult emitConstant(arith::ConstantOp op) {
    return math().constant(op);
  }

private:
  gpu_emit::FragmentMath math() {
    return gpu_emit::FragmentMath(b, loc, mTiles, frags,
                                  /*skipUnitRescale=*/true,
                                  /*rescaleThreshold=*/0.f, deadUpperRows);
  }
  Value idx(int64_t v) { return gpu_emit::indexConst(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, idx(y)) : x; }
  Value row2(Value v, int64_t i) { // register i of a [N x 2] fragment
    return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i});
  }
  Value elem(Value v, int64_t i, int64_t j) {
    return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i, j});
  }
  Value fromRows(VectorType t, ArrayRef<Value> rows) {
    return gpu_emit::fromRows(b, loc, t, rows);
  }
  /// Guarded 2-element load of row `seqRow`, columns [col, col + 2).
  Value loadPair(Value view, Value batch, Value head, Value seqRow, Value col,
                 Type elt);
  LogicalResult emitPartialLoad(tile::LoadOp op, Value view, Value batch,
                                Value head, Value q0, Value col0);
  Value mma16816(Value a, Value bFrag, Value c);

  /// The A fragment of k16 chunk `kk` of m16 tile `mt` of `a`: a register,
  /// or an ldmatrix from the staged Q.
  Value aFragment(const Frags &a, int64_t mt, int64_t kk, Type elt);
  /// Row g (+8 with r = 1) of m16 tile `mt` of this warp, within the tile.
  Value rowOf(int64_t mt, int64_t r) { return add(rowInTile, 16 * mt + 8 * r); }

  const int64_t mTiles; // m16 tiles per warp
  // Warps along the keys (decode-key-warps; 1 elsewhere) and the block.
  const int64_t keyWarps, blockThreads, rowWarps;
  Value lane, rowWarp, keyWarp; // warp (key k, row r) = k · rowWarps + r
  Value keyOffset;              // first key of this warp's slice of a K/V tile
  Value isFirstKeyWarp;         // key warp 0: holds the merged state, stores
  /// The keys of a K/V tile this warp computes on: all, or its slice.
  int64_t keySlice(int64_t tileKeys) const { return tileKeys / keyWarps; }
  /// Merges the key warps' (acc, max, sum) after the KV loop `op` (emitted
  /// as `loop`) into key warp 0 through the scratch shared memory.
  LogicalResult mergeKeyWarps(scf::ForOp op);
  const bool qInSmem;
  // The decode split kernel's Q: one 16-byte cp.async per chunk into
  // shared memory, issued ahead of the K/V ring's first copies, and read
  // into registers with ldmatrix once those are in flight. Loaded straight
  // into the A layout, Q takes 32 guarded 4-byte loads per lane and ~400
  // instructions of addressing before the first K/V copy, with one warp
  // per program and per scheduler to issue them (bench/NOTES.md, "the
  // decode split kernel is issue-bound", 2026-12-03).
  const bool qStagedOnce;
  // Rows g + 8 of the warp's m16 tile are padding (kLiveRowsAttr <= 8):
  // their softmax is left out (FragmentMath).
  const bool deadUpperRows;
  static bool atMostEightLiveRows(func::FuncOp kernel) {
    auto live = kernel->getAttrOfType<IntegerAttr>(kLiveRowsAttr);
    return live && live.getInt() <= 8;
  }
  // The lane's query rows and key columns that masks read are derived in
  // the masked branch from an opaque thread index (see emitScore) when O
  // and S take this many of a lane's registers or more: 192 at D128 with
  // 32 rows per warp and 64-key tiles, where ptxas sits at 255 registers
  // and spilled them (bench/NOTES.md, 2026-12-07). Below, setUp's values
  // stay (D64 and D256 have registers to spare and would only pay the
  // instructions).
  static constexpr int64_t kPositionsInBranchFloats = 192;
  const bool positionsInBranch;
  /// f32 registers of O (mTiles m16 tiles of the head dim) and S (of
  /// `keys` keys) per lane.
  static int64_t fragmentFloats(func::FuncOp kernel, int64_t mTiles,
                                int64_t keys) {
    int64_t headDim = 0;
    kernel.walk([&](tile::RescaleOp op) {
      headDim = cast<ShapedType>(op.getAcc().getType()).getDimSize(1);
    });
    return mTiles * 16 * (headDim + keys) / 32;
  }
  SmallVector<std::pair<Value, Value>> pendingQ; // (tile value, buffer)
  /// Waits for the staged Q tiles and reads them into A registers.
  void loadPendingQ();
  // Staged tiles unpadded with XOR-swizzled 16-byte chunks (head dims that
  // are multiples of 64; see gpu_emit::swizzledColumn), else padded rows.
  const bool swizzle;
  /// An ldmatrix lane address: row r, column colLane + colConst of a
  /// staged tile, where colConst is a constant multiple of 8 and r mod 8 is
  /// the lane's ldRow (every ldmatrix here reads rows ldRow + 8k). Swizzled,
  /// the column is split as swizzle(colLane + colConst mod 64) + the rest:
  /// the XOR touches only chunk bits 0-2, so the lane-invariant part is a
  /// few loop-hoisted registers and the rest an immediate offset.
  SmallVector<Value, 2> smemAt(Value r, Value colLane, int64_t colConst) {
    if (!swizzle)
      return {r, add(colLane, colConst)};
    Value low =
        gpu_emit::swizzledColumn(b, loc, ldRow, add(colLane, colConst % 64));
    return {r, add(low, colConst - colConst % 64)};
  }
  DenseMap<Value, Frags> frags;
  Value tid, g, t4, rowInTile; // rowInTile = 16·mTiles·warp + g
  /// What setUp derives from the thread index (lane = 4·g + t4).
  struct LaneIndices {
    Value lane, g, t4, rowWarp, keyWarp, rowInTile;
  };
  LaneIndices laneIndices(Value tid);
  Value ldRow, ldLow, ldHigh; // ldmatrix: row in matrix, matrix % 2, / 2
  unsigned nextStage = 0;
  // cp.async groups committed in the current block of code, and the group
  // of each staged buffer (wait_group N lets the N newest stay in flight).
  int64_t committedGroups = 0;
  DenseMap<Value, int64_t> groupOf;
  // Paged K/V tiles copied where they stand, each in one page: the page of
  // this iteration's tile, looked up an iteration ahead (see emitFor).
  DenseMap<Operation *, SmallVector<Value>> pageAhead;
  // The KV loop's copy-ahead rings (K and V, S stages each): the tiles of
  // iterations j + 1 .. j + S - 1 are in flight while iteration j computes,
  // so an iteration has two barriers: before QKᵀ (K_j has landed, and every
  // warp is done with iteration j - 1, whose stages the next copies
  // overwrite) and before P·V (V_j has landed).
  struct Ring {
    tile::LoadOp load;
    Value buf;           // S x rows x cols
    int64_t firstGroup;  // the prologue's copy of tile 0
    Value current, next; // the stage views of tiles j and j + S - 1
  };
  SmallVector<Ring> rings;
  /// S: the frame carves every ring alike (see ringStages).
  int64_t ringDepth() const {
    return rings.empty()
               ? 1
               : cast<MemRefType>(rings.front().buf.getType()).getDimSize(0);
  }
  /// row + n · step.
  Value stepsAhead(Value row, int64_t n, Value step) {
    if (n == 0)
      return row;
    return add(row,
               n == 1 ? step : arith::MulIOp::create(b, loc, step, idx(n)));
  }
  scf::ForOp ringLoop; // the emitted KV loop
  bool nextIssued = false;
  Value stageView(Value buf, Value stage);
  void issueNext();
  void issueStage(tile::LoadOp op, Value buf, Value row, bool barrier);
  /// Waits for the copies of the staged buffers not yet waited for: groups
  /// complete in order, so one wait for the newest suffices, then one
  /// barrier makes every thread's copies visible.
  /// Returns whether it placed a barrier.
  bool waitForStaged(ArrayRef<Value> bufs) {
    int64_t newest = -1;
    for (Value buf : bufs)
      if (auto it = groupOf.find(buf); it != groupOf.end()) {
        newest = std::max(newest, it->second);
        groupOf.erase(it);
      }
    if (newest < 0)
      return false;
    NVVM::CpAsyncWaitGroupOp::create(b, loc,
                                     int32_t(committedGroups - newest - 1));
    gpu::BarrierOp::create(b, loc);
    return true;
  }
};

} // namespace attnc::mma

#endif // ATTNC_COMPILER_CONVERSION_TILETOGPU_MMAEMITTER_H
