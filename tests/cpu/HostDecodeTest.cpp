//===- HostDecodeTest.cpp - split-KV paged decode, run on the CPU ---------===//
//
// attn.decode -> split kernel + combine -> host pipeline -> JIT, then
// checked against the float64 reference on fresh random inputs: split
// counts (more splits than tiles: empty splits), page sizes (1 to the whole
// sequence: the contiguous case), random block tables, ragged lengths that
// are not multiples of the page size (and 0), GQA packing, q_len > 1 with
// causal, both cache layouts (NHD / HND pages), softcap, large logits.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Decode.h"
#include "compiler/Driver/SpecCompiler.h"
#include "compiler/Frontend/BuildDecodeIR.h"
#include "compiler/LaunchABI.h"
#include "dialects/Attn/IR/AttnOps.h"

#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Target/Host/HostJIT.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "templates/ReferenceAttention.h"
#include "tests/common/AttentionCheck.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <random>

using namespace attnc;

namespace {

struct Case {
  std::string name;
  int hq, hkv, d;
  const char *dtype;
  int pageSize;
  int maxQLen, seqQ;
  std::vector<int> lens; // per sequence: the batch is ragged
  int splits;
  int blockN = 16;
  bool causal = false;
  bool nhd =
      false; // pages laid out [page, Hkv, D] per slot (else [Hkv, page, D])
  float softcap = 0.f;
  float qScale = 1.f;
  // write_o: 0 the combine kernel merges the partials; 1 one split writes
  // O and LSE itself; 2 the last split program of each group merges them.
  int write = 0;
  // Attention sinks (one logit per query head): the combine merges them
  // (write_o 0 only).
  bool sinks = false;
};

uint64_t seedFromEnvOrClock() {
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    return std::strtoull(s, nullptr, 10);
  return std::chrono::steady_clock::now().time_since_epoch().count();
}

#define ATTNC_MEMREF void *, void *, int64_t
using SplitFn = void (*)(ATTNC_MEMREF, ATTNC_MEMREF, ATTNC_MEMREF, ATTNC_MEMREF,
                         ATTNC_MEMREF, ATTNC_MEMREF, ATTNC_MEMREF, ATTNC_MEMREF,
                         ATTNC_MEMREF, ATTNC_MEMREF, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);
using CombineFn = void (*)(ATTNC_MEMREF, ATTNC_MEMREF, ATTNC_MEMREF,
                           ATTNC_MEMREF, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t);
// With sinks: the contract's parameters, then "sinks".
using CombineSinksFn = void (*)(ATTNC_MEMREF, ATTNC_MEMREF, ATTNC_MEMREF,
                                ATTNC_MEMREF, int64_t, int64_t, int64_t,
                                int64_t, int64_t, int64_t, int64_t, int64_t,
                                ATTNC_MEMREF);
#undef ATTNC_MEMREF

void runCase(const Case &c, std::mt19937_64 &rng) {
  INFO("case: " << c.name);
  bool bf16 = std::string(c.dtype) == "bf16";
  auto toBits = [&](float x) { return test::toHalfBits(bf16, x); };
  int batch = int(c.lens.size()), hq = c.hq, hkv = c.hkv, d = c.d;
  int sq = c.seqQ, page = c.pageSize;

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  DecodeConfig cfg;
  cfg.attention.heads = hq;
  cfg.attention.kvHeads = hkv;
  cfg.attention.headDim = d;
  cfg.attention.dtype = c.dtype;
  cfg.attention.causal = c.causal;
  if (c.softcap > 0)
    cfg.attention.softcap = c.softcap;
  cfg.attention.sinks = c.sinks;
  cfg.pageSize = page;
  cfg.maxQLen = c.maxQLen;
  auto module = buildDecodeModule(ctx, cfg);
  REQUIRE(module);
  mlir::PassManager pm(&ctx);
  buildDecodeTilePipeline(pm, {c.blockN, c.maxQLen});
  REQUIRE(mlir::succeeded(pm.run(*module)));
  auto kernel = HostKernel::compile(*module, "decode_split");
  if (!kernel)
    FAIL(llvm::toString(kernel.takeError()));
  auto combineAddr = (*kernel)->lookup("decode_combine");
  if (!combineAddr)
    FAIL(llvm::toString(combineAddr.takeError()));

  // A random block table over a shuffled pool with spare pages; unused
  // entries hold an index far out of range (reading one would crash).
  int maxBlocks = 1;
  for (int len : c.lens)
    maxBlocks = std::max(maxBlocks, (len + page - 1) / page + 1);
  int used = 0;
  for (int len : c.lens)
    used += (len + page - 1) / page;
  int numPages = used + 3;
  std::vector<int32_t> pool(numPages);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::vector<int32_t> table(size_t(batch) * maxBlocks, 1 << 30);
  int next = 0;
  for (int b = 0; b < batch; ++b)
    for (int blk = 0; blk < (c.lens[b] + page - 1) / page; ++blk)
      table[size_t(b) * maxBlocks + blk] = pool[next++];
  std::vector<int32_t> lens(c.lens.begin(), c.lens.end());

  // Cache strides of the logical [pages, Hkv, page, D].
  std::array<int64_t, 3> cs =
      c.nhd
          ? std::array<int64_t, 3>{int64_t(page) * hkv * d, d, int64_t(hkv) * d}
          : std::array<int64_t, 3>{int64_t(hkv) * page * d, int64_t(page) * d,
                                   d};
  size_t cacheElems = size_t(numPages) * page * hkv * d;
  std::vector<uint16_t> kc(cacheElems), vc(cacheElems);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto *t : {&kc, &vc})
    for (auto &x : *t)
      x = toBits(normal(rng));
  // Q: torch's decode layout [B, Sq, H, D] for one row, else [B, H, Sq, D]
  // (the group's rows must be one strided matrix).
  auto qs = test::attentionStrides(hq, sq, d, /*bshd=*/sq == 1);
  std::vector<uint16_t> q(size_t(batch) * hq * sq * d);
  for (auto &x : q)
    x = toBits(normal(rng) * c.qScale);
  // O: [B, Sq, H, D]; written by the split kernel itself, the group's rows
  // must be one matrix as Q's: [B, H, Sq, D] when Sq > 1.
  auto os = test::attentionStrides(hq, sq, d, /*bshd=*/c.write == 0 || sq == 1);
  uint16_t nanBits = bf16 ? 0x7FC0 : 0x7E00;
  std::vector<uint16_t> o(q.size(), nanBits);
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> lse(size_t(batch) * hq * sq, nan);
  std::vector<float> oPart(size_t(c.splits) * batch * hq * sq * d, nan);
  std::vector<float> lsePart(size_t(c.splits) * batch * hq * sq, nan);
  // The merge counters start as stale bytes (a recycled workspace): only
  // a word holding this launch's ticket counts arrivals.
  const uint32_t ticket = uint32_t(rng() | 1);
  std::vector<uint64_t> counts(size_t(batch) * hkv);
  for (auto &w : counts) {
    w = rng();
    if (uint32_t(w >> 32) == ticket)
      w ^= uint64_t(1) << 63;
  }

