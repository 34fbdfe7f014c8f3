//===- CombineToGPU.cpp - the split-KV combine onto GPU threads -----------===//
//
// A `decode_combine` kernel merges, for each query row of one head, the
// partial results of all KV splits: a loop over the splits that folds each
// (O_s, LSE_s) into an online-softmax state (tile.lse_accumulate), then
// tile.finalize and the stores. Mapped like the attention tiles (one warp,
// one split after the other) the loop is a chain of dependent global loads:
// at B = 1 and 128k keys it merges ~110 splits at ~0.7 us each, a third of
// the decode's time (bench/NOTES.md, "the decode combine was a third of
// B=1", 2026-11-29).
//
// lse_accumulate is associative and commutative (a log-sum-exp merge), so
// this mapping spreads the splits over the block instead. For each row:
//   1. warp w takes splits w, w + W, ...; lane l holds 16-byte column
//      vectors l, l + 32, ... of O. The O vectors and LSEs of kUnroll
//      splits are loaded together, then folded into the warp's own online
//      state (acc, l, m in the log2 domain; acc and l rescaled when m
//      grows): one round trip per W x kUnroll splits. (A first pass for the
//      block's maximum LSE costs a round trip and a barrier more: 4.2 us at
//      B = 1 L = 128k, 66 splits; bench/NOTES.md, "decode's launch
//      structure, causal sm_80", 2026-11-30.)
//   2. the warps' states meet in shared memory: M = max_w m_w, each warp's
//      acc and l weighed by exp2(m_w - M); thread c writes column c of
//      O = sum / l (0 where l = 0) and thread 0 the LSE (M + log2 l) · ln 2
//      (-inf where l = 0), tile.finalize's meaning.
// The row loop is uniform over the block, so its barriers are safe.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TileToGPU/GPUEmitCommon.h"
#include "compiler/LaunchABI.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

#include <limits>

