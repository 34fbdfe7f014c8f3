//===- AttnOps.cpp - verifiers and helpers of attn ops --------------------===//
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace attnc::attn;

#define GET_OP_CLASSES
#include "dialects/Attn/IR/AttnOps.cpp.inc"

/// The head dims the code generator has tile configurations for.
static constexpr int64_t kSupportedHeadDims[] = {64, 96, 128, 192, 256};

static std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// Two dims agree unless both are static and different.
static bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// At least one query and one key/value head (hq % hk divides by hk).
static LogicalResult verifyHeadCounts(Operation *op, int64_t hq, int64_t hk) {
  if (hq < 1 || hk < 1)
    return op->emitOpError()
           << "expected at least one query head and one key/value head, got "
           << hq << " and " << hk;
  return success();
}

int64_t AttentionOp::getNumHeads() {
  return getQuery().getType().getDimSize(1);
}
int64_t AttentionOp::getNumKVHeads() {
  return getKey().getType().getDimSize(1);
}
int64_t AttentionOp::getHeadDim() {
  // [B, H, S, D], or [total, H, D] when varlen: the head dim is last.
  auto qT = getQuery().getType();
  return qT.getDimSize(qT.getRank() - 1);
}
Type AttentionOp::getElementType() {
  return getQuery().getType().getElementType();
}

float AttentionOp::getEffectiveScale() {
  if (auto s = getScaleAttr())
    return s.getValueAsDouble();
  return 1.0f / std::sqrt(static_cast<float>(getHeadDim()));
}

/// Attention sinks, when given: one f32 logit per query head.
static LogicalResult verifySinks(Operation *op, Value sinks, int64_t hq) {
  if (!sinks)
    return success();
  auto expected =
      RankedTensorType::get({hq}, Float32Type::get(op->getContext()));
  if (sinks.getType() != expected)
    return op->emitOpError()
           << "expected the sinks type " << Type(expected)
           << " (one f32 logit per query head), got " << sinks.getType();
  return success();
}

