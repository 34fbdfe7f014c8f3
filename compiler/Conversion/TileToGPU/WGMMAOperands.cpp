//===- WGMMAOperands.cpp - copies, barriers, wgmma (sm_90a) ---------------===//
//
// The wgmma mapping's per-thread ids, shared-memory addresses and mbarriers,
// the cp.async copies of Q, K and V tiles into the swizzled layout, and the
// two wgmma instructions: S = Q·Kᵀ from descriptors, O += P·V with P from
// registers.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/WGMMAEmitter.h"

using namespace mlir;
using namespace attnc;
using namespace attnc::wgmma;

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
      [&] { return col0; });
}
