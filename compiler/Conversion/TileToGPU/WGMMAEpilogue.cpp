//===- WGMMAEpilogue.cpp - the stores of O (sm_90a) -----------------------===//
//
// The wgmma mapping's epilogues: O from registers, or (epilogue=tma)
// through a swizzled staging buffer and a TMA store.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/WGMMAEmitter.h"

using namespace mlir;
using namespace attnc;
using namespace attnc::wgmma;

LogicalResult WGMMAEmitter::emitStore(tile::StoreOp op) {
  if (!oTensorMap || frags[op.getValue()].kind != Frags::C)
    return emitRegisterStore(op);
  if (!gpu_emit::isVarlenKernel(kernel))
    return emitTmaStore(op);
  // Varlen: a TMA box would write past the sequence's end into the next
  // sequence's rows, so a warpgroup whose 64 rows all lie inside the
  // sequence stores them by TMA and one reaching past its end from
  // registers (each warpgroup decides alone: its barrier and its store are
  // its own).
  Value view = map.lookup(op.getDest());
  Value seqLen = memref::DimOp::create(b, loc, view, 2);
  Value wgRows =
      mul(arith::DivUIOp::create(b, loc, tid, idx(128)).getResult(), 64);
  Value inside = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ule,
      add(add(map.lookup(op.getRow()), wgRows), 64), seqLen);
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{}, inside,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  if (failed(emitTmaStore(op)))
    return failure();
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  return emitRegisterStore(op);
}

LogicalResult WGMMAEmitter::emitRegisterStore(tile::StoreOp op) {
  Value q0 = map.lookup(op.getRow());
  return math().store(op, map, t4, [&](int64_t, int64_t r) {
    return add(add(q0, rowInTile), 8 * r);
  });
}

Value WGMMAEmitter::viewFirstRow(Value view) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, view);
  // A zero row stride (every row the same memory) has offset 0.
  Value stride = arith::MaxUIOp::create(b, loc, meta.getStrides()[2], idx(1));
  return arith::DivUIOp::create(b, loc, meta.getOffset(), stride);
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
  // A varlen kernel stores from inside a branch ptxas cannot prove uniform
  // (emitStore): the persistent blocks' unaligned forms there too.
  const bool varlen = gpu_emit::isVarlenKernel(kernel);
  const bool unaligned = persistent || varlen;
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
    if (!unaligned) {
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
  if (unaligned) {
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
  // Varlen: the tensor map addresses the packed tensor, the view starts at
  // the sequence's first row.
  if (varlen)
    q0 = add(q0, viewFirstRow(map.lookup(op.getDest())));
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
