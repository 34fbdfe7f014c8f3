//===- MaskIntervals.cpp - What a mask region yields over a tile ----------===//

#include "compiler/Analysis/MaskIntervals.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdlib>

using namespace mlir;
using namespace attnc::mask_intervals;

namespace {

/// Magnitudes past this are not tracked: sums and products of bounds stay
/// far from wrapping 64 bits.
constexpr int64_t kMaxMagnitude = int64_t(1) << 62;
constexpr int64_t kPositionBound = int64_t(1) << 31;

/// An integer's range: [lo, hi] as index values, |x| <= mag for every value
/// it can take, nonneg when statically known so.
struct Int {
  Value lo, hi;
  int64_t mag;
  bool nonneg;
};

class Evaluator {
public:
  Evaluator(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  std::optional<Outcome> run(Region &region, ArrayRef<PositionRange> args);

private:
  /// Ops fold as they are made: with constant ranges (and in the common
  /// cases where one side is a constant) the outcome is a constant.
  template <typename OpT, typename... Args> Value make(Args &&...args) {
    return b.createOrFold<OpT>(loc, std::forward<Args>(args)...);
  }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value bit(bool v) { return arith::ConstantIntOp::create(b, loc, v, 1); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return make<arith::CmpIOp>(p, x, y);
  }
  Value sel(Value c, Value x, Value y) {
    return make<arith::SelectOp>(c, x, y);
  }
  Value orI(Value x, Value y) { return make<arith::OrIOp>(x, y); }
  Value andI(Value x, Value y) { return make<arith::AndIOp>(x, y); }
  Value notI(Value x) { return make<arith::XOrIOp>(x, bit(true)); }
  Value smin(Value x, Value y) { return make<arith::MinSIOp>(x, y); }
  Value smax(Value x, Value y) { return make<arith::MaxSIOp>(x, y); }

  /// The range of an integer of `width` bits (64 for index) once `r` is
  /// computed exactly: values that may not fit wrap, so the type's range.
  std::optional<Int> fit(Int r, unsigned width);
  std::optional<Int> integer(Operation *op);
  std::optional<Outcome> boolean(Operation *op);
  std::optional<Outcome> compare(arith::CmpIPredicate pred, const Int &x,
                                 const Int &y);

  OpBuilder &b;
  Location loc;
  llvm::DenseMap<Value, Int> ints;
  llvm::DenseMap<Value, Outcome> bools;
};

unsigned widthOf(Type t) {
  if (t.isIndex())
    return 64;
  if (auto i = dyn_cast<IntegerType>(t); i && i.getWidth() <= 64)
    return i.getWidth();
  return 0; // not an integer the evaluation tracks
}

/// x + y for magnitudes, or nothing past kMaxMagnitude (which keeps every
/// sum of two tracked magnitudes, and so every emitted bound, from
/// wrapping).
std::optional<int64_t> addMagnitudes(int64_t x, int64_t y) {
  if (x > kMaxMagnitude - y)
    return std::nullopt;
  return x + y;
}

std::optional<Int> Evaluator::fit(Int r, unsigned width) {
  if (r.mag > kMaxMagnitude)
    return std::nullopt;
  if (width >= 64)
    return r;
  int64_t max = (int64_t(1) << (width - 1)) - 1, min = -max - 1;
  if (r.mag <= max)
    return r;
  Value fits = andI(cmp(arith::CmpIPredicate::sge, r.lo, idx(min)),
                    cmp(arith::CmpIPredicate::sle, r.hi, idx(max)));
  return Int{sel(fits, r.lo, idx(min)), sel(fits, r.hi, idx(max)), max + 1,
             false};
}

std::optional<Int> Evaluator::integer(Operation *op) {
  unsigned width = widthOf(op->getResult(0).getType());
  if (width < 2)
    return std::nullopt;
  auto operand = [&](unsigned i) -> std::optional<Int> {
    auto it = ints.find(op->getOperand(i));
    if (it == ints.end())
      return std::nullopt;
    return it->second;
  };
  auto constantOf = [&](unsigned i) -> std::optional<int64_t> {
    auto c = op->getOperand(i).getDefiningOp<arith::ConstantOp>();
    if (!c)
      return std::nullopt;
    auto attr = dyn_cast<IntegerAttr>(c.getValue());
    if (!attr)
      return std::nullopt;
    return attr.getValue().getSExtValue();
  };

  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    auto attr = dyn_cast<IntegerAttr>(c.getValue());
    if (!attr)
      return std::nullopt;
    int64_t v = attr.getValue().getSExtValue();
    if (v < -kMaxMagnitude || v > kMaxMagnitude)
      return std::nullopt;
    Value x = idx(v);
    return Int{x, x, std::abs(v), v >= 0};
  }
  if (auto s = dyn_cast<arith::SelectOp>(op)) {
    auto c = bools.find(s.getCondition());
    auto x = operand(1), y = operand(2);
    if (c == bools.end() || !x || !y)
      return std::nullopt;
    // Only x / only y / either: their union.
    Value onlyX = notI(c->second.mayBeFalse), onlyY = notI(c->second.mayBeTrue);
    Value lo = sel(onlyX, x->lo, sel(onlyY, y->lo, smin(x->lo, y->lo)));
    Value hi = sel(onlyX, x->hi, sel(onlyY, y->hi, smax(x->hi, y->hi)));
    return Int{lo, hi, std::max(x->mag, y->mag), x->nonneg && y->nonneg};
  }
  // Casts: the same value when it fits the result.
  const bool fromBool =
      op->getNumOperands() == 1 && op->getOperand(0).getType().isInteger(1);
  if (!fromBool && isa<arith::IndexCastOp, arith::ExtSIOp, arith::TruncIOp,
                       arith::ExtUIOp, arith::IndexCastUIOp>(op)) {
    auto x = operand(0);
    if (!x || (isa<arith::ExtUIOp, arith::IndexCastUIOp>(op) && !x->nonneg))
      return std::nullopt;
    return fit(*x, width);
  }
  if (fromBool && isa<arith::ExtUIOp, arith::ExtSIOp>(op)) {
    auto c = bools.find(op->getOperand(0));
    if (c == bools.end())
      return std::nullopt;
    Outcome o = c->second;
    if (isa<arith::ExtUIOp>(op))
      return Int{sel(o.mayBeFalse, idx(0), idx(1)),
                 sel(o.mayBeTrue, idx(1), idx(0)), 1, true};
    return Int{sel(o.mayBeTrue, idx(-1), idx(0)),
               sel(o.mayBeFalse, idx(0), idx(-1)), 1, false};
  }
  if (op->getNumOperands() != 2)
    return std::nullopt;
  auto x = operand(0), y = operand(1);
  if (!x || !y)
    return std::nullopt;
  if (isa<arith::AddIOp, arith::SubIOp>(op)) {
    std::optional<int64_t> mag = addMagnitudes(x->mag, y->mag);
    if (!mag)
      return std::nullopt;
    if (isa<arith::AddIOp>(op))
      return fit(Int{make<arith::AddIOp>(x->lo, y->lo),
                     make<arith::AddIOp>(x->hi, y->hi), *mag,
                     x->nonneg && y->nonneg},
                 width);
    return fit(Int{make<arith::SubIOp>(x->lo, y->hi),
                   make<arith::SubIOp>(x->hi, y->lo), *mag, false},
               width);
  }
  if (isa<arith::MaxSIOp, arith::MinSIOp>(op) ||
      (isa<arith::MaxUIOp, arith::MinUIOp>(op) && x->nonneg && y->nonneg)) {
    bool max = isa<arith::MaxSIOp, arith::MaxUIOp>(op);
    auto f = [&](Value p, Value q) { return max ? smax(p, q) : smin(p, q); };
    return Int{f(x->lo, y->lo), f(x->hi, y->hi), std::max(x->mag, y->mag),
               max ? (x->nonneg || y->nonneg) : (x->nonneg && y->nonneg)};
  }
  if (isa<arith::MulIOp>(op)) { // by a constant
    std::optional<int64_t> c = constantOf(1);
    Int v = *x;
    if (!c) {
      c = constantOf(0);
      v = *y;
    }
    if (!c || std::abs(*c) > kMaxMagnitude / std::max<int64_t>(v.mag, 1))
      return std::nullopt;
    Value p = make<arith::MulIOp>(v.lo, idx(*c));
    Value q = make<arith::MulIOp>(v.hi, idx(*c));
    if (*c < 0)
      std::swap(p, q);
    return fit(Int{p, q, v.mag * std::abs(*c), v.nonneg && *c >= 0}, width);
  }
  // Division and remainder by a positive constant: monotone in x.
  std::optional<int64_t> c = constantOf(1);
  if (!c || *c <= 0)
    return std::nullopt;
  bool unsignedOp = isa<arith::DivUIOp, arith::RemUIOp>(op);
  if (unsignedOp && !x->nonneg)
    return std::nullopt;
  Value d = idx(*c);
  if (isa<arith::DivUIOp, arith::DivSIOp, arith::CeilDivSIOp,
          arith::FloorDivSIOp, arith::CeilDivUIOp>(op)) {
    if (isa<arith::CeilDivUIOp>(op) && !x->nonneg)
      return std::nullopt;
    auto f = [&](Value v) -> Value {
      if (isa<arith::CeilDivSIOp, arith::CeilDivUIOp>(op))
        return make<arith::CeilDivSIOp>(v, d);
      if (isa<arith::FloorDivSIOp>(op))
        return make<arith::FloorDivSIOp>(v, d);
      return make<arith::DivSIOp>(v, d);
    };
    return Int{f(x->lo), f(x->hi), x->mag, x->nonneg};
  }
  if (isa<arith::RemUIOp, arith::RemSIOp>(op) && x->nonneg) {
    // Within one period: [lo mod c, hi mod c]; else [0, c - 1].
    Value same = cmp(arith::CmpIPredicate::eq, make<arith::DivSIOp>(x->lo, d),
                     make<arith::DivSIOp>(x->hi, d));
    return Int{sel(same, make<arith::RemSIOp>(x->lo, d), idx(0)),
               sel(same, make<arith::RemSIOp>(x->hi, d), idx(*c - 1)),
               std::min(x->mag, *c - 1), true};
  }
  return std::nullopt;
}

std::optional<Outcome> Evaluator::compare(arith::CmpIPredicate pred,
                                          const Int &x, const Int &y) {
  using P = arith::CmpIPredicate;
  // Unsigned comparisons agree with signed ones on non-negative values.
  switch (pred) {
  case P::ult:
  case P::ule:
  case P::ugt:
  case P::uge:
    if (!x.nonneg || !y.nonneg)
      return std::nullopt;
    break;
  default:
    break;
  }
  auto lt = [&](Value p, Value q) { return cmp(P::slt, p, q); };
  auto le = [&](Value p, Value q) { return cmp(P::sle, p, q); };
  // always: the predicate holds for every pair; never: for none.
  Value always, never;
  switch (pred) {
  case P::slt:
  case P::ult:
    always = lt(x.hi, y.lo);
    never = le(y.hi, x.lo);
    break;
  case P::sle:
  case P::ule:
    always = le(x.hi, y.lo);
    never = lt(y.hi, x.lo);
    break;
  case P::sgt:
  case P::ugt:
    always = lt(y.hi, x.lo);
    never = le(x.hi, y.lo);
    break;
  case P::sge:
  case P::uge:
    always = le(y.hi, x.lo);
    never = lt(x.hi, y.lo);
    break;
  case P::eq:
  case P::ne: {
    Value single = andI(andI(cmp(P::eq, x.lo, x.hi), cmp(P::eq, y.lo, y.hi)),
                        cmp(P::eq, x.lo, y.lo));
    Value apart = orI(lt(x.hi, y.lo), lt(y.hi, x.lo));
    always = pred == P::eq ? single : apart;
    never = pred == P::eq ? apart : single;
    break;
  }
  }
  return Outcome{notI(never), notI(always)};
}

std::optional<Outcome> Evaluator::boolean(Operation *op) {
  auto operand = [&](unsigned i) -> std::optional<Outcome> {
    auto it = bools.find(op->getOperand(i));
    if (it == bools.end())
      return std::nullopt;
    return it->second;
  };
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    auto attr = dyn_cast<IntegerAttr>(c.getValue());
    if (!attr)
      return std::nullopt;
    bool v = attr.getValue().getBoolValue();
    return Outcome{bit(v), bit(!v)};
  }
  if (auto c = dyn_cast<arith::CmpIOp>(op)) {
    auto x = ints.find(c.getLhs()), y = ints.find(c.getRhs());
    if (x == ints.end() || y == ints.end())
      return std::nullopt;
    return compare(c.getPredicate(), x->second, y->second);
  }
  if (auto s = dyn_cast<arith::SelectOp>(op)) {
    auto c = operand(0), x = operand(1), y = operand(2);
    if (!c || !x || !y)
      return std::nullopt;
    // x where the condition may hold, y where it may not.
    return Outcome{orI(andI(c->mayBeTrue, x->mayBeTrue),
                       andI(c->mayBeFalse, y->mayBeTrue)),
                   orI(andI(c->mayBeTrue, x->mayBeFalse),
                       andI(c->mayBeFalse, y->mayBeFalse))};
  }
  if (op->getNumOperands() != 2)
    return std::nullopt;
  auto x = operand(0), y = operand(1);
  if (!x || !y)
    return std::nullopt;
  if (isa<arith::AndIOp>(op))
    return Outcome{andI(x->mayBeTrue, y->mayBeTrue),
                   orI(x->mayBeFalse, y->mayBeFalse)};
  if (isa<arith::OrIOp>(op))
    return Outcome{orI(x->mayBeTrue, y->mayBeTrue),
                   andI(x->mayBeFalse, y->mayBeFalse)};
  if (isa<arith::XOrIOp>(op))
    return Outcome{orI(andI(x->mayBeTrue, y->mayBeFalse),
                       andI(x->mayBeFalse, y->mayBeTrue)),
                   orI(andI(x->mayBeTrue, y->mayBeTrue),
                       andI(x->mayBeFalse, y->mayBeFalse))};
  return std::nullopt;
}