  auto split = reinterpret_cast<SplitFn>((*kernel)->entryAddress());
  auto combine = reinterpret_cast<CombineFn>(*combineAddr);
#define ATTNC_PTR(p) (void *)(p), (void *)(p), 0
  REQUIRE((c.write != 1 || c.splits == 1));
  split(ATTNC_PTR(q.data()), ATTNC_PTR(kc.data()), ATTNC_PTR(vc.data()),
        ATTNC_PTR(table.data()), ATTNC_PTR(lens.data()),
        ATTNC_PTR(oPart.data()), ATTNC_PTR(lsePart.data()), ATTNC_PTR(o.data()),
        ATTNC_PTR(lse.data()), ATTNC_PTR(counts.data()), batch, sq, c.splits,
        maxBlocks, numPages, qs[0], qs[1], qs[2], cs[0], cs[1], cs[2], cs[0],
        cs[1], cs[2], os[0], os[1], os[2], int64_t(hq) * sq, sq, c.write,
        int64_t(ticket));
  if (c.write == 2) // every group merged: its counter left 0
    CHECK(std::all_of(counts.begin(), counts.end(),
                      [](uint64_t w) { return w == 0; }));
  std::vector<float> sinks = test::randomSinks(c.sinks, hq, rng);
  REQUIRE((!c.sinks || c.write == 0));
  if (c.write == 0 && !c.sinks)
    combine(ATTNC_PTR(oPart.data()), ATTNC_PTR(lsePart.data()),
            ATTNC_PTR(o.data()), ATTNC_PTR(lse.data()), batch, sq, c.splits,
            os[0], os[1], os[2], int64_t(hq) * sq, sq);
  if (c.sinks)
    reinterpret_cast<CombineSinksFn>(*combineAddr)(
        ATTNC_PTR(oPart.data()), ATTNC_PTR(lsePart.data()), ATTNC_PTR(o.data()),
        ATTNC_PTR(lse.data()), batch, sq, c.splits, os[0], os[1], os[2],
        int64_t(hq) * sq, sq, ATTNC_PTR(sinks.data()));
#undef ATTNC_PTR

