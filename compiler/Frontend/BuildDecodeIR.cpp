//===- BuildDecodeIR.cpp - build attn.decode IR for a configuration -------===//
#include "compiler/Frontend/BuildDecodeIR.h"

#include "dialects/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

OwningOpRef<ModuleOp> attnc::buildDecodeModule(MLIRContext &ctx,
                                               const DecodeConfig &config) {
  ctx.loadDialect<attn::AttnDialect, func::FuncDialect>();
  Location loc = NameLoc::get(StringAttr::get(&ctx, "attnc emit --op decode"));
  const AttentionConfig &att = config.attention;
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());

  Type elt = att.dtype == "bf16"   ? Type(b.getBF16Type())
             : att.dtype == "fp16" ? Type(b.getF16Type())
                                   : Type(b.getF32Type());
  int64_t dyn = ShapedType::kDynamic;
  auto qT = RankedTensorType::get({dyn, att.heads, dyn, att.headDim}, elt);
  auto cacheT = RankedTensorType::get(
      {dyn, att.kvHeads, config.pageSize, att.headDim}, elt);
  auto tableT = RankedTensorType::get({dyn, dyn}, b.getI32Type());
  auto lensT = RankedTensorType::get({dyn}, b.getI32Type());
  auto lseT = RankedTensorType::get({dyn, att.heads, dyn}, b.getF32Type());

  SmallVector<Type> results{qT};
  if (att.withLse)
    results.push_back(lseT);
  SmallVector<Type> args{qT, cacheT, cacheT, tableT, lensT};
  if (att.sinks)
    args.push_back(RankedTensorType::get({att.heads}, b.getF32Type()));
  auto fn =
      func::FuncOp::create(b, loc, "decode", b.getFunctionType(args, results));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);

  FloatAttr scale = att.scale ? b.getF32FloatAttr(*att.scale) : FloatAttr();
  FloatAttr softcap =
      att.softcap ? b.getF32FloatAttr(*att.softcap) : FloatAttr();
  attn::WindowAttr window;
  const std::optional<int64_t> windowRight = att.irWindowRight();
  if (att.windowLeft || windowRight) {
    window = attn::WindowAttr::getChecked([&] { return emitError(loc); }, &ctx,
                                          att.windowLeft.value_or(-1),
                                          windowRight.value_or(-1));
    if (!window)
      return nullptr;
  }
  auto op = attn::DecodeOp::create(
      b, loc, qT, att.withLse ? Type(lseT) : Type(), body->getArgument(0),
      body->getArgument(1), body->getArgument(2), body->getArgument(3),
      body->getArgument(4), att.sinks ? body->getArgument(5) : Value(), scale,
      att.causal ? b.getUnitAttr() : UnitAttr(), window, softcap);
  func::ReturnOp::create(b, loc, op->getResults());
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

static Type elementType(OpBuilder &b, const std::string &dtype) {
  return dtype == "bf16"   ? Type(b.getBF16Type())
         : dtype == "fp16" ? Type(b.getF16Type())
                           : Type(b.getF32Type());
}

OwningOpRef<ModuleOp> attnc::buildKVAppendModule(MLIRContext &ctx,
                                                 const KVAppendConfig &config) {
  ctx.loadDialect<attn::AttnDialect, func::FuncDialect>();
  Location loc =
      NameLoc::get(StringAttr::get(&ctx, "attnc emit --op kv-append"));
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Type elt = elementType(b, config.dtype);
  int64_t dyn = ShapedType::kDynamic;
  auto rowsT =
      RankedTensorType::get({dyn, config.kvHeads, config.headDim}, elt);
  auto slotsT = RankedTensorType::get({dyn}, b.getI64Type());
  auto cacheT = RankedTensorType::get(
      {dyn, config.kvHeads, config.pageSize, config.headDim}, elt);
  auto fn = func::FuncOp::create(
      b, loc, "kv_append",
      b.getFunctionType({rowsT, rowsT, slotsT, cacheT, cacheT},
                        {cacheT, cacheT}));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto op = attn::KVAppendOp::create(
      b, loc, cacheT, cacheT, body->getArgument(0), body->getArgument(1),
      body->getArgument(2), body->getArgument(3), body->getArgument(4));
  func::ReturnOp::create(b, loc, op->getResults());
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp>
attnc::buildLseMergeModule(MLIRContext &ctx, const AttentionConfig &config) {
  ctx.loadDialect<attn::AttnDialect, func::FuncDialect>();
  Location loc =
      NameLoc::get(StringAttr::get(&ctx, "attnc emit --op lse-merge"));
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Type elt = elementType(b, config.dtype);
  int64_t dyn = ShapedType::kDynamic;
  auto oT =
      RankedTensorType::get({dyn, config.heads, dyn, config.headDim}, elt);
  auto lseT = RankedTensorType::get({dyn, config.heads, dyn}, b.getF32Type());
  SmallVector<Type> results{oT};
  if (config.withLse)
    results.push_back(lseT);
  auto fn = func::FuncOp::create(
      b, loc, "lse_merge", b.getFunctionType({oT, lseT, oT, lseT}, results));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto op = attn::LseMergeOp::create(
      b, loc, oT, config.withLse ? Type(lseT) : Type(), body->getArgument(0),
      body->getArgument(1), body->getArgument(2), body->getArgument(3));
  func::ReturnOp::create(b, loc, op->getResults());
  if (failed(verify(*module)))
    return nullptr;
  return module;
}
