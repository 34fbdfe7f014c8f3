//===- FuseElementwise.cpp - a chain of attn row ops -> one row kernel ----===//
//
// Each input is read once and each output written once: the chain's
// intermediate values never leave the program, whatever its length. The
// kernel is written for one row; values are 1-D tiles of the row's d
// columns (per-row scalars, the results of row reductions, are f32 values
// splat when they meet a tile).
//
//===----------------------------------------------------------------------===//
#include "attnc/abi/RowTensors.h"
#include "compiler/RowwiseABI.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Attn/IR/AttnOps.h"
#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <map>
#include <string>

namespace attnc {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;

namespace {

bool isRowOp(Operation *op) {
  return isa<attn::MapOp, attn::ReduceOp, attn::SliceOp, attn::SiluMulOp,
             attn::GeluMulOp, attn::AddRMSNormOp, attn::RopeOp>(op);
}

/// RoPE (attn.rope): a kernel of its own, in place. The row is one token:
/// its position picks the cos/sin row (`repeat = 2` loads give each pair
/// its angle), and every head's first rotary_dim columns of query and key
/// are loaded, rotated in f32 and stored back; the other columns are never
/// touched. Heads go in groups whose loads are all issued before the
/// group's first store (stores may alias later loads, so nothing would
/// move them earlier).
FailureOr<func::FuncOp> buildRopeKernel(func::FuncOp fn, attn::RopeOp rope,
                                        RowSchedule schedule) {
  MLIRContext *ctx = fn.getContext();
  Location loc = rope.getLoc();
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  if (&fn.getBody().front().front() != rope.getOperation() ||
      rope->getNextNode() != ret.getOperation() ||
      !llvm::equal(ret.getOperands(), rope.getResults()))
    return rope.emitOpError()
           << "must be alone in its function and return its two results "
              "(the kernel rotates query and key in place)";
  SmallVector<Value> ins = {rope.getPositions(), rope.getQuery(), rope.getKey(),
                            rope.getCosSinCache()};
  const auto &defaults = abi::kRopeTensors;
  SmallVector<std::string> names;
  SmallVector<Type> argTypes;
  for (auto [i, v] : llvm::enumerate(ins)) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg)
      return rope.emitOpError() << "expected its operands to be the "
                                   "function's arguments";
    std::string n = defaults[i];
    if (auto attrs = fn.getArgAttrDict(arg.getArgNumber()))
      if (auto s = attrs.getAs<StringAttr>("attn.param"))
        n = s.getValue().str();
    names.push_back(n);
    argTypes.push_back(MemRefType::get(
        {}, cast<RankedTensorType>(v.getType()).getElementType()));
  }
  OpBuilder b(fn);
  Type i64 = b.getI64Type();
  argTypes.append({i64, i64, i64, i64}); // rows, 3 strides
  auto kernel = func::FuncOp::create(b, fn.getLoc(), fn.getName(),
                                     FunctionType::get(ctx, argTypes, {}));
  const int64_t hs = rope.getHeadSize(), rot = rope.getRotaryDim();
  const bool neox = rope.getIsNeox();
  kernel->setAttr("tile.launch",
                  tile::LaunchAttr::get(ctx, abi::kGridRuleRowwise,
                                        schedule.rowsPerProgram,
                                        schedule.threadsPerRow, 0));
  kernel->setAttr("tile.row_length", b.getI64IntegerAttr(rot));
  for (unsigned i = 0; i < 4; ++i)
    kernel.setArgAttr(i, "tile.param", b.getStringAttr(names[i]));
  kernel.setArgAttr(4, "tile.param", b.getStringAttr(abi::kRowsParam));
  for (unsigned i = 1; i < 4; ++i)
    kernel.setArgAttr(
        4 + i, "tile.param",
        b.getStringAttr(names[i] + std::string(abi::kRowStrideSuffix)));

