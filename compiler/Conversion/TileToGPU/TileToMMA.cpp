//===- TileToMMA.cpp - tiles onto warps with mma.sync m16n8k16 ------------===//
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
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/FragmentMath.h"
#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/Conversion/TileToGPU/TileEmitter.h"
#include "compiler/LaunchABI.h"
#include "compiler/Transforms/Passes.h"

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

#include <limits>
#include <optional>

namespace attnc {
#define GEN_PASS_DEF_MAPTILETOMMA
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;
using gpu_emit::f32Const;

namespace {

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
    return math().finalize(op);
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
  Value ldRow, ldLow, ldHigh;  // ldmatrix: row in matrix, matrix % 2, / 2
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

Value MMAEmitter::loadPair(Value view, Value batch, Value head, Value seqRow,
                           Value col, Type elt) {
  auto pairT = VectorType::get({2}, elt);
  Value seq = memref::DimOp::create(b, loc, view, 2);
  Value inside =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, seqRow, seq);
  auto ifOp = scf::IfOp::create(
      b, loc, inside,
      [&](OpBuilder &tb, Location l) {
        Value v = vector::LoadOp::create(tb, l, pairT, view,
                                         ValueRange{batch, head, seqRow, col},
                                         false, llvm::MaybeAlign(4));
        scf::YieldOp::create(tb, l, v);
      },
      [&](OpBuilder &eb, Location l) {
        Value zero = arith::ConstantOp::create(
            eb, l, DenseElementsAttr::get(pairT, eb.getZeroAttr(elt)));
        scf::YieldOp::create(eb, l, zero);
      });
  return ifOp.getResult(0);
}

/// d = a·b + c with mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: nvvm's
/// op directly, since nvgpu.mma.sync does not lower bf16. bf16 pairs travel
/// as i32, f16 pairs as vector<2xf16>, as PTX's operand types require.
Value MMAEmitter::mma16816(Value a, Value bFrag, Value c) {
  Type elt = cast<VectorType>(a.getType()).getElementType();
  bool bf16 = elt.isBF16();
  auto operands = [&](Value frag, int64_t n) {
    SmallVector<Value> regs;
    for (int64_t i = 0; i < n; ++i) {
      Value pair = row2(frag, i);
      regs.push_back(
          bf16 ? Value(LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair))
               : pair);
    }
    return regs;
  };
  SmallVector<Value> cRegs;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t col = 0; col < 2; ++col)
      cRegs.push_back(elem(c, r, col));
  Type f32 = b.getF32Type();
  auto resT =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  NVVM::MMATypes ptx = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  Value d = NVVM::MmaOp::create(
      b, loc, resT, operands(a, 4), operands(bFrag, 2), cRegs, {16, 8, 16},
      std::nullopt, std::nullopt, std::array<NVVM::MMATypes, 2>{ptx, ptx},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> out;
  for (int64_t i = 0; i < 4; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, d, i));
  return vector::FromElementsOp::create(b, loc, VectorType::get({2, 2}, f32),
                                        out);
}

/// Max or sum over the 4 lanes of a quad (they share a row).
void MMAEmitter::setUp() {
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  Value warp = arith::DivUIOp::create(b, loc, tid, idx(32));
  g = arith::DivUIOp::create(b, loc, lane, idx(4));
  t4 = arith::RemUIOp::create(b, loc, lane, idx(4));
  rowWarp = warp;
  keyWarp = idx(0);
  if (keyWarps > 1) {
    rowWarp = arith::RemUIOp::create(b, loc, warp, idx(rowWarps));
    keyWarp = arith::DivUIOp::create(b, loc, warp, idx(rowWarps));
  }
  keyOffset =
      arith::MulIOp::create(b, loc, keyWarp, idx(keySlice(launch.getBlockN())));
  isFirstKeyWarp =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, keyWarp, idx(0));
  rowInTile = add(arith::MulIOp::create(b, loc, rowWarp, idx(16 * mTiles)), g);
  // ldmatrix: lane L gives the address of row L % 8 of 8x8 matrix L / 8.
  Value ldMatrix = arith::DivUIOp::create(b, loc, lane, idx(8));
  ldRow = arith::RemUIOp::create(b, loc, lane, idx(8));
  ldLow = arith::RemUIOp::create(b, loc, ldMatrix, idx(2));
  ldHigh = arith::DivUIOp::create(b, loc, ldMatrix, idx(2));
}

