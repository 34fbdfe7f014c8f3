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
#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/Conversion/TileToGPU/TileEmitter.h"
#include "compiler/Conversion/TileToGPU/WGMMASupport.h"
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
#define GEN_PASS_DEF_MAPTILETOWGMMA
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;
using gpu_emit::f32Const;

namespace {

/// The per-thread registers of one tile value.
struct Frags {
  enum Kind {
    A,       // [k16 step] vector<4x2xT>: register A operand (P)
    C,       // [n8 tile] vector<2x2xf32>: an accumulator (S, P, O)
    RowStat, // [2] f32: the statistic of rows g and g + 8
    Smem,    // [0] the swizzled shared-memory buffer of a Q/K/V tile
  } kind;
  SmallVector<Value> regs;
};

class WGMMAEmitter : public gpu_emit::TileEmitter<WGMMAEmitter> {
public:
  using TileEmitter::TileEmitter;

  // The mapping's part of the walk (see TileEmitter.h).
  void setUp();
  LogicalResult emitRowLoad(tile::LoadOp op);
  LogicalResult emitStage(tile::LoadOp op);
  LogicalResult emitDot(tile::DotOp op);
  LogicalResult emitScore(tile::ScoreOp op);
  LogicalResult emitSoftmaxUpdate(tile::SoftmaxUpdateOp op);
  LogicalResult emitRescale(tile::RescaleOp op);
  LogicalResult emitTrunc(arith::TruncFOp op);
  LogicalResult emitFinalize(tile::FinalizeOp op);
  LogicalResult emitStore(tile::StoreOp op);
  LogicalResult emitFor(scf::ForOp op);
  LogicalResult emitConstant(arith::ConstantOp op);

private:
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
  Value fromRows(VectorType t, ArrayRef<Value> rows);
  Value quadReduce(Value x, bool max);

  /// cp.async of rows [row, row + R) of a [B, H, S, D] view into `buf` in
  /// the swizzled layout, zero past the sequence end; one commit group.
  void issueStage(tile::LoadOp op, Value buf, Value row, bool barrier);
  void waitForStaged(Value buf);
  /// The descriptor of the bytes at `offset` in `buf`.
  Value descriptor(Value buf, int64_t offset, int64_t lbo, int64_t sbo);
  /// S = Q·Kᵀ (both from shared memory) for this warpgroup's 64 rows.
  SmallVector<Value> wgmmaQK(Value q, Value k, int64_t n, int64_t d);
  /// O += P·V with P in registers (A fragments), V from shared memory.
  SmallVector<Value> wgmmaPV(ArrayRef<Value> p, Value v, ArrayRef<Value> acc,
                             int64_t d);

  DenseMap<Value, Frags> frags;
  DenseMap<Value, Value> baseDesc; // buffer -> its descriptor at offset 0
  Value tid, g, t4, rowInTile, qRowBytes; // qRowBytes: warpgroup's Q rows
  unsigned nextStage = 0;
  int64_t committedGroups = 0;
  DenseMap<Value, int64_t> groupOf;
  struct Prefetch {
    tile::LoadOp load;
    Value buf;
    scf::ForOp loop;
  };
  std::optional<Prefetch> prefetch;
};

Value WGMMAEmitter::fromRows(VectorType t, ArrayRef<Value> rows) {
  Value v = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(t, b.getZeroAttr(t.getElementType())));
  for (auto [i, r] : llvm::enumerate(rows))
    v = vector::InsertOp::create(b, loc, r, v, ArrayRef<int64_t>{int64_t(i)});
  return v;
}

Value WGMMAEmitter::quadReduce(Value x, bool max) {
  for (int offset : {1, 2}) {
    Value other =
        gpu::ShuffleOp::create(b, loc, x, offset, 32, gpu::ShuffleMode::XOR)
            .getShuffleResult();
    x = max ? Value(arith::MaximumFOp::create(b, loc, x, other))
            : Value(arith::AddFOp::create(b, loc, x, other));
  }
  return x;
}

void WGMMAEmitter::setUp() {
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value lane = arith::RemUIOp::create(b, loc, tid, idx(32));
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
}

Value WGMMAEmitter::descriptor(Value buf, int64_t offset, int64_t lbo,
                               int64_t sbo) {
  int64_t fields = ((offset >> 4) & 0x3FFF) | ((lbo >> 4) & 0x3FFF) << 16 |
                   ((sbo >> 4) & 0x3FFF) << 32;
  return arith::AddIOp::create(b, loc, baseDesc.lookup(buf), i64(fields));
}