  Block *entry = kernel.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value row = tile::ProgramIdOp::create(b, loc, b.getIndexType(), 0);
  Value rows = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                          entry->getArgument(4));
  auto view2d = [&](unsigned arg, int64_t w) -> Value {
    Value stride = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                              entry->getArgument(4 + arg));
    Type elt =
        cast<MemRefType>(entry->getArgument(arg).getType()).getElementType();
    int64_t dyn = ShapedType::kDynamic;
    auto type = MemRefType::get({dyn, w}, elt,
                                StridedLayoutAttr::get(ctx, 0, {dyn, 1}));
    // The cache has its own row count (max_position); nothing bounds it
    // here, as nothing bounds vLLM's.
    return memref::ReinterpretCastOp::create(
        b, loc, type, entry->getArgument(arg), b.getIndexAttr(0),
        ArrayRef<OpFoldResult>{arg == 3 ? cst(int64_t(1) << 30) : rows,
                               b.getIndexAttr(w)},
        ArrayRef<OpFoldResult>{stride, b.getIndexAttr(1)});
  };
  auto qT = cast<RankedTensorType>(rope.getQuery().getType());
  auto kT = cast<RankedTensorType>(rope.getKey().getType());
  Type posElt = cast<MemRefType>(argTypes[0]).getElementType();
  Value posView = memref::ReinterpretCastOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, posElt),
      entry->getArgument(0), b.getIndexAttr(0), ArrayRef<OpFoldResult>{rows},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  Value qView = view2d(1, qT.getDimSize(1));
  Value kView = view2d(2, kT.getDimSize(1));
  Value cView = view2d(3, rot);
  Value pos = arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      memref::LoadOp::create(b, loc, posView, ValueRange{row}));
  Type elt = qT.getElementType(), f32 = b.getF32Type();
  auto tileT = [&](Type t) { return RankedTensorType::get({rot}, t); };
  auto angle = [&](int64_t col) {
    auto load = tile::LoadRowOp::create(b, loc, tileT(elt), cView,
                                        ValueRange{pos, cst(col)});
    load.setRepeat(2);
    load.setInterleaved(!neox);
    return arith::ExtFOp::create(b, loc, tileT(f32), load.getResult())
        .getResult();
  };
  Value cosT = angle(0), sinT = angle(rot / 2);
  struct Head {
    Value view;
    int64_t col;
  };
  SmallVector<Head> heads;
  for (int64_t h = 0; h < qT.getDimSize(1) / hs; ++h)
    heads.push_back({qView, h * hs});
  for (int64_t h = 0; h < kT.getDimSize(1) / hs; ++h)
    heads.push_back({kView, h * hs});
  constexpr size_t kGroup = 8;
  for (size_t g = 0; g < heads.size(); g += kGroup) {
    size_t end = std::min(heads.size(), g + kGroup);
    SmallVector<Value> xs;
    for (size_t i = g; i < end; ++i)
      xs.push_back(tile::LoadRowOp::create(b, loc, tileT(elt), heads[i].view,
                                           ValueRange{row, cst(heads[i].col)}));
    for (size_t i = g; i < end; ++i) {
      Value x = arith::ExtFOp::create(b, loc, tileT(f32), xs[i - g]);
      auto partner = tile::RotatePairsOp::create(b, loc, x.getType(), x);
      partner.setInterleaved(!neox);
      Value r =
          arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, x, cosT),
                                arith::MulFOp::create(b, loc, partner, sinT));
      tile::StoreRowOp::create(
          b, loc, arith::TruncFOp::create(b, loc, tileT(elt), r), heads[i].view,
          ValueRange{row, cst(heads[i].col)});
    }
  }
  func::ReturnOp::create(b, loc);
  return kernel;
}

/// Threads per row of a RoPE kernel: they must split each head's rotary
/// part (and, NeoX, each half) into whole vectors, so a thread owns both
/// chunks of its pairs; about 128 threads per program.
RowSchedule ropeSchedule(attn::RopeOp rope) {
  int64_t chunks = rope.getRotaryDim() / kRowVector;
  int64_t limit = rope.getIsNeox() ? chunks / 2 : chunks;
  int64_t t = 1;
  while (t * 2 <= std::min<int64_t>(limit, 32) && limit % (t * 2) == 0)
    t *= 2;
  return {t, std::max<int64_t>(1, 128 / t)};
}