LogicalResult MMAEmitter::emitRowLoad(tile::LoadOp op) {
  auto t = op.getResult().getType();
  Type elt = t.getElementType();
  Value view = map.lookup(op.getSource());
  Value batch = map.lookup(op.getBatch()), head = map.lookup(op.getHead());
  Value q0 = map.lookup(op.getRow());
  Value col0 = arith::MulIOp::create(b, loc, t4, idx(2));
  if (op.getLength() || op.isPaged())
    return op.emitError("the mma.sync mapping reads query rows from plain "
                        "views only");
  // A partial result to merge: C layout / row statistics.
  bool merged =
      llvm::all_of(op->getUsers(), llvm::IsaPred<tile::LseAccumulateOp>);
  if (elt.isF32() || merged)
    return emitPartialLoad(op, view, batch, head, q0, col0);
  if (qInSmem || qStagedOnce) { // staged like K/V
    if (nextStage >= buffers.size())
      return op.emitError("more staged tiles than workgroup buffers");
    Value buf = buffers[nextStage++];
    issueStage(op, buf, map.lookup(op.getRow()), /*barrier=*/false);
    frags[op.getResult()] = {Frags::Staged, {buf}};
    if (qStagedOnce) // into registers before the KV loop (emitFor)
      pendingQ.push_back({op.getResult(), buf});
    return success();
  }
  Frags f{Frags::A, {}};
  for (int64_t mt = 0; mt < mTiles; ++mt) {
    Value r0 = add(q0, rowOf(mt, 0)), r1 = add(q0, rowOf(mt, 1));
    for (int64_t kk = 0; kk < t.getDimSize(1) / 16; ++kk) {
      Value c = add(col0, kk * 16), c8 = add(col0, kk * 16 + 8);
      f.regs.push_back(fromRows(VectorType::get({4, 2}, elt),
                                {loadPair(view, batch, head, r0, c, elt),
                                 loadPair(view, batch, head, r1, c, elt),
                                 loadPair(view, batch, head, r0, c8, elt),
                                 loadPair(view, batch, head, r1, c8, elt)}));
    }
  }
  frags[op.getResult()] = std::move(f);
  return success();
}

void MMAEmitter::loadPendingQ() {
  if (pendingQ.empty())
    return;
  SmallVector<Value> bufs;
  for (auto [value, buf] : pendingQ)
    bufs.push_back(buf);
  waitForStaged(bufs);
  for (auto [value, buf] : pendingQ) {
    auto t = cast<RankedTensorType>(value.getType());
    Frags staged = frags[value], f{Frags::A, {}};
    for (int64_t mt = 0; mt < mTiles; ++mt)
      for (int64_t kk = 0; kk < t.getDimSize(1) / 16; ++kk)
        f.regs.push_back(aFragment(staged, mt, kk, t.getElementType()));
    frags[value] = std::move(f);
  }
  pendingQ.clear();
}

Value MMAEmitter::aFragment(const Frags &a, int64_t mt, int64_t kk, Type elt) {
  if (a.kind == Frags::A)
    return a.regs[mt * (a.regs.size() / mTiles) + kk];
  // ldmatrix.x4 of a row-major 16x16 block: matrices (rows +0/+8) x
  // (columns +0/+8) are exactly the A registers (g, g+8, g col+8, ...).
  Value r =
      add(add(arith::SubIOp::create(b, loc, rowInTile, g), ldRow), 16 * mt);
  r = add(r, arith::MulIOp::create(b, loc, ldLow, idx(8)));
  return nvgpu::LdMatrixOp::create(
      b, loc, VectorType::get({4, 2}, elt), a.regs[0],
      smemAt(r, arith::MulIOp::create(b, loc, ldHigh, idx(8)), kk * 16), false,
      4);
}

/// A tile of the program's rows that tile.lse_accumulate merges (a split-KV
/// partial O in f32, a finished bf16/f16 output) in the C layout of n8
/// tiles in f32, or its [R] LSE as row statistics; rows past the end are 0
/// (LSE -inf: they weigh nothing).
LogicalResult MMAEmitter::emitPartialLoad(tile::LoadOp op, Value view,
                                          Value batch, Value head, Value q0,
                                          Value col0) {
  auto t = op.getResult().getType();
  Type f32 = b.getF32Type();
  Value seq = memref::DimOp::create(b, loc, view, 2);
  SmallVector<Value> rows; // [mt][2]
  for (int64_t mt = 0; mt < mTiles; ++mt)
    for (int64_t r = 0; r < 2; ++r)
      rows.push_back(add(q0, rowOf(mt, r)));
  if (t.getRank() == 1) {
    Frags f{Frags::RowStat, {}};
    for (Value r : rows) {
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, seq);
      auto ifOp = scf::IfOp::create(
          b, loc, inside,
          [&](OpBuilder &tb, Location l) {
            Value v =
                memref::LoadOp::create(tb, l, view, ValueRange{batch, head, r});
            scf::YieldOp::create(tb, l, v);
          },
          [&](OpBuilder &eb, Location l) {
            scf::YieldOp::create(
                eb, l,
                ValueRange{
                    f32Const(eb, l, -std::numeric_limits<float>::infinity())});
          });
      f.regs.push_back(ifOp.getResult(0));
    }
    frags[op.getResult()] = std::move(f);
    return success();
  }
  Frags f{Frags::C, {}};
  Type elt = t.getElementType();
  auto pair = [&](Value r, Value c) -> Value {
    Value v = loadPair(view, batch, head, r, c, elt);
    return elt.isF32() ? v
                       : Value(arith::ExtFOp::create(
                             b, loc, VectorType::get({2}, f32), v));
  };
  for (int64_t mt = 0; mt < mTiles; ++mt)
    for (int64_t nt = 0; nt < t.getDimSize(1) / 8; ++nt) {
      Value c = add(col0, nt * 8);
      f.regs.push_back(
          fromRows(VectorType::get({2, 2}, f32),
                   {pair(rows[2 * mt], c), pair(rows[2 * mt + 1], c)}));
    }
  frags[op.getResult()] = std::move(f);
  return success();
}

