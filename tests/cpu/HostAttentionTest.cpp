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
#include "templates/HostHalf.h"
#include "templates/ReferenceAttention.h"

#include "mlir/IR/MLIRContext.h"
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
};

uint64_t seedFromEnvOrClock() {
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    return std::strtoull(s, nullptr, 10);
  return std::chrono::steady_clock::now().time_since_epoch().count();
}

struct Tensor {
  std::vector<uint16_t> data;
  int64_t sb, sh, ss; // element strides of the logical [B, H, S, D] view
};

/// A [B, H, S, D] tensor laid out as BSHD or BHSD.
Tensor makeTensor(int b, int h, int s, int d, bool bshd) {
  Tensor t;
  t.data.resize(size_t(b) * h * s * d);
  if (bshd) {
    t.ss = int64_t(h) * d;
    t.sh = d;
    t.sb = int64_t(s) * h * d;
  } else {
    t.ss = d;
    t.sh = int64_t(s) * d;
    t.sb = int64_t(h) * s * d;
  }
  return t;
}

void runCase(const Case &c, std::mt19937_64 &rng) {
  INFO("case: " << c.name);
  const AttentionConfig &cfg = c.config;
  bool bf16 = cfg.dtype == "bf16";
  auto toBits = [&](float x) {
    return bf16 ? templates::floatToBf16Bits(x) : templates::floatToHalfBits(x);
  };
  auto toFloat = [&](uint16_t x) {
    return bf16 ? templates::bf16BitsToFloat(x) : templates::halfBitsToFloat(x);
  };

  // Compile: attn -> tile -> host.
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  auto module = buildAttentionModule(ctx, cfg);
  REQUIRE(module);
  mlir::PassManager pm(&ctx);
  buildTilePipeline(pm, {c.blockM, c.blockN});
  REQUIRE(mlir::succeeded(pm.run(*module)));
  auto kernel = HostKernel::compile(*module, "attention_fwd");
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

  const int64_t scalars[17] = {
      c.batch, c.seqQ, c.seqKV, q.sb, q.sh, q.ss, k.sb, k.sh,
      k.ss,    v.sb,   v.sh,    v.ss, o.sb, o.sh, o.ss, int64_t(hq) * c.seqQ,
      c.seqQ};
  (*kernel)->runAttentionFwd(q.data.data(), k.data.data(), v.data.data(),
                             o.data.data(), lse.data(), scalars);

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
  std::vector<double> refO(o.data.size()), refLse(lse.size());
  auto toDouble = [&](uint16_t x) { return double(toFloat(x)); };
  templates::referenceAttention(
      p, q.data.data(), {q.sb, q.sh, q.ss}, k.data.data(), {k.sb, k.sh, k.ss},
      v.data.data(), {v.sb, v.sh, v.ss}, toDouble, refO.data(), refLse.data());

  double errSq = 0, refSq = 0, lseErr = 0;
  int masked = 0, nonFinite = 0;
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < c.seqQ; ++i) {
        int64_t row = (int64_t(b) * hq + h) * c.seqQ + i;
        float got = lse[row];
        double want = refLse[row];
        if (std::isinf(want)) {
          ++masked;
          CHECK(std::isinf(got));
          CHECK(got < 0);
        } else {
          nonFinite += !std::isfinite(got);
          lseErr = std::max(lseErr, std::abs(got - want) /
                                        std::max(1.0, std::abs(want)));
        }
        for (int x = 0; x < d; ++x) {
          float g = toFloat(o.data[b * o.sb + h * o.sh + i * o.ss + x]);
          double r = refO[row * d + x];
          nonFinite += !std::isfinite(g);
          if (std::isinf(want))
            CHECK(g == 0.0f); // fully masked row: O = 0 exactly
          errSq += (g - r) * (g - r);
          refSq += r * r;
        }
      }
  double relL2 = std::sqrt(errSq / std::max(refSq, 1e-300));
  std::cout << "  " << c.name << ": rel L2 " << relL2 << ", max LSE err "
            << lseErr << ", fully masked rows " << masked << "\n";
  CHECK(nonFinite == 0);
  CHECK(relL2 <= 1e-2);
  CHECK(lseErr <= 1e-3);
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
  for (const Case &c : cases)
    runCase(c, rng);
}
