//===- HostGrid.cpp - a kernel's grid of programs as host loops -----------===//
#include "compiler/LaunchABI.h"
#include "compiler/RowwiseABI.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace attnc {
#define GEN_PASS_DEF_HOSTGRID
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;

namespace {

/// The argument whose `tile.param` is `name`.
Value paramNamed(func::FuncOp fn, StringRef name) {
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto a = fn.getArgAttrOfType<StringAttr>(i, "tile.param");
        a && a.getValue() == name)
      return fn.getArgument(i);
  return {};
}

class HostGridPass : public attnc::impl::HostGridBase<HostGridPass> {
public:
  using Base::Base;
  /// rowwise_v1 and kv_append_v1: the body is one row's; loop over the
  /// rows.
  void runRowwise(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    Operation *ret = body.getTerminator();
    OpBuilder b(&body, body.begin());
    Location loc = fn.getLoc();
    Value rows = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                            paramNamed(fn, "rows"));
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    b.setInsertionPoint(ret);
    auto loop = scf::ForOp::create(b, loc, c0, rows, c1);
    SmallVector<Operation *> programOps;
    for (Operation &op : body.without_terminator())
      if (&op != loop && c1.getDefiningOp()->isBeforeInBlock(&op))
        programOps.push_back(&op);
    for (Operation *op : programOps)
      op->moveBefore(loop.getBody()->getTerminator());
    fn.walk([&](tile::ProgramIdOp pid) {
      pid.replaceAllUsesWith(loop.getInductionVar());
      pid.erase();
    });
  }
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    auto launch = fn->getAttrOfType<tile::LaunchAttr>("tile.launch");
    if (!launch)
      return;
    StringRef rule = launch.getRule();
    if (rule == abi::kGridRuleRowwise || rule == abi::kGridRuleKVAppend)
      return runRowwise(fn);
    const bool bwdMain = rule == abi::kGridRuleAttentionBwd;
    if (rule != abi::kGridRuleAttentionFwd &&
        rule != abi::kGridRuleDecodeSplit &&
        rule != abi::kGridRuleDecodeCombine && rule != abi::kGridRuleLseMerge &&
        rule != abi::kGridRuleAttentionBwdPreprocess && !bwdMain &&
        rule != abi::kGridRuleAttentionBwdConvert) {
      fn.emitError() << "attnc-host-grid does not know launch rule '" << rule
                     << "'";
      return signalPassFailure();
    }
    Block &body = fn.getBody().front();
    Operation *ret = body.getTerminator();
    OpBuilder b(ret);
    Location loc = fn.getLoc();
    auto idx = [&](StringRef param) {
      return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                        paramNamed(fn, param));
    };
    // attention_fwd_v1, decode_combine_v2, lse_merge_v1 and the backward's
    // preprocess and convert: grid = (ceil(seq_q / block_m), heads, batch);
    // decode_split_v3: (num_splits, kv heads, batch); attention_bwd_v1:
    // (ceil(seq_kv / block_n), kv heads, batch). The programs run one after
    // another, so the backward's tile.store_add needs no atomics here.
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    auto tilesOf = [&](StringRef seq, int64_t block) -> Value {
      return arith::CeilDivSIOp::create(
          b, loc, idx(seq), arith::ConstantIndexOp::create(b, loc, block));
    };
    Value tiles = rule == abi::kGridRuleDecodeSplit ? Value(idx("num_splits"))
                  : bwdMain ? tilesOf("seq_kv", launch.getBlockN())
                            : tilesOf("seq_q", launch.getBlockM());
    Value heads = arith::ConstantIndexOp::create(b, loc, launch.getHeads());
    Value batch = idx("batch");

    SmallVector<Operation *> programOps;
    for (Operation &op : body.without_terminator())
      if (op.isBeforeInBlock(c0.getDefiningOp()))
        programOps.push_back(&op);

    auto outer = scf::ForOp::create(b, loc, c0, batch, c1);
    b.setInsertionPointToStart(outer.getBody());
    auto middle = scf::ForOp::create(b, loc, c0, heads, c1);
    b.setInsertionPointToStart(middle.getBody());
    auto inner = scf::ForOp::create(b, loc, c0, tiles, c1);
    Operation *innerYield = inner.getBody()->getTerminator();
    for (Operation *op : programOps)
      op->moveBefore(innerYield);
    Value ids[3] = {inner.getInductionVar(), middle.getInductionVar(),
                    outer.getInductionVar()};
    fn.walk([&](tile::ProgramIdOp pid) {
      pid.replaceAllUsesWith(ids[pid.getDim()]);
      pid.erase();
    });
  }
};

} // namespace