/// Issues the cp.async copies of tile `row` of a staged load into `buf`
/// (nothing when `row` is past the loop's end) and commits them as a group.
void MMAEmitter::issueStage(tile::LoadOp op, Value buf, Value row,
                            bool barrier) {
  auto t = op.getResult().getType();
  // Unrolled whole-tile copies (one base address per tile) where they
  // measure faster: the decode split kernel (its KV loop 685 -> 500 SASS
  // instructions, issue-bound) and prefill at head dim <= 64 (D64 +8%).
  // At D128 and D256 the same copies make prefill 4-8% slower on the H200
  // (A/B; bench/NOTES.md, "unrolled copies slowed the D128 prefill",
  // 2026-12-03), so those keep the loop over the chunks.
  bool unroll = qStagedOnce || t.getDimSize(1) <= kUnrollCopiesMaxDim;
  gpu_emit::stageRows(
      b, loc, map.lookup(op.getSource()), map.lookup(op.getBatch()),
      map.lookup(op.getHead()), row, buf, t.getDimSize(0), t.getDimSize(1), tid,
      blockThreads, /*async=*/true, barrier,
      /*commit=*/true, op.getLength() ? map.lookup(op.getLength()) : Value(),
      op.isPaged() ? map.lookup(op.getBlockTable()) : Value(),
      pageAhead.lookup(op), swizzle, unroll);
  groupOf[buf] = committedGroups++;
}

Value MMAEmitter::stageView(Value buf, Value stage) {
  auto t = cast<MemRefType>(buf.getType());
  SmallVector<OpFoldResult> offsets = {stage, b.getIndexAttr(0),
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                     b.getIndexAttr(t.getDimSize(1)),
                                     b.getIndexAttr(t.getDimSize(2))};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  auto viewT = memref::SubViewOp::inferRankReducedResultType(
      {t.getDimSize(1), t.getDimSize(2)}, t, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, viewT, buf, offsets, sizes, strides);
}

/// Copies tile j + S - 1 of each ring into the stage tile j - 1 held (past
/// the end: the current row again, never read, so that every iteration
/// commits the same number of groups).
void MMAEmitter::issueNext() {
  Value iv = ringLoop.getInductionVar();
  Value next = stepsAhead(iv, ringDepth() - 1, ringLoop.getStep());
  Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, next,
                                     ringLoop.getUpperBound());
  Value row = arith::SelectOp::create(b, loc, more, next, iv);
  for (Ring &r : rings)
    issueStage(r.load, r.next, row, /*barrier=*/false);
  nextIssued = true;
}

LogicalResult MMAEmitter::emitStage(tile::LoadOp op) {
  for (Ring &r : rings)
    if (r.load == op) { // copied an iteration ahead
      frags[op.getResult()] = {Frags::Staged, {r.current}};
      return success();
    }
  if (nextStage >= buffers.size())
    return op.emitError("more staged tiles than workgroup buffers");
  Value buf = buffers[nextStage++];
  // cp.async, waited for at the first use: V's copy runs under QKᵀ and the
  // softmax.
  issueStage(op, buf, map.lookup(op.getRow()), /*barrier=*/true);
  frags[op.getResult()] = {Frags::Staged, {buf}};
  return success();
}

