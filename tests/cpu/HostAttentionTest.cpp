//===- HostAttentionTest.cpp - the tiled kernel, run on the CPU -----------===//
//
// attn IR -> tile kernel -> host pipeline -> JIT, then checked against the
// float64 reference on fresh random inputs: odd lengths, every mask, GQA,
// both layouts, fully masked rows, large logits.
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

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <sys/mman.h>
#include <unistd.h>

using namespace attnc;

namespace {

/// One captured tensor of a case: its bytes, shape and strides in
/// elements.
struct HostCapture {
  std::shared_ptr<uint8_t> bytes;
  std::vector<int64_t> shape, strides;
};

/// `size` bytes that end where an inaccessible page begins, so that a
/// kernel reading past the end of a captured tensor faults instead of
/// passing.
std::shared_ptr<uint8_t> guardedBytes(size_t size) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t dataPages = (size + page - 1) / page;
  const size_t total = (dataPages + 1) * page;
  void *base = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(base != MAP_FAILED);
  uint8_t *guard = static_cast<uint8_t *>(base) + dataPages * page;
  REQUIRE(mprotect(guard, page, PROT_NONE) == 0);
  return std::shared_ptr<uint8_t>(
      guard - size, [base, total](uint8_t *) { munmap(base, total); });
}

/// `values` copied into guardedBytes.
template <typename T>
std::shared_ptr<uint8_t> guardedCopy(const std::vector<T> &values) {
  auto bytes = guardedBytes(values.size() * sizeof(T));
  std::memcpy(bytes.get(), values.data(), values.size() * sizeof(T));
  return bytes;
}

/// Document ids [batch, seq] (i32, row-major): each sequence cut at
/// `minCuts` to `maxCuts` random boundaries, ids counting up from 0.
std::vector<int32_t> randomDocumentIds(std::mt19937_64 &rng, int batch, int seq,
                                       int minCuts, int maxCuts) {
  std::vector<int32_t> ids(size_t(batch) * seq);
  std::uniform_int_distribution<int> cut(1, seq - 1), count(minCuts, maxCuts);
  for (int b = 0; b < batch; ++b) {
    std::vector<int> cuts;
    for (int n = count(rng); n > 0; --n)
      cuts.push_back(cut(rng));
    for (int i = 0; i < seq; ++i)
      ids[size_t(b) * seq + i] = int32_t(std::count_if(
          cuts.begin(), cuts.end(), [&](int at) { return at <= i; }));
  }
  return ids;
}

/// The reference's document mask of randomDocumentIds' ids.
std::function<bool(int, int, int, int)> documentMask(std::vector<int32_t> ids,
                                                     int seq) {
  return [ids = std::move(ids), seq](int b, int, int i, int j) {
    return ids[size_t(b) * seq + i] == ids[size_t(b) * seq + j];
  };
}

/// Fresh random captured tensors for one run, in the IR's order; sets the
/// reference's mods to read the same values, and for IR with kv_bounds
/// fills `kvBounds` ([batch, seqQ, 2] i32).
using MakeCaptures = std::function<std::vector<HostCapture>(
    std::mt19937_64 &, int batch, int seqQ, int seqKV,
    templates::ReferenceProblem &, std::vector<int32_t> &kvBounds)>;

struct Case {
  std::string name;
  AttentionConfig config;
  int batch, seqQ, seqKV;
  bool bshd;          // memory layout [B, S, H, D] (else [B, H, S, D])
  float qScale = 1.f; // > 1 gives large logits
  int64_t blockM = 32, blockN = 16;
  // attn IR with score/mask regions to compile instead of `config`'s
  // built-in op; `config` then describes the reference's equivalent.
  std::string ir;
  // The IR's captured tensors and the reference's mods (unset: none).
  MakeCaptures captures;
};

uint64_t seedFromEnvOrClock() {
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    return std::strtoull(s, nullptr, 10);
  return std::chrono::steady_clock::now().time_since_epoch().count();
}

struct Tensor {
  std::vector<uint16_t> data;
  std::array<int64_t, 4> strides; // of the logical [B, H, S, D] view
  int64_t sb() const { return strides[0]; }
  int64_t sh() const { return strides[1]; }
  int64_t ss() const { return strides[2]; }
};