  // float64 reference, sequence by sequence on the gathered cache.
  std::vector<double> refO(q.size()), refLse(lse.size());
  auto toDouble = [&](uint16_t x) {
    return double(test::fromHalfBits(bf16, x));
  };
  for (int b = 0; b < batch; ++b) {
    int len = c.lens[b];
    std::vector<uint16_t> kg(size_t(hkv) * std::max(len, 1) * d), vg(kg.size());
    for (int h = 0; h < hkv; ++h)
      for (int j = 0; j < len; ++j) {
        int64_t pg = table[size_t(b) * maxBlocks + j / page];
        int64_t at = pg * cs[0] + h * cs[1] + (j % page) * cs[2];
        for (int x = 0; x < d; ++x) {
          kg[(size_t(h) * len + j) * d + x] = kc[at + x];
          vg[(size_t(h) * len + j) * d + x] = vc[at + x];
        }
      }
    templates::ReferenceProblem p;
    p.batch = 1;
    p.headsQ = hq;
    p.headsKV = hkv;
    p.seqQ = sq;
    p.seqKV = len;
    p.headDim = d;
    p.scale = 1.0 / std::sqrt(double(d));
    p.softcap = c.softcap;
    p.causal = c.causal;
    p.sinks.assign(sinks.begin(), sinks.end());
    auto dense = templates::ReferenceStrides::dense(hkv, len, d);
    templates::referenceAttention(
        p, q.data() + b * qs[0], {qs[0], qs[1], qs[2]}, kg.data(), dense,
        vg.data(), dense, toDouble, refO.data() + size_t(b) * hq * sq * d,
        refLse.data() + size_t(b) * hq * sq);
  }
  test::AttentionComparison cmp =
      test::compareAttention(bf16, o, os, lse, refO, refLse, batch, hq, sq, d);
  std::cout << "  " << c.name << ": rel L2 " << cmp.relL2 << ", max LSE err "
            << cmp.lseErr << ", fully masked rows " << cmp.maskedRows << "\n";
  CHECK(cmp.maskedWrong == 0);
  CHECK(cmp.nonFinite == 0);
  CHECK(cmp.relL2 <= 1e-2);
  CHECK(cmp.lseErr <= 1e-3);
  // Every partial was written (no NaN left in the workspace), or with
  // write_o none was.
  auto isNan = [](float x) { return std::isnan(x); };
  if (c.write == 1)
    CHECK(std::all_of(lsePart.begin(), lsePart.end(), isNan));
  else
    CHECK(std::none_of(lsePart.begin(), lsePart.end(), isNan));
}

} // namespace

TEST_CASE("split-KV paged decode on the host matches the float64 reference",
          "[cpu][decode]") {
  uint64_t seed = seedFromEnvOrClock();
  std::cout << "seed " << seed << " (set ATTNC_TEST_SEED to repeat)\n";
  std::mt19937_64 rng(seed);

  std::vector<Case> cases;
  cases.push_back({"GQA 4/1, D64, page 16, ragged {1, 37, 100}, 3 splits",
                   4,
                   1,
                   64,
                   "bf16",
                   16,
                   1,
                   1,
                   {1, 37, 100},
                   3});
  cases.push_back({"page 1, GQA 2/1, fp16, 4 splits (some empty)",
                   2,
                   1,
                   64,
                   "fp16",
                   1,
                   1,
                   1,
                   {5, 33},
                   4});
  {
    Case c{"q_len 3 of max 4, causal, page 64, NHD, D128, GQA 4/2",
           4,
           2,
           128,
           "bf16",
           64,
           4,
           3,
           {3, 70, 129},
           2};
    c.causal = true;
    c.nhd = true;
    cases.push_back(c);
  }
  {
    Case c{"contiguous (one page per sequence), softcap 20, large logits",
           2,
           2,
           64,
           "bf16",
           96,
           1,
           1,
           {96, 50},
           1};
    c.softcap = 20.f;
    c.qScale = 30.f;
    cases.push_back(c);
  }
  cases.push_back({"an empty sequence in the batch, 2 splits",
                   2,
                   1,
                   64,
                   "bf16",
                   16,
                   1,
                   1,
                   {0, 20},
                   2});
  // Attention sinks, merged by the combine: ragged with an empty sequence
  // (O = 0, LSE = the sink), one split, and q_len 3 causal.
  {
    Case c{"sinks, GQA 6/2, D64, page 16, {0, 37, 100}, 3 splits",
           6,
           2,
           64,
           "bf16",
           16,
           1,
           1,
           {0, 37, 100},
           3};
    c.sinks = true;
    cases.push_back(c);
    c.name = "sinks, one split, softcap 20";
    c.splits = 1;
    c.softcap = 20.f;
    cases.push_back(c);
    c = {"sinks, q_len 3 causal, page 64, NHD, D128, GQA 4/2",
         4,
         2,
         128,
         "fp16",
         64,
         4,
         3,
         {3, 70, 129},
         2};
    c.causal = true;
    c.nhd = true;
    c.sinks = true;
    cases.push_back(c);
  }
  {
    Case c{"GQA 8/1 (16 rows), D128, 5 splits, block-n 32",
           8,
           1,
           128,
           "bf16",
           16,
           1,
           1,
           {200},
           5};
    c.blockN = 32;
    cases.push_back(c);
  }
  // One split writing O and LSE itself (write_o): a ragged batch with an
  // empty sequence (O = 0, LSE = -inf), and q_len 3 with a causal mask
  // ([B, H, Sq, D] output so that each group's rows are one matrix).
  {
    Case c{"write_o: one split, GQA 4/1, D64, page 16, {0, 37, 100}",
           4,
           1,
           64,
           "bf16",
           16,
           1,
           1,
           {0, 37, 100},
           1};
    c.write = 1;
    cases.push_back(c);
  }
  {
    Case c{"write_o: one split, q_len 3 of 4, causal, fp16, D128, GQA 4/2",
           4,
           2,
           128,
           "fp16",
           64,
           4,
           3,
           {3, 70, 129},
           1};
    c.causal = true;
    c.write = 1;
    cases.push_back(c);
  }
  // The last split program merges (write_o = 2): empty splits, an empty
  // sequence, more splits than tiles, q_len 3 with a causal mask.
  {
    Case c{"write_o 2: last split merges, GQA 4/1, D64, page 16, {0, 37, 100}, "
           "4 splits",
           4,
           1,
           64,
           "bf16",
           16,
           1,
           1,
           {0, 37, 100},
           4};
    c.write = 2;
    cases.push_back(c);
  }
  {
    Case c{"write_o 2: q_len 3 of 4, causal, fp16, D128, GQA 4/2, 3 splits",
           4,
           2,
           128,
           "fp16",
           64,
           4,
           3,
           {3, 70, 129},
           3};
    c.causal = true;
    c.write = 2;
    cases.push_back(c);
  }
  {
    Case c{"write_o 2: 8 splits (any count works), GQA 8/1, D128, block-n 32, "
           "{200, 31}",
           8,
           1,
           128,
           "bf16",
           16,
           1,
           1,
           {200, 31},
           8};
    c.blockN = 32;
    c.qScale = 20.f; // large logits: the partials' maxima far apart
    c.write = 2;
    cases.push_back(c);
  }
  for (const Case &c : cases)
    runCase(c, rng);
}