/// Builds the row kernel of one function.
class RowKernelBuilder {
public:
  RowKernelBuilder(func::FuncOp fn, int64_t d) : fn(fn), d(d), b(fn) {}

  FailureOr<func::FuncOp> build(RowSchedule schedule);

private:
  struct Tensor {
    Value ptr;             // the kernel argument
    RankedTensorType type; // the attn-level type
    Value view;            // memref view, built on first use
  };

  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  RankedTensorType tileType(Type elt) {
    return RankedTensorType::get({d}, elt);
  }
  Value view(Tensor &t);
  /// Columns [col, col + d) of input `arg` (loaded once per column).
  Value loadInput(unsigned arg, int64_t col);
  /// The tile (or per-row f32 scalar) of an attn value.
  FailureOr<Value> lookup(Value v, Operation *user);
  /// A tile of `elt` elements: extended/truncated, and splat from scalars.
  Value asTile(Value v, Type elt);
  Value splatF32(float v) {
    auto t = tileType(b.getF32Type());
    return arith::ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, v));
  }
  FailureOr<Value> emitMap(attn::MapOp op);
  LogicalResult emitOp(Operation &op);
  Value gated(Value x, bool gelu);

  func::FuncOp fn;
  int64_t d;
  OpBuilder b;
  Location loc = fn.getLoc();
  Value row;
  std::vector<Tensor> tensors; // inputs then outputs
  std::map<std::pair<unsigned, int64_t>, Value> loaded;
  DenseMap<Value, std::pair<unsigned, int64_t>>
      slices;                        // attn value -> input, column
  IRMapping values;                  // attn -> tile
  DenseMap<unsigned, Value> strides; // tensor -> i64 arg
  Value rowsIndex;
};

Value RowKernelBuilder::view(Tensor &t) {
  if (t.view)
    return t.view;
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointAfterValue(rowsIndex);
  Type elt = t.type.getElementType();
  if (t.type.getRank() == 1) {
    auto type = MemRefType::get({t.type.getDimSize(0)}, elt);
    t.view = memref::ReinterpretCastOp::create(
        b, loc, type, t.ptr, 0, ArrayRef<int64_t>{t.type.getDimSize(0)},
        ArrayRef<int64_t>{1});
    return t.view;
  }
  unsigned index = &t - tensors.data();
  Value stride =
      arith::IndexCastOp::create(b, loc, b.getIndexType(), strides[index]);
  int64_t dyn = ShapedType::kDynamic, w = t.type.getDimSize(1);
  auto type = MemRefType::get(
      {dyn, w}, elt, StridedLayoutAttr::get(b.getContext(), 0, {dyn, 1}));
  t.view = memref::ReinterpretCastOp::create(
      b, loc, type, t.ptr, b.getIndexAttr(0),
      ArrayRef<OpFoldResult>{rowsIndex, b.getIndexAttr(w)},
      ArrayRef<OpFoldResult>{stride, b.getIndexAttr(1)});
  return t.view;
}

Value RowKernelBuilder::loadInput(unsigned arg, int64_t col) {
  auto key = std::make_pair(arg, col);
  if (auto it = loaded.find(key); it != loaded.end())
    return it->second;
  Tensor &t = tensors[arg];
  Value v = view(t);
  SmallVector<Value> idx;
  if (t.type.getRank() == 2)
    idx.push_back(row);
  idx.push_back(cst(col));
  Value tileV = tile::LoadRowOp::create(
      b, loc, tileType(t.type.getElementType()), v, idx);
  loaded[key] = tileV;
  return tileV;
}