void WGMMAEmitter::issueStage(tile::LoadOp op, Value buf, Value row,
                              bool barrier) {
  auto t = op.getResult().getType();
  int64_t rows = t.getDimSize(0), dim = t.getDimSize(1);
  Value view = map.lookup(op.getSource());
  Value batch = map.lookup(op.getBatch()), head = map.lookup(op.getHead());
  if (barrier) // nobody may still read the previous tile from `buf`
    gpu::BarrierOp::create(b, loc);
  int64_t chunksPerRow = dim / 8;
  int64_t threads = 2 * launch.getBlockM();
  Value seq = memref::DimOp::create(b, loc, view, 2);
  scf::ForOp::create(
      b, loc, tid, idx(rows * chunksPerRow), idx(threads), ValueRange{},
      [&](OpBuilder &lb, Location l, Value chunk, ValueRange) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value r = arith::DivUIOp::create(b, l, chunk, idx(chunksPerRow));
        Value c = arith::RemUIOp::create(b, l, chunk, idx(chunksPerRow));
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
        // Past the end: read 0 of 8 elements (zero fill) from a valid
        // address (the last row).
        Value srcRow = arith::MinSIOp::create(
            b, l, seqRow, arith::SubIOp::create(b, l, seq, idx(1)));
        Value n = arith::SelectOp::create(b, l, inside, idx(8), idx(0));
        nvgpu::DeviceAsyncCopyOp::create(
            b, l, nvgpu::DeviceAsyncTokenType::get(b.getContext()), buf,
            ValueRange{dstRow, dstCol}, view,
            ValueRange{batch, head, srcRow, mul(c, 8)}, b.getIndexAttr(8), n,
            b.getUnitAttr()); // .cg: L2 only
        scf::YieldOp::create(b, l);
      });
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
  groupOf[buf] = committedGroups++;
}

void WGMMAEmitter::waitForStaged(Value buf) {
  auto it = groupOf.find(buf);
  if (it == groupOf.end())
    return;
  NVVM::CpAsyncWaitGroupOp::create(b, loc,
                                   int32_t(committedGroups - it->second - 1));
  // cp.async wrote through the generic proxy; wgmma reads through the async
  // proxy: order the two, then make every thread's copies visible.
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b, loc);
  groupOf.erase(it);
}

LogicalResult WGMMAEmitter::emitRowLoad(tile::LoadOp op) {
  // Q: the first buffer (the frame stages row-owned tiles too), staged
  // like K.
  Value buf = buffers[nextStage++];
  issueStage(op, buf, map.lookup(op.getRow()), /*barrier=*/false);
  frags[op.getResult()] = {Frags::Smem, {buf}};
  return success();
}

LogicalResult WGMMAEmitter::emitStage(tile::LoadOp op) {
  if (prefetch && prefetch->load == op) { // issued an iteration ahead
    frags[op.getResult()] = {Frags::Smem, {prefetch->buf}};
    return success();
  }
  if (nextStage >= buffers.size())
    return op.emitError("more staged tiles than workgroup buffers");
  Value buf = buffers[nextStage++];
  issueStage(op, buf, map.lookup(op.getRow()), /*barrier=*/true);
  frags[op.getResult()] = {Frags::Smem, {buf}};
  return success();
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

SmallVector<Value> WGMMAEmitter::wgmmaQK(Value q, Value k, int64_t n,
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
                             wgmma::kSwizzleAtomBytes);
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
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  SmallVector<Value> flat;
  for (int64_t i = 0; i < n / 2; ++i)
    flat.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
  return tilesFromFlat(b, loc, flat);
}