namespace {

/// One module through the decode tile pipeline and the host JIT.
std::unique_ptr<HostKernel> compileHost(mlir::MLIRContext &ctx,
                                        mlir::OwningOpRef<mlir::ModuleOp> m,
                                        int maxQLen, const char *entry) {
  REQUIRE(m);
  mlir::PassManager pm(&ctx);
  buildDecodeTilePipeline(pm, {16, maxQLen});
  REQUIRE(mlir::succeeded(pm.run(*m)));
  auto kernel = HostKernel::compile(*m, entry);
  if (!kernel)
    FAIL(llvm::toString(kernel.takeError()));
  return std::move(*kernel);
}

} // namespace

// Cascade attention: B sequences share a prefix. The prefix is attended
// once, with the B queries as the rows of one sequence (one pass over its
// cache), each suffix by an ordinary decode, and attn.lse_merge joins them;
// the result must equal attention over prefix + suffix.
TEST_CASE("cascade: shared prefix + suffixes merged by attn.lse_merge",
          "[cpu][decode]") {
  uint64_t seed = seedFromEnvOrClock();
  std::cout << "seed " << seed << " (set ATTNC_TEST_SEED to repeat)\n";
  std::mt19937_64 rng(seed);
  const int hq = 4, hkv = 2, d = 64, page = 16, prefix = 45;
  const std::vector<int> suffix = {10, 0, 33};
  const int batch = int(suffix.size());
  const bool bf16 = true;
  auto toBits = [&](float x) { return test::toHalfBits(bf16, x); };
  std::normal_distribution<float> normal(0.f, 1.f);

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  DecodeConfig cfg;
  cfg.attention.heads = hq;
  cfg.attention.kvHeads = hkv;
  cfg.attention.headDim = d;
  cfg.pageSize = page;
  cfg.maxQLen = batch; // the prefix pass: B queries as one sequence's rows
  auto prefixKernel =
      compileHost(ctx, buildDecodeModule(ctx, cfg), batch, "decode_split");
  cfg.maxQLen = 1;
  auto suffixKernel =
      compileHost(ctx, buildDecodeModule(ctx, cfg), 1, "decode_split");
  // attn.lse_merge of [B, Hq, 1, D] outputs.
  mlir::OwningOpRef<mlir::ModuleOp> mergeModule;
  {
    mlir::OpBuilder b(&ctx);
    auto loc = b.getUnknownLoc();
    mergeModule = mlir::ModuleOp::create(loc);
    b.setInsertionPointToEnd(mergeModule->getBody());
    int64_t dyn = mlir::ShapedType::kDynamic;
    auto oT = mlir::RankedTensorType::get({dyn, hq, dyn, d}, b.getBF16Type());
    auto lT = mlir::RankedTensorType::get({dyn, hq, dyn}, b.getF32Type());
    auto fn = mlir::func::FuncOp::create(
        b, loc, "merge", b.getFunctionType({oT, lT, oT, lT}, {oT, lT}));
    mlir::Block *body = fn.addEntryBlock();
    b.setInsertionPointToStart(body);
    auto m = attn::LseMergeOp::create(
        b, loc, oT, lT, body->getArgument(0), body->getArgument(1),
        body->getArgument(2), body->getArgument(3));
    mlir::func::ReturnOp::create(b, loc, m->getResults());
  }
  auto mergeKernel = compileHost(ctx, std::move(mergeModule), 1, "merge");

  // Pages: the prefix's, then each suffix's, shuffled; HND pages.
  int prefixPages = (prefix + page - 1) / page;
  std::vector<int> suffixPages;
  int numPages = prefixPages;
  for (int len : suffix) {
    suffixPages.push_back((len + page - 1) / page);
    numPages += suffixPages.back();
  }
  numPages += 1;
  std::vector<int32_t> pool(numPages);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::array<int64_t, 3> cs{int64_t(hkv) * page * d, int64_t(page) * d, d};
  std::vector<uint16_t> kc(size_t(numPages) * hkv * page * d), vc(kc.size());
  for (auto *t : {&kc, &vc})
    for (auto &x : *t)
      x = toBits(normal(rng));
  int next = 0;
  int maxBlocks = std::max(prefixPages, 1);
  for (int n : suffixPages)
    maxBlocks = std::max(maxBlocks, n);
  std::vector<int32_t> prefixTable(maxBlocks, 1 << 30);
  for (int i = 0; i < prefixPages; ++i)
    prefixTable[i] = pool[next++];
  std::vector<int32_t> suffixTable(size_t(batch) * maxBlocks, 1 << 30);
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < suffixPages[b]; ++i)
      suffixTable[size_t(b) * maxBlocks + i] = pool[next++];

  // Queries [B, Hq, 1, D] stored as [Hq, B, D]: for the prefix pass that is
  // [1, Hq, B, D] with heads-major rows, as decode's GQA packing needs.
  std::vector<uint16_t> q(size_t(hq) * batch * d);
  for (auto &x : q)
    x = toBits(normal(rng));
  const int64_t qsb = d, qsh = int64_t(batch) * d; // per-sequence view
  float nan = std::numeric_limits<float>::quiet_NaN();
  uint16_t nanBits = 0x7FC0;
  auto runDecode = [&](HostKernel &k, int b0, int sq, int64_t sb, int64_t sh,
                       int64_t ss, const std::vector<int32_t> &table,
                       std::vector<int32_t> lens, int splits,
                       std::vector<uint16_t> &o, std::vector<float> &lse,
                       std::array<int64_t, 5> os) {
    int nb = int(lens.size());
    std::vector<float> oPart(size_t(splits) * nb * hq * sq * d, nan);
    std::vector<float> lPart(size_t(splits) * nb * hq * sq, nan);
    auto split = reinterpret_cast<SplitFn>(k.entryAddress());
    auto combineAddr = k.lookup("decode_combine");
    if (!combineAddr)
      FAIL(llvm::toString(combineAddr.takeError()));
    auto combine = reinterpret_cast<CombineFn>(*combineAddr);
#define ATTNC_PTR(p) (void *)(p), (void *)(p), 0
    split(ATTNC_PTR(q.data() + b0 * d), ATTNC_PTR(kc.data()),
          ATTNC_PTR(vc.data()), ATTNC_PTR(table.data()), ATTNC_PTR(lens.data()),
          ATTNC_PTR(oPart.data()), ATTNC_PTR(lPart.data()), ATTNC_PTR(o.data()),
          ATTNC_PTR(lse.data()), ATTNC_PTR(nullptr), nb, sq, splits, maxBlocks,
          numPages, sb, sh, ss, cs[0], cs[1], cs[2], cs[0], cs[1], cs[2], os[0],
          os[1], os[2], os[3], os[4], /*write_o=*/0,
          /*merge_ticket=*/1);
    combine(ATTNC_PTR(oPart.data()), ATTNC_PTR(lPart.data()),
            ATTNC_PTR(o.data()), ATTNC_PTR(lse.data()), nb, sq, splits, os[0],
            os[1], os[2], os[3], os[4]);
  };
  // Prefix once: 1 sequence, B rows per head. O [1, Hq, B, D] dense.
  std::vector<uint16_t> oPrefix(size_t(hq) * batch * d, nanBits);
  std::vector<float> lsePrefix(size_t(hq) * batch, nan);
  runDecode(*prefixKernel, 0, batch, qsh * hq, qsh, d, prefixTable, {prefix}, 2,
            oPrefix, lsePrefix,
            {int64_t(hq) * batch * d, int64_t(batch) * d, d,
             int64_t(hq) * batch, batch});
  // Suffixes: B sequences of one row. O [B, Hq, 1, D] dense.
  std::vector<uint16_t> oSuffix(size_t(hq) * batch * d, nanBits);
  std::vector<float> lseSuffix(size_t(hq) * batch, nan);
  runDecode(*suffixKernel, 0, 1, qsb, qsh, d, suffixTable,
            std::vector<int32_t>(suffix.begin(), suffix.end()), 3, oSuffix,
            lseSuffix, {int64_t(hq) * d, d, d, hq, 1});
  // Merge, the prefix's results seen per sequence: [B, Hq, 1, D] with
  // strides (D, B·D, D) and LSE strides (1, B).
  std::vector<uint16_t> o(size_t(batch) * hq * d, nanBits);
  std::vector<float> lse(size_t(batch) * hq, nan);