FailureOr<Value> RowKernelBuilder::lookup(Value v, Operation *user) {
  if (Value t = values.lookupOrNull(v))
    return t;
  auto arg = dyn_cast<BlockArgument>(v);
  std::pair<unsigned, int64_t> src;
  if (arg) {
    src = {arg.getArgNumber(), 0};
  } else if (auto it = slices.find(v); it != slices.end()) {
    src = it->second;
  } else {
    return user->emitOpError() << "operand has no value in the fused kernel";
  }
  auto type = cast<RankedTensorType>(tensors[src.first].type);
  if (type.getRank() == 2 && type.getDimSize(1) == 1 && !slices.count(v)) {
    // A per-row scalar input, [rows, 1].
    Value x = memref::LoadOp::create(b, loc, view(tensors[src.first]),
                                     ValueRange{row, cst(0)});
    if (!x.getType().isF32())
      x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
    values.map(v, x);
    return x;
  }
  int64_t width = type.getDimSize(type.getRank() - 1);
  if (!slices.count(v) && width != d)
    return user->emitOpError()
           << "expected a row of " << d
           << " elements (the kernel's row length) or a slice of one, got "
           << Type(type);
  return loadInput(src.first, src.second);
}

Value RowKernelBuilder::asTile(Value v, Type elt) {
  if (!isa<RankedTensorType>(v.getType())) {
    if (v.getType() != elt)
      v = elt.getIntOrFloatBitWidth() > v.getType().getIntOrFloatBitWidth()
              ? Value(arith::ExtFOp::create(b, loc, elt, v))
              : Value(arith::TruncFOp::create(b, loc, elt, v));
    return tensor::SplatOp::create(b, loc, v, tileType(elt));
  }
  Type from = cast<RankedTensorType>(v.getType()).getElementType();
  if (from == elt)
    return v;
  if (elt.getIntOrFloatBitWidth() > from.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, tileType(elt), v);
  return arith::TruncFOp::create(b, loc, tileType(elt), v);
}

FailureOr<Value> RowKernelBuilder::emitMap(attn::MapOp op) {
  Block &body = op.getBody().front();
  IRMapping m;
  for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs())) {
    FailureOr<Value> t = lookup(input, op);
    if (failed(t))
      return failure();
    m.map(arg, asTile(*t, arg.getType()));
  }
  for (Operation &inner : body.without_terminator()) {
    if (auto c = dyn_cast<arith::ConstantOp>(inner)) {
      auto t = tileType(c.getType());
      m.map(c.getResult(),
            arith::ConstantOp::create(
                b, loc, t,
                DenseElementsAttr::get(t, cast<TypedAttr>(c.getValue()))));
      continue;
    }
    // Every other body op is elementwise (pure arith/math): the same op on
    // the row's tiles.
    Operation *clone = b.clone(inner, m);
    for (OpResult r : clone->getResults())
      r.setType(tileType(r.getType()));
  }
  return m.lookup(cast<attn::YieldOp>(body.getTerminator()).getValues()[0]);
}

/// silu(g) · u or gelu_tanh(g) · u, in f32, of the two halves of x.
Value RowKernelBuilder::gated(Value x, bool gelu) {
  unsigned arg = 0;
  int64_t col = 0;
  if (auto a = dyn_cast<BlockArgument>(x))
    arg = a.getArgNumber();
  else
    std::tie(arg, col) = slices.lookup(x);
  Type f32 = b.getF32Type();
  Value g = asTile(loadInput(arg, col), f32);
  Value u = asTile(loadInput(arg, col + d), f32);
  Value act;
  if (!gelu) { // g / (1 + exp(-g))
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, g));
    act = arith::DivFOp::create(
        b, loc, g, arith::AddFOp::create(b, loc, splatF32(1.0f), e));
  } else { // 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
    Value g3 =
        arith::MulFOp::create(b, loc, g, arith::MulFOp::create(b, loc, g, g));
    Value inner = arith::MulFOp::create(
        b, loc, splatF32(0.7978845608028654f),
        arith::AddFOp::create(
            b, loc, g, arith::MulFOp::create(b, loc, splatF32(0.044715f), g3)));
    Value t = math::TanhOp::create(b, loc, inner);
    act = arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, splatF32(0.5f), g),
        arith::AddFOp::create(b, loc, splatF32(1.0f), t));
  }
  return arith::MulFOp::create(b, loc, act, u);
}

