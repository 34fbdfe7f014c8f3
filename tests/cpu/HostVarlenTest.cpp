//===- HostVarlenTest.cpp - varlen attention, run on the CPU --------------===//
//
// attn.attention with `varlen` (packed [total, H, D] sequences and
// cu_seqlens) -> tile kernel -> host pipeline -> JIT, checked sequence by
// sequence against the float64 reference on fresh random inputs: random
// lengths that always include 0 and 1, every mask, GQA/MQA, soft-cap,
// sinks, a mask region that reads the sequence index, rows that see no key.
// Outputs are poisoned with NaN first, and the rows before the first and
// after the last sequence (padding) must still hold the poison.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/BuildAttnIR.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Target/Host/HostJIT.h"
#include "templates/ReferenceAttention.h"
#include "tests/common/AttentionCheck.h"
#include "tests/cpu/CompileForHost.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>

using namespace attnc;

namespace {

struct VarlenCase {
  std::string name;
  AttentionConfig config; // config.varlen is set by runCase
  int batch = 4;          // sequences
  int maxLenQ = 40, maxLenK = 40;
  // Keys of a sequence: its query length plus this (0: lengths drawn on
  // their own, both sides including 0 and 1).
  std::optional<int> keysMinusQueries;
  int padQ = 0, padK = 0;  // rows before the first and after the last sequence
  int64_t rowPadElems = 0; // extra elements per packed row (Q, K, V and O)
  float qScale = 1.f;
  int64_t blockM = 32, blockN = 16;
  std::string ir; // attn IR to compile instead of `config`'s built-in op
  // The reference's causal flag for sequence b (a mask region's meaning).
  std::function<bool(int)> causalOf;
  // Paged prefill: K/V in a cache of pages of this many rows (NHD: [pages,
  // page_size, Hkv, D]) through a shuffled block table; 0: packed K/V.
  int pageSize = 0;
};

/// A paged cache holding each sequence's keys (NHD pages [pages,
/// page_size, Hkv, D], row stride Hkv·D + pad), the pages shuffled and
/// spare pages between them, and its block table: entries past a
/// sequence's pages hold an index far outside the cache, which no kernel
/// may read.
struct PagedCache {
  std::vector<uint16_t> k, v;
  std::vector<int32_t> table, lens;
  int pages = 0, maxBlocks = 0;
  int64_t rowStride = 0, pageStride = 0;
};

uint64_t seedFromEnvOrClock() {
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    return std::strtoull(s, nullptr, 10);
  return std::chrono::steady_clock::now().time_since_epoch().count();
}

/// `n` random lengths in [0, maxLen], one of them 0 and another 1 (when
/// n >= 2 and maxLen >= 1).
std::vector<int> randomLengths(int n, int maxLen, std::mt19937_64 &rng) {
  std::uniform_int_distribution<int> len(0, maxLen);
  std::vector<int> out(n);
  for (int &x : out)
    x = len(rng);
  if (n >= 2 && maxLen >= 1) {
    std::uniform_int_distribution<int> at(0, n - 1);
    int zero = at(rng), one = at(rng);
    while (one == zero)
      one = at(rng);
    out[zero] = 0;
    out[one] = 1;
  }
  return out;
}

PagedCache makePagedCache(const std::vector<int> &lensK, int pageSize,
                          int64_t rowStride, const std::vector<uint16_t> &k,
                          const std::vector<uint16_t> &v,
                          const std::vector<int32_t> &cuK,
                          std::mt19937_64 &rng) {
  PagedCache c;
  const int batch = int(lensK.size());
  c.rowStride = rowStride;
  c.pageStride = rowStride * pageSize;
  int used = 0;
  for (int l : lensK) {
    c.maxBlocks = std::max(c.maxBlocks, (l + pageSize - 1) / pageSize);
    used += (l + pageSize - 1) / pageSize;
  }
  c.maxBlocks += 1; // a spare column past every sequence's pages
  c.pages = 2 * used + 3;
  std::vector<int32_t> order(c.pages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  // Every page starts random (finite: rows past a sequence's end are read
  // and weighted 0), then the sequences' rows go into their pages.
  c.k.resize(size_t(c.pages) * c.pageStride);
  c.v.resize(c.k.size());
  std::uniform_int_distribution<size_t> pick(0,
                                             std::max<size_t>(k.size(), 1) - 1);
  for (size_t i = 0; i < c.k.size(); ++i) {
    c.k[i] = k.empty() ? 0 : k[pick(rng)];
    c.v[i] = v.empty() ? 0 : v[pick(rng)];
  }
  c.table.assign(size_t(batch) * c.maxBlocks, 0x3fffffff);
  c.lens.assign(lensK.begin(), lensK.end());
  int next = 0;
  for (int b = 0; b < batch; ++b)
    for (int blk = 0; blk * pageSize < lensK[b]; ++blk) {
      const int page = order[next++];
      c.table[size_t(b) * c.maxBlocks + blk] = page;
      for (int r = 0; r < pageSize && blk * pageSize + r < lensK[b]; ++r) {
        const size_t from = size_t(cuK[b] + blk * pageSize + r) * rowStride;
        const size_t to = size_t(page) * c.pageStride + size_t(r) * rowStride;
        std::copy_n(k.begin() + from, rowStride, c.k.begin() + to);
        std::copy_n(v.begin() + from, rowStride, c.v.begin() + to);
      }
    }
  return c;
}

void runCase(VarlenCase c, std::mt19937_64 &rng) {
  AttentionConfig &cfg = c.config;
  cfg.varlen = true;
  cfg.pageSize = c.pageSize;
  const bool bf16 = cfg.dtype == "bf16";
  auto toBits = [&](float x) { return test::toHalfBits(bf16, x); };

  std::vector<int> lensQ = randomLengths(c.batch, c.maxLenQ, rng), lensK;
  // A per-sequence mask needs sequence 1 to have rows to mask.
  if (c.causalOf && c.batch > 1)
    std::swap(lensQ[1], *std::max_element(lensQ.begin(), lensQ.end()));
  if (c.keysMinusQueries)
    for (int l : lensQ)
      lensK.push_back(std::max(0, l + *c.keysMinusQueries));
  else
    lensK = randomLengths(c.batch, c.maxLenK, rng);
  std::vector<int32_t> cuQ{c.padQ}, cuK{c.padK};
  for (int b = 0; b < c.batch; ++b) {
    cuQ.push_back(cuQ.back() + lensQ[b]);
    cuK.push_back(cuK.back() + lensK[b]);
  }
  const int totalQ = cuQ.back() + c.padQ, totalK = cuK.back() + c.padK;
  const int maxQ = *std::max_element(lensQ.begin(), lensQ.end());
  const int maxK = *std::max_element(lensK.begin(), lensK.end());
  std::string lens;
  for (int b = 0; b < c.batch; ++b)
    lens += " " + std::to_string(lensQ[b]) + "/" + std::to_string(lensK[b]);
  INFO("case: " << c.name << "; lengths q/k:" << lens);

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  auto kernel =
      test::compileAttentionForHost(ctx, cfg, c.ir, c.blockM, c.blockN);
  if (!kernel)
    FAIL(llvm::toString(kernel.takeError()));

  // Packed [total, H, D] tensors whose rows may be padded (stride > H·D).
  const int hq = cfg.heads, hkv = cfg.kvHeads, d = cfg.headDim;
  const int64_t sQ = int64_t(hq) * d + c.rowPadElems;
  const int64_t sK = int64_t(hkv) * d + c.rowPadElems;
  std::vector<uint16_t> q(size_t(totalQ) * sQ), k(size_t(totalK) * sK),
      v(size_t(totalK) * sK), o(size_t(totalQ) * sQ);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto &x : q)
    x = toBits(normal(rng) * c.qScale);
  for (auto *t : {&k, &v})
    for (auto &x : *t)
      x = toBits(normal(rng));
  const uint16_t nanBits = bf16 ? 0x7FC0 : 0x7E00;
  std::fill(o.begin(), o.end(), nanBits);
  // FlashAttention's varlen LSE: [Hq, total_q].
  std::vector<float> lse(size_t(hq) * totalQ,
                         std::numeric_limits<float>::quiet_NaN());
  const std::vector<float> sinks = test::randomSinks(cfg.sinks, hq, rng);

  // Paged: the keys move into a shuffled cache; the packed K/V stay the
  // reference's.
  std::optional<PagedCache> cache;
  if (c.pageSize)
    cache = makePagedCache(lensK, c.pageSize, sK, k, v, cuK, rng);

  // The launch ABI: pointers, then batch = B, seq_q/seq_kv = the longest
  // lengths, the [1, H, total, D] views' strides (b unused; paged: the
  // caches' [pages, Hkv, page_size, D] strides), the LSE's; then the
  // optional sinks and cu_seqlens (paged: cu_seqlens_q, then the block
  // table, kv_lens, max_blocks and the page count).
  std::vector<uint64_t> words;
  const void *kPtr = cache ? cache->k.data() : k.data();
  const void *vPtr = cache ? cache->v.data() : v.data();
  for (const void *p : {(const void *)q.data(), kPtr, vPtr,
                        (const void *)o.data(), (const void *)lse.data()})
    HostKernel::pointerWords(words, p);
  const int64_t kvStrideB = cache ? cache->pageStride : 0;
  const int64_t kvStrideS = cache ? cache->rowStride : sK;
  for (int64_t s :
       {int64_t(c.batch), int64_t(maxQ), int64_t(maxK), int64_t(0), int64_t(d),
        sQ, kvStrideB, int64_t(d), kvStrideS, kvStrideB, int64_t(d), kvStrideS,
        int64_t(0), int64_t(d), sQ, int64_t(0), int64_t(totalQ)})
    words.push_back(uint64_t(s));
  if (!sinks.empty())
    HostKernel::pointerWords(words, sinks.data());
  HostKernel::pointerWords(words, cuQ.data());
  if (cache) {
    HostKernel::pointerWords(words, cache->table.data());
    HostKernel::pointerWords(words, cache->lens.data());
    words.push_back(uint64_t(cache->maxBlocks));
    words.push_back(uint64_t(cache->pages));
  } else {
    HostKernel::pointerWords(words, cuK.data());
  }
  (*kernel)->runWords(words);

  auto toDouble = [&](uint16_t x) {
    return double(test::fromHalfBits(bf16, x));
  };
  double worstL2 = 0, worstLse = 0;
  for (int b = 0; b < c.batch; ++b) {
    const int lq = lensQ[b], lk = lensK[b];
    INFO("sequence " << b << " (" << lq << " queries, " << lk << " keys)");
    if (lq == 0)
      continue;
    templates::ReferenceProblem p;
    p.batch = 1;
    p.headsQ = hq;
    p.headsKV = hkv;
    p.seqQ = lq;
    p.seqKV = lk;
    p.headDim = d;
    p.scale = cfg.scale ? *cfg.scale : 1.0 / std::sqrt(double(d));
    p.softcap = cfg.softcap.value_or(0.f);
    p.causal = c.causalOf ? c.causalOf(b) : cfg.causal;
    p.windowLeft = int(cfg.windowLeft.value_or(-1));
    p.windowRight = int(cfg.windowRight.value_or(-1));
    p.sinks.assign(sinks.begin(), sinks.end());
    std::vector<double> refO(size_t(hq) * lq * d), refLse(size_t(hq) * lq);
    templates::referenceAttention(p, q.data() + cuQ[b] * sQ, {0, d, sQ},
                                  k.data() + cuK[b] * sK, {0, d, sK},
                                  v.data() + cuK[b] * sK, {0, d, sK}, toDouble,
                                  refO.data(), refLse.data());
    // This sequence's rows of O (as a [1, Hq, lq, D] view) and of the LSE.
    std::vector<uint16_t> seqO(o.begin() + cuQ[b] * sQ,
                               o.begin() + cuQ[b + 1] * sQ);
    std::vector<float> seqLse;
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < lq; ++i)
        seqLse.push_back(lse[size_t(h) * totalQ + cuQ[b] + i]);
    test::AttentionComparison cmp = test::compareAttention(
        bf16, seqO, {0, d, sQ, 1}, seqLse, refO, refLse, 1, hq, lq, d);
    CHECK(cmp.maskedWrong == 0); // rows without keys: O = 0, LSE = -inf
    CHECK(cmp.nonFinite == 0);
    CHECK(cmp.relL2 <= 1e-2);
    CHECK(cmp.lseErr <= 1e-3);
    worstL2 = std::max(worstL2, cmp.relL2);
    worstLse = std::max(worstLse, cmp.lseErr);
  }
  // Padding rows (outside every sequence) and the row padding keep the
  // poison: nothing was written there.
  int written = 0;
  for (int r = 0; r < totalQ; ++r) {
    const bool inside = r >= cuQ.front() && r < cuQ.back();
    for (int64_t x = 0; x < sQ; ++x)
      if (!inside || x >= int64_t(hq) * d)
        written += o[size_t(r) * sQ + x] != nanBits;
    for (int h = 0; h < hq && !inside; ++h)
      written += !std::isnan(lse[size_t(h) * totalQ + r]);
  }
  CHECK(written == 0);
  std::cout << "  " << c.name << ": lengths q/k" << lens << "; worst rel L2 "
            << worstL2 << ", LSE err " << worstLse << "\n";
}

