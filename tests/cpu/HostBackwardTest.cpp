//===- HostBackwardTest.cpp - the tiled attention backward on the CPU -----===//
//
// attn.attention_bwd -> the backward's three tile kernels -> host pipeline
// -> JIT, run in launch order (preprocess, main, convert) and checked
// against the float64 reference gradients on fresh random inputs: causal,
// windows, soft-cap, GQA and MQA, odd lengths, seq_q != seq_kv, rows with
// no visible key (zero gradients, never NaN) and keys no row sees.
//
//===----------------------------------------------------------------------===//
#include "attnc/abi/LaunchParams.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Target/Host/HostJIT.h"
#include "templates/ReferenceAttention.h"
#include "templates/ReferenceAttentionBackward.h"
#include "tests/common/AttentionCheck.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

using namespace attnc;

namespace {

struct Case {
  std::string name;
  int heads, kvHeads, headDim;
  bool bf16 = true;
  int batch, seqQ, seqKV;
  bool bshd = true; // memory layout [B, S, H, D] (else [B, H, S, D])
  // O, dO, dQ, dK and dV in the other layout than Q, K and V: each
  // tensor's strides are its own.
  bool mixedLayouts = false;
  bool causal = false;
  int windowLeft = -1, windowRight = -1; // -1: unbounded; no window if both
  float softcap = 0.f;
  std::optional<float> scale;
  float qScale = 1.f; // > 1 gives large logits
  int64_t blockM = 32, blockN = 16;
};

uint64_t seedFromEnvOrClock() {
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    return std::strtoull(s, nullptr, 10);
  return std::chrono::steady_clock::now().time_since_epoch().count();
}

/// The attn IR of a case: one attn.attention_bwd function.
std::string backwardIR(const Case &c) {
  std::string t = c.bf16 ? "bf16" : "f16";
  auto ty = [&](int h) {
    return "tensor<?x" + std::to_string(h) + "x?x" + std::to_string(c.headDim) +
           "x" + t + ">";
  };
  std::string qT = ty(c.heads), kT = ty(c.kvHeads);
  std::string lseT = "tensor<?x" + std::to_string(c.heads) + "x?xf32>";
  std::vector<std::string> attrs;
  if (c.causal)
    attrs.push_back("causal");
  if (c.windowLeft >= 0 || c.windowRight >= 0)
    attrs.push_back("window = #attn.window<" + std::to_string(c.windowLeft) +
                    ", " + std::to_string(c.windowRight) + ">");
  std::ostringstream num; // floats in MLIR's syntax: 2.000000000e+01
  num.precision(9);
  num << std::scientific;
  if (c.softcap > 0) {
    num << c.softcap;
    attrs.push_back("softcap = " + num.str() + " : f32");
  }
  if (c.scale) {
    num.str("");
    num << *c.scale;
    attrs.push_back("scale = " + num.str() + " : f32");
  }
  std::string attrDict;
  for (size_t i = 0; i < attrs.size(); ++i)
    attrDict += (i ? ", " : "") + attrs[i];
  if (!attrDict.empty())
    attrDict = " {" + attrDict + "}";
  std::ostringstream ir;
  ir << "func.func @attention_bwd(%q: " << qT << ", %k: " << kT
     << ", %v: " << kT << ", %o: " << qT << ", %do: " << qT
     << ", %lse: " << lseT << ") -> (" << qT << ", " << kT << ", " << kT
     << ") {\n"
     << "  %dq, %dk, %dv = attn.attention_bwd %q, %k, %v, %o, %do, %lse"
     << attrDict << "\n      : " << qT << ", " << kT << ", " << kT << ", " << qT
     << ", " << qT << ", " << lseT << "\n      -> " << qT << ", " << kT << ", "
     << kT << "\n"
     << "  return %dq, %dk, %dv : " << qT << ", " << kT << ", " << kT << "\n"
     << "}\n";
  return ir.str();
}

/// A [B, H, S, D] tensor of 16-bit floats laid out as BSHD or BHSD.
struct Tensor {
  std::vector<uint16_t> data;
  std::array<int64_t, 4> strides;
  int64_t at(int b, int h, int s) const {
    return b * strides[0] + h * strides[1] + s * strides[2];
  }
};

Tensor makeTensor(int b, int h, int s, int d, bool bshd) {
  return {std::vector<uint16_t>(size_t(b) * h * s * d),
          test::attentionStrides(h, s, d, bshd)};
}

/// One gradient against its reference: relative L2 error, NaN/Inf, and the
/// rows that must be exactly zero (`zeroRows[row]`, dense row index).
struct GradCheck {
  double relL2 = 0;
  int nonFinite = 0, zeroRows = 0, zeroWrong = 0;
};

GradCheck checkGrad(bool bf16, const Tensor &g, const std::vector<double> &ref,
                    const std::vector<bool> &mustBeZero, int batch, int heads,
                    int seq, int d) {
  GradCheck c;
  double errSq = 0, refSq = 0;
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < seq; ++i) {
        size_t row = (size_t(b) * heads + h) * seq + i;
        c.zeroRows += mustBeZero[row];
        for (int x = 0; x < d; ++x) {
          float v = test::fromHalfBits(bf16, g.data[g.at(b, h, i) + x]);
          double r = ref[row * d + x];
          c.nonFinite += !std::isfinite(v);
          if (mustBeZero[row])
            c.zeroWrong += v != 0.f;
          errSq += (v - r) * (v - r);
          refSq += r * r;
        }
      }
  c.relL2 = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
  return c;
}

