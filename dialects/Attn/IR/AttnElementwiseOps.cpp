//===- AttnElementwiseOps.cpp - verifiers of the elementwise attn ops -----===//
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

using namespace mlir;
using namespace attnc::attn;

#include "dialects/Attn/IR/AttnEnums.cpp.inc"

namespace {

std::string dimText(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

bool sameDim(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

bool isRowFloat(Type t) { return t.isBF16() || t.isF16() || t.isF32(); }

/// A `[rows, d]` tensor of a float type with a static, positive `d`.
LogicalResult checkRows(Operation *op, StringRef name, Type type) {
  auto t = cast<RankedTensorType>(type);
  if (t.getRank() != 2)
    return op->emitOpError() << "expected " << name
                             << " to have rank 2 ([rows, d]), got " << type;
  if (t.isDynamicDim(1))
    return op->emitOpError() << "expected " << name
                             << " to have a static row length, got " << type;
  if (!isRowFloat(t.getElementType()))
    return op->emitOpError()
           << "expected " << name << " element type bf16, f16 or f32, got "
           << t.getElementType();
  return success();
}

} // namespace

LogicalResult MapOp::verify() {
  Operation *op = getOperation();
  if (getInputs().empty())
    return emitOpError() << "expected at least one input";
  if (failed(checkRows(op, "the result", getResult().getType())))
    return failure();
  auto rt = getResult().getType();
  int64_t rows = rt.getDimSize(0), d = rt.getDimSize(1);
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    auto t = cast<RankedTensorType>(v.getType());
    std::string name = "input #" + std::to_string(i);
    if (!isRowFloat(t.getElementType()))
      return emitOpError() << "expected " << name
                           << " element type bf16, f16 or f32, got "
                           << t.getElementType();
    bool ok = false;
    if (t.getRank() == 1) // [d]: the same for every row
      ok = t.getDimSize(0) == d;
    else if (t.getRank() == 2) // [rows, d] or [rows, 1]
      ok = sameDim(t.getDimSize(0), rows) &&
           (t.getDimSize(1) == d || t.getDimSize(1) == 1);
    if (!ok)
      return emitOpError() << "expected " << name << " of shape ["
                           << dimText(rows) << ", " << d << "], ["
                           << dimText(rows) << ", 1] or [" << d
                           << "] to broadcast to the result, got " << Type(t);
  }
  return success();
}

LogicalResult MapOp::verifyRegions() {
  Block &block = getBody().front();
  SmallVector<Type> argTypes;
  for (Value v : getInputs())
    argTypes.push_back(cast<RankedTensorType>(v.getType()).getElementType());
  if (TypeRange(block.getArgumentTypes()) != TypeRange(argTypes))
    return emitOpError() << "expected the body to take one scalar of each "
                            "input's element type";
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  Type elt = getResult().getType().getElementType();
  if (!yield || yield.getValues().size() != 1 ||
      yield.getValues()[0].getType() != elt)
    return emitOpError() << "expected the body to yield one " << elt
                         << " (the result's element type)";
  for (Operation &nested : block.without_terminator()) {
    StringRef ns =
        nested.getDialect() ? nested.getDialect()->getNamespace() : StringRef();
    if ((ns != "arith" && ns != "math") || !isPure(&nested))
      return nested.emitOpError()
             << "is not allowed in the body of attn.map: only pure arith and "
                "math ops can be lowered to every target";
  }
  return success();
}

LogicalResult ReduceOp::verify() {
  if (failed(checkRows(*this, "the input", getInput().getType())))
    return failure();
  auto in = getInput().getType();
  auto expected = RankedTensorType::get({in.getDimSize(0), 1},
                                        Float32Type::get(getContext()));
  if (getResult().getType() != expected)
    return emitOpError() << "expected the result type " << Type(expected)
                         << " (one f32 per row), got " << getResult().getType();
  return success();
}

LogicalResult SliceOp::verify() {
  if (failed(checkRows(*this, "the input", getInput().getType())) ||
      failed(checkRows(*this, "the result", getResult().getType())))
    return failure();
  auto in = getInput().getType(), out = getResult().getType();
  int64_t offset = getOffset(), size = getSize();
  if (offset < 0 || size < 1 || offset + size > in.getDimSize(1))
    return emitOpError() << "expected columns [" << offset << ", "
                         << offset + size << ") to lie within the row of "
                         << in.getDimSize(1);
  if (offset % 8 != 0)
    return emitOpError() << "expected the offset to be a multiple of 8 "
                            "elements (16-byte aligned rows), got "
                         << offset;
  auto expected =
      RankedTensorType::get({in.getDimSize(0), size}, in.getElementType());
  if (out != expected)
    return emitOpError() << "expected the result type " << Type(expected)
                         << ", got " << Type(out);
  return success();
}

/// x: [rows, 2d] -> [rows, d], same element type.
static LogicalResult verifyGated(Operation *op, Value input, Value result) {
  if (failed(checkRows(op, "the input", input.getType())) ||
      failed(checkRows(op, "the result", result.getType())))
    return failure();
  auto in = cast<RankedTensorType>(input.getType());
  auto out = cast<RankedTensorType>(result.getType());
  if (in.getDimSize(1) % 2 != 0)
    return op->emitOpError() << "expected an even input row length (gate and "
                                "up halves), got "
                             << in.getDimSize(1);
  auto expected = RankedTensorType::get(
      {in.getDimSize(0), in.getDimSize(1) / 2}, in.getElementType());
  if (out != expected)
    return op->emitOpError() << "expected the result type " << Type(expected)
                             << " (half the input row), got " << Type(out);
  return success();
}

LogicalResult SiluMulOp::verify() {
  return verifyGated(*this, getInput(), getResult());
}

LogicalResult GeluMulOp::verify() {
  return verifyGated(*this, getInput(), getResult());
}

LogicalResult AddRMSNormOp::verify() {
  auto x = getInput().getType();
  if (failed(checkRows(*this, "the input", x)))
    return failure();
  if (getResidual().getType() != x)
    return emitOpError() << "expected the residual type to equal the input "
                            "type "
                         << Type(x) << ", got " << getResidual().getType();
  auto w = getWeight().getType();
  auto expectedW = RankedTensorType::get({x.getDimSize(1)}, x.getElementType());
  if (w != expectedW)
    return emitOpError() << "expected the weight type " << Type(expectedW)
                         << " (one per column), got " << Type(w);
  if (getOutput().getType() != x || getNewResidual().getType() != x)
    return emitOpError() << "expected both results to have the input type "
                         << Type(x);
  double eps = getEpsilon().convertToDouble();
  if (!(eps > 0.0) || !std::isfinite(eps))
    return emitOpError() << "expected epsilon to be a positive finite number, "
                            "got "
                         << eps;
  return success();
}

LogicalResult RopeOp::verify() {
  auto pos = cast<RankedTensorType>(getPositions().getType());
  if (pos.getRank() != 1 || !(pos.getElementType().isInteger(32) ||
                              pos.getElementType().isInteger(64)))
    return emitOpError() << "expected positions to be a 1-D tensor of i32 or "
                            "i64 (one per token), got "
                         << Type(pos);
  if (failed(checkRows(*this, "the query", getQuery().getType())) ||
      failed(checkRows(*this, "the key", getKey().getType())) ||
      failed(checkRows(*this, "the cos/sin cache", getCosSinCache().getType())))
    return failure();
  auto q = cast<RankedTensorType>(getQuery().getType());
  auto k = cast<RankedTensorType>(getKey().getType());
  auto cache = cast<RankedTensorType>(getCosSinCache().getType());
  Type elt = q.getElementType();
  if (elt.isF32() || k.getElementType() != elt || cache.getElementType() != elt)
    return emitOpError() << "expected query, key and the cos/sin cache to "
                            "share one 16-bit element type (bf16 or f16), got "
                         << elt << ", " << k.getElementType() << ", "
                         << cache.getElementType();
  if (!sameDim(pos.getDimSize(0), q.getDimSize(0)) ||
      !sameDim(q.getDimSize(0), k.getDimSize(0)))
    return emitOpError() << "expected one position and one query and key row "
                            "per token, got "
                         << dimText(pos.getDimSize(0)) << ", "
                         << dimText(q.getDimSize(0)) << " and "
                         << dimText(k.getDimSize(0)) << " rows";
  int64_t hs = getHeadSize(), rot = getRotaryDim();
  if (hs <= 0 || hs % 8 != 0)
    return emitOpError() << "expected head_size to be a positive multiple of "
                            "8 (16-byte vectors), got "
                         << hs;
  if (q.getDimSize(1) % hs != 0 || k.getDimSize(1) % hs != 0)
    return emitOpError() << "expected query and key rows (" << q.getDimSize(1)
                         << ", " << k.getDimSize(1) << ") to be whole heads of "
                         << hs << " columns";
  int64_t multiple = getIsNeox() ? 16 : 8;
  if (rot <= 0 || rot > hs || rot % multiple != 0)
    return emitOpError() << "expected rotary_dim in (0, head_size = " << hs
                         << "] and a multiple of " << multiple << " ("
                         << (getIsNeox() ? "NeoX: each half is whole 16-byte "
                                           "vectors"
                                         : "GPT-J: whole 16-byte vectors")
                         << "), got " << rot;
  if (cache.getDimSize(1) != rot)
    return emitOpError() << "expected the cos/sin cache rows to hold "
                            "rotary_dim = "
                         << rot << " values (cos then sin), got "
                         << cache.getDimSize(1);
  if (getQueryOut().getType() != q || getKeyOut().getType() != k)
    return emitOpError() << "expected the results to have the query and key "
                            "types "
                         << Type(q) << ", " << Type(k);
  return success();
}