#define ATTNC_MEMREF void *, void *, int64_t
#define ATTNC_I64X5 int64_t, int64_t, int64_t, int64_t, int64_t
  // 6 pointers, then batch, seq_q and 15 strides.
  using MergeFn = void (*)(ATTNC_MEMREF, ATTNC_MEMREF, ATTNC_MEMREF,
                           ATTNC_MEMREF, ATTNC_MEMREF, ATTNC_MEMREF, int64_t,
                           int64_t, ATTNC_I64X5, ATTNC_I64X5, ATTNC_I64X5);
#undef ATTNC_I64X5
#undef ATTNC_MEMREF
  auto merge = reinterpret_cast<MergeFn>(mergeKernel->entryAddress());
#define ATTNC_PTR(p) (void *)(p), (void *)(p), 0
  merge(ATTNC_PTR(oPrefix.data()), ATTNC_PTR(lsePrefix.data()),
        ATTNC_PTR(oSuffix.data()), ATTNC_PTR(lseSuffix.data()),
        ATTNC_PTR(o.data()), ATTNC_PTR(lse.data()), batch, 1, d,
        int64_t(batch) * d, d, 1, batch, int64_t(hq) * d, d, d, hq, 1,
        int64_t(hq) * d, d, d, hq, 1);
#undef ATTNC_PTR

  // Reference: each sequence over prefix + suffix.
  std::vector<double> refO(o.size()), refLse(lse.size());
  auto toDouble = [&](uint16_t x) {
    return double(test::fromHalfBits(bf16, x));
  };
  for (int b = 0; b < batch; ++b) {
    int len = prefix + suffix[b];
    std::vector<uint16_t> kg(size_t(hkv) * len * d), vg(kg.size());
    for (int h = 0; h < hkv; ++h)
      for (int j = 0; j < len; ++j) {
        int jj = j < prefix ? j : j - prefix;
        int32_t pg = j < prefix
                         ? prefixTable[jj / page]
                         : suffixTable[size_t(b) * maxBlocks + jj / page];
        int64_t at = pg * cs[0] + h * cs[1] + (jj % page) * cs[2];
        for (int x = 0; x < d; ++x) {
          kg[(size_t(h) * len + j) * d + x] = kc[at + x];
          vg[(size_t(h) * len + j) * d + x] = vc[at + x];
        }
      }
    templates::ReferenceProblem p;
    p.headsQ = hq;
    p.headsKV = hkv;
    p.seqQ = 1;
    p.seqKV = len;
    p.headDim = d;
    p.scale = 1.0 / std::sqrt(double(d));
    auto dense = templates::ReferenceStrides::dense(hkv, len, d);
    templates::referenceAttention(p, q.data() + b * d, {qsb, qsh, d}, kg.data(),
                                  dense, vg.data(), dense, toDouble,
                                  refO.data() + size_t(b) * hq * d,
                                  refLse.data() + size_t(b) * hq);
  }
  test::AttentionComparison cmp = test::compareAttention(
      bf16, o, {int64_t(hq) * d, d, d, 1}, lse, refO, refLse, batch, hq, 1, d);
  std::cout << "  cascade: rel L2 " << cmp.relL2 << ", max LSE err "
            << cmp.lseErr << "\n";
  CHECK(cmp.nonFinite == 0);
  CHECK(cmp.relL2 <= 1e-2);
  CHECK(cmp.lseErr <= 1e-3);
}