LogicalResult MMAEmitter::emitDot(tile::DotOp op) {
  auto lhsIt = frags.find(op.getLhs()), rhsIt = frags.find(op.getRhs());
  if (lhsIt == frags.end() ||
      (lhsIt->second.kind != Frags::A &&
       !(lhsIt->second.kind == Frags::Staged && op.getTransposeB())) ||
      rhsIt == frags.end() || rhsIt->second.kind != Frags::Staged)
    return op.emitError("mma.sync dot expects A fragments and a staged rhs");
  const Frags &a = lhsIt->second;
  Value smem = rhsIt->second.regs[0];
  bool synced = a.kind == Frags::Staged ? waitForStaged({a.regs[0], smem})
                                        : waitForStaged({smem});
  if (!rings.empty() && !nextIssued) {
    // The first wait of the iteration: past its barrier every warp is done
    // with iteration j - 1, so its stages take the copies of j + 1.
    if (!synced)
      gpu::BarrierOp::create(b, loc);
    issueNext();
  }
  Type elt = cast<MemRefType>(smem.getType()).getElementType();
  auto rt = op.getResult().getType();
  // With key warps, each computes on its slice of the tile's keys: the
  // columns of S (QKᵀ) or the rows of V (P·V).
  int64_t n8 = rt.getDimSize(1) / 8;
  int64_t k16 = op.getLhs().getType().getDimSize(1) / 16;
  if (op.getTransposeB())
    n8 = keySlice(n8 * 8) / 8;
  else
    k16 = keySlice(k16 * 16) / 16;
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  auto bT = VectorType::get({2, 2}, elt);
  auto x4T = VectorType::get({4, 2}, elt);
  SmallVector<Value> c; // [mt][n8]
  if (op.getAcc())
    c = frags[op.getAcc()].regs;
  else
    c.assign(mTiles * n8, arith::ConstantOp::create(
                              b, loc, DenseElementsAttr::get(cT, 0.0f)));
  // Each ldmatrix.x4 covers two k16 steps (QKᵀ) or two n8 tiles (P·V).
  if (op.getTransposeB() ? k16 % 2 : n8 % 2)
    return op.emitError("mma.sync dot needs a head dim that is a multiple "
                        "of 32");
  // One ldmatrix.x4 gives four 8x8 matrices: two B fragments, each used by
  // every m16 tile of the warp.
  auto bPair = [&](Value ld, int64_t which) {
    return fromRows(bT, {row2(ld, 2 * which), row2(ld, 2 * which + 1)});
  };
  if (op.getTransposeB()) {
    // K stored [key][d] is B(k = d, n = key) in column order: plain
    // ldmatrix; matrices (k16 chunk kk, +8 cols), (kk + 1, +8 cols).
    for (int64_t kk = 0; kk < k16; kk += 2) {
      SmallVector<Value> aPair; // [mt][2]
      for (int64_t mt = 0; mt < mTiles; ++mt)
        for (int64_t k = kk; k < kk + 2; ++k)
          aPair.push_back(aFragment(a, mt, k, elt));
      for (int64_t nt = 0; nt < n8; ++nt) {
        Value r = add(add(ldRow, nt * 8), keyOffset);
        Value colLane = add(arith::MulIOp::create(b, loc, ldHigh, idx(16)),
                            arith::MulIOp::create(b, loc, ldLow, idx(8)));
        Value ld = nvgpu::LdMatrixOp::create(
            b, loc, x4T, smem, smemAt(r, colLane, kk * 16), false, 4);
        // k16 step kk for every m16 tile, then kk + 1: consecutive
        // mma.syncs accumulate into different registers.
        for (int64_t k = 0; k < 2; ++k)
          for (int64_t mt = 0; mt < mTiles; ++mt) {
            Value &acc = c[mt * n8 + nt];
            acc = mma16816(aPair[2 * mt + k], bPair(ld, k), acc);
          }
      }
    }
  } else {
    // V stored [key][d] is B(k = key, n = d) in row order: ldmatrix.trans;
    // matrices (keys +0 / +8) x (n8 tiles dn / dn + 1).
    for (int64_t kk = 0; kk < k16; ++kk)
      for (int64_t dn = 0; dn < n8; dn += 2) {
        Value r = add(add(add(ldRow, kk * 16), keyOffset),
                      arith::MulIOp::create(b, loc, ldLow, idx(8)));
        Value ld = nvgpu::LdMatrixOp::create(
            b, loc, x4T, smem,
            smemAt(r, arith::MulIOp::create(b, loc, ldHigh, idx(8)), dn * 8),
            true, 4);
        for (int64_t mt = 0; mt < mTiles; ++mt) {
          Value aFrag = aFragment(a, mt, kk, elt);
          c[mt * n8 + dn] = mma16816(aFrag, bPair(ld, 0), c[mt * n8 + dn]);
          c[mt * n8 + dn + 1] =
              mma16816(aFrag, bPair(ld, 1), c[mt * n8 + dn + 1]);
        }
      }
  }
  frags[op.getResult()] = {Frags::C, std::move(c)};
  return success();
}