/// What attn.attention and attn.attention_bwd check alike: Q, K, V and the
/// attributes. Varlen operands are packed [total, heads, head_dim], the
/// others [batch, heads, seq, head_dim].
static LogicalResult verifyAttentionInputs(Operation *op, RankedTensorType qT,
                                           RankedTensorType kT,
                                           RankedTensorType vT, FloatAttr scale,
                                           FloatAttr softcap, WindowAttr window,
                                           bool causal, bool varlen = false,
                                           bool paged = false) {
  auto emitOpError = [&]() { return op->emitOpError(); };
  const std::pair<const char *, RankedTensorType> operands[] = {
      {"query", qT}, {"key", kT}, {"value", vT}};
  const int64_t rank = varlen ? 3 : 4, sDim = varlen ? 0 : 2;
  // A paged cache's K/V: [pages, heads, page_size, head_dim].
  const int64_t kvRank = paged ? 4 : rank;
  auto rankOf = [&](RankedTensorType t) { return t == qT ? rank : kvRank; };
  auto dDimOf = [&](RankedTensorType t) { return rankOf(t) - 1; };
  for (auto [name, t] : operands)
    if (t.getRank() != rankOf(t))
      return emitOpError() << "expected " << name
                           << (paged && t != qT
                                   ? " to have rank 4 ([pages, heads, "
                                     "page_size, head_dim], a paged cache), "
                                     "got rank "
                               : varlen
                                   ? " to have rank 3 ([total, heads, "
                                     "head_dim], packed sequences of a "
                                     "varlen batch), got rank "
                                   : " to have rank 4 ([batch, heads, seq, "
                                     "head_dim]), got rank ")
                           << t.getRank();
  if (paged)
    for (auto [name, t] : ArrayRef(operands).drop_front())
      if (t.isDynamicDim(2) || t.getDimSize(2) < 1)
        return emitOpError()
               << "expected " << name
               << " to have a static page size (dim 2), got " << Type(t);

  Type elt = qT.getElementType();
  if (!elt.isBF16() && !elt.isF16())
    return emitOpError() << "expected query element type bf16 or f16, got "
                         << elt;
  for (auto [name, t] : operands)
    if (t.getElementType() != elt)
      return emitOpError() << "expected " << name << " element type " << elt
                           << " to match the query, got " << t.getElementType();

  for (auto [name, t] : operands)
    if (t.isDynamicDim(1) || t.isDynamicDim(dDimOf(t)))
      return emitOpError() << "expected " << name
                           << " to have static heads and head dim, got "
                           << Type(t);

  int64_t hq = qT.getDimSize(1), hk = kT.getDimSize(1), hv = vT.getDimSize(1);
  if (hk != hv)
    return emitOpError() << "expected key and value to have the same number "
                            "of heads, got "
                         << hk << " and " << hv;
  if (failed(verifyHeadCounts(op, hq, hk)))
    return failure();
  if (hq % hk != 0)
    return emitOpError() << "query heads (" << hq
                         << ") must be a multiple of key/value heads (" << hk
                         << ") for grouped-query attention";

  int64_t d = qT.getDimSize(rank - 1);
  if (kT.getDimSize(kvRank - 1) != d)
    return emitOpError() << "expected key head dim "
                         << kT.getDimSize(kvRank - 1)
                         << " to match query head dim " << d;
  if (vT.getDimSize(kvRank - 1) != d)
    return emitOpError() << "expected value head dim "
                         << vT.getDimSize(kvRank - 1)
                         << " to match query head dim " << d;
  if (!llvm::is_contained(kSupportedHeadDims, d))
    return emitOpError() << "head dim " << d
                         << " is not supported; expected one of 64, 96, 128, "
                            "192, 256";

  if (!varlen && (!compatible(qT.getDimSize(0), kT.getDimSize(0)) ||
                  !compatible(kT.getDimSize(0), vT.getDimSize(0))))
    return emitOpError() << "expected query, key and value batch sizes to "
                            "match, got "
                         << dimStr(qT.getDimSize(0)) << ", "
                         << dimStr(kT.getDimSize(0)) << " and "
                         << dimStr(vT.getDimSize(0));
  if (!compatible(kT.getDimSize(sDim), vT.getDimSize(sDim)) ||
      (paged && (kT.getDimSize(2) != vT.getDimSize(2))))
    return emitOpError() << "expected key and value sequence lengths to "
                            "match, got "
                         << dimStr(kT.getDimSize(sDim)) << " and "
                         << dimStr(vT.getDimSize(sDim));

  if (scale) {
    double v = scale.getValueAsDouble();
    if (!(v > 0.0) || !std::isfinite(v))
      return emitOpError() << "expected scale to be a positive finite number, "
                              "got "
                           << v;
  }
  if (softcap) {
    double v = softcap.getValueAsDouble();
    if (!(v > 0.0) || !std::isfinite(v))
      return emitOpError() << "expected softcap to be a positive finite "
                              "number, got "
                           << v;
  }
  if (window && causal && window.getRight() != 0)
    return emitOpError() << "causal attention sees no key right of the "
                            "diagonal; use window right = 0 or drop causal, "
                            "got right = "
                         << window.getRight();
  return success();
}

/// The [batch, heads, seq] f32 type of the row LSE of a query of type qT.
static RankedTensorType lseTypeOf(RankedTensorType qT) {
  return RankedTensorType::get(
      {qT.getDimSize(0), qT.getDimSize(1), qT.getDimSize(2)},
      Float32Type::get(qT.getContext()));
}

/// The [heads, total] f32 type of the row LSE of a packed varlen query of
/// type qT ([total, heads, head_dim]; FlashAttention's varlen LSE layout).
static RankedTensorType varlenLseTypeOf(RankedTensorType qT) {
  return RankedTensorType::get({qT.getDimSize(1), qT.getDimSize(0)},
                               Float32Type::get(qT.getContext()));
}

