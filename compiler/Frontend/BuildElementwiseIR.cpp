//===- BuildElementwiseIR.cpp - attn IR of the named row kernels ----------===//
#include "compiler/Frontend/BuildElementwiseIR.h"

#include "attnc/abi/RowTensors.h"
#include "attnc/runtime/Spec.h"
#include "dialects/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

OwningOpRef<ModuleOp>
attnc::buildElementwiseModule(MLIRContext &ctx,
                              const ElementwiseConfig &config) {
  ctx.loadDialect<attn::AttnDialect, func::FuncDialect>();
  Location loc = NameLoc::get(StringAttr::get(&ctx, "attnc --op " + config.op));
  if (!isElementwiseOp(config.op) && config.op != "rope") {
    emitError(loc) << "unknown elementwise op '" << config.op
                   << "' (expected silu_mul, gelu_mul, add_rmsnorm or rope)";
    return nullptr;
  }
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Type elt =
      config.dtype == "fp16" ? Type(b.getF16Type()) : Type(b.getBF16Type());
  int64_t dyn = ShapedType::kDynamic, d = config.hidden;
  auto rowT = RankedTensorType::get({dyn, d}, elt);
  auto name = [&](StringRef n) {
    return b.getDictionaryAttr(
        b.getNamedAttr("attn.param", b.getStringAttr(n)));
  };
  func::FuncOp fn;
  if (config.op == "rope") {
    int64_t hs = config.headSize,
            rot = config.rotaryDim ? config.rotaryDim : hs;
    auto posT = RankedTensorType::get(
        {dyn}, b.getIntegerType(config.positionBits == 32 ? 32 : 64));
    auto qT = RankedTensorType::get({dyn, config.heads * hs}, elt);
    auto kT = RankedTensorType::get({dyn, config.kvHeads * hs}, elt);
    auto cT = RankedTensorType::get({dyn, rot}, elt);
    fn = func::FuncOp::create(b, loc, config.op,
                              b.getFunctionType({posT, qT, kT, cT}, {qT, kT}));
    const auto &n = abi::kRopeTensors;
    fn.setAllArgAttrs(ArrayRef<DictionaryAttr>{name(n[0]), name(n[1]),
                                               name(n[2]), name(n[3])});
    // Rotated in place: the results are query and key.
    fn.setAllResultAttrs(ArrayRef<DictionaryAttr>{name(n[1]), name(n[2])});
    Block *body = fn.addEntryBlock();
    b.setInsertionPointToStart(body);
    auto op = attn::RopeOp::create(
        b, loc, qT, kT, body->getArgument(0), body->getArgument(1),
        body->getArgument(2), body->getArgument(3), b.getI64IntegerAttr(hs),
        b.getI64IntegerAttr(rot), b.getBoolAttr(config.isNeox));
    func::ReturnOp::create(b, loc, op->getResults());
  } else if (config.op == "add_rmsnorm") {
    auto wT = RankedTensorType::get({d}, elt);
    fn = func::FuncOp::create(
        b, loc, config.op, b.getFunctionType({rowT, rowT, wT}, {rowT, rowT}));
    const auto &n = abi::kAddRmsNormTensors;
    static_assert(abi::kAddRmsNormInputs == 3);
    fn.setAllArgAttrs(
        ArrayRef<DictionaryAttr>{name(n[0]), name(n[1]), name(n[2])});
    fn.setAllResultAttrs(ArrayRef<DictionaryAttr>{name(n[3]), name(n[4])});
    Block *body = fn.addEntryBlock();
    b.setInsertionPointToStart(body);
    auto op = attn::AddRMSNormOp::create(
        b, loc, rowT, rowT, body->getArgument(0), body->getArgument(1),
        body->getArgument(2),
        b.getF32FloatAttr(static_cast<float>(config.eps)));
    func::ReturnOp::create(b, loc, op->getResults());
  } else {
    auto xT = RankedTensorType::get({dyn, 2 * d}, elt);
    fn = func::FuncOp::create(b, loc, config.op,
                              b.getFunctionType({xT}, {rowT}));
    static_assert(abi::kGatedActInputs == 1);
    fn.setAllArgAttrs(ArrayRef<DictionaryAttr>{name(abi::kGatedActTensors[0])});
    fn.setAllResultAttrs(
        ArrayRef<DictionaryAttr>{name(abi::kGatedActTensors[1])});
    Block *body = fn.addEntryBlock();
    b.setInsertionPointToStart(body);
    Value r = config.op == "silu_mul"
                  ? attn::SiluMulOp::create(b, loc, rowT, body->getArgument(0))
                        .getResult()
                  : attn::GeluMulOp::create(b, loc, rowT, body->getArgument(0))
                        .getResult();
    func::ReturnOp::create(b, loc, r);
  }
  if (failed(verify(*module)))
    return nullptr;
  return module;
}
