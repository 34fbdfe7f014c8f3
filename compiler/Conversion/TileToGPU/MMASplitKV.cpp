//===- MMASplitKV.cpp - the decode kernel's merges (sm_80) ----------------===//
//
// The mma.sync mapping's ops of the split-KV decode kernel: one split's
// state folded into a running one (tile.lse_accumulate), the arrival that
// picks the split which merges the others (tile.split_arrive), and the
// merge of the key warps' states after the KV loop.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/MMAEmitter.h"

#include <limits>

using namespace mlir;
using namespace attnc;
using namespace attnc::mma;

/// The sum is kept as per-lane partial sums that tile.finalize reduces over
/// the quad (as emitSoftmaxUpdate does): the weight w goes to lane t = 0.
LogicalResult MMAEmitter::emitLseAccumulate(tile::LseAccumulateOp op) {
  const Frags &acc = frags[op.getAcc()], &part = frags[op.getPartial()];
  const Frags &lse = frags[op.getLse()];
  const Frags &m = frags[op.getMax()], &l = frags[op.getSum()];
  auto pairT = VectorType::get({2}, b.getF32Type());
  auto cT = VectorType::get({2, 2}, b.getF32Type());
  Value lane0 =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t4, idx(0));
  Frags newMax{Frags::RowStat, {}}, newSum{Frags::RowStat, {}};
  Value a[2], w[2];
  for (int64_t r = 0; r < 2; ++r) {
    Value t = arith::MulFOp::create(b, loc, lse.regs[r],
                                    f32Const(b, loc, gpu_emit::kLog2e));
    gpu_emit::StateMerge merge(b, loc, {m.regs[r], t});
    Value mx = merge.max();
    Value ar = merge.weight(m.regs[r]);
    Value wr = merge.weight(t);
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
    SmallVector<Value> out(own.size());
    for (size_t s = 0; s < stats; ++s) {
      const size_t at = accValues + s;
      SmallVector<Value> maxima;
      for (auto &st : states)
        maxima.push_back(st[at]);
      // Every warp saw only -inf (masked or past the end): the weights are
      // 0, never NaN (StateMerge).
      gpu_emit::StateMerge merge(b, loc, maxima);
      SmallVector<Value> weight;
      for (Value mw : maxima)
        weight.push_back(merge.weight(mw));
      out[at] = merge.max();
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