/// The varlen operands: both or neither, each a 1-D i32 tensor of B + 1
/// sequence starts; paged, cu_seqlens_q with the block table ([B,
/// max_blocks] i32) and kv_lens ([B] i32) in place of cu_seqlens_k.
static LogicalResult verifyCuSeqlens(AttentionOp op) {
  Value cuQ = op.getCuSeqlensQ(), cuK = op.getCuSeqlensK();
  auto i32 = IntegerType::get(op.getContext(), 32);
  if (static_cast<bool>(op.getBlockTable()) !=
      static_cast<bool>(op.getKvLens()))
    return op.emitOpError()
           << "expected both block_table and kv_lens for a paged attention, "
              "got only one";
  if (Value table = op.getBlockTable()) {
    if (!cuQ || cuK)
      return op.emitOpError()
             << "expected a paged attention to take varlen(cu_seqlens_q) "
                "alone (the key lengths are kv_lens)";
    auto tableT = cast<RankedTensorType>(table.getType());
    auto lensT = cast<RankedTensorType>(op.getKvLens().getType());
    auto cuT = cast<RankedTensorType>(cuQ.getType());
    if (tableT.getRank() != 2 || tableT.getElementType() != i32)
      return op.emitOpError() << "expected the block table to be a 2-D i32 "
                                 "tensor ([B, max_blocks] page indices), got "
                              << Type(tableT);
    if (lensT.getRank() != 1 || lensT.getElementType() != i32)
      return op.emitOpError()
             << "expected kv_lens to be a 1-D i32 tensor ([B] key counts), got "
             << Type(lensT);
    if (cuT.getRank() != 1 || cuT.getElementType() != i32)
      return op.emitOpError()
             << "expected cu_seqlens_q to be a 1-D i32 tensor (B + 1 "
                "sequence starts), got "
             << Type(cuT);
    // B from kv_lens or the table, whichever is static.
    int64_t b =
        lensT.isDynamicDim(0) ? tableT.getDimSize(0) : lensT.getDimSize(0);
    if (!compatible(tableT.getDimSize(0), lensT.getDimSize(0)) ||
        (!cuT.isDynamicDim(0) && !ShapedType::isDynamic(b) &&
         cuT.getDimSize(0) != b + 1))
      return op.emitOpError()
             << "expected the block table, kv_lens and cu_seqlens_q to "
                "describe one batch ([B, max_blocks], [B], [B + 1]), got "
             << Type(tableT) << ", " << Type(lensT) << " and " << Type(cuT);
    return success();
  }
  if (!cuQ && !cuK)
    return success();
  if (!cuQ || !cuK)
    return op.emitOpError() << "expected both cu_seqlens_q and cu_seqlens_k "
                               "for a varlen attention, got only one";
  int64_t sizes[2];
  const std::pair<const char *, Value> operands[] = {{"cu_seqlens_q", cuQ},
                                                     {"cu_seqlens_k", cuK}};
  for (auto [i, named] : llvm::enumerate(operands)) {
    auto t = cast<RankedTensorType>(named.second.getType());
    if (t.getRank() != 1 || t.getElementType() != i32)
      return op.emitOpError()
             << "expected " << named.first
             << " to be a 1-D i32 tensor (B + 1 sequence starts), got "
             << Type(t);
    if (!t.isDynamicDim(0) && t.getDimSize(0) < 1)
      return op.emitOpError()
             << "expected " << named.first
             << " to hold at least one entry (B + 1), got " << Type(t);
    sizes[i] = t.getDimSize(0);
  }
  if (!compatible(sizes[0], sizes[1]))
    return op.emitOpError() << "expected cu_seqlens_q and cu_seqlens_k of "
                               "one size (B + 1), got "
                            << sizes[0] << " and " << sizes[1];
  return success();
}