AttentionConfig config(int hq, int hkv, int d, const char *dtype) {
  AttentionConfig c;
  c.heads = hq;
  c.kvHeads = hkv;
  c.headDim = d;
  c.dtype = dtype;
  return c;
}

} // namespace

TEST_CASE("varlen attention on the host matches the float64 reference "
          "per sequence",
          "[cpu]") {
  uint64_t seed = seedFromEnvOrClock();
  std::cout << "seed " << seed << " (set ATTNC_TEST_SEED to repeat)\n";
  std::mt19937_64 rng(seed);

  std::vector<VarlenCase> cases;
  {
    VarlenCase c{"GQA 4/2, D64, bf16, padding rows before and after",
                 config(4, 2, 64, "bf16")};
    c.batch = 5;
    c.padQ = 3;
    c.padK = 5;
    cases.push_back(c);
  }
  {
    VarlenCase c{"causal, own Sq/Skv per sequence (rows without keys), fp16 "
                 "D128, GQA 8/2",
                 config(8, 2, 128, "fp16")};
    c.config.causal = true;
    c.maxLenQ = 50;
    c.maxLenK = 70;
    cases.push_back(c);
  }
  {
    VarlenCase c{"causal, Skv = Sq + 13 (chunked prefill shape), D64",
                 config(2, 2, 64, "bf16")};
    c.config.causal = true;
    c.keysMinusQueries = 13;
    c.batch = 5;
    c.maxLenQ = 70; // several query tiles per sequence
    cases.push_back(c);
  }
  {
    VarlenCase c{"window (17, 5), MQA 4/1, padded rows, D96",
                 config(4, 1, 96, "bf16")};
    c.config.windowLeft = 17;
    c.config.windowRight = 5;
    c.rowPadElems = 8;
    c.padQ = 2;
    cases.push_back(c);
  }
  {
    VarlenCase c{"causal + window (20, -1), D64, block 16x32",
                 config(4, 2, 64, "bf16")};
    c.config.causal = true;
    c.config.windowLeft = 20;
    c.config.windowRight = -1;
    c.blockM = 16;
    c.blockN = 32;
    c.keysMinusQueries = 7;
    c.maxLenQ = 60;
    cases.push_back(c);
  }
  {
    VarlenCase c{"softcap 20 + sinks, large logits (Q x 8), D192 fp16",
                 config(3, 3, 192, "fp16")};
    c.config.softcap = 20.f;
    c.config.sinks = true;
    c.qScale = 8.f;
    c.maxLenQ = 30;
    cases.push_back(c);
  }
  {
    VarlenCase c{"sinks, causal, GQA 6/2 (rows without keys: LSE = sink), "
                 "D256, block 16x32",
                 config(6, 2, 256, "bf16")};
    c.config.causal = true;
    c.config.sinks = true;
    c.blockM = 16;
    c.blockN = 32;
    c.maxLenQ = 24;
    c.maxLenK = 24;
    cases.push_back(c);
  }
  {
    VarlenCase c{"large logits (Q x 30), explicit scale, Skv = Sq + 5",
                 config(2, 2, 128, "bf16")};
    c.qScale = 30.f;
    c.config.scale = 0.125f;
    c.batch = 4;
    c.keysMinusQueries = 5;
    cases.push_back(c);
  }
  {
    // The mask region sees the sequence as b and positions within it as i
    // and j: sequence 1 is causal (top-left, = bottom-right as its keys
    // equal its queries), the others see every key. Keys start after 6
    // padding rows, so global row numbers would give another mask.
    VarlenCase c{"mask region: causal in sequence 1 only, local i/j",
                 config(2, 1, 64, "bf16")};
    c.keysMinusQueries = 0;
    c.padK = 6;
    c.batch = 4;
    c.maxLenQ = 45;
    c.causalOf = [](int b) { return b == 1; };
    c.ir = R"mlir(
func.func @varlen_mask(%q: tensor<?x2x64xbf16>, %k: tensor<?x1x64xbf16>,
                       %v: tensor<?x1x64xbf16>, %cuq: tensor<?xi32>,
                       %cuk: tensor<?xi32>)
    -> (tensor<?x2x64xbf16>, tensor<2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<?xi32>, tensor<?xi32>)
      : tensor<?x2x64xbf16>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>
      -> tensor<?x2x64xbf16>, tensor<2x?xf32>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c1 = arith.constant 1 : index
    %other = arith.cmpi ne, %b, %c1 : index
    %causal = arith.cmpi ule, %j, %i : index
    %keep = arith.ori %other, %causal : i1
    attn.yield %keep : i1
  }
  return %o, %lse : tensor<?x2x64xbf16>, tensor<2x?xf32>
}
)mlir";
    cases.push_back(c);
  }
  {
    // Every key sequence empty: every row sees no key (O = 0, LSE = -inf).
    VarlenCase c{"no keys at all", config(2, 2, 64, "bf16")};
    c.maxLenK = 0;
    c.batch = 3;
    cases.push_back(c);
  }
  {
    // Every query sequence empty: the grid has no programs, nothing is
    // written.
    VarlenCase c{"no queries at all", config(2, 2, 64, "bf16")};
    c.maxLenQ = 0;
    c.padQ = 4;
    cases.push_back(c);
  }
  for (const VarlenCase &c : cases)
    runCase(c, rng);
}

