//===- BuildAttnIR.cpp - build attn IR for a configuration ----------------===//
#include "compiler/Frontend/BuildAttnIR.h"

#include "dialects/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

OwningOpRef<ModuleOp>
attnc::buildAttentionModule(MLIRContext &ctx, const AttentionConfig &config) {
  ctx.loadDialect<attn::AttnDialect, func::FuncDialect>();
  Location loc =
      NameLoc::get(StringAttr::get(&ctx, "attnc emit --op attention"));
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());

  // An unknown dtype string is turned into f32 so that the verifier reports
  // it with the op's own message.
  Type elt = config.dtype == "bf16"   ? Type(b.getBF16Type())
             : config.dtype == "fp16" ? Type(b.getF16Type())
                                      : Type(b.getF32Type());
  int64_t dyn = ShapedType::kDynamic;
  // [B, H, S, D], or packed [total, H, D] with an LSE of [H, total_q].
  auto qT =
      config.varlen
          ? RankedTensorType::get({dyn, config.heads, config.headDim}, elt)
          : RankedTensorType::get({dyn, config.heads, dyn, config.headDim},
                                  elt);
  // Paged: the cache [pages, Hkv, page_size, D].
  auto kvT =
      config.paged()
          ? RankedTensorType::get(
                {dyn, config.kvHeads, config.pageSize, config.headDim}, elt)
      : config.varlen
          ? RankedTensorType::get({dyn, config.kvHeads, config.headDim}, elt)
          : RankedTensorType::get({dyn, config.kvHeads, dyn, config.headDim},
                                  elt);
  auto lseT =
      config.varlen
          ? RankedTensorType::get({config.heads, dyn}, b.getF32Type())
          : RankedTensorType::get({dyn, config.heads, dyn}, b.getF32Type());

  SmallVector<Type> results{qT};
  if (config.withLse)
    results.push_back(lseT);
  SmallVector<Type> args{qT, kvT, kvT};
  auto sinksT = RankedTensorType::get({config.heads}, b.getF32Type());
  if (config.sinks)
    args.push_back(sinksT);
  auto cuT = RankedTensorType::get({dyn}, b.getI32Type());
  const unsigned cuArg = args.size();
  if (config.paged())
    args.append({cuT, RankedTensorType::get({dyn, dyn}, b.getI32Type()), cuT});
  else if (config.varlen)
    args.append({cuT, cuT});
  auto fn = func::FuncOp::create(b, loc, "attention_fwd",
                                 b.getFunctionType(args, results));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);

  FloatAttr scale =
      config.scale ? b.getF32FloatAttr(*config.scale) : FloatAttr();
  FloatAttr softcap =
      config.softcap ? b.getF32FloatAttr(*config.softcap) : FloatAttr();
  attn::WindowAttr window;
  const std::optional<int64_t> windowRight = config.irWindowRight();
  if (config.windowLeft || windowRight)
    window = attn::WindowAttr::getChecked([&] { return emitError(loc); }, &ctx,
                                          config.windowLeft.value_or(-1),
                                          windowRight.value_or(-1));
  if ((config.windowLeft || windowRight) && !window)
    return nullptr;

  auto op = attn::AttentionOp::create(
      b, loc, qT, config.withLse ? Type(lseT) : Type(), body->getArgument(0),
      body->getArgument(1), body->getArgument(2),
      config.sinks ? body->getArgument(3) : Value(),
      config.varlen ? body->getArgument(cuArg) : Value(),
      config.varlen && !config.paged() ? body->getArgument(cuArg + 1) : Value(),
      /*kv_bounds=*/Value(),
      config.paged() ? body->getArgument(cuArg + 1) : Value(),
      config.paged() ? body->getArgument(cuArg + 2) : Value(),
      /*captures=*/ValueRange(), scale,
      config.causal ? b.getUnitAttr() : UnitAttr(), window, softcap);
  func::ReturnOp::create(b, loc, op->getResults());

  if (failed(verify(*module)))
    return nullptr;
  return module;
}