namespace attnc {
#define GEN_PASS_DEF_MAPCOMBINETOGPU
#include "compiler/Transforms/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc;
using gpu_emit::f32Const;
using gpu_emit::indexConst;

namespace {

constexpr int64_t kWarps = abi::kDecodeCombineThreads / 32;
/// Splits per warp whose loads are in flight together: 8 warps x 8 = 64
/// splits per round trip (B=1 L=128k on an H200 takes 66).
constexpr int64_t kUnroll = 8;
/// f32 elements per 16-byte vector.
constexpr int64_t kVec = 4;

/// The parts of a combine kernel this mapping rewrites: the loop over the
/// splits, the loads it merges, and the finalize and stores after it.
struct CombineShape {
  scf::ForOp loop;
  tile::LoadOp oLoad, lseLoad;
  tile::FinalizeOp finalize;
  tile::StoreOp oStore, lseStore; // lseStore may be null
  int64_t rows = 0, headDim = 0;
};

/// Float splat constant `v` (a tensor init of the state)?
bool isSplat(Value v, float expected) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return false;
  auto f = dyn_cast<FloatAttr>(attr.getSplatValue<Attribute>());
  return f && f.getValueAsDouble() == double(expected);
}

FailureOr<CombineShape> matchCombine(func::FuncOp kernel) {
  CombineShape c;
  auto loops = llvm::to_vector(kernel.getBody().front().getOps<scf::ForOp>());
  if (loops.size() != 1)
    return kernel.emitError() << "combine kernel needs one loop over splits";
  c.loop = loops.front();
  auto accus =
      llvm::to_vector(c.loop.getBody()->getOps<tile::LseAccumulateOp>());
  if (accus.size() != 1 || c.loop.getNumRegionIterArgs() != 3)
    return c.loop.emitError()
           << "combine loop must carry (acc, max, sum) of one lse_accumulate";
  tile::LseAccumulateOp accu = accus.front();
  Block *body = c.loop.getBody();
  if (accu.getAcc() != body->getArgument(1) ||
      accu.getMax() != body->getArgument(2) ||
      accu.getSum() != body->getArgument(3) ||
      body->getTerminator()->getOperands() != accu->getResults())
    return accu.emitError() << "lse_accumulate must fold the loop's state";
  if (!matchPattern(c.loop.getLowerBound(), m_Zero()) ||
      !matchPattern(c.loop.getStep(), m_One()))
    return c.loop.emitError() << "combine loop must run from 0 in steps of 1";
  const float negInf = -std::numeric_limits<float>::infinity();
  auto inits = c.loop.getInitArgs();
  if (!isSplat(inits[0], 0.f) || !isSplat(inits[1], negInf) ||
      !isSplat(inits[2], 0.f))
    return c.loop.emitError()
           << "combine state must start at acc = 0, max = -inf, sum = 0";
  c.oLoad = accu.getPartial().getDefiningOp<tile::LoadOp>();
  c.lseLoad = accu.getLse().getDefiningOp<tile::LoadOp>();
  for (tile::LoadOp load : {c.oLoad, c.lseLoad})
    if (!load || load.isPaged() || load.getLength() ||
        load->getBlock() != body ||
        !load.getResult().getType().getElementType().isF32())
      return accu.emitError()
             << "combine partials must be plain f32 tile.loads in the loop";
  auto oType = c.oLoad.getResult().getType();
  c.rows = oType.getDimSize(0);
  c.headDim = oType.getDimSize(1);
  if (c.headDim % kVec != 0 || c.headDim > abi::kDecodeCombineThreads)
    return accu.emitError() << "combine head dim " << c.headDim
                            << " must be a multiple of 4 and at most "
                            << abi::kDecodeCombineThreads;
  for (Operation *user : c.loop->getUsers()) {
    auto fin = dyn_cast<tile::FinalizeOp>(user);
    if (!fin || (c.finalize && fin != c.finalize))
      return c.loop.emitError() << "combine state must only be finalized";
    c.finalize = fin;
  }
  if (!c.finalize || c.finalize.getAcc() != c.loop.getResult(0) ||
      c.finalize.getMax() != c.loop.getResult(1) ||
      c.finalize.getSum() != c.loop.getResult(2))
    return c.loop.emitError() << "combine state must be finalized as a whole";
  for (Operation *user : c.finalize->getUsers()) {
    auto store = dyn_cast<tile::StoreOp>(user);
    if (!store)
      return user->emitError() << "combine results may only be stored";
    (store.getValue() == c.finalize.getOutput() ? c.oStore : c.lseStore) =
        store;
  }
  if (!c.oStore)
    return c.finalize.emitError() << "combine output is never stored";
  return c;
}

class CombineEmitter {
public:
  CombineEmitter(func::FuncOp kernel, gpu::GPUFuncOp gpuFunc,
                 CombineShape shape)
      : kernel(kernel), gpuFunc(gpuFunc), c(shape), b(gpuFunc.getContext()) {}