TEST_CASE("paged varlen attention (prefill over a paged KV cache) on the "
          "host matches the float64 reference per sequence",
          "[cpu]") {
  uint64_t seed = seedFromEnvOrClock();
  std::cout << "seed " << seed << " (set ATTNC_TEST_SEED to repeat)\n";
  std::mt19937_64 rng(seed);

  std::vector<VarlenCase> cases;
  {
    // Chunked prefill: each sequence's new queries after its cached keys.
    VarlenCase c{"paged 16, causal, Skv = Sq + 21 (chunked prefill), GQA "
                 "4/2, D64",
                 config(4, 2, 64, "bf16")};
    c.pageSize = 16;
    c.config.causal = true;
    c.keysMinusQueries = 21;
    c.batch = 5;
    c.maxLenQ = 50;
    cases.push_back(c);
  }
  {
    // Pages smaller than a KV tile, lengths drawn apart (including 0 and 1
    // on both sides), a tile spanning several pages.
    VarlenCase c{"paged 8, block 16x32, own lengths, fp16 D128",
                 config(2, 1, 128, "fp16")};
    c.pageSize = 8;
    c.blockM = 16;
    c.blockN = 32;
    c.maxLenK = 75;
    cases.push_back(c);
  }
  {
    // Pages larger than a KV tile (several tiles per page), a window, a
    // soft-cap and sinks, padded cache rows.
    VarlenCase c{"paged 48, window (19, 0), softcap 30 + sinks, padded rows, "
                 "D96",
                 config(4, 1, 96, "bf16")};
    c.pageSize = 48;
    c.config.windowLeft = 19;
    c.config.windowRight = 0;
    c.config.softcap = 30.f;
    c.config.sinks = true;
    c.rowPadElems = 8;
    c.keysMinusQueries = 9;
    c.maxLenQ = 60;
    cases.push_back(c);
  }
  {
    // Page size 1 (FlashInfer's token-level pages), large logits.
    VarlenCase c{"paged 1, large logits (Q x 20), D64",
                 config(2, 2, 64, "bf16")};
    c.pageSize = 1;
    c.qScale = 20.f;
    c.maxLenQ = 20;
    c.maxLenK = 33;
    cases.push_back(c);
  }
  for (const VarlenCase &c : cases)
    runCase(c, rng);
}