LogicalResult RowKernelBuilder::emitOp(Operation &op) {
  loc = op.getLoc();
  Type f32 = b.getF32Type();
  auto eltOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  if (auto slice = dyn_cast<attn::SliceOp>(op)) {
    Value in = slice.getInput();
    if (slice.getSize() != d &&
        !llvm::all_of(slice->getUsers(),
                      [](Operation *u) { return isa<attn::SliceOp>(u); }))
      return op.emitOpError()
             << "expected a slice of " << d
             << " columns (the kernel's row length), got " << slice.getSize();
    if (auto a = dyn_cast<BlockArgument>(in)) {
      slices[slice.getResult()] = {a.getArgNumber(), slice.getOffset()};
      return success();
    }
    if (auto it = slices.find(in); it != slices.end()) {
      slices[slice.getResult()] = {it->second.first,
                                   it->second.second + slice.getOffset()};
      return success();
    }
    return op.emitOpError() << "can slice only the kernel's inputs: the "
                               "fused kernel loads each input once by columns";
  }
  if (auto map = dyn_cast<attn::MapOp>(op)) {
    FailureOr<Value> r = emitMap(map);
    if (failed(r))
      return failure();
    values.map(map.getResult(), *r);
    return success();
  }
  if (auto red = dyn_cast<attn::ReduceOp>(op)) {
    FailureOr<Value> in = lookup(red.getInput(), &op);
    if (failed(in))
      return failure();
    values.map(red.getResult(),
               tile::ReduceRowOp::create(b, loc, f32, red.getKind(),
                                         asTile(*in, f32)));
    return success();
  }
  if (auto silu = dyn_cast<attn::SiluMulOp>(op)) {
    values.map(silu.getResult(),
               asTile(gated(silu.getInput(), false), eltOf(silu.getResult())));
    return success();
  }
  if (auto gelu = dyn_cast<attn::GeluMulOp>(op)) {
    values.map(gelu.getResult(),
               asTile(gated(gelu.getInput(), true), eltOf(gelu.getResult())));
    return success();
  }
  if (auto norm = dyn_cast<attn::AddRMSNormOp>(op)) {
    FailureOr<Value> x = lookup(norm.getInput(), &op);
    FailureOr<Value> r = lookup(norm.getResidual(), &op);
    FailureOr<Value> w = lookup(norm.getWeight(), &op);
    if (failed(x) || failed(r) || failed(w))
      return failure();
    Type elt = eltOf(norm.getInput());
    // The new residual is rounded to the element type, and the norm is of
    // what is stored (as vLLM's fused_add_rms_norm).
    Value h = asTile(
        arith::AddFOp::create(b, loc, asTile(*x, f32), asTile(*r, f32)), elt);
    Value hf = asTile(h, f32);
    Value ms =
        tile::ReduceRowOp::create(b, loc, f32, attn::ReduceKind::mean_sq, hf);
    Value inv = math::RsqrtOp::create(
        b, loc,
        arith::AddFOp::create(
            b, loc, ms,
            arith::ConstantOp::create(b, loc, norm.getEpsilonAttr())));
    Value y = arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, hf, asTile(inv, f32)),
        asTile(*w, f32));
    values.map(norm.getOutput(), asTile(y, elt));
    values.map(norm.getNewResidual(), h);
    return success();
  }
  return op.emitOpError() << "cannot be fused into a row kernel";
}

