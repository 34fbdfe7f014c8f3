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

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>

using namespace attnc;

namespace {

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
  if (sinks.empty()) {
    (*kernel)->runAttentionFwd(q.data.data(), k.data.data(), v.data.data(),
                               o.data.data(), lse.data(), scalars);
  } else {
    // The launch ABI's parameters, then the optional `sinks`.
    std::vector<uint64_t> words;
    for (const void *p :
         {(const void *)q.data.data(), (const void *)k.data.data(),
          (const void *)v.data.data(), (const void *)o.data.data(),
          (const void *)lse.data()})
      HostKernel::pointerWords(words, p);
    for (int64_t s : scalars)
      words.push_back(uint64_t(s));
    HostKernel::pointerWords(words, sinks.data());
    (*kernel)->runWords(words);
  }

  // float64 reference on the same (rounded) inputs.
  templates::ReferenceProblem p;
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
  std::cout << "  " << c.name << ": rel L2 " << cmp.relL2 << ", max LSE err "
            << cmp.lseErr << ", fully masked rows " << cmp.maskedRows << "\n";
  CHECK(cmp.maskedWrong == 0); // fully masked rows: O = 0, LSE = -inf
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
  for (const Case &c : cases)
    runCase(c, rng);
}