  LogicalResult emit();

private:
  Value idx(int64_t v) { return indexConst(b, loc, v); }
  Value addI(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mulI(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value addF(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value mulF(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  /// `then` under `cond`, no results.
  void ifThen(Value cond, function_ref<void()> then) {
    auto op = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(op.thenBlock());
    then();
  }
  /// The loop body's scalar ops (the workspace index of split `split`)
  /// cloned with the induction variable bound to it.
  IRMapping splitScalars(Value split);
  /// The LSE of the split `m` was cloned for (splitScalars) at query row
  /// `row`, in the log2 domain.
  Value loadLse(const IRMapping &m, Value row);
  void emitRow(Value row);

  func::FuncOp kernel;
  gpu::GPUFuncOp gpuFunc;
  CombineShape c;
  OpBuilder b;
  Location loc = UnknownLoc::get(b.getContext());
  IRMapping scalars; // kernel scalars -> per thread
  Value tid, warp, lane, splits;
  Value smemAcc, smemMax, smemSum; // [W·D], [W], [W] f32
};

IRMapping CombineEmitter::splitScalars(Value split) {
  IRMapping m = scalars;
  m.map(c.loop.getInductionVar(), split);
  for (Operation &op : c.loop.getBody()->without_terminator())
    if (!isa<tile::LoadOp, tile::LseAccumulateOp>(op))
      b.clone(op, m);
  return m;
}

Value CombineEmitter::loadLse(const IRMapping &m, Value row) {
  Value lse =
      memref::LoadOp::create(b, loc, m.lookup(c.lseLoad.getSource()),
                             ValueRange{m.lookup(c.lseLoad.getBatch()),
                                        m.lookup(c.lseLoad.getHead()), row});
  return mulF(lse, f32Const(b, loc, gpu_emit::kLog2e));
}

void CombineEmitter::emitRow(Value row) {
  const float negInf = -std::numeric_limits<float>::infinity();
  Type f32 = b.getF32Type();
  Value zero = f32Const(b, loc, 0.f), minusInf = f32Const(b, loc, negInf);
  Value firstLane =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, idx(0));

  // 1. Warp w: splits w, w + W, ...; the O vectors and LSEs of kUnroll of
  // them loaded at once, then folded into the warp's own online state
  // (acc, l, m): one round trip per kUnroll splits, no block-wide maximum
  // first.
  const int64_t vectors = c.headDim / kVec;
  const int64_t perLane = (vectors + 31) / 32;
  auto vecT = VectorType::get({kVec}, f32);
  SmallVector<Value> cols; // this lane's column vectors, clamped into the row
  for (int64_t k = 0; k < perLane; ++k)
    cols.push_back(mulI(arith::MinUIOp::create(b, loc, addI(lane, idx(32 * k)),
                                               idx(vectors - 1)),
                        idx(kVec)));
  SmallVector<Value> init(
      perLane, arith::ConstantOp::create(b, loc, vecT,
                                         DenseElementsAttr::get(vecT, 0.f)));
  init.push_back(zero);     // l
  init.push_back(minusInf); // m, log2 domain
  auto sumLoop =
      scf::ForOp::create(b, loc, warp, splits, idx(kWarps * kUnroll), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(sumLoop.getBody());
    Value s0 = sumLoop.getInductionVar();
    SmallVector<Value> lse;
    SmallVector<SmallVector<Value>> parts;
    for (int64_t u = 0; u < kUnroll; ++u) {
      // Past the last split: re-read split s0 (always valid), weigh it 0.
      Value s = addI(s0, idx(u * kWarps));
      Value valid = ult(s, splits);
      Value at =
          u == 0 ? s0 : Value(arith::SelectOp::create(b, loc, valid, s, s0));
      IRMapping m = splitScalars(at);
      Value view = m.lookup(c.oLoad.getSource());
      Value sb = m.lookup(c.oLoad.getBatch()),
            head = m.lookup(c.oLoad.getHead());
      Value t = loadLse(m, row);
      lse.push_back(
          u == 0 ? t
                 : Value(arith::SelectOp::create(b, loc, valid, t, minusInf)));
      SmallVector<Value> vecs;
      for (Value col : cols)
        vecs.push_back(vector::LoadOp::create(
            b, loc, vecT, view, ValueRange{sb, head, row, col}, false,
            llvm::MaybeAlign(gpu_emit::kVectorAlign)));
      parts.push_back(std::move(vecs));
    }
    auto carried = sumLoop.getRegionIterArgs();
    Value mOld = carried.back();
    SmallVector<Value> maxima = {mOld};
    llvm::append_range(maxima, lse);
    gpu_emit::StateMerge merge(b, loc, maxima);
    Value mNew = merge.max();
    // alpha = 0 while nothing was seen (acc and l are still 0).
    Value alpha = merge.weight(mOld);
    Value alphaV = vector::BroadcastOp::create(b, loc, vecT, alpha);
    SmallVector<Value> acc;
    for (int64_t k = 0; k < perLane; ++k)
      acc.push_back(arith::MulFOp::create(b, loc, carried[k], alphaV));
    Value l = mulF(carried[perLane], alpha);
    for (int64_t u = 0; u < kUnroll; ++u) {
      Value w = merge.weight(lse[u]);
      Value wv = vector::BroadcastOp::create(b, loc, vecT, w);
      for (int64_t k = 0; k < perLane; ++k)
        acc[k] = vector::FMAOp::create(b, loc, parts[u][k], wv, acc[k]);
      l = addF(l, w);
    }
    acc.push_back(l);
    acc.push_back(mNew);
    scf::YieldOp::create(b, loc, acc);
  }
  Value warpM = sumLoop.getResults().back();
  Value warpL = sumLoop.getResult(perLane);

  // 2. The warps' states meet in shared memory: M = the largest warp
  // maximum, each warp's acc and l weighed by exp2(m_w - M).
  for (int64_t k = 0; k < perLane; ++k) {
    Value inRow = ult(addI(lane, idx(32 * k)), idx(vectors));
    ifThen(inRow, [&] {
      vector::StoreOp::create(
          b, loc, sumLoop.getResult(k), smemAcc,
          ValueRange{addI(mulI(warp, idx(c.headDim)), cols[k])});
    });
  }
  ifThen(firstLane, [&] {
    memref::StoreOp::create(b, loc, warpL, smemSum, warp);
    memref::StoreOp::create(b, loc, warpM, smemMax, warp);
  });
  gpu::BarrierOp::create(b, loc);
  SmallVector<Value> warpMax;
  for (int64_t w = 0; w < kWarps; ++w)
    warpMax.push_back(
        memref::LoadOp::create(b, loc, smemMax, ValueRange{idx(w)}));
  gpu_emit::StateMerge merge(b, loc, warpMax);
  Value ref = merge.reference();
  SmallVector<Value> scale;
  Value l = zero;
  for (int64_t w = 0; w < kWarps; ++w) {
    scale.push_back(merge.weight(warpMax[w]));
    Value lw = memref::LoadOp::create(b, loc, smemSum, ValueRange{idx(w)});
    l = LLVM::FMAOp::create(b, loc, lw, scale[w], l);
  }
  // An attention sink joins the merged state once, as one more key of value
  // zero (tile.finalize's sink; one program is one query head).
  Value numerator = f32Const(b, loc, 1.f);
  Value sink, sinkLog2;
  if (c.finalize.getSink()) {
    sink = scalars.lookup(c.finalize.getSink());
    sinkLog2 = gpu_emit::sinkLog2Of(b, loc, sink);
    gpu_emit::SinkMerge merged =
        gpu_emit::mergeSink(b, loc, merge.max(), l, sinkLog2);
    ref = merged.max;
    l = merged.sum;
    numerator = merged.accWeight;
  }
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, l, zero);
  Value inv = arith::SelectOp::create(
      b, loc, positive, arith::DivFOp::create(b, loc, numerator, l), zero);
  Type outElt = c.finalize.getOutput().getType().getElementType();
  ifThen(ult(tid, idx(c.headDim)), [&] {
    Value o = zero;
    for (int64_t w = 0; w < kWarps; ++w)
      o = LLVM::FMAOp::create(
          b, loc,
          memref::LoadOp::create(b, loc, smemAcc,
                                 ValueRange{addI(idx(w * c.headDim), tid)}),
          scale[w], o);
    o = mulF(o, inv);
    if (outElt != f32)
      o = arith::TruncFOp::create(b, loc, outElt, o);
    memref::StoreOp::create(b, loc, o, scalars.lookup(c.oStore.getDest()),
                            ValueRange{scalars.lookup(c.oStore.getBatch()),
                                       scalars.lookup(c.oStore.getHead()), row,
                                       tid});
  });
  if (c.lseStore)
    ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, idx(0)),
           [&] {
             Value v = gpu_emit::lseOf(b, loc, ref, l, sink, sinkLog2);
             v = arith::SelectOp::create(b, loc, positive, v,
                                         f32Const(b, loc, negInf));
             memref::StoreOp::create(
                 b, loc, v, scalars.lookup(c.lseStore.getDest()),
                 ValueRange{scalars.lookup(c.lseStore.getBatch()),
                            scalars.lookup(c.lseStore.getHead()), row});
           });
  // The next row reuses the shared memory.
  gpu::BarrierOp::create(b, loc);
}

LogicalResult CombineEmitter::emit() {
  Block *entry = &gpuFunc.getBody().front();
  b.setInsertionPointToStart(entry);
  loc = kernel.getLoc();
  scalars.map(kernel.getArguments(),
              entry->getArguments().take_front(kernel.getNumArguments()));
  auto buffers = gpuFunc.getWorkgroupAttributions();
  smemAcc = buffers[0];
  smemMax = buffers[1];
  smemSum = buffers[2];
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  warp = arith::DivUIOp::create(b, loc, tid, idx(32));
  lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  gpu::Dimension dims[] = {gpu::Dimension::x, gpu::Dimension::y,
                           gpu::Dimension::z};
  // Scalars before the loop: program ids, views, the program's first row.
  for (Operation &op : kernel.getBody().front()) {
    loc = op.getLoc();
    if (&op == c.loop.getOperation())
      break;
    if (auto pid = dyn_cast<tile::ProgramIdOp>(op)) {
      scalars.map(pid.getResult(),
                  gpu::BlockIdOp::create(b, loc, dims[pid.getDim()]));
      continue;
    }
    if (llvm::any_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>))
      continue; // the state's splat inits (checked by matchCombine)
    if (op.getNumRegions() != 0)
      return op.emitError() << "has no combine mapping";
    b.clone(op, scalars);
  }
  loc = c.loop.getLoc();
  splits = scalars.lookup(c.loop.getUpperBound());
  Value q0 = scalars.lookup(c.oLoad.getRow());
  Value seq =
      memref::DimOp::create(b, loc, scalars.lookup(c.oStore.getDest()), 2);
  // The program's rows [q0, q0 + rows) within the sequence, one at a time.
  Value end = arith::MinSIOp::create(b, loc, addI(q0, idx(c.rows)), seq);
  auto rowLoop = scf::ForOp::create(b, loc, q0, end, idx(1));
  b.setInsertionPointToStart(rowLoop.getBody());
  emitRow(rowLoop.getInductionVar());
  b.setInsertionPointAfter(rowLoop);
  gpu::ReturnOp::create(b, loc);
  return success();
}

