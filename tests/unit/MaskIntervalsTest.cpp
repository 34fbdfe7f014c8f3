//===- MaskIntervalsTest.cpp - interval evaluation of mask regions --------===//
//
// The evaluation must be sound (never "cannot be false" where some element
// of the tile is masked, never "cannot be true" where one is visible: a
// wrong answer drops a mask or skips a visible tile) and, for the masks
// users write as mods of the built-in ones (causal, windows, prefix-LM,
// blocks), exact. Ground truth: the region itself, folded element by
// element with MLIR's folders on random tiles.
//
//===----------------------------------------------------------------------===//
#include "compiler/Analysis/MaskIntervals.h"
#include "compiler/Registration.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>
#include <random>

using namespace mlir;
using namespace attnc;

namespace {

struct Fixture {
  MLIRContext ctx;
  Fixture() {
    DialectRegistry registry;
    registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }
  /// A mask region written as a function of (b, h, i, j) returning i1.
  OwningOpRef<ModuleOp> parse(const std::string &body) {
    std::string text = "func.func @mask(%b: index, %h: index, %i: index, "
                       "%j: index) -> i1 {\n" +
                       body + "\n}\n";
    return parseSourceString<ModuleOp>(text, &ctx);
  }
};

Region &maskOf(ModuleOp m) {
  return (*m.getOps<func::FuncOp>().begin()).getBody();
}

/// What the region yields at one (b, h, i, j), by folding each op.
bool foldAt(Region &region, ArrayRef<int64_t> at) {
  Block &block = region.front();
  Builder b(region.getContext());
  DenseMap<Value, Attribute> known;
  for (auto [arg, v] : llvm::zip(block.getArguments(), at))
    known[arg] = b.getIndexAttr(v);
  for (Operation &op : block.without_terminator()) {
    SmallVector<Attribute> operands;
    for (Value v : op.getOperands())
      operands.push_back(known.lookup(v));
    SmallVector<OpFoldResult> results;
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      known[c] = c.getValue();
      continue;
    }
    REQUIRE(succeeded(op.fold(operands, results)));
    REQUIRE(results.size() == 1);
    if (auto a = dyn_cast<Attribute>(results[0]))
      known[op.getResult(0)] = a;
    else
      known[op.getResult(0)] = known.lookup(cast<Value>(results[0]));
    REQUIRE(known[op.getResult(0)]);
  }
  auto r = dyn_cast_or_null<IntegerAttr>(
      known.lookup(block.getTerminator()->getOperand(0)));
  REQUIRE(r);
  return r.getValue().getBoolValue();
}

struct Tile {
  int64_t b, h, q0, q1, k0, k1; // rows [q0, q1], keys [k0, k1]
};

struct Verdict {
  bool mayBeTrue, mayBeFalse;
};

/// The evaluation's verdict on a tile (constants: it folds as it is made).
std::optional<Verdict> evaluateOn(Region &region, const Tile &t) {
  MLIRContext *ctx = region.getContext();
  Block scratch;
  OpBuilder b(ctx);
  b.setInsertionPointToStart(&scratch);
  Location loc = UnknownLoc::get(ctx);
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  std::vector<mask_intervals::PositionRange> args = {{c(t.b), c(t.b)},
                                                     {c(t.h), c(t.h)},
                                                     {c(t.q0), c(t.q1)},
                                                     {c(t.k0), c(t.k1)}};
  auto outcome = mask_intervals::evaluate(b, loc, region, args);
  std::optional<Verdict> v;
  if (outcome) {
    auto constant = [](Value x) {
      REQUIRE((matchPattern(x, m_One()) || matchPattern(x, m_Zero())));
      return matchPattern(x, m_One());
    };
    v = Verdict{constant(outcome->mayBeTrue), constant(outcome->mayBeFalse)};
  }
  for (Operation &op : scratch)
    op.dropAllReferences();
  while (!scratch.empty())
    scratch.back().erase();
  return v;
}

/// Random tiles: sound everywhere, and exact when `exact`.
void check(Fixture &f, const std::string &body, bool exact, uint64_t seed) {
  auto m = f.parse(body);
  REQUIRE(m);
  Region &region = maskOf(*m);
  REQUIRE(mask_intervals::isAnalyzable(region));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pos(0, 120), len(0, 40), bh(0, 3);
  int visibleSeen = 0, maskedSeen = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Tile t{bh(rng), bh(rng), pos(rng), 0, pos(rng), 0};
    t.q1 = t.q0 + len(rng);
    t.k1 = t.k0 + len(rng);
    bool anyTrue = false, anyFalse = false;
    for (int64_t i = t.q0; i <= t.q1; ++i)
      for (int64_t j = t.k0; j <= t.k1; ++j)
        (foldAt(region, {t.b, t.h, i, j}) ? anyTrue : anyFalse) = true;
    auto v = evaluateOn(region, t);
    REQUIRE(v);
    INFO(body << "\nrows [" << t.q0 << ", " << t.q1 << "] keys [" << t.k0
              << ", " << t.k1 << "] b " << t.b << " h " << t.h);
    if (anyTrue)
      REQUIRE(v->mayBeTrue);
    if (anyFalse)
      REQUIRE(v->mayBeFalse);
    if (exact) {
      REQUIRE(v->mayBeTrue == anyTrue);
      REQUIRE(v->mayBeFalse == anyFalse);
    }
    visibleSeen += !anyFalse;
    maskedSeen += !anyTrue;
  }
  if (exact) { // the trials covered wholly visible and wholly masked tiles
    CHECK(visibleSeen > 0);
    CHECK(maskedSeen > 0);
  }
}

} // namespace