void runCase(const Case &c, std::mt19937_64 &rng) {
  INFO("case: " << c.name);
  const bool bf16 = c.bf16;
  const int hq = c.heads, hkv = c.kvHeads, d = c.headDim;

  // Compile: attn -> tile (three kernels) -> host.
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  std::string ir = backwardIR(c);
  INFO(ir);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  REQUIRE(module);
  mlir::PassManager pm(&ctx);
  buildTilePipeline(pm, {c.blockM, c.blockN});
  REQUIRE(mlir::succeeded(pm.run(*module)));
  auto kernel = HostKernel::compile(*module, "attention_bwd");
  if (!kernel)
    FAIL(llvm::toString(kernel.takeError()));
  auto preprocess = (*kernel)->lookup("attention_bwd_preprocess");
  auto convert = (*kernel)->lookup("attention_bwd_convert");
  if (!preprocess || !convert)
    FAIL("the preprocess or convert kernel is missing");

  // Fresh random Q, K, V, dO; O and LSE from the float64 forward, rounded
  // as a forward kernel would store them.
  auto toBits = [&](double x) { return test::toHalfBits(bf16, float(x)); };
  auto toDouble = [&](uint16_t x) {
    return double(test::fromHalfBits(bf16, x));
  };
  Tensor q = makeTensor(c.batch, hq, c.seqQ, d, c.bshd);
  Tensor k = makeTensor(c.batch, hkv, c.seqKV, d, c.bshd);
  Tensor v = makeTensor(c.batch, hkv, c.seqKV, d, c.bshd);
  const bool gradBshd = c.mixedLayouts ? !c.bshd : c.bshd;
  Tensor o = makeTensor(c.batch, hq, c.seqQ, d, gradBshd);
  Tensor dout = makeTensor(c.batch, hq, c.seqQ, d, gradBshd);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto &x : q.data)
    x = toBits(normal(rng) * c.qScale);
  for (auto *t : {&k, &v, &dout})
    for (auto &x : t->data)
      x = toBits(normal(rng));

  templates::ReferenceProblem p;
  p.batch = c.batch;
  p.headsQ = hq;
  p.headsKV = hkv;
  p.seqQ = c.seqQ;
  p.seqKV = c.seqKV;
  p.headDim = d;
  p.scale = c.scale ? double(*c.scale) : 1.0 / std::sqrt(double(d));
  p.softcap = c.softcap;
  p.causal = c.causal;
  p.windowLeft = c.windowLeft;
  p.windowRight = c.windowRight;
  const size_t qRows = size_t(c.batch) * hq * c.seqQ;
  const size_t kvRows = size_t(c.batch) * hkv * c.seqKV;
  std::vector<double> refO(qRows * d), refLse(qRows);
  templates::referenceAttention(
      p, q.data.data(), {q.strides[0], q.strides[1], q.strides[2]},
      k.data.data(), {k.strides[0], k.strides[1], k.strides[2]}, v.data.data(),
      {v.strides[0], v.strides[1], v.strides[2]}, toDouble, refO.data(),
      refLse.data());
  std::vector<float> lse(qRows);
  for (size_t r = 0; r < qRows; ++r)
    lse[r] = float(refLse[r]);
  auto dense = [&](const Tensor &t, int heads, int seq) {
    std::vector<double> out(size_t(c.batch) * heads * seq * d);
    for (int b = 0; b < c.batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < seq; ++i)
          for (int x = 0; x < d; ++x)
            out[((size_t(b) * heads + h) * seq + i) * d + x] =
                toDouble(t.data[t.at(b, h, i) + x]);
    return out;
  };
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < c.seqQ; ++i)
        for (int x = 0; x < d; ++x)
          o.data[o.at(b, h, i) + x] =
              toBits(refO[((size_t(b) * hq + h) * c.seqQ + i) * d + x]);

  // Outputs and workspaces poisoned with NaN: every element must be
  // written.
  uint16_t nanBits = bf16 ? 0x7FC0 : 0x7E00;
  Tensor dq = makeTensor(c.batch, hq, c.seqQ, d, gradBshd);
  Tensor dk = makeTensor(c.batch, hkv, c.seqKV, d, gradBshd);
  Tensor dv = makeTensor(c.batch, hkv, c.seqKV, d, gradBshd);
  for (auto *t : {&dq, &dk, &dv})
    std::fill(t->data.begin(), t->data.end(), nanBits);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> dqAccum(qRows * d, nan), delta(qRows, nan);

  std::vector<uint64_t> words;
  for (const void *ptr :
       {(const void *)q.data.data(), (const void *)k.data.data(),
        (const void *)v.data.data(), (const void *)o.data.data(),
        (const void *)dout.data.data(), (const void *)lse.data(),
        (const void *)dq.data.data(), (const void *)dk.data.data(),
        (const void *)dv.data.data(), (const void *)dqAccum.data(),
        (const void *)delta.data()})
    HostKernel::pointerWords(words, ptr);
  words.insert(words.end(),
               {uint64_t(c.batch), uint64_t(c.seqQ), uint64_t(c.seqKV)});
  for (const Tensor *t : {&q, &k, &v, &o, &dout, &dq, &dk, &dv})
    for (int s = 0; s < 3; ++s)
      words.push_back(uint64_t(t->strides[s]));
  words.insert(words.end(), {uint64_t(hq) * c.seqQ, uint64_t(c.seqQ)});
  REQUIRE(words.size() == 3 * abi::leadingPointers(abi::kAttentionBwdParams) +
                              (abi::kAttentionBwdParams.size() -
                               abi::leadingPointers(abi::kAttentionBwdParams)));
  (*kernel)->runWords(words, *preprocess);
  (*kernel)->runWords(words);
  (*kernel)->runWords(words, *convert);

  // float64 reference gradients on the same (rounded) inputs, O and LSE.
  std::vector<double> lseD(lse.begin(), lse.end());
  templates::ReferenceGradients ref = templates::referenceAttentionBackward(
      p, dense(q, hq, c.seqQ), dense(k, hkv, c.seqKV), dense(v, hkv, c.seqKV),
      dense(o, hq, c.seqQ), lseD, dense(dout, hq, c.seqQ));

  // Rows with no visible key have dQ = 0; keys that no query row of any
  // head sees have dK = dV = 0, exactly.
  std::vector<bool> maskedRow(qRows), unseenKey(kvRows);
  for (size_t r = 0; r < qRows; ++r)
    maskedRow[r] = std::isinf(lse[r]);
  for (int j = 0; j < c.seqKV; ++j) {
    bool seen = false;
    for (int i = 0; i < c.seqQ && !seen; ++i)
      seen = templates::keyVisible(p, i, j);
    for (int b = 0; b < c.batch; ++b)
      for (int h = 0; h < hkv; ++h)
        unseenKey[(size_t(b) * hkv + h) * c.seqKV + j] = !seen;
  }
  GradCheck gq = checkGrad(bf16, dq, ref.dq, maskedRow, c.batch, hq, c.seqQ, d);
  GradCheck gk =
      checkGrad(bf16, dk, ref.dk, unseenKey, c.batch, hkv, c.seqKV, d);
  GradCheck gv =
      checkGrad(bf16, dv, ref.dv, unseenKey, c.batch, hkv, c.seqKV, d);
  std::cout << "  " << c.name << ": rel L2 dQ " << gq.relL2 << ", dK "
            << gk.relL2 << ", dV " << gv.relL2 << "; rows without keys "
            << gq.zeroRows << ", keys no row sees " << gk.zeroRows << "\n";
  CHECK(gq.nonFinite == 0);
  CHECK(gk.nonFinite == 0);
  CHECK(gv.nonFinite == 0);
  CHECK(gq.zeroWrong == 0);
  CHECK(gk.zeroWrong == 0);
  CHECK(gv.zeroWrong == 0);
  CHECK(gq.relL2 <= 1e-2);
  CHECK(gk.relL2 <= 1e-2);
  CHECK(gv.relL2 <= 1e-2);
}