/// A [B, H, S, D] tensor laid out as BSHD or BHSD.
Tensor makeTensor(int b, int h, int s, int d, bool bshd) {
  return {std::vector<uint16_t>(size_t(b) * h * s * d),
          test::attentionStrides(h, s, d, bshd)};
}

void runCase(const Case &c, std::mt19937_64 &rng) {
  INFO("case: " << c.name);
  const AttentionConfig &cfg = c.config;
  bool bf16 = cfg.dtype == "bf16";
  auto toBits = [&](float x) { return test::toHalfBits(bf16, x); };

  // Compile: attn -> tile -> host.
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  auto kernel =
      test::compileAttentionForHost(ctx, cfg, c.ir, c.blockM, c.blockN);
  if (!kernel)
    FAIL(llvm::toString(kernel.takeError()));

  // Fresh random inputs; outputs poisoned with NaN.
  int hq = cfg.heads, hkv = cfg.kvHeads, d = cfg.headDim;
  Tensor q = makeTensor(c.batch, hq, c.seqQ, d, c.bshd);
  Tensor k = makeTensor(c.batch, hkv, c.seqKV, d, c.bshd);
  Tensor v = makeTensor(c.batch, hkv, c.seqKV, d, c.bshd);
  Tensor o = makeTensor(c.batch, hq, c.seqQ, d, c.bshd);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto &x : q.data)
    x = toBits(normal(rng) * c.qScale);
  for (auto *t : {&k, &v})
    for (auto &x : t->data)
      x = toBits(normal(rng));
  uint16_t nanBits = bf16 ? 0x7FC0 : 0x7E00;
  std::fill(o.data.begin(), o.data.end(), nanBits);
  std::vector<float> lse(size_t(c.batch) * hq * c.seqQ,
                         std::numeric_limits<float>::quiet_NaN());

  const int64_t scalars[17] = {c.batch, c.seqQ, c.seqKV, q.sb(),
                               q.sh(),  q.ss(), k.sb(),  k.sh(),
                               k.ss(),  v.sb(), v.sh(),  v.ss(),
                               o.sb(),  o.sh(), o.ss(),  int64_t(hq) * c.seqQ,
                               c.seqQ};
  const std::vector<float> sinks = test::randomSinks(cfg.sinks, hq, rng);
  templates::ReferenceProblem p;
  std::vector<HostCapture> captures;
  std::vector<int32_t> kvBounds;
  if (c.captures)
    captures = c.captures(rng, c.batch, c.seqQ, c.seqKV, p, kvBounds);
  if (sinks.empty() && captures.empty() && kvBounds.empty()) {
    (*kernel)->runAttentionFwd(q.data.data(), k.data.data(), v.data.data(),
                               o.data.data(), lse.data(), scalars);
  } else {
    // The launch ABI's parameters, then the optional sinks, key ranges and
    // captures.
    std::vector<uint64_t> words;
    for (const void *p :
         {(const void *)q.data.data(), (const void *)k.data.data(),
          (const void *)v.data.data(), (const void *)o.data.data(),
          (const void *)lse.data()})
      HostKernel::pointerWords(words, p);
    for (int64_t s : scalars)
      words.push_back(uint64_t(s));
    if (!sinks.empty())
      HostKernel::pointerWords(words, sinks.data());
    if (!kvBounds.empty())
      HostKernel::pointerWords(words, kvBounds.data());
    // Each captured tensor: data, sizes, strides (abi::captureParamName).
    for (const HostCapture &capture : captures) {
      HostKernel::pointerWords(words, capture.bytes.get());
      for (int64_t size : capture.shape)
        words.push_back(uint64_t(size));
      for (int64_t stride : capture.strides)
        words.push_back(uint64_t(stride));
    }
    (*kernel)->runWords(words);
  }

  // float64 reference on the same (rounded) inputs.
  p.batch = c.batch;
  p.headsQ = hq;
  p.headsKV = hkv;
  p.seqQ = c.seqQ;
  p.seqKV = c.seqKV;
  p.headDim = d;
  p.scale = cfg.scale ? *cfg.scale : 1.0 / std::sqrt(double(d));
  p.softcap = cfg.softcap.value_or(0.f);
  p.causal = cfg.causal;
  p.windowLeft = int(cfg.windowLeft.value_or(-1));
  p.windowRight = int(cfg.windowRight.value_or(-1));
  p.sinks.assign(sinks.begin(), sinks.end());
  std::vector<double> refO(o.data.size()), refLse(lse.size());
  auto toDouble = [&](uint16_t x) {
    return double(test::fromHalfBits(bf16, x));
  };
  templates::referenceAttention(p, q.data.data(), {q.sb(), q.sh(), q.ss()},
                                k.data.data(), {k.sb(), k.sh(), k.ss()},
                                v.data.data(), {v.sb(), v.sh(), v.ss()},
                                toDouble, refO.data(), refLse.data());

  test::AttentionComparison cmp = test::compareAttention(
      bf16, o.data, o.strides, lse, refO, refLse, c.batch, hq, c.seqQ, d);
  CHECK(cmp.maskedWrong == 0); // fully masked rows: O = 0, LSE = -inf
  // With sinks, a row whose LSE is the sink alone (no key, or keys whose
  // weight vanishes beside it) has exactly the sink.
  int sinkRows = 0, sinkRowsWrong = 0;
  for (size_t row = 0; !sinks.empty() && row < lse.size(); ++row) {
    const float sink = sinks[(row / size_t(c.seqQ)) % size_t(hq)];
    if (refLse[row] == double(sink)) {
      ++sinkRows;
      sinkRowsWrong += lse[row] != sink;
    }
  }
  std::cout << "  " << c.name << ": rel L2 " << cmp.relL2 << ", max LSE err "
            << cmp.lseErr << ", fully masked rows " << cmp.maskedRows
            << (sinks.empty()
                    ? std::string()
                    : ", rows of the sink alone " + std::to_string(sinkRows))
            << "\n";
  CHECK(sinkRowsWrong == 0);
  CHECK(cmp.nonFinite == 0);
  CHECK(cmp.relL2 <= 1e-2);
  CHECK(cmp.lseErr <= 1e-3);
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