LogicalResult AttentionOp::verify() {
  auto qT = getQuery().getType();
  if (failed(verifyCuSeqlens(*this)))
    return failure();
  const bool varlen = isVarlen();
  if (failed(verifyAttentionInputs(
          *this, qT, getKey().getType(), getValue().getType(), getScaleAttr(),
          getSoftcapAttr(), getWindowAttr(), getCausal(), varlen, isPaged())))
    return failure();

  if (getOutput().getType() != qT)
    return emitOpError() << "expected the output type to equal the query "
                            "type "
                         << Type(qT) << ", got " << getOutput().getType();

  if (failed(verifySinks(getOperation(), getSinks(), qT.getDimSize(1))))
    return failure();

  if (Value bounds = getKvBounds()) {
    auto t = cast<RankedTensorType>(bounds.getType());
    if (varlen)
      return emitOpError() << "kv_bounds are not supported with varlen";
    if (t.getRank() != 3 || !t.getElementType().isInteger(32) ||
        t.getDimSize(2) != 2 ||
        !compatible(t.getDimSize(0), qT.getDimSize(0)) ||
        !compatible(t.getDimSize(1), qT.getDimSize(2)))
      return emitOpError() << "expected kv_bounds of type [batch, seq_q, 2] "
                              "i32 (each query row's first and end key), got "
                           << Type(t);
  }

  if (Value lse = getLse()) {
    auto expected = varlen ? varlenLseTypeOf(qT) : lseTypeOf(qT);
    if (lse.getType() != expected)
      return emitOpError() << "expected the lse type " << Type(expected)
                           << (varlen ? " ([heads, total] in f32), got "
                                      : " ([batch, heads, seq] in f32), got ")
                           << lse.getType();
  }
  return success();
}

float AttentionBwdOp::getEffectiveScale() {
  if (auto s = getScaleAttr())
    return s.getValueAsDouble();
  return 1.0f / std::sqrt(static_cast<float>(getHeadDim()));
}

LogicalResult AttentionBwdOp::verify() {
  auto qT = getQuery().getType();
  auto kT = getKey().getType(), vT = getValue().getType();
  if (failed(verifyAttentionInputs(*this, qT, kT, vT, getScaleAttr(),
                                   getSoftcapAttr(), getWindowAttr(),
                                   getCausal())))
    return failure();
  // Each gradient has the shape and type of what it is the gradient of.
  const std::tuple<const char *, Value, RankedTensorType, const char *> same[] =
      {{"output", getOutput(), qT, "query"},
       {"output gradient", getGradOutput(), qT, "query"},
       {"query gradient", getGradQuery(), qT, "query"},
       {"key gradient", getGradKey(), kT, "key"},
       {"value gradient", getGradValue(), vT, "value"}};
  for (auto [name, value, expected, of] : same)
    if (value.getType() != expected)
      return emitOpError() << "expected the " << name << " type to equal the "
                           << of << " type " << Type(expected) << ", got "
                           << value.getType();
  if (kT != vT)
    return emitOpError() << "expected key and value of one type, got "
                         << Type(kT) << " and " << Type(vT);
  auto expected = lseTypeOf(qT);
  if (getLse().getType() != expected)
    return emitOpError() << "expected the lse type " << Type(expected)
                         << " ([batch, heads, seq] in f32), got "
                         << getLse().getType();
  if (!getScore().empty() || !getMask().empty())
    return emitOpError() << "score and mask regions are not yet supported in "
                            "the backward (their derivative is not derived "
                            "yet)";
  return success();
}

/// Element types a captured tensor may have (what the kernels can load).
static bool isCaptureElementType(Type t) {
  return t.isF32() || t.isF16() || t.isBF16() || t.isInteger(32) ||
         t.isInteger(64) || t.isInteger(8);
}

/// Checks the captured tensors: at most kMaxCaptures, rank 1 to 4, an
/// element type the kernels load.
static LogicalResult verifyCaptures(AttentionOp op) {
  if (op.getCaptures().size() > AttentionOp::kMaxCaptures)
    return op.emitOpError() << "takes " << op.getCaptures().size()
                            << " captured tensors; at most "
                            << AttentionOp::kMaxCaptures << " are supported";
  for (auto [i, capture] : llvm::enumerate(op.getCaptures())) {
    auto t = cast<RankedTensorType>(capture.getType());
    if (t.getRank() < 1 || t.getRank() > 4 ||
        !isCaptureElementType(t.getElementType()))
      return op.emitOpError()
             << "captured tensor #" << i << " has type " << Type(t)
             << "; expected rank 1 to 4 and element type f32, f16, bf16, "
                "i32, i64 or i8";
    // The kernel reads every size at launch (and the runtime checks none
    // against the IR): a static size would be a promise nobody keeps.
    if (t.hasStaticShape() || llvm::any_of(t.getShape(), [](int64_t d) {
          return !ShapedType::isDynamic(d);
        }))
      return op.emitOpError()
             << "captured tensor #" << i << " has type " << Type(t)
             << "; its dims must be dynamic (?): the kernel takes every "
                "size at launch";
  }
  if (!op.getCaptures().empty() && !op.hasScoreMod() && !op.hasMaskMod())
    return op.emitOpError()
           << "takes captured tensors but has no score or mask region to "
              "read them";
  return success();
}