FailureOr<func::FuncOp> RowKernelBuilder::build(RowSchedule schedule) {
  MLIRContext *ctx = fn.getContext();
  FunctionType ft = fn.getFunctionType();
  unsigned numIn = ft.getNumInputs(), numOut = ft.getNumResults();
  SmallVector<Type> argTypes;
  SmallVector<std::string> names;
  SmallVector<RankedTensorType> types;
  auto nameOf = [&](DictionaryAttr attrs, const std::string &fallback) {
    if (attrs)
      if (auto n = attrs.getAs<StringAttr>("attn.param"))
        return n.getValue().str();
    return fallback;
  };
  for (unsigned i = 0; i < numIn + numOut; ++i) {
    bool isIn = i < numIn;
    Type t = isIn ? ft.getInput(i) : ft.getResult(i - numIn);
    auto rt = dyn_cast<RankedTensorType>(t);
    if (!rt || rt.getRank() < 1 || rt.getRank() > 2 ||
        rt.isDynamicDim(rt.getRank() - 1))
      return fn.emitError() << "expected every argument and result of a row "
                               "kernel to be [rows, d] or [d], got "
                            << t;
    if (!isIn && (rt.getRank() != 2 || rt.getDimSize(1) != d))
      return fn.emitError() << "expected result #" << i - numIn
                            << " to be [rows, " << d << "], got " << t;
    types.push_back(rt);
    names.push_back(isIn
                        ? nameOf(fn.getArgAttrDict(i), "in" + std::to_string(i))
                        : nameOf(fn.getResultAttrDict(i - numIn),
                                 "out" + std::to_string(i - numIn)));
    argTypes.push_back(MemRefType::get({}, rt.getElementType()));
  }
  unsigned numTensors = types.size();
  argTypes.push_back(b.getI64Type()); // rows
  SmallVector<unsigned> strided;
  for (unsigned i = 0; i < numTensors; ++i)
    if (types[i].getRank() == 2) {
      strided.push_back(i);
      argTypes.push_back(b.getI64Type());
    }

  b.setInsertionPoint(fn);
  auto kernel = func::FuncOp::create(b, fn.getLoc(), fn.getName(),
                                     FunctionType::get(ctx, argTypes, {}));
  kernel->setAttr("tile.launch",
                  tile::LaunchAttr::get(ctx, abi::kGridRuleRowwise,
                                        schedule.rowsPerProgram,
                                        schedule.threadsPerRow, 0));
  kernel->setAttr("tile.row_length", b.getI64IntegerAttr(d));
  for (unsigned i = 0; i < numTensors; ++i)
    kernel.setArgAttr(i, "tile.param", b.getStringAttr(names[i]));
  kernel.setArgAttr(numTensors, "tile.param", b.getStringAttr(abi::kRowsParam));
  for (auto [k, i] : llvm::enumerate(strided))
    kernel.setArgAttr(
        numTensors + 1 + k, "tile.param",
        b.getStringAttr(names[i] + std::string(abi::kRowStrideSuffix)));

  Block *entry = kernel.addEntryBlock();
  b.setInsertionPointToStart(entry);
  row = tile::ProgramIdOp::create(b, loc, b.getIndexType(), 0);
  rowsIndex = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                         entry->getArgument(numTensors));
  for (unsigned i = 0; i < numTensors; ++i)
    tensors.push_back({entry->getArgument(i), types[i], Value()});
  for (auto [k, i] : llvm::enumerate(strided))
    strides[i] = entry->getArgument(numTensors + 1 + k);

  Block &body = fn.getBody().front();
  for (Operation &op : body.without_terminator())
    if (failed(emitOp(op)))
      return failure();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  loc = ret.getLoc();
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    FailureOr<Value> t = lookup(v, ret);
    if (failed(t))
      return failure();
    Tensor &out = tensors[numIn + k];
    Value tileV = asTile(*t, out.type.getElementType());
    tile::StoreRowOp::create(b, loc, tileV, view(out), ValueRange{row, cst(0)});
  }
  func::ReturnOp::create(b, loc);
  return kernel;
}