SmallVector<Value> WGMMAEmitter::wgmmaPV(ArrayRef<Value> p, Value v,
                                         ArrayRef<Value> acc, int64_t d) {
  Type elt = cast<MemRefType>(v.getType()).getElementType();
  int64_t keys = cast<MemRefType>(v.getType()).getDimSize(0);
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
  for (int64_t j = 0; j < keys / 16; ++j) {
    SmallVector<Value> operands(flat);
    for (int64_t i = 0; i < 4; ++i)
      operands.push_back(
          LLVM::BitcastOp::create(b, loc, b.getI32Type(), row2(p[j], i)));
    // Keys [16j, 16j + 16): two 8-key groups, 2 KiB in.
    operands.push_back(descriptor(v, j * 16 * wgmma::kSwizzleBytes,
                                  keys * wgmma::kSwizzleBytes,
                                  wgmma::kSwizzleAtomBytes));
    operands.push_back(one);
    auto asmOp = LLVM::InlineAsmOp::create(
        b, loc, structT, operands, asmText, constraints,
        /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::TailCallKind::None,
        LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
        /*operand_attrs=*/ArrayAttr());
    for (int64_t i = 0; i < nAcc; ++i)
      flat[i] = LLVM::ExtractValueOp::create(b, loc, asmOp.getResult(0), i);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  return tilesFromFlat(b, loc, flat);
}

LogicalResult WGMMAEmitter::emitDot(tile::DotOp op) {
  auto lhsIt = frags.find(op.getLhs()), rhsIt = frags.find(op.getRhs());
  if (lhsIt == frags.end() || rhsIt == frags.end() ||
      rhsIt->second.kind != Frags::Smem)
    return op.emitError("wgmma dot expects a staged rhs");
  Value rhs = rhsIt->second.regs[0];
  auto rt = op.getResult().getType();
  SmallVector<Value> c;
  if (op.getTransposeB() && lhsIt->second.kind == Frags::Smem && !op.getAcc()) {
    Value lhs = lhsIt->second.regs[0];
    // One wait for the newer of the two groups covers both (Q's copy is
    // only waited for once, not every iteration).
    auto q = groupOf.find(lhs), k = groupOf.find(rhs);
    if (q != groupOf.end() && k != groupOf.end() && q->second < k->second)
      groupOf.erase(q);
    waitForStaged(lhs);
    waitForStaged(rhs);
    c = wgmmaQK(lhs, rhs, rt.getDimSize(1),
                cast<MemRefType>(lhs.getType()).getDimSize(1));
  } else if (!op.getTransposeB() && lhsIt->second.kind == Frags::A) {
    waitForStaged(rhs);
    SmallVector<Value> acc;
    if (op.getAcc()) {
      acc = frags[op.getAcc()].regs;
    } else {
      auto cT = VectorType::get({2, 2}, b.getF32Type());
      acc.assign(
          rt.getDimSize(1) / 8,
          arith::ConstantOp::create(b, loc, DenseElementsAttr::get(cT, 0.0f)));
    }
    c = wgmmaPV(lhsIt->second.regs, rhs, acc, rt.getDimSize(1));
  } else {
    return op.emitError("wgmma dot expects Q·Kᵀ from shared memory or P·V "
                        "with P in registers");
  }
  frags[op.getResult()] = {Frags::C, std::move(c)};
  if (prefetch && op.getRhs() == prefetch->load.getResult()) {
    // Every warpgroup has waited for its QKᵀ: copy the next K tile under
    // the softmax and P·V.
    gpu::BarrierOp::create(b, loc);
    scf::ForOp loop = prefetch->loop;
    Value next =
        arith::AddIOp::create(b, loc, loop.getInductionVar(), loop.getStep());
    Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, next,
                                       loop.getUpperBound());
    Value row =
        arith::SelectOp::create(b, loc, more, next, loop.getInductionVar());
    // Past the end the copy repeats the current tile (never read), so that
    // the group count is the same on every path.
    issueStage(prefetch->load, prefetch->buf, row, /*barrier=*/false);
  }
  return success();
}

LogicalResult WGMMAEmitter::emitScore(tile::ScoreOp op) {
  const Frags &s = frags[op.getScores()];
  Value q0 = map.lookup(op.getQ0()), k0 = map.lookup(op.getK0());
  Value rows[2] = {add(q0, rowInTile), add(add(q0, rowInTile), 8)};
  Value col0 = add(k0, mul(t4, 2));
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  int64_t cols = int64_t(s.regs.size()) * 8;
  Value needsMasks =
      gpu_emit::tileNeedsMasks(b, loc, op, map, launch.getBlockM(), cols);
  auto scores = [&](OpBuilder &nb, Location l, bool masks) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
    SmallVector<Value> out;
    for (auto [nt, reg] : llvm::enumerate(s.regs)) {
      SmallVector<Value> e;
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t c = 0; c < 2; ++c)
          e.push_back(
              gpu_emit::scoreElement(b, l, op, map, elem(reg, r, c), rows[r],
                                     add(col0, int64_t(nt) * 8 + c), masks));
      out.push_back(vector::FromElementsOp::create(b, l, cT, e));
    }
    scf::YieldOp::create(b, l, out);
  };
  auto ifOp = scf::IfOp::create(
      b, loc, needsMasks,
      [&](OpBuilder &tb, Location l) { scores(tb, l, true); },
      [&](OpBuilder &eb, Location l) { scores(eb, l, false); });
  frags[op.getResult()] = {Frags::C, SmallVector<Value>(ifOp.getResults())};
  return success();
}