Case base(std::string name, int hq, int hkv, int d, int batch, int seqQ,
          int seqKV) {
  Case c;
  c.name = std::move(name);
  c.heads = hq;
  c.kvHeads = hkv;
  c.headDim = d;
  c.batch = batch;
  c.seqQ = seqQ;
  c.seqKV = seqKV;
  return c;
}

} // namespace

TEST_CASE("tiled attention backward on the host matches the float64 "
          "reference",
          "[cpu]") {
  uint64_t seed = seedFromEnvOrClock();
  std::cout << "seed " << seed << " (set ATTNC_TEST_SEED to repeat)\n";
  std::mt19937_64 rng(seed);

  std::vector<Case> cases;
  cases.push_back(base("D64, 2 heads, odd lengths, BSHD", 2, 2, 64, 2, 77, 77));
  {
    Case c = base("causal, GQA 4/2, Sq<Skv (77/131), D128, BHSD", 4, 2, 128, 1,
                  77, 131);
    c.causal = true;
    c.bshd = false;
    cases.push_back(c);
  }
  {
    Case c = base("causal, Sq>Skv (70/33): rows without keys, GQA 4/2, D64", 4,
                  2, 64, 2, 70, 33);
    c.causal = true;
    cases.push_back(c);
  }
  {
    Case c = base("window (16, 0) + softcap 5, D64, large logits", 2, 2, 64, 1,
                  61, 61);
    c.windowLeft = 16;
    c.windowRight = 0;
    c.softcap = 5.f;
    c.qScale = 4.f;
    cases.push_back(c);
  }
  {
    Case c = base("window (8, 4), MQA 4/1, D64, BHSD, block 16x32", 4, 1, 64, 1,
                  45, 45);
    c.windowLeft = 8;
    c.windowRight = 4;
    c.bshd = false;
    c.blockM = 16;
    c.blockN = 32;
    cases.push_back(c);
  }
  {
    // Sq < Skv with a narrow window: the first keys are seen by no row,
    // so their dK and dV must be exactly 0.
    Case c = base("window (5, 2), Sq<Skv (24/50): keys no row sees, GQA 2/1", 2,
                  1, 64, 1, 24, 50);
    c.windowLeft = 5;
    c.windowRight = 2;
    cases.push_back(c);
  }
  {
    // Only a right bound: rows whose diagonal + 3 is left of key 0 see
    // nothing.
    Case c = base("window (-1, 3), Sq>Skv (60/30): rows without keys", 2, 2, 64,
                  1, 60, 30);
    c.windowRight = 3;
    cases.push_back(c);
  }
  {
    // Only a left bound: keys left of row 0's diagonal - 10 are seen by no
    // row.
    Case c = base("window (10, -1), Sq<Skv (30/60): keys no row sees", 4, 2, 64,
                  1, 30, 60);
    c.windowLeft = 10;
    cases.push_back(c);
  }
  {
    Case c = base("causal + window (20, 0), softcap 30, fp16, Sq<Skv", 2, 2,
                  128, 2, 50, 70);
    c.causal = true;
    c.windowLeft = 20;
    c.windowRight = 0; // attn IR spells causal's right bound as 0
    c.bf16 = false;
    c.softcap = 30.f;
    cases.push_back(c);
  }
  {
    Case c = base("explicit scale 0.125, large logits, fp16, D128", 2, 2, 128,
                  1, 40, 100);
    c.scale = 0.125f;
    c.qScale = 3.f;
    c.bf16 = false;
    cases.push_back(c);
  }
  {
    Case c = base("D192 fp16, GQA 3/1, O/dO/dQ/dK/dV BHSD beside BSHD inputs",
                  3, 1, 192, 2, 29, 53);
    c.bf16 = false;
    c.mixedLayouts = true;
    cases.push_back(c);
  }
  {
    Case c = base("D96, causal, Sq>Skv (40/17), BHSD inputs, BSHD gradients", 2,
                  2, 96, 1, 40, 17);
    c.causal = true;
    c.bshd = false;
    c.mixedLayouts = true;
    cases.push_back(c);
  }
  {
    Case c = base("D256, causal, block 16x32", 1, 1, 256, 1, 37, 37);
    c.causal = true;
    c.blockM = 16;
    c.blockN = 32;
    cases.push_back(c);
  }
  for (const Case &c : cases)
    runCase(c, rng);
}