class FuseElementwisePass
    : public attnc::impl::FuseElementwiseBase<FuseElementwisePass> {
public:
  using Base::Base;
  void runOnOperation() override {
    SmallVector<func::FuncOp> fns;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn->hasAttr("tile.launch") && !fn.isExternal() &&
          llvm::any_of(fn.getBody().front(),
                       [](Operation &op) { return isRowOp(&op); }))
        fns.push_back(fn);
    for (func::FuncOp fn : fns) {
      Block &body = fn.getBody().front();
      for (Operation &op : body.without_terminator())
        if (!isRowOp(&op)) {
          op.emitOpError() << "cannot be fused into a row kernel with the "
                              "attn elementwise ops around it";
          return signalPassFailure();
        }
      attn::RopeOp rope;
      for (Operation &op : body)
        if (auto r = dyn_cast<attn::RopeOp>(op))
          rope = r;
      if (rope) {
        RowSchedule schedule = ropeSchedule(rope);
        if (threadsPerRow > 0)
          schedule.threadsPerRow = threadsPerRow;
        if (rowsPerProgram > 0)
          schedule.rowsPerProgram = rowsPerProgram;
        int64_t t = schedule.threadsPerRow, r = schedule.rowsPerProgram;
        int64_t chunks = rope.getRotaryDim() / kRowVector;
        int64_t split = rope.getIsNeox() ? chunks / 2 : chunks;
        if ((t & (t - 1)) != 0 || t * r > 1024 || split % t != 0) {
          rope.emitOpError()
              << "unsupported row schedule: " << t << " threads per row, " << r
              << " rows per program (threads per row must be a power of two "
                 "dividing the "
              << split << " vectors of "
              << (rope.getIsNeox() ? "half the rotary part" : "the rotary part")
              << "; at most 1024 threads)";
          return signalPassFailure();
        }
        FailureOr<func::FuncOp> kernel = buildRopeKernel(fn, rope, schedule);
        if (failed(kernel))
          return signalPassFailure();
        if (minBlocksPerSm > 0)
          (*kernel)->setAttr(
              "tile.min_blocks_per_sm",
              IntegerAttr::get(IntegerType::get(&getContext(), 64),
                               minBlocksPerSm));
        fn.erase();
        continue;
      }
      // The kernel's row length: that of its results.
      int64_t d = 0;
      for (Type t : fn.getFunctionType().getResults())
        if (auto rt = dyn_cast<RankedTensorType>(t); rt && rt.getRank() == 2)
          d = rt.getDimSize(1);
      if (d <= 0 || d % kRowVector != 0 || d > abi::kMaxRowLength) {
        fn.emitError() << "expected the row kernel's results to be [rows, d] "
                          "with d a multiple of "
                       << kRowVector << " (16-byte vectors) up to "
                       << abi::kMaxRowLength << ", got " << d;
        return signalPassFailure();
      }
      RowSchedule schedule = defaultRowSchedule(d);
      if (threadsPerRow > 0)
        schedule.threadsPerRow = threadsPerRow;
      if (rowsPerProgram > 0)
        schedule.rowsPerProgram = rowsPerProgram;
      int64_t t = schedule.threadsPerRow, r = schedule.rowsPerProgram;
      if ((t & (t - 1)) != 0 || t * r > 1024 || minBlocksPerSm < 0 ||
          minBlocksPerSm > 32) {
        fn.emitError() << "unsupported row schedule: " << t
                       << " threads per row (a power of two), " << r
                       << " rows per program (at most 1024 threads), "
                       << minBlocksPerSm << " blocks per SM (0 to 32)";
        return signalPassFailure();
      }
      RowKernelBuilder builder(fn, d);
      FailureOr<func::FuncOp> kernel = builder.build(schedule);
      if (failed(kernel))
        return signalPassFailure();
      if (minBlocksPerSm > 0)
        (*kernel)->setAttr("tile.min_blocks_per_sm",
                           IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                            minBlocksPerSm));
      fn.erase();
    }
  }
};

} // namespace