// The runtime picks a decode launch's split count from the split kernel's
// K/V tile and ring depth, which it reads from the metadata: the compiler
// records the ones it used, defaults and tuned alike.
TEST_CASE("a decode kernel's metadata records its K/V tile and ring",
          "[cpu][decode]") {
  KernelSpec spec;
  spec.op = "decode";
  spec.heads = 8;
  spec.kvHeads = 2;
  spec.headDim = 64;
  spec.dtype = "bf16";
  spec.arch = "sm_80";
  spec.pageSize = 16;
  spec.maxQLen = 1;
  Result<CompiledKernel> k = SpecCompiler().compile(spec);
  REQUIRE(k.isOk());
  CHECK(k->meta.blockN == DecodeTileOptions().blockN);
  CHECK(k->meta.kvStages == DecodeTileOptions().stages);
  spec.tuning.blockN = 32;
  spec.tuning.stages = 4;
  k = SpecCompiler().compile(spec);
  REQUIRE(k.isOk());
  CHECK(k->meta.blockN == 32);
  CHECK(k->meta.kvStages == 4);
  CHECK(validateMetadata(k->meta).isOk());
}

// attn.kv_append: every valid slot gets its token's K and V rows, every
// other cache element keeps its value; negative slots (padding) and slots
// past the last page write nothing. Key/value rows with padded strides,
// both page layouts.
TEST_CASE("kv_append writes each token's rows at its slot, skips padding",
          "[cpu][decode]") {
  uint64_t seed = seedFromEnvOrClock();
  std::cout << "seed " << seed << " (set ATTNC_TEST_SEED to repeat)\n";
  std::mt19937_64 rng(seed);
  struct AppendCase {
    int hkv, d, page;
    const char *dtype;
    bool nhd;
    int tokens, pages;
  };
  const AppendCase cases[] = {{2, 64, 16, "bf16", true, 9, 3},
                              {4, 128, 1, "fp16", false, 6, 8},
                              {1, 256, 64, "bf16", false, 5, 2},
                              {8, 128, 16, "bf16", true, 33, 4}};
  for (const AppendCase &c : cases) {
    INFO("kv_append Hkv " << c.hkv << " D " << c.d << " page " << c.page);
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    mlir::MLIRContext ctx(registry);
    ctx.loadAllAvailableDialects();
    KVAppendConfig cfg{c.hkv, c.d, c.dtype, c.page};
    auto kernel =
        compileHost(ctx, buildKVAppendModule(ctx, cfg), 1, "kv_append");
    // Rows [tokens, Hkv, D] with a padded token stride.
    const int64_t kst = int64_t(c.hkv) * c.d + 8, ksh = c.d;
    std::vector<uint16_t> k(size_t(c.tokens) * kst), v(k.size());
    std::uniform_int_distribution<int> bits(0, 0x3BFF); // finite halves
    for (auto *t : {&k, &v})
      for (auto &x : *t)
        x = uint16_t(bits(rng));
    std::array<int64_t, 3> cs =
        c.nhd ? std::array<int64_t, 3>{int64_t(c.page) * c.hkv * c.d, c.d,
                                       int64_t(c.hkv) * c.d}
              : std::array<int64_t, 3>{int64_t(c.hkv) * c.page * c.d,
                                       int64_t(c.page) * c.d, c.d};
    size_t cacheElems = size_t(c.pages) * c.page * c.hkv * c.d;
    std::vector<uint16_t> kc(cacheElems), vc(cacheElems);
    for (auto *t : {&kc, &vc})
      for (auto &x : *t)
        x = uint16_t(bits(rng));
    // Distinct slots; token 1 is padding, token 3 points past the cache.
    std::vector<int64_t> pool(size_t(c.pages) * c.page);
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    std::vector<int64_t> slots(c.tokens);
    for (int t = 0; t < c.tokens; ++t)
      slots[t] = pool[t % pool.size()];
    slots[1] = -1;
    slots[3] = int64_t(c.pages) * c.page;
    std::vector<uint16_t> expK = kc, expV = vc, initialK = kc;
    for (int t = 0; t < c.tokens; ++t) {
      if (slots[t] < 0 || slots[t] >= int64_t(c.pages) * c.page)
        continue;
      int64_t pg = slots[t] / c.page, off = slots[t] % c.page;
      for (int h = 0; h < c.hkv; ++h)
        for (int x = 0; x < c.d; ++x) {
          int64_t at = pg * cs[0] + h * cs[1] + off * cs[2] + x;
          expK[at] = k[t * kst + h * ksh + x];
          expV[at] = v[t * kst + h * ksh + x];
        }
    }
    std::vector<uint64_t> words;
    for (const void *p : {(const void *)k.data(), (const void *)v.data(),
                          (const void *)slots.data(), (const void *)kc.data(),
                          (const void *)vc.data()})
      HostKernel::pointerWords(words, p);
    for (int64_t w : {int64_t(c.tokens) * c.hkv, int64_t(c.pages), kst, ksh,
                      kst, ksh, cs[0], cs[1], cs[2], cs[0], cs[1], cs[2]})
      words.push_back(uint64_t(w));
    kernel->runWords(words);
    size_t wrongK = 0, wrongV = 0;
    for (size_t i = 0; i < cacheElems; ++i) {
      wrongK += kc[i] != expK[i];
      wrongV += vc[i] != expV[i];
    }
    CHECK(wrongK == 0);
    CHECK(wrongV == 0);
    // The expected caches differ from the initial ones (a no-op fails).
    CHECK(expK != initialK);
  }
}