TEST_CASE("mask intervals: the built-in masks written as mods are exact",
          "[mask-intervals]") {
  Fixture f;
  check(f, R"(
  %v = arith.cmpi sge, %i, %j : index
  return %v : i1)",
        true, 1);
  // Prefix-LM: the first 40 keys are bidirectional.
  check(f, R"(
  %c40 = arith.constant 40 : index
  %p = arith.cmpi slt, %j, %c40 : index
  %c = arith.cmpi sge, %i, %j : index
  %v = arith.ori %p, %c : i1
  return %v : i1)",
        true, 2);
  // Sliding window of 16 keys to the left, causal, through i32.
  check(f, R"(
  %i32 = arith.index_cast %i : index to i32
  %j32 = arith.index_cast %j : index to i32
  %d = arith.subi %i32, %j32 : i32
  %c0 = arith.constant 0 : i32
  %c16 = arith.constant 16 : i32
  %a = arith.cmpi sge, %d, %c0 : i32
  %z = arith.cmpi sle, %d, %c16 : i32
  %v = arith.andi %a, %z : i1
  return %v : i1)",
        true, 3);
  // Blocks of 32 on the diagonal.
  check(f, R"(
  %c32 = arith.constant 32 : index
  %di = arith.divui %i, %c32 : index
  %dj = arith.divui %j, %c32 : index
  %v = arith.cmpi eq, %di, %dj : index
  return %v : i1)",
        true, 4);
}

TEST_CASE("mask intervals: sound on selects, remainders, casts, wrapping "
          "arithmetic and batch/head terms",
          "[mask-intervals]") {
  Fixture f;
  check(f, R"(
  %c8 = arith.constant 8 : index
  %c4 = arith.constant 4 : index
  %r = arith.remui %j, %c8 : index
  %v = arith.cmpi ult, %r, %c4 : index
  return %v : i1)",
        false, 5);
  check(f, R"(
  %c50 = arith.constant 50 : index
  %c = arith.cmpi slt, %i, %j : index
  %s = arith.select %c, %i, %j : index
  %v = arith.cmpi sge, %s, %c50 : index
  return %v : i1)",
        false, 6);
  // i32 arithmetic that wraps for rows past 647.
  check(f, R"(
  %big = arith.constant 2147483000 : i32
  %z = arith.constant 0 : i32
  %x = arith.index_cast %i : index to i32
  %y = arith.addi %x, %big : i32
  %v = arith.cmpi sgt, %y, %z : i32
  return %v : i1)",
        false, 7);
  check(f, R"(
  %c1 = arith.constant 1 : index
  %m3 = arith.constant -3 : i64
  %c10 = arith.constant 10 : i64
  %h1 = arith.cmpi eq, %h, %c1 : index
  %e = arith.extui %h1 : i1 to i64
  %j64 = arith.index_cast %j : index to i64
  %m = arith.muli %e, %m3 : i64
  %s = arith.addi %m, %j64 : i64
  %w = arith.cmpi sle, %s, %c10 : i64
  %c = arith.cmpi sge, %i, %j : index
  %v = arith.xori %w, %c : i1
  return %v : i1)",
        false, 8);
}

TEST_CASE("mask intervals: a region computing in floats or reading memory "
          "says nothing",
          "[mask-intervals]") {
  Fixture f;
  auto analyzable = [&](const std::string &body) {
    auto m = f.parse(body);
    REQUIRE(m);
    return mask_intervals::isAnalyzable(maskOf(*m));
  };
  // Index arithmetic that may wrap 64 bits (j + 2^63 - 1 < 0 holds for
  // every key but 0): its bounds would wrap too, so it is not evaluated.
  CHECK_FALSE(analyzable(R"(
  %big = arith.constant 9223372036854775807 : index
  %c0 = arith.constant 0 : index
  %s = arith.addi %j, %big : index
  %v = arith.cmpi slt, %s, %c0 : index
  return %v : i1)"));
  CHECK_FALSE(analyzable(R"(
  %big = arith.constant 4611686018427387904 : index
  %c0 = arith.constant 0 : index
  %s = arith.addi %j, %big : index
  %t = arith.addi %s, %big : index
  %v = arith.cmpi slt, %t, %c0 : index
  return %v : i1)"));
  CHECK_FALSE(analyzable(R"(
  %x = arith.index_cast %i : index to i64
  %f = arith.sitofp %x : i64 to f32
  %z = arith.constant 0.5 : f32
  %v = arith.cmpf ogt, %f, %z : f32
  return %v : i1)"));
}