LogicalResult WGMMAEmitter::emitSoftmaxUpdate(tile::SoftmaxUpdateOp op) {
  const Frags &t = frags[op.getScores()];
  const Frags &m = frags[op.getMax()], &l = frags[op.getSum()];
  float negInf = -std::numeric_limits<float>::infinity();
  Frags probs{Frags::C, {}}, newMax{Frags::RowStat, {}},
      newSum{Frags::RowStat, {}}, alpha{Frags::RowStat, {}};
  SmallVector<SmallVector<Value>> p(t.regs.size());
  for (int64_t r = 0; r < 2; ++r) {
    Value mx = f32Const(b, loc, negInf);
    for (Value reg : t.regs)
      for (int64_t c = 0; c < 2; ++c)
        mx = arith::MaximumFOp::create(b, loc, mx, elem(reg, r, c));
    mx = arith::MaximumFOp::create(b, loc, m.regs[r], quadReduce(mx, true));
    // A row that has seen only -inf keeps a 0 reference: p = 0, never NaN.
    Value isNegInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                           mx, f32Const(b, loc, negInf));
    Value ref =
        arith::SelectOp::create(b, loc, isNegInf, f32Const(b, loc, 0.f), mx);
    Value sum = f32Const(b, loc, 0.f);
    for (auto [nt, reg] : llvm::enumerate(t.regs))
      for (int64_t c = 0; c < 2; ++c) {
        Value e = gpu_emit::exp2(
            b, loc, arith::SubFOp::create(b, loc, elem(reg, r, c), ref));
        p[nt].push_back(e);
        sum = arith::AddFOp::create(b, loc, sum, e);
      }
    Value a =
        gpu_emit::exp2(b, loc, arith::SubFOp::create(b, loc, m.regs[r], ref));
    newMax.regs.push_back(mx);
    alpha.regs.push_back(a);
    // Per-lane partial row sums until tile.finalize reduces them.
    newSum.regs.push_back(arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, a, l.regs[r]), sum));
  }
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  for (auto &e : p)
    probs.regs.push_back(vector::FromElementsOp::create(b, loc, cT, e));
  frags[op.getProbs()] = std::move(probs);
  frags[op.getNewMax()] = std::move(newMax);
  frags[op.getNewSum()] = std::move(newSum);
  frags[op.getAlpha()] = std::move(alpha);
  return success();
}

LogicalResult WGMMAEmitter::emitRescale(tile::RescaleOp op) {
  const Frags &acc = frags[op.getAcc()], &alpha = frags[op.getAlpha()];
  auto pairT = VectorType::get({2}, b.getF32Type());
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  Value scale[2] = {vector::BroadcastOp::create(b, loc, pairT, alpha.regs[0]),
                    vector::BroadcastOp::create(b, loc, pairT, alpha.regs[1])};
  Frags out{Frags::C, {}};
  for (Value reg : acc.regs)
    out.regs.push_back(
        fromRows(cT, {arith::MulFOp::create(b, loc, row2(reg, 0), scale[0]),
                      arith::MulFOp::create(b, loc, row2(reg, 1), scale[1])}));
  frags[op.getResult()] = std::move(out);
  return success();
}