/// Checks one scalar region: its block arguments (`argTypes`, then one per
/// captured tensor), its ops and what it yields.
static LogicalResult verifyScalarRegion(AttentionOp op, Region &region,
                                        StringRef name,
                                        SmallVector<Type> argTypes,
                                        Type yieldType, StringRef argsDoc) {
  if (region.empty())
    return success();
  if (!region.hasOneBlock())
    return op.emitOpError()
           << "expected the " << name << " region to have a single block";
  const unsigned firstCapture = argTypes.size();
  llvm::append_range(argTypes, op.getCaptures().getTypes());
  Block &block = region.front();
  if (TypeRange(block.getArgumentTypes()) != TypeRange(argTypes))
    return op.emitOpError()
           << "expected the " << name << " region to take " << argsDoc
           << (op.getCaptures().empty()
                   ? ""
                   : ", then the captured tensors in the order of the "
                     "op's captures");
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield || yield.getValues().size() != 1 ||
      yield.getValues()[0].getType() != yieldType)
    return op.emitOpError()
           << "expected the " << name << " region to yield one " << yieldType;
  for (Operation &nested : block.without_terminator()) {
    // A captured tensor's element: tensor.extract of a capture argument.
    if (auto extract = dyn_cast<tensor::ExtractOp>(nested)) {
      auto arg = dyn_cast<BlockArgument>(extract.getTensor());
      if (!arg || arg.getOwner() != &block || arg.getArgNumber() < firstCapture)
        return nested.emitOpError()
               << "in the " << name
               << " region must read one of the captured tensors (a block "
                  "argument after the indices)";
      continue;
    }
    StringRef ns =
        nested.getDialect() ? nested.getDialect()->getNamespace() : StringRef();
    if ((ns != "arith" && ns != "math") || !isPure(&nested))
      return nested.emitOpError()
             << "is not allowed in the " << name
             << " region: only pure arith and math ops, and tensor.extract "
                "of a captured tensor, can be lowered to every target";
    if (llvm::any_of(nested.getResultTypes(), llvm::IsaPred<ShapedType>))
      return nested.emitOpError()
             << "in the " << name
             << " region must compute scalars (one element at a time)";
  }
  return success();
}

LogicalResult AttentionOp::verifyRegions() {
  MLIRContext *ctx = getContext();
  Type f32 = Float32Type::get(ctx), idx = IndexType::get(ctx);
  Type i1 = IntegerType::get(ctx, 1);
  if (failed(verifyCaptures(*this)))
    return failure();
  if (failed(verifyScalarRegion(
          *this, getScore(), "score", {f32, idx, idx, idx, idx}, f32,
          "(f32, index, index, index, index): the score and its batch, head, "
          "query and key indices")))
    return failure();
  return verifyScalarRegion(*this, getMask(), "mask", {idx, idx, idx, idx}, i1,
                            "(index, index, index, index): the batch, head, "
                            "query and key indices");
}

float DecodeOp::getEffectiveScale() {
  if (auto s = getScaleAttr())
    return s.getValueAsDouble();
  return 1.0f / std::sqrt(static_cast<float>(getHeadDim()));
}