LogicalResult MMAEmitter::emitScore(tile::ScoreOp op) {
  Value q0 = map.lookup(op.getQ0()), k0 = map.lookup(op.getK0());
  auto row = [&](int64_t mt, int64_t r) { return add(q0, rowOf(mt, r)); };
  if (keyWarps == 1)
    return math().score(op, map, launch.getBlockM(), row,
                        add(k0, arith::MulIOp::create(b, loc, t4, idx(2))));
  // The warp's slice starts at k0 + keyOffset, for the masks too.
  Value sliceK0 = add(k0, keyOffset);
  IRMapping sliceMap = map;
  sliceMap.map(op.getK0(), sliceK0);
  return math().score(op, sliceMap, launch.getBlockM(), row,
                      add(sliceK0, arith::MulIOp::create(b, loc, t4, idx(2))));
}

/// The sum is kept as per-lane partial sums that tile.finalize reduces over
/// the quad (as emitSoftmaxUpdate does): the weight w goes to lane t = 0.
LogicalResult MMAEmitter::emitLseAccumulate(tile::LseAccumulateOp op) {
  const Frags &acc = frags[op.getAcc()], &part = frags[op.getPartial()];
  const Frags &lse = frags[op.getLse()];
  const Frags &m = frags[op.getMax()], &l = frags[op.getSum()];
  float negInf = -std::numeric_limits<float>::infinity();
  auto pairT = VectorType::get({2}, b.getF32Type());
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  Value lane0 =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t4, idx(0));
  Frags newMax{Frags::RowStat, {}}, newSum{Frags::RowStat, {}};
  Value a[2], w[2];
  for (int64_t r = 0; r < 2; ++r) {
    Value t = arith::MulFOp::create(b, loc, lse.regs[r],
                                    f32Const(b, loc, gpu_emit::kLog2e));
    Value mx = arith::MaximumFOp::create(b, loc, m.regs[r], t);
    Value isNegInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                           mx, f32Const(b, loc, negInf));
    Value ref =
        arith::SelectOp::create(b, loc, isNegInf, f32Const(b, loc, 0.f), mx);
    Value ar =
        gpu_emit::exp2(b, loc, arith::SubFOp::create(b, loc, m.regs[r], ref));
    Value wr = gpu_emit::exp2(b, loc, arith::SubFOp::create(b, loc, t, ref));
    Value wLane =
        arith::SelectOp::create(b, loc, lane0, wr, f32Const(b, loc, 0.f));
    newMax.regs.push_back(mx);
    newSum.regs.push_back(arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, ar, l.regs[r]), wLane));
    a[r] = vector::BroadcastOp::create(b, loc, pairT, ar);
    w[r] = vector::BroadcastOp::create(b, loc, pairT, wr);
  }
  Frags out{Frags::C, {}};
  for (auto [reg, p] : llvm::zip(acc.regs, part.regs)) {
    SmallVector<Value> rows;
    for (int64_t r = 0; r < 2; ++r)
      rows.push_back(arith::AddFOp::create(
          b, loc, arith::MulFOp::create(b, loc, row2(reg, r), a[r]),
          arith::MulFOp::create(b, loc, row2(p, r), w[r])));
    out.regs.push_back(fromRows(cT, rows));
  }
  frags[op.getNewAcc()] = std::move(out);
  frags[op.getNewMax()] = std::move(newMax);
  frags[op.getNewSum()] = std::move(newSum);
  return success();
}