LogicalResult WGMMAEmitter::emitTrunc(arith::TruncFOp op) {
  // P in the C layout of n8 tiles (2j, 2j+1) is the register A fragment of
  // k16 step j: (row g, keys 2t..) (row g+8, keys 2t..) (row g, keys
  // 2t+8..) (row g+8, keys 2t+8..).
  const Frags &p = frags[op.getIn()];
  Type elt = cast<RankedTensorType>(op.getType()).getElementType();
  auto pairT = VectorType::get({2}, elt);
  Frags out{Frags::A, {}};
  auto half = [&](Value reg, int64_t r) {
    return arith::TruncFOp::create(b, loc, pairT, row2(reg, r));
  };
  for (size_t j = 0; j + 1 < p.regs.size(); j += 2)
    out.regs.push_back(
        fromRows(VectorType::get({4, 2}, elt),
                 {half(p.regs[j], 0), half(p.regs[j], 1),
                  half(p.regs[j + 1], 0), half(p.regs[j + 1], 1)}));
  frags[op.getResult()] = std::move(out);
  return success();
}

LogicalResult WGMMAEmitter::emitConstant(arith::ConstantOp op) {
  auto t = cast<RankedTensorType>(op.getType());
  auto splat = dyn_cast<SplatElementsAttr>(op.getValue());
  if (!splat || !t.getElementType().isF32())
    return op.emitError("only f32 splat tile constants have fragments");
  float v = splat.getSplatValue<APFloat>().convertToFloat();
  if (t.getRank() == 1) {
    Value s = f32Const(b, loc, v);
    frags[op.getResult()] = {Frags::RowStat, {s, s}};
    return success();
  }
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  Value c = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(cT, v));
  frags[op.getResult()] = {Frags::C,
                           SmallVector<Value>(t.getDimSize(1) / 8, c)};
  return success();
}

LogicalResult WGMMAEmitter::emitFinalize(tile::FinalizeOp op) {
  const Frags &acc = frags[op.getAcc()];
  const Frags &m = frags[op.getMax()], &l = frags[op.getSum()];
  Type elt = op.getOutput().getType().getElementType();
  auto pairT = VectorType::get({2}, b.getF32Type());
  Value zero = f32Const(b, loc, 0.f);
  Frags lse{Frags::RowStat, {}};
  Value inv[2];
  for (int64_t r = 0; r < 2; ++r) {
    Value rowSum = quadReduce(l.regs[r], false);
    Value positive =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, rowSum, zero);
    inv[r] = vector::BroadcastOp::create(
        b, loc, pairT,
        arith::SelectOp::create(
            b, loc, positive,
            arith::DivFOp::create(b, loc, f32Const(b, loc, 1.f), rowSum),
            zero));
    Value v = arith::MulFOp::create(
        b, loc,
        arith::AddFOp::create(b, loc, m.regs[r],
                              gpu_emit::log2(b, loc, rowSum)),
        f32Const(b, loc, gpu_emit::kLn2));
    lse.regs.push_back(arith::SelectOp::create(
        b, loc, positive, v,
        f32Const(b, loc, -std::numeric_limits<float>::infinity())));
  }
  Frags out{Frags::C, {}};
  auto oT = VectorType::get({2, 2}, elt);
  for (Value reg : acc.regs)
    out.regs.push_back(fromRows(
        oT, {arith::TruncFOp::create(
                 b, loc, VectorType::get({2}, elt),
                 arith::MulFOp::create(b, loc, row2(reg, 0), inv[0])),
             arith::TruncFOp::create(
                 b, loc, VectorType::get({2}, elt),
                 arith::MulFOp::create(b, loc, row2(reg, 1), inv[1]))}));
  frags[op.getOutput()] = std::move(out);
  frags[op.getLse()] = std::move(lse);
  return success();
}

LogicalResult WGMMAEmitter::emitStore(tile::StoreOp op) {
  const Frags &v = frags[op.getValue()];
  Value view = map.lookup(op.getDest());
  Value batch = map.lookup(op.getBatch()), head = map.lookup(op.getHead());
  Value q0 = map.lookup(op.getRow());
  Value seq = memref::DimOp::create(b, loc, view, 2);
  Value col0 = mul(t4, 2);
  for (int64_t r = 0; r < 2; ++r) {
    Value seqRow = add(add(q0, rowInTile), 8 * r);
    Value inside =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, seqRow, seq);
    if (v.kind == Frags::RowStat) // LSE: one lane of the quad writes a row
      inside = arith::AndIOp::create(
          b, loc, inside,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t4, idx(0)));
    scf::IfOp::create(b, loc, inside, [&](OpBuilder &tb, Location l) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(tb.getInsertionBlock(), tb.getInsertionPoint());
      if (v.kind == Frags::RowStat) {
        memref::StoreOp::create(b, l, v.regs[r], view,
                                ValueRange{batch, head, seqRow});
      } else {
        for (auto [dn, reg] : llvm::enumerate(v.regs))
          vector::StoreOp::create(
              b, l, row2(reg, r), view,
              ValueRange{batch, head, seqRow, add(col0, int64_t(dn) * 8)},
              false, llvm::MaybeAlign(4));
      }
      scf::YieldOp::create(b, l);
    });
  }
  return success();
}