// attn.lse_merge on its own: rows where one side saw no key (LSE -inf)
// take the other side; rows where neither did give O = 0 and LSE -inf,
// never NaN; the rest match the float64 merge.
TEST_CASE("lse_merge handles -inf log-sum-exps without NaN", "[cpu][decode]") {
  uint64_t seed = seedFromEnvOrClock();
  std::cout << "seed " << seed << " (set ATTNC_TEST_SEED to repeat)\n";
  std::mt19937_64 rng(seed);
  const int batch = 2, heads = 3, seq = 20, d = 64;
  const bool bf16 = true;
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  AttentionConfig cfg;
  cfg.heads = heads;
  cfg.kvHeads = heads;
  cfg.headDim = d;
  auto kernel = compileHost(ctx, buildLseMergeModule(ctx, cfg), 1, "lse_merge");
  const size_t rows = size_t(batch) * heads * seq;
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<uint16_t> oa(rows * d), ob(rows * d);
  for (auto *t : {&oa, &ob})
    for (auto &x : *t)
      x = test::toHalfBits(bf16, normal(rng));
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> la(rows), lb(rows);
  for (size_t r = 0; r < rows; ++r) {
    la[r] = 4.f * normal(rng);
    lb[r] = 4.f * normal(rng);
    if (r % 5 == 1)
      la[r] = -inf;
    if (r % 7 == 2)
      lb[r] = -inf;
    if (r % 11 == 3)
      la[r] = lb[r] = -inf;
  }
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint16_t> o(rows * d, 0x7FC0);
  std::vector<float> lse(rows, nan);
  std::vector<uint64_t> words;
  for (const void *p : {(const void *)oa.data(), (const void *)la.data(),
                        (const void *)ob.data(), (const void *)lb.data(),
                        (const void *)o.data(), (const void *)lse.data()})
    HostKernel::pointerWords(words, p);
  const int64_t os[3] = {int64_t(heads) * seq * d, int64_t(seq) * d, d};
  const int64_t ls[2] = {int64_t(heads) * seq, seq};
  words.push_back(batch);
  words.push_back(seq);
  for (int i = 0; i < 3; ++i) {
    words.insert(words.end(),
                 {uint64_t(os[0]), uint64_t(os[1]), uint64_t(os[2])});
    words.insert(words.end(), {uint64_t(ls[0]), uint64_t(ls[1])});
  }
  kernel->runWords(words);
  double diff = 0, norm = 0, lseErr = 0;
  size_t nonFinite = 0, wrongEmpty = 0;
  for (size_t r = 0; r < rows; ++r) {
    double a = la[r], bb = lb[r];
    bool empty = std::isinf(a) && std::isinf(bb);
    double m = std::max(a, bb);
    double wa = std::isinf(a) ? 0 : std::exp(a - m);
    double wb = std::isinf(bb) ? 0 : std::exp(bb - m);
    if (empty) {
      wrongEmpty += !(lse[r] == -inf);
      for (int x = 0; x < d; ++x)
        wrongEmpty += test::fromHalfBits(bf16, o[r * d + x]) != 0.f;
      continue;
    }
    if (!std::isfinite(lse[r]))
      ++nonFinite;
    lseErr = std::max(lseErr, std::abs(lse[r] - (m + std::log(wa + wb))));
    for (int x = 0; x < d; ++x) {
      double ref = (wa * test::fromHalfBits(bf16, oa[r * d + x]) +
                    wb * test::fromHalfBits(bf16, ob[r * d + x])) /
                   (wa + wb);
      double got = test::fromHalfBits(bf16, o[r * d + x]);
      if (!std::isfinite(got))
        ++nonFinite;
      diff += (got - ref) * (got - ref);
      norm += ref * ref;
    }
  }
  double rel = std::sqrt(diff / norm);
  std::cout << "  lse_merge: rel L2 " << rel << ", max LSE err " << lseErr
            << "\n";
  CHECK(nonFinite == 0);
  CHECK(wrongEmpty == 0);
  CHECK(rel <= 1e-2);
  CHECK(lseErr <= 1e-4);
}