/// The threadfence-reduction pattern: every thread fences its partial
/// stores, the block meets, thread 0 counts the arrival with a
/// release-acquire compare-and-swap (a word of another launch's ticket
/// counts as zero arrivals; the last arrival writes 0), a reducing barrier
/// hands the verdict to every thread, and in the last program each fences
/// again before reading the others' partials. The first compare-and-swap
/// expects the word of every other split having arrived: the arrival that
/// matters, the last, then takes one round trip to the L2 instead of a load
/// and a swap; the others retry with the word the failed swap returned.
LogicalResult MMAEmitter::emitSplitArrive(tile::SplitArriveOp op) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value view = map.lookup(op.getCounts());
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, view);
  Value at = add(meta.getOffset(),
                 add(arith::MulIOp::create(b, loc, map.lookup(op.getBatch()),
                                           meta.getStrides()[0]),
                     arith::MulIOp::create(b, loc, map.lookup(op.getHead()),
                                           meta.getStrides()[1])));
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, view);
  Value addr = arith::IndexCastUIOp::create(
      b, loc, i64, add(base, arith::MulIOp::create(b, loc, at, idx(8))));
  Value ptr = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), addr);
  Value ticket =
      arith::TruncIOp::create(b, loc, i32, map.lookup(op.getTicket()));
  Value count =
      arith::IndexCastUIOp::create(b, loc, i32, map.lookup(op.getCount()));
  auto asmOp = [&](TypeRange results, ValueRange operands, StringRef text,
                   StringRef constraints) {
    return gpu_emit::inlinePtx(b, loc, results, operands, text, constraints);
  };
  auto fence = [&] { asmOp({}, {}, "fence.acq_rel.gpu;", "~{memory}"); };
  fence();
  gpu::BarrierOp::create(b, loc);
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, idx(0));
  auto counted = scf::IfOp::create(
      b, loc, first,
      [&](OpBuilder &, Location) {
        Value last =
            asmOp(i32, {ptr, ticket, count},
                  "{\n"
                  ".reg .b64 %ow, %nw, %seen;\n"
                  ".reg .b32 %lo, %hi, %n, %guess;\n"
                  ".reg .pred %same, %last, %retry;\n"
                  "sub.u32 %guess, $3, 1;\n"
                  "mov.b64 %ow, {%guess, $2};\n"
                  "ARRIVE_RETRY:\n"
                  "mov.b64 {%lo, %hi}, %ow;\n"
                  "setp.eq.u32 %same, %hi, $2;\n"
                  "selp.u32 %lo, %lo, 0, %same;\n"
                  "add.u32 %n, %lo, 1;\n"
                  "setp.ge.u32 %last, %n, $3;\n"
                  "mov.b64 %nw, {%n, $2};\n"
                  "selp.b64 %nw, 0, %nw, %last;\n"
                  "atom.acq_rel.gpu.global.cas.b64 %seen, [$1], %ow, %nw;\n"
                  "setp.ne.b64 %retry, %seen, %ow;\n"
                  "mov.b64 %ow, %seen;\n"
                  "@%retry bra ARRIVE_RETRY;\n"
                  "selp.u32 $0, 1, 0, %last;\n"
                  "}",
                  "=r,l,r,r,~{memory}")
                .getResult(0);
        scf::YieldOp::create(b, loc, last);
      },
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(
            b, loc, Value(arith::ConstantIntOp::create(b, loc, i32, 0)));
      });
  // A barrier whose predicate is the OR over the block: thread 0's verdict
  // to every thread.
  Value verdict = asmOp(i32, {counted.getResult(0)},
                        "{\n"
                        ".reg .pred %in, %out;\n"
                        "setp.ne.u32 %in, $1, 0;\n"
                        "bar.red.or.pred %out, 0, %in;\n"
                        "selp.u32 $0, 1, 0, %out;\n"
                        "}",
                        "=r,r,~{memory}")
                      .getResult(0);
  Value last =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, verdict,
                            arith::ConstantIntOp::create(b, loc, i32, 0));
  gpu_emit::emitIfThen(b, loc, last, fence);
  map.map(op.getLast(), last);
  return success();
}