LogicalResult DecodeOp::verify() {
  auto qT = getQuery().getType();
  auto kT = getKeyCache().getType(), vT = getValueCache().getType();
  if (qT.getRank() != 4)
    return emitOpError() << "expected query to have rank 4 ([batch, heads, "
                            "seq, head_dim]), got rank "
                         << qT.getRank();
  for (auto [name, t] :
       {std::pair<const char *, RankedTensorType>{"key", kT}, {"value", vT}}) {
    if (t.getRank() != 4 || t.isDynamicDim(1) || t.isDynamicDim(2) ||
        t.isDynamicDim(3))
      return emitOpError()
             << "expected the " << name
             << " cache to be [pages, kv_heads, page_size, head_dim] with "
                "static heads, page size and head dim, got "
             << Type(t);
    if (t.getElementType() != qT.getElementType())
      return emitOpError() << "expected the " << name
                           << " cache element type to match the query's "
                           << qT.getElementType() << ", got "
                           << t.getElementType();
  }
  Type elt = qT.getElementType();
  if (!elt.isBF16() && !elt.isF16())
    return emitOpError() << "expected query element type bf16 or f16, got "
                         << elt;
  if (qT.isDynamicDim(1) || qT.isDynamicDim(3))
    return emitOpError() << "expected query to have static heads and head "
                            "dim, got "
                         << Type(qT);
  if (kT.getShape().drop_front() != vT.getShape().drop_front())
    return emitOpError() << "expected key and value caches of one shape, got "
                         << Type(kT) << " and " << Type(vT);
  int64_t hq = qT.getDimSize(1), hk = kT.getDimSize(1), d = qT.getDimSize(3);
  if (failed(verifyHeadCounts(getOperation(), hq, hk)))
    return failure();
  if (hq % hk != 0)
    return emitOpError() << "query heads (" << hq
                         << ") must be a multiple of key/value heads (" << hk
                         << ") for grouped-query attention";
  if (kT.getDimSize(3) != d)
    return emitOpError() << "expected cache head dim " << kT.getDimSize(3)
                         << " to match query head dim " << d;
  if (!llvm::is_contained(kSupportedHeadDims, d))
    return emitOpError() << "head dim " << d
                         << " is not supported; expected one of 64, 96, 128, "
                            "192, 256";
  if (kT.getDimSize(2) < 1)
    return emitOpError() << "expected a positive page size, got "
                         << kT.getDimSize(2);
  auto tableT = getBlockTable().getType();
  if (tableT.getRank() != 2 || !tableT.getElementType().isInteger(32))
    return emitOpError() << "expected the block table to be [batch, "
                            "max_blocks] i32, got "
                         << Type(tableT);
  auto lensT = getKvLens().getType();
  if (lensT.getRank() != 1 || !lensT.getElementType().isInteger(32))
    return emitOpError() << "expected kv_lens to be [batch] i32, got "
                         << Type(lensT);
  if (!compatible(qT.getDimSize(0), tableT.getDimSize(0)) ||
      !compatible(qT.getDimSize(0), lensT.getDimSize(0)))
    return emitOpError() << "expected query, block table and kv_lens batch "
                            "sizes to match, got "
                         << dimStr(qT.getDimSize(0)) << ", "
                         << dimStr(tableT.getDimSize(0)) << " and "
                         << dimStr(lensT.getDimSize(0));
  if (getOutput().getType() != qT)
    return emitOpError() << "expected the output type to equal the query "
                            "type "
                         << Type(qT) << ", got " << getOutput().getType();
  if (Value lse = getLse()) {
    auto expected =
        RankedTensorType::get({qT.getDimSize(0), hq, qT.getDimSize(2)},
                              Float32Type::get(getContext()));
    if (lse.getType() != expected)
      return emitOpError() << "expected the lse type " << Type(expected)
                           << " ([batch, heads, seq] in f32), got "
                           << lse.getType();
  }
  if (failed(verifySinks(getOperation(), getSinks(), hq)))
    return failure();
  for (auto [name, attr] :
       {std::pair<const char *, FloatAttr>{"scale", getScaleAttr()},
        {"softcap", getSoftcapAttr()}})
    if (attr && !(attr.getValueAsDouble() > 0.0 &&
                  std::isfinite(attr.getValueAsDouble())))
      return emitOpError() << "expected " << name
                           << " to be a positive finite number, got "
                           << attr.getValueAsDouble();
  if (auto w = getWindowAttr(); w && getCausal() && w.getRight() != 0)
    return emitOpError() << "causal attention sees no key right of the "
                            "diagonal; use window right = 0 or drop causal, "
                            "got right = "
                         << w.getRight();
  return success();
}