/// The first staged load of a KV loop when it can be issued an iteration
/// ahead: its row is the induction variable and another staged load follows.
static tile::LoadOp prefetchable(scf::ForOp op) {
  SmallVector<tile::LoadOp> staged;
  for (auto load : op.getBody()->getOps<tile::LoadOp>())
    if (!gpu_emit::isRowOwnedLoad(load))
      staged.push_back(load);
  if (staged.size() < 2 || staged[0].getRow() != op.getInductionVar())
    return {};
  tile::LoadOp k = staged[0];
  for (Value v : SmallVector<Value>{k.getSource(), k.getBatch(), k.getHead()})
    if (!op.isDefinedOutsideOfLoop(v))
      return {};
  return staged[0];
}

LogicalResult WGMMAEmitter::emitFor(scf::ForOp op) {
  tile::LoadOp ahead = prefetchable(op);
  if (ahead && !prefetch) {
    if (nextStage >= buffers.size())
      return ahead.emitError("more staged tiles than workgroup buffers");
    Value buf = buffers[nextStage++];
    issueStage(ahead, buf, map.lookup(op.getLowerBound()), /*barrier=*/false);
    prefetch = Prefetch{ahead, buf, {}};
  }
  SmallVector<Value> inits;
  SmallVector<std::pair<Frags::Kind, size_t>> shapes;
  for (Value v : op.getInitArgs()) {
    const Frags &f = frags[v];
    shapes.push_back({f.kind, f.regs.size()});
    llvm::append_range(inits, f.regs);
  }
  auto loop = scf::ForOp::create(b, loc, map.lookup(op.getLowerBound()),
                                 map.lookup(op.getUpperBound()),
                                 map.lookup(op.getStep()), inits);
  map.map(op.getInductionVar(), loop.getInductionVar());
  if (prefetch && prefetch->load->getParentOp() == op)
    prefetch->loop = loop;
  auto unflatten = [&](ValueRange flat, ValueRange tileValues) {
    size_t at = 0;
    for (auto [i, v] : llvm::enumerate(tileValues)) {
      auto [kind, n] = shapes[i];
      frags[v] = {kind, SmallVector<Value>(flat.slice(at, n))};
      at += n;
    }
  };
  unflatten(loop.getRegionIterArgs(), op.getRegionIterArgs());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    for (Operation &nested : op.getBody()->without_terminator())
      if (failed(emitOp(nested)))
        return failure();
    SmallVector<Value> yields;
    for (Value v : op.getBody()->getTerminator()->getOperands())
      llvm::append_range(yields, frags[v].regs);
    scf::YieldOp::create(b, loc, yields);
  }
  unflatten(loop.getResults(), op.getResults());
  if (prefetch && prefetch->loop == loop) {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    groupOf.erase(prefetch->buf);
    prefetch.reset();
  }
  return success();
}

class MapTileToWGMMAPass
    : public attnc::impl::MapTileToWGMMABase<MapTileToWGMMAPass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

void MapTileToWGMMAPass::runOnOperation() {
  // Q, K and V all in shared memory (Q first), unpadded: the 128-byte
  // swizzle spreads the rows over the banks instead. The frame aligns every
  // buffer to 1024 bytes, the swizzle's period.
  if (failed(gpu_emit::mapKernelsToGPU(
          getOperation(), /*rowPad=*/0, /*stageRowOwned=*/true,
          // One warpgroup per 64 query rows.
          [](tile::LaunchAttr launch) { return 2 * launch.getBlockM(); },
          [&](func::FuncOp kernel, gpu::GPUFuncOp gpuFunc,
              tile::LaunchAttr launch,
              ArrayRef<Value> buffers) -> LogicalResult {
            std::string why = wgmma::unsupportedReason(kernel, launch);
            if (!why.empty())
              return kernel.emitError() << "the wgmma mapping " << why;
            return WGMMAEmitter(kernel, gpuFunc, launch, buffers).emit();
          })))
    signalPassFailure();
}

} // namespace