LogicalResult MMAEmitter::emitStore(tile::StoreOp op) {
  Value q0 = map.lookup(op.getRow());
  auto store = [&] {
    return math().store(op, map, t4, [&](int64_t mt, int64_t r) {
      return add(q0, rowOf(mt, r));
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

/// Key warps 1..W-1 write their state, register by register, to the
/// scratch as [key warp - 1][row warp][value][lane] (lanes consecutive: no
/// bank conflicts; every warp's fragments have the same layout, so lane L
/// of key warp 0 finds its own rows' values in the others' slot L); after a
/// barrier, key warp 0 weighs each state by exp2(its max - the largest), as
/// tile.lse_accumulate does, and adds them up. The other warps keep their
/// own state; they store nothing (emitStore).
LogicalResult MMAEmitter::mergeKeyWarps(scf::ForOp op) {
  // The online softmax's state among the loop's results: the max and sum
  // softmax_update carries, the accumulator rescale carries.
  auto iterIndex = [&](Value v) -> std::optional<unsigned> {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != op.getBody() || arg.getArgNumber() == 0)
      return std::nullopt;
    return arg.getArgNumber() - 1;
  };
  auto updates = llvm::to_vector(op.getBody()->getOps<tile::SoftmaxUpdateOp>());
  auto rescales = llvm::to_vector(op.getBody()->getOps<tile::RescaleOp>());
  if (updates.size() != 1 || rescales.size() != 1)
    return op.emitError("decode-key-warps needs a KV loop with one online "
                        "softmax (one softmax_update and one rescale)");
  std::optional<unsigned> iM = iterIndex(updates[0].getMax()),
                          iL = iterIndex(updates[0].getSum()),
                          iAcc = iterIndex(rescales[0].getAcc());
  if (!iM || !iL || !iAcc)
    return op.emitError("decode-key-warps: the online softmax's state is not "
                        "carried by the KV loop");
  Frags &acc = frags[op.getResult(*iAcc)], &m = frags[op.getResult(*iM)],
        &l = frags[op.getResult(*iL)];
  // The state as one list of f32 values: acc's registers element by
  // element, then the max and sum registers.
  SmallVector<Value> own;
  for (Value reg : acc.regs)
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 2; ++c)
        own.push_back(elem(reg, r, c));
  const size_t accValues = own.size();
  llvm::append_range(own, m.regs);
  llvm::append_range(own, l.regs);
  const int64_t headDim = int64_t(acc.regs.size()) / mTiles * 8;
  if (int64_t(own.size()) != keyWarpStateFloats(mTiles, headDim) ||
      buffers.empty())
    return op.emitError("decode-key-warps: no scratch for the warps' states");
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto slotsT =
      MemRefType::get({keyWarps - 1, rowWarps, int64_t(own.size()), 32},
                      b.getF32Type(), nullptr, wg);
  Value slots = memref::ViewOp::create(b, loc, slotsT, buffers.back(), idx(0),
                                       ValueRange{});
  gpu_emit::emitIfThen(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, keyWarp, idx(0)),
      [&] {
        Value slot = arith::SubIOp::create(b, loc, keyWarp, idx(1));
        for (auto [i, v] : llvm::enumerate(own))
          memref::StoreOp::create(b, loc, v, slots,
                                  ValueRange{slot, rowWarp, idx(i), lane});
      });
  gpu::BarrierOp::create(b, loc);
  SmallVector<Type> types(own.size(), b.getF32Type());
  auto merged = scf::IfOp::create(b, loc, types, isFirstKeyWarp,
                                  /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(merged.elseBlock());
    scf::YieldOp::create(b, loc, own);
    b.setInsertionPointToStart(merged.thenBlock());
    SmallVector<SmallVector<Value>> states = {own};
    for (int64_t w = 1; w < keyWarps; ++w) {
      SmallVector<Value> vals;
      for (size_t i = 0; i < own.size(); ++i)
        vals.push_back(memref::LoadOp::create(
            b, loc, slots, ValueRange{idx(w - 1), rowWarp, idx(i), lane}));
      states.push_back(std::move(vals));
    }
    const size_t stats = m.regs.size(); // [mt][2]
    float negInf = -std::numeric_limits<float>::infinity();
    SmallVector<Value> out(own.size());
    for (size_t s = 0; s < stats; ++s) {
      const size_t at = accValues + s;
      Value mx = states[0][at];
      for (size_t w = 1; w < states.size(); ++w)
        mx = arith::MaximumFOp::create(b, loc, mx, states[w][at]);
      // Every warp saw only -inf (masked or past the end): weigh with a 0
      // reference, so that the weights are 0, never NaN.
      Value isNegInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                             mx, f32Const(b, loc, negInf));
      Value ref =
          arith::SelectOp::create(b, loc, isNegInf, f32Const(b, loc, 0.f), mx);
      SmallVector<Value> weight;
      for (auto &st : states)
        weight.push_back(
            gpu_emit::exp2(b, loc, arith::SubFOp::create(b, loc, st[at], ref)));
      out[at] = mx;
      // Value v of every state, each weighed like its warp's rows, added.
      auto weighedSum = [&](size_t v) {
        Value total;
        for (auto [w, st] : llvm::enumerate(states)) {
          Value term = arith::MulFOp::create(b, loc, st[v], weight[w]);
          total =
              total ? Value(arith::AddFOp::create(b, loc, total, term)) : term;
        }
        return total;
      };
      // The sums: per-lane partials.
      const size_t lAt = accValues + stats + s;
      out[lAt] = weighedSum(lAt);
      // acc value (register k, row r, column c) sits at 4k + 2r + c; row r
      // of m16 tile mt is the statistic 2·mt + r.
      const size_t mt = s / 2, r = s % 2;
      const size_t perTile = accValues / 4 / mTiles;
      for (size_t k = mt * perTile; k < (mt + 1) * perTile; ++k)
        for (size_t c = 0; c < 2; ++c)
          out[4 * k + 2 * r + c] = weighedSum(4 * k + 2 * r + c);
    }
    scf::YieldOp::create(b, loc, out);
  }
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  ValueRange res = merged.getResults();
  for (size_t k = 0; k < acc.regs.size(); ++k)
    acc.regs[k] =
        vector::FromElementsOp::create(b, loc, cT, res.slice(4 * k, 4));
  for (size_t s = 0; s < m.regs.size(); ++s) {
    m.regs[s] = res[accValues + s];
    l.regs[s] = res[accValues + m.regs.size() + s];
  }
  return success();
}

class MapTileToMMAPass
    : public attnc::impl::MapTileToMMABase<MapTileToMMAPass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