TEST_CASE("tiled attention on the host matches the float64 reference",
          "[cpu]") {
  uint64_t seed = seedFromEnvOrClock();
  std::cout << "seed " << seed << " (set ATTNC_TEST_SEED to repeat)\n";
  std::mt19937_64 rng(seed);

  std::vector<Case> cases;
  cases.push_back({"GQA 4/2, D64, bf16, odd lengths, BSHD",
                   config(4, 2, 64, "bf16"), 2, 77, 77, true});
  {
    Case c{"causal, Sq<Skv (bottom-right), fp16, D128, BHSD",
           config(2, 2, 128, "fp16"),
           1,
           50,
           83,
           false};
    c.config.causal = true;
    cases.push_back(c);
  }
  {
    Case c{"causal, Sq>Skv: fully masked rows, D64",
           config(2, 1, 64, "bf16"),
           2,
           70,
           33,
           true};
    c.config.causal = true;
    cases.push_back(c);
  }
  {
    Case c{"window (16, 0) + softcap 20, D96",
           config(2, 2, 96, "bf16"),
           1,
           61,
           61,
           true};
    c.config.windowLeft = 16;
    c.config.windowRight = 0;
    c.config.softcap = 20.f;
    cases.push_back(c);
  }
  {
    // FlashAttention's convention: causal with window (left, -1) has the
    // diagonal as its right bound; the reference takes it as given.
    Case c{"causal + window (20, -1), Sq<Skv, D64",
           config(4, 2, 64, "bf16"),
           2,
           50,
           70,
           true};
    c.config.causal = true;
    c.config.windowLeft = 20;
    c.config.windowRight = -1;
    cases.push_back(c);
  }
  {
    Case c{"window (8, 4), MQA 4/1, D64, BHSD",
           config(4, 1, 64, "bf16"),
           1,
           45,
           45,
           false};
    c.config.windowLeft = 8;
    c.config.windowRight = 4;
    cases.push_back(c);
  }
  {
    Case c{"large logits (Q x 30), explicit scale, D128",
           config(2, 2, 128, "bf16"),
           1,
           40,
           100,
           true};
    c.qScale = 30.f;
    c.config.scale = 0.125f;
    cases.push_back(c);
  }
  {
    Case c{"D256, causal, block 16x32",
           config(2, 2, 256, "bf16"),
           1,
           37,
           37,
           false};
    c.config.causal = true;
    c.blockM = 16;
    c.blockN = 32;
    cases.push_back(c);
  }
  {
    Case c{"D192 fp16, one key", config(1, 1, 192, "fp16"), 1, 5, 1, true};
    cases.push_back(c);
  }
  {
    // Regions in math ops: the score region is soft-cap 2 written as
    // 2·tanh(s/2) through exp and log (log(exp(x)) = x), the mask region is
    // causal written as sqrt(j) <= sqrt(i); large logits make the cap bite.
    Case c{"score/mask regions in math ops (tanh, exp, log, sqrt, absf)",
           config(2, 2, 64, "bf16"),
           2,
           61,
           61,
           true};
    c.qScale = 4.f;
    c.config.softcap = 2.f;
    c.config.causal = true;
    c.ir = R"mlir(
func.func @math_regions(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                        %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v
      : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 2.0 : f32
    %x = arith.divf %s, %c : f32
    %t = math.tanh %x : f32
    %y = arith.mulf %t, %c : f32
    %e = math.exp %y : f32
    %l = math.log %e : f32
    attn.yield %l : f32
  } mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_cast %j : index to i64
    %fi = arith.sitofp %i64 : i64 to f32
    %fj = arith.sitofp %j64 : i64 to f32
    %nj = arith.negf %fj : f32
    %aj = math.absf %nj : f32
    %si = math.sqrt %fi : f32
    %sj = math.sqrt %aj : f32
    %keep = arith.cmpf ole, %sj, %si : f32
    attn.yield %keep : i1
  }
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}
)mlir";
    cases.push_back(c);
  }
  // Attention sinks: GQA with causal rows that see no key (O = 0, LSE =
  // the sink), and with a window, softcap and large logits.
  {
    Case c{"sinks, GQA 6/2 causal Sq>Skv (rows without keys), D64",
           config(6, 2, 64, "bf16"),
           2,
           45,
           29,
           true};
    c.config.causal = true;
    c.config.sinks = true;
    cases.push_back(c);
  }
  {
    Case c{"sinks, window (20, 3) + softcap 15, Q x 8, fp16 D128, BHSD",
           config(3, 3, 128, "fp16"),
           1,
           71,
           90,
           false};
    c.config.windowLeft = 20;
    c.config.windowRight = 3;
    c.config.softcap = 15.f;
    c.config.sinks = true;
    c.qScale = 8.f;
    cases.push_back(c);
  }
  // Captured tensors (attn.attention's captures): ALiBi from random
  // per-head slopes and a document mask from random [B, S] document ids
  // (i32) on causal GQA; a relative-position table read through transposed
  // strides, a per-head bf16 bias and an i8 row mask that leaves whole rows
  // without a key, with Sq != Skv.
  {
    Case c{"captures: ALiBi slopes [H] f32 + document ids [B, S] i32, causal "
           "GQA 4/2",
           config(4, 2, 64, "bf16"),
           2,
           77,
           77,
           true};
    c.ir = R"mlir(
func.func @alibi_documents(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                           %v: tensor<?x2x?x64xbf16>, %slopes: tensor<?xf32>,
                           %doc: tensor<?x?xi32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v captures(%slopes, %doc : tensor<?xf32>, tensor<?x?xi32>) {causal}
      : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %sl: tensor<?xf32>, %d: tensor<?x?xi32>):
    %m = tensor.extract %sl[%h] : tensor<?xf32>
    %dist = arith.subi %i, %j : index
    %di = arith.index_cast %dist : index to i64
    %df = arith.sitofp %di : i64 to f32
    %bias = arith.mulf %m, %df : f32
    %r = arith.subf %s, %bias : f32
    attn.yield %r : f32
  } mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %sl: tensor<?xf32>, %d: tensor<?x?xi32>):
    %di = tensor.extract %d[%b, %i] : tensor<?x?xi32>
    %dj = tensor.extract %d[%b, %j] : tensor<?x?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    attn.yield %same : i1
  }
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
)mlir";
    c.config.causal = true;
    c.captures = [](std::mt19937_64 &rng, int batch, int seqQ, int,
                    templates::ReferenceProblem &p, std::vector<int32_t> &) {
      const int heads = 4;
      std::uniform_real_distribution<float> unit(0.05f, 1.f);
      std::vector<float> s(heads);
      for (float &x : s)
        x = unit(rng);
      // Document ids: each sequence cut at 1-5 random boundaries.
      std::vector<int32_t> ids = randomDocumentIds(rng, batch, seqQ, 1, 5);
      p.scoreMod = [s](double x, int, int h, int i, int j) {
        return x - double(s[h]) * double(i - j);
      };
      p.maskMod = documentMask(ids, seqQ);
      std::vector<HostCapture> out;
      using Dims = std::vector<int64_t>;
      out.push_back({guardedCopy(s), Dims{heads}, Dims{1}});
      out.push_back({guardedCopy(ids), Dims{batch, seqQ}, Dims{seqQ, 1}});
      return out;
    };
    cases.push_back(c);
  }
  {
    Case c{"captures: relative-position table [H, Sq+Skv-1] f32 (transposed "
           "strides) + per-head bias bf16 + i8 row mask, Sq<Skv",
           config(3, 3, 64, "bf16"),
           1,
           45,
           70,
           false};
    c.ir = R"mlir(
func.func @relative_rows(%q: tensor<?x3x?x64xbf16>, %k: tensor<?x3x?x64xbf16>,
                         %v: tensor<?x3x?x64xbf16>, %table: tensor<?x?xf32>,
                         %hb: tensor<?xbf16>, %rows: tensor<?xi8>)
    -> (tensor<?x3x?x64xbf16>, tensor<?x3x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v captures(%table, %hb, %rows : tensor<?x?xf32>, tensor<?xbf16>, tensor<?xi8>)
      : tensor<?x3x?x64xbf16>, tensor<?x3x?x64xbf16>, tensor<?x3x?x64xbf16>
      -> tensor<?x3x?x64xbf16>, tensor<?x3x?xf32>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<?x?xf32>, %hbias: tensor<?xbf16>, %r: tensor<?xi8>):
    %c69 = arith.constant 69 : index
    %d = arith.subi %i, %j : index
    %e = arith.addi %d, %c69 : index
    %rel = tensor.extract %t[%h, %e] : tensor<?x?xf32>
    %hv = tensor.extract %hbias[%h] : tensor<?xbf16>
    %hf = arith.extf %hv : bf16 to f32
    %x = arith.addf %s, %rel : f32
    %y = arith.addf %x, %hf : f32
    attn.yield %y : f32
  } mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %t: tensor<?x?xf32>, %hbias: tensor<?xbf16>, %r: tensor<?xi8>):
    %keep = tensor.extract %r[%i] : tensor<?xi8>
    %zero = arith.constant 0 : i8
    %on = arith.cmpi ne, %keep, %zero : i8
    attn.yield %on : i1
  }
  return %o, %lse : tensor<?x3x?x64xbf16>, tensor<?x3x?xf32>
}
)mlir";
    c.captures = [](std::mt19937_64 &rng, int, int seqQ, int seqKV,
                    templates::ReferenceProblem &p, std::vector<int32_t> &) {
      const int heads = 3, span = seqQ + seqKV - 1;
      // [H, span] stored as [span, H]: strides (1, H).
      std::normal_distribution<float> normal(0.f, 1.f);
      std::vector<float> table(size_t(heads) * span);
      for (float &x : table)
        x = normal(rng);
      std::vector<uint16_t> hb(heads);
      std::vector<float> hbf(heads);
      for (int h = 0; h < heads; ++h) {
        hb[h] = test::toHalfBits(true, 2.f * normal(rng));
        hbf[h] = test::fromHalfBits(true, hb[h]);
      }
      // Every fifth row (at a random phase) keeps no key.
      std::vector<uint8_t> keep(seqQ);
      int phase = std::uniform_int_distribution<int>(0, 4)(rng);
      for (int i = 0; i < seqQ; ++i)
        keep[i] = (i % 5 == phase) ? 0 : uint8_t(1 + i % 200);
      p.scoreMod = [table, hbf, seqKV](double x, int, int h, int i, int j) {
        return x + double(table[size_t(i - j + seqKV - 1) * 3 + h]) +
               double(hbf[h]);
      };
      p.maskMod = [keep](int, int, int i, int) { return keep[i] != 0; };
      std::vector<HostCapture> out;
      using Dims = std::vector<int64_t>;
      out.push_back({guardedCopy(table), Dims{heads, span}, Dims{1, heads}});
      out.push_back({guardedCopy(hb), Dims{heads}, Dims{1}});
      out.push_back({guardedCopy(keep), Dims{seqQ}, Dims{1}});
      return out;
    };
    cases.push_back(c);
  }
  // Key ranges (kv_bounds) are a mask: a document mask from captured doc
  // ids with the documents' ranges (the same mask twice), documents as
  // causal plus ranges alone (no mask region), and random non-decreasing
  // ranges with Sq < Skv (keyless rows among them).
  {
    Case c{"kv_bounds: documents from doc ids [B, S] + their ranges, causal",
           config(2, 2, 64, "bf16"),
           2,
           93,
           93,
           true};
    c.config.causal = true;
    c.ir = R"mlir(
func.func @documents(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                     %v: tensor<?x2x?x64xbf16>, %bounds: tensor<?x?x2xi32>,
                     %doc: tensor<?x?xi32>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v kv_bounds(%bounds : tensor<?x?x2xi32>) captures(%doc : tensor<?x?xi32>) {causal}
      : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?x?xi32>):
    %di = tensor.extract %d[%b, %i] : tensor<?x?xi32>
    %dj = tensor.extract %d[%b, %j] : tensor<?x?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    attn.yield %same : i1
  }
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}
)mlir";
    c.captures = [](std::mt19937_64 &rng, int batch, int seqQ, int,
                    templates::ReferenceProblem &p,
                    std::vector<int32_t> &bounds) {
      std::vector<int32_t> ids = randomDocumentIds(rng, batch, seqQ, 2, 6);
      // Row i's range: its document's first row to i (causal).
      bounds.assign(size_t(batch) * seqQ * 2, 0);
      for (size_t row = 0, first = 0; row < ids.size(); ++row) {
        if (row % seqQ == 0 || ids[row] != ids[row - 1])
          first = row % seqQ;
        bounds[row * 2] = int32_t(first);
        bounds[row * 2 + 1] = int32_t(row % seqQ + 1);
      }
      p.maskMod = documentMask(ids, seqQ);
      using Dims = std::vector<int64_t>;
      std::vector<HostCapture> out;
      out.push_back({guardedCopy(ids), Dims{batch, seqQ}, Dims{seqQ, 1}});
      return out;
    };
    cases.push_back(c);
  }
  {
    Case c{"kv_bounds: documents as causal + each row's document range, no "
           "mask region",
           config(2, 2, 64, "bf16"),
           2,
           157,
           157,
           true};
    c.config.causal = true;
    c.ir = R"mlir(
func.func @documents(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                     %v: tensor<?x2x?x64xbf16>, %bounds: tensor<?x?x2xi32>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v kv_bounds(%bounds : tensor<?x?x2xi32>) {causal}
      : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}
)mlir";
    c.captures = [](std::mt19937_64 &rng, int batch, int seqQ, int,
                    templates::ReferenceProblem &p,
                    std::vector<int32_t> &bounds) {
      std::vector<int32_t> ids = randomDocumentIds(rng, batch, seqQ, 2, 6);
      // Row i's range: its whole document (causal cuts it at i).
      bounds.assign(size_t(batch) * seqQ * 2, 0);
      for (size_t row = 0, first = 0; row < ids.size(); ++row) {
        if (row % seqQ == 0 || ids[row] != ids[row - 1])
          first = row % seqQ;
        size_t end = row % seqQ + 1;
        while (end < size_t(seqQ) && ids[row - row % seqQ + end] == ids[row])
          ++end;
        bounds[row * 2] = int32_t(first);
        bounds[row * 2 + 1] = int32_t(end);
      }
      p.maskMod = documentMask(ids, seqQ);
      return std::vector<HostCapture>();
    };
    cases.push_back(c);
  }
  {
    Case c{"kv_bounds: random non-decreasing ranges, keyless rows, Sq<Skv",
           config(2, 1, 64, "bf16"),
           1,
           77,
           150,
           false};
    c.ir = R"mlir(
func.func @ranges(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x1x?x64xbf16>,
                  %v: tensor<?x1x?x64xbf16>, %bounds: tensor<?x?x2xi32>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v kv_bounds(%bounds : tensor<?x?x2xi32>)
      : tensor<?x2x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>
      -> tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}
)mlir";
    c.captures = [](std::mt19937_64 &rng, int, int seqQ, int seqKV,
                    templates::ReferenceProblem &p,
                    std::vector<int32_t> &bounds) {
      // Non-decreasing first and end keys with random steps; the first
      // rows' ranges are empty (end == first: keyless rows).
      std::uniform_int_distribution<int> step(0, 3), width(1, 40);
      bounds.assign(size_t(seqQ) * 2, 0);
      int lo = 0, hi = width(rng);
      for (int i = 0; i < seqQ; ++i) {
        lo = std::min(lo + step(rng), seqKV - 1);
        hi = std::min(std::max(hi + step(rng), lo + 1), seqKV);
        bounds[size_t(i) * 2] = lo;
        bounds[size_t(i) * 2 + 1] = i < 3 ? lo : hi;
      }
      p.maskMod = [bounds](int, int, int i, int j) {
        return j >= bounds[size_t(i) * 2] && j < bounds[size_t(i) * 2 + 1];
      };
      return std::vector<HostCapture>();
    };
    cases.push_back(c);
  }
  // Mods the compiler's interval evaluation understands: the KV loop is
  // narrowed to the tiles where the region may be true (a tile skipped
  // wrongly changes the result; the reference evaluates the mask at every
  // element).
  {
    Case c{"mask_mod prefix-LM (top-left causal or one of the first 23 "
           "keys), Sq<Skv",
           config(2, 1, 64, "bf16"),
           2,
           100,
           150,
           false};
    c.ir = R"mlir(
func.func @prefix(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x1x?x64xbf16>,
                  %v: tensor<?x1x?x64xbf16>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v
      : tensor<?x2x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>
      -> tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c23 = arith.constant 23 : index
    %causal = arith.cmpi sge, %i, %j : index
    %prefix = arith.cmpi slt, %j, %c23 : index
    %keep = arith.ori %causal, %prefix : i1
    attn.yield %keep : i1
  }
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}
)mlir";
    c.captures = [](std::mt19937_64 &, int, int, int,
                    templates::ReferenceProblem &p, std::vector<int32_t> &) {
      p.maskMod = [](int, int, int i, int j) { return j <= i || j < 23; };
      return std::vector<HostCapture>();
    };
    cases.push_back(c);
  }
  {
    Case c{"mask_mod window (17 left, 5 right) in i32, head 1 causal; "
           "Sq>Skv: rows without keys",
           config(2, 2, 64, "bf16"),
           1,
           130,
           60,
           true};
    c.ir = R"mlir(
func.func @window(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                  %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v
      : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %i32 = arith.index_cast %i : index to i32
    %j32 = arith.index_cast %j : index to i32
    %d = arith.subi %i32, %j32 : i32
    %c17 = arith.constant 17 : i32
    %m5 = arith.constant -5 : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : index
    %h1 = arith.cmpi eq, %h, %c1 : index
    %right = arith.select %h1, %c0, %m5 : i32
    %l = arith.cmpi sle, %d, %c17 : i32
    %r = arith.cmpi sge, %d, %right : i32
    %keep = arith.andi %l, %r : i1
    attn.yield %keep : i1
  }
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}
)mlir";
    c.captures = [](std::mt19937_64 &, int, int, int,
                    templates::ReferenceProblem &p, std::vector<int32_t> &) {
      p.maskMod = [](int, int h, int i, int j) {
        return i - j <= 17 && i - j >= (h == 1 ? 0 : -5);
      };
      return std::vector<HostCapture>();
    };
    cases.push_back(c);
  }
  for (const Case &c : cases)
    runCase(c, rng);
}