class MapCombineToGPUPass
    : public attnc::impl::MapCombineToGPUBase<MapCombineToGPUPass> {
public:
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    SmallVector<func::FuncOp> kernels =
        gpu_emit::kernelsWithRule(module, abi::kGridRuleDecodeCombine);
    if (kernels.empty())
      return;
    OpBuilder b(ctx);
    gpu::GPUModuleOp gpuModule = gpu_emit::kernelsModule(module);
    auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    for (func::FuncOp kernel : kernels) {
      FailureOr<CombineShape> shape = matchCombine(kernel);
      if (failed(shape))
        return signalPassFailure();
      Type f32 = b.getF32Type();
      SmallVector<Type> buffers = {
          MemRefType::get({kWarps * shape->headDim}, f32, nullptr, wg),
          MemRefType::get({kWarps}, f32, nullptr, wg),
          MemRefType::get({kWarps}, f32, nullptr, wg)};
      gpu::GPUFuncOp gpuFunc = gpu_emit::createKernelFunc(
          b, gpuModule, kernel, abi::kDecodeCombineThreads, buffers);
      if (failed(CombineEmitter(kernel, gpuFunc, *shape).emit()))
        return signalPassFailure();
      gpu_emit::recordLaunchInfo(module, kernel.getName(),
                                 abi::kDecodeCombineThreads,
                                 /*dynamicSmem=*/0);
      kernel.erase();
    }
  }
};

} // namespace