void MapTileToMMAPass::runOnOperation() {
  if (rowsPerWarp != 16 && rowsPerWarp != 32) {
    getOperation().emitError("rows-per-warp must be 16 or 32, not ")
        << int64_t(rowsPerWarp);
    return signalPassFailure();
  }
  if (kvStages < 2 || kvStages > 4) {
    getOperation().emitError("kv-stages must be 2 to 4, not ")
        << int64_t(kvStages);
    return signalPassFailure();
  }
  if (!llvm::is_contained({1, 2, 4, 8}, int64_t(decodeKeyWarps))) {
    getOperation().emitError("decode-key-warps must be 1, 2, 4 or 8, not ")
        << int64_t(decodeKeyWarps);
    return signalPassFailure();
  }
  int64_t rows = rowsPerWarp, mTiles = rowsPerWarp / 16;
  bool qSmem = qInSharedMemory;
  auto keyWarpsOf = [&](tile::LaunchAttr launch) -> int64_t {
    return launch.getRule() == abi::kGridRuleDecodeSplit ? decodeKeyWarps : 1;
  };
  // Swizzled, unpadded tiles for the decode split kernel (memory-bound:
  // padded rows cost it 1.5x the L2 sectors) or with swizzle-staged, when
  // every staged row is a multiple of 64 elements (the XOR permutes 8
  // chunks of 16 bytes); else padded rows. Prefill keeps the padding by
  // default: swizzled, its XOR'd ldmatrix addresses take registers (H200,
  // D128 S4k: 128x64 w4 353 -> 328 TFLOP/s with 16 B of spills, 128x32 w4
  // 303 -> 317). Both from bench/NOTES.md, "decode was L2-bound by its own
  // shared-memory padding", 2026-11-29.
  const bool hasDecodeSplit =
      !gpu_emit::kernelsWithRule(getOperation(), abi::kGridRuleDecodeSplit)
           .empty();
  bool swizzle = swizzleStaged || hasDecodeSplit;
  getOperation().walk([&](tile::LoadOp load) {
    auto t = load.getResult().getType();
    if (t.getRank() == 2)
      swizzle &= t.getDimSize(1) % 64 == 0;
  });
  // The decode split kernel stages its Q (MMAEmitter::qStagedOnce).
  bool stageQ = qSmem || hasDecodeSplit;
  if (failed(gpu_emit::mapKernelsToGPU(
          getOperation(), swizzle ? 0 : kRowPad, /*stageRowOwned=*/stageQ,
          [&](func::FuncOp, tile::LaunchAttr launch) {
            return 32 * launch.getBlockM() / rows * keyWarpsOf(launch);
          },
          [&](func::FuncOp kernel, gpu::GPUFuncOp gpuFunc,
              tile::LaunchAttr launch,
              ArrayRef<Value> buffers) -> LogicalResult {
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
            int64_t keyWarps = keyWarpsOf(launch);
            if (launch.getBlockN() % (16 * keyWarps) != 0)
              return kernel.emitError()
                     << "decode-key-warps " << keyWarps
                     << " needs K/V tiles of a multiple of " << 16 * keyWarps
                     << " keys (16 per warp), not " << launch.getBlockN();
            return MMAEmitter(kernel, gpuFunc, launch, buffers, mTiles, qSmem,
                              swizzle, keyWarps)
                .emit();
          },
          // K and V of the KV loop: rings of kv-stages tiles, or of the
          // decode split kernel's own stage count.
          [&](tile::LoadOp load) -> int64_t {
            auto loop = load->getParentOfType<scf::ForOp>();
            if (!loop ||
                !llvm::is_contained(gpu_emit::prefetchableLoads(loop), load))
              return 1;
            if (auto n = load->getParentOfType<FunctionOpInterface>()
                             ->getAttrOfType<IntegerAttr>(kPrefetchPagedAttr))
              return n.getInt();
            return kvStages;
          },
          // Key warps: the states of warps 1..W-1 for the merge after the
          // KV loop (MMAEmitter::mergeKeyWarps), per row warp.
          [&](func::FuncOp kernel, tile::LaunchAttr launch) -> int64_t {
            int64_t keyWarps = keyWarpsOf(launch);
            if (keyWarps == 1)
              return 0;
            int64_t headDim = 0;
            kernel.walk([&](tile::RescaleOp op) {
              headDim = cast<ShapedType>(op.getAcc().getType()).getDimSize(1);
            });
            int64_t rowWarps = launch.getBlockM() / rows;
            return (keyWarps - 1) * rowWarps * 32 * 4 *
                   MMAEmitter::keyWarpStateFloats(mTiles, headDim);
          })))
    signalPassFailure();
}

} // namespace