std::optional<Outcome> Evaluator::run(Region &region,
                                      ArrayRef<PositionRange> args) {
  if (region.empty() || !region.hasOneBlock())
    return std::nullopt;
  Block &block = region.front();
  for (auto [arg, range] : llvm::zip(block.getArguments(), args))
    if (arg.getType().isIndex())
      ints[arg] = Int{range.lo, range.hi, kPositionBound, true};
  for (Operation &op : block.without_terminator()) {
    if (op.getNumResults() != 1 || op.getNumRegions())
      continue; // unknown: its result has no entry
    Type t = op.getResult(0).getType();
    if (t.isInteger(1)) {
      if (auto o = boolean(&op))
        bools[op.getResult(0)] = *o;
    } else if (auto i = integer(&op)) {
      ints[op.getResult(0)] = *i;
    }
  }
  Operation *yield = block.getTerminator();
  if (!yield || yield->getNumOperands() != 1)
    return std::nullopt;
  auto it = bools.find(yield->getOperand(0));
  if (it == bools.end())
    return std::nullopt;
  return it->second;
}

} // namespace

PositionRange attnc::mask_intervals::clampedRange(OpBuilder &b, Location loc,
                                                  Value first, Value last,
                                                  Value seq) {
  Value end = arith::SubIOp::create(b, loc, seq,
                                    arith::ConstantIndexOp::create(b, loc, 1));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  auto clamp = [&](Value x) -> Value {
    return arith::MaxSIOp::create(b, loc,
                                  arith::MinSIOp::create(b, loc, x, end), zero);
  };
  return {clamp(first), clamp(last)};
}

std::optional<Outcome>
attnc::mask_intervals::evaluate(OpBuilder &b, Location loc, Region &region,
                                ArrayRef<PositionRange> args) {
  return Evaluator(b, loc).run(region, args);
}

bool attnc::mask_intervals::isAnalyzable(Region &region) {
  // Evaluated into a scratch block that is dropped.
  MLIRContext *ctx = region.getContext();
  Block scratch;
  OpBuilder b(ctx);
  b.setInsertionPointToStart(&scratch);
  Location loc = UnknownLoc::get(ctx);
  SmallVector<PositionRange> args;
  for (int i = 0; i < 4; ++i) {
    Value v = scratch.addArgument(b.getIndexType(), loc);
    args.push_back({v, v});
  }
  bool known = Evaluator(b, loc).run(region, args).has_value();
  for (Operation &op : scratch)
    op.dropAllReferences();
  while (!scratch.empty())
    scratch.back().erase();
  return known;
}