LogicalResult LseMergeOp::verify() {
  auto oT = getOutputA().getType();
  if (oT.getRank() != 4 ||
      !(oT.getElementType().isBF16() || oT.getElementType().isF16()))
    return emitOpError() << "expected bf16 or f16 outputs [batch, heads, "
                            "seq, head_dim], got "
                         << Type(oT);
  if (oT.isDynamicDim(1) || oT.isDynamicDim(3) || oT.getDimSize(1) < 1)
    return emitOpError() << "expected static heads (at least one) and head "
                            "dim, got "
                         << Type(oT);
  if (getOutputB().getType() != oT || getOutput().getType() != oT)
    return emitOpError() << "expected both inputs and the result to have the "
                            "type "
                         << Type(oT);
  auto lseT = RankedTensorType::get(
      {oT.getDimSize(0), oT.getDimSize(1), oT.getDimSize(2)},
      Float32Type::get(getContext()));
  for (Value lse : {getLseA(), getLseB(), getLse()})
    if (lse && lse.getType() != lseT)
      return emitOpError() << "expected log-sum-exps of type " << Type(lseT)
                           << " ([batch, heads, seq] in f32), got "
                           << lse.getType();
  if (!llvm::is_contained(kSupportedHeadDims, oT.getDimSize(3)))
    return emitOpError() << "head dim " << oT.getDimSize(3)
                         << " is not supported; expected one of 64, 96, 128, "
                            "192, 256";
  return success();
}

LogicalResult KVAppendOp::verify() {
  auto kT = getKey().getType(), cT = getKeyCache().getType();
  Type elt = kT.getElementType();
  if (kT.getRank() != 3 || !(elt.isBF16() || elt.isF16()))
    return emitOpError() << "expected bf16 or f16 key and value rows "
                            "[tokens, kv_heads, head_dim], got "
                         << Type(kT);
  if (cT.getRank() != 4 || cT.isDynamicDim(1) || cT.isDynamicDim(2) ||
      cT.isDynamicDim(3))
    return emitOpError() << "expected caches [pages, kv_heads, page_size, "
                            "head_dim] with static heads, page size and head "
                            "dim, got "
                         << Type(cT);
  if (cT.getElementType() != elt)
    return emitOpError() << "expected the cache element type to match the "
                            "rows' "
                         << elt << ", got " << cT.getElementType();
  if (!compatible(kT.getDimSize(1), cT.getDimSize(1)) ||
      !compatible(kT.getDimSize(2), cT.getDimSize(3)))
    return emitOpError() << "expected rows of " << dimStr(cT.getDimSize(1))
                         << " heads x " << dimStr(cT.getDimSize(3))
                         << " (the cache's), got " << Type(kT);
  if (kT.isDynamicDim(2) || kT.getDimSize(2) % 8 != 0)
    return emitOpError() << "expected a static head dim that is a multiple of "
                            "8 (rows are copied in 16-byte vectors), got "
                         << dimStr(kT.getDimSize(2));
  if (cT.getDimSize(2) < 1 || cT.getDimSize(1) < 1)
    return emitOpError() << "expected a positive page size and at least one "
                            "KV head, got "
                         << cT.getDimSize(2) << " and " << cT.getDimSize(1);
  auto sT = getSlotMapping().getType();
  if (sT.getRank() != 1 || !sT.getElementType().isInteger(64))
    return emitOpError() << "expected slot_mapping to be [tokens] i64, got "
                         << Type(sT);
  if (!compatible(sT.getDimSize(0), kT.getDimSize(0)))
    return emitOpError() << "expected one slot per token: "
                         << dimStr(kT.getDimSize(0)) << " tokens, "
                         << dimStr(sT.getDimSize(0)) << " slots";
  return success();
}
