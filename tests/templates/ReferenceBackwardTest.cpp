//===- ReferenceBackwardTest.cpp - float64 attention gradients ------------===//
//
// templates/ReferenceAttentionBackward.h against central finite differences
// of the forward reference: with L = sum(dO ∘ O(Q, K, V)) for a random dO,
// dL/dQ, dL/dK and dL/dV element by element (every element of small
// problems) must equal the analytic dQ, dK and dV. Covers GQA/MQA (dK, dV
// summed over a group), causal with seq_q > seq_kv (fully masked rows: zero
// gradients), sliding windows, soft-cap (its 1 - tanh² factor) and large
// logits. Fresh random inputs each run (TestSeed.h).
//
//===----------------------------------------------------------------------===//

#include "TestSeed.h"
#include "templates/ReferenceAttentionBackward.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace attnc::templates;

namespace {

std::vector<double> normalVector(std::mt19937_64 &rng, size_t n) {
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> out(n);
  for (double &x : out)
    x = dist(rng);
  return out;
}

double loss(const ReferenceProblem &p, const std::vector<double> &q,
            const std::vector<double> &k, const std::vector<double> &v,
            const std::vector<double> &dout) {
  ReferenceResult r = referenceAttentionDense(p, q.data(), k.data(), v.data(),
                                              ToDoubleIdentity{});
  double l = 0.0;
  for (size_t i = 0; i < dout.size(); ++i)
    l += dout[i] * r.o[i];
  return l;
}

/// Relative L2 distance of the analytic gradient of `x` from central
/// differences of the loss in each of its elements.
double finiteDifferenceError(const ReferenceProblem &p, std::vector<double> &q,
                             std::vector<double> &k, std::vector<double> &v,
                             const std::vector<double> &dout,
                             std::vector<double> &x,
                             const std::vector<double> &analytic, double step) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + step;
    const double up = loss(p, q, k, v, dout);
    x[i] = keep - step;
    const double down = loss(p, q, k, v, dout);
    x[i] = keep;
    const double fd = (up - down) / (2 * step);
    num += (fd - analytic[i]) * (fd - analytic[i]);
    den += fd * fd;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

struct GradientCase {
  std::string name;
  ReferenceProblem p;
  double inputScale = 1.0; // inputs are normal(0, inputScale)
};

void checkCase(const GradientCase &c, std::mt19937_64 &rng) {
  const ReferenceProblem &p = c.p;
  const size_t d = size_t(p.headDim);
  const size_t qElems = size_t(p.batch) * p.headsQ * p.seqQ * d;
  const size_t kvElems = size_t(p.batch) * p.headsKV * p.seqKV * d;
  auto scaled = [&](size_t n) {
    std::vector<double> x = normalVector(rng, n);
    for (double &e : x)
      e *= c.inputScale;
    return x;
  };
  std::vector<double> q = scaled(qElems), k = scaled(kvElems),
                      v = normalVector(rng, kvElems),
                      dout = normalVector(rng, qElems);
  ReferenceResult fwd = referenceAttentionDense(p, q.data(), k.data(), v.data(),
                                                ToDoubleIdentity{});
  ReferenceGradients g =
      referenceAttentionBackward(p, q, k, v, fwd.o, fwd.lse, dout);
  for (double x : g.dq)
    REQUIRE(std::isfinite(x));
  for (double x : g.dk)
    REQUIRE(std::isfinite(x));
  for (double x : g.dv)
    REQUIRE(std::isfinite(x));
  const double step = 1e-5 / c.inputScale;
  INFO(c.name);
  CHECK(finiteDifferenceError(p, q, k, v, dout, q, g.dq, step) < 1e-6);
  CHECK(finiteDifferenceError(p, q, k, v, dout, k, g.dk, step) < 1e-6);
  CHECK(finiteDifferenceError(p, q, k, v, dout, v, g.dv, 1e-5) < 1e-6);
  // Rows without a visible key: LSE -inf, and every gradient of theirs 0.
  for (size_t row = 0; row < fwd.lse.size(); ++row)
    if (std::isinf(fwd.lse[row])) {
      CHECK(g.delta[row] == 0.0);
      for (size_t x = 0; x < d; ++x)
        CHECK(g.dq[row * d + x] == 0.0);
    }
}

} // namespace

TEST_CASE("backward reference equals finite differences of the forward",
          "[reference][backward]") {
  std::mt19937_64 rng(test::testSeed());
  ReferenceProblem base;
  base.batch = 2;
  base.headDim = 8;
  base.scale = 1.0 / std::sqrt(8.0);

  std::vector<GradientCase> cases;
  GradientCase c{"GQA 4/2, seq_q 5, seq_kv 7", base};
  c.p.headsQ = 4;
  c.p.headsKV = 2;
  c.p.seqQ = 5;
  c.p.seqKV = 7;
  cases.push_back(c);
  c = {"MQA 3/1, causal, seq_q 9 > seq_kv 4 (masked rows)", base};
  c.p.headsQ = 3;
  c.p.seqQ = 9;
  c.p.seqKV = 4;
  c.p.causal = true;
  cases.push_back(c);
  c = {"window (3, 1), soft-cap 5, seq_q 7, seq_kv 11", base};
  c.p.headsQ = 2;
  c.p.headsKV = 2;
  c.p.seqQ = 7;
  c.p.seqKV = 11;
  c.p.windowLeft = 3;
  c.p.windowRight = 1;
  c.p.softcap = 5.0;
  c.p.scale = 0.9;
  cases.push_back(c);
  c = {"large logits (scale 4, inputs x 3), causal, seq 13", base};
  c.p.headsQ = 2;
  c.p.headsKV = 1;
  c.p.seqQ = 13;
  c.p.seqKV = 13;
  c.p.causal = true;
  c.p.scale = 4.0;
  c.inputScale = 3.0;
  cases.push_back(c);
  for (const GradientCase &gc : cases)
    checkCase(gc, rng);
}

TEST_CASE("backward reference: the preprocess D is rowsum(P ∘ dP)",
          "[reference][backward]") {
  std::mt19937_64 rng(test::testSeed() + 1);
  ReferenceProblem p;
  p.headsQ = 2;
  p.headsKV = 1;
  p.seqQ = 6;
  p.seqKV = 10;
  p.headDim = 4;
  p.scale = 0.5;
  p.windowLeft = 2;
  const size_t qElems = size_t(p.headsQ) * p.seqQ * p.headDim;
  const size_t kvElems = size_t(p.headsKV) * p.seqKV * p.headDim;
  std::vector<double> q = normalVector(rng, qElems),
                      k = normalVector(rng, kvElems),
                      v = normalVector(rng, kvElems),
                      dout = normalVector(rng, qElems);
  ReferenceResult fwd = referenceAttentionDense(p, q.data(), k.data(), v.data(),
                                                ToDoubleIdentity{});
  ReferenceGradients g =
      referenceAttentionBackward(p, q, k, v, fwd.o, fwd.lse, dout);
  for (int h = 0; h < p.headsQ; ++h)
    for (int i = 0; i < p.seqQ; ++i) {
      const size_t row = size_t(h) * p.seqQ + i;
      double sum = 0.0;
      for (int j = 0; j < p.seqKV; ++j) {
        if (!keyVisible(p, i, j))
          continue;
        double s = 0.0, dp = 0.0;
        for (int x = 0; x < p.headDim; ++x) {
          s += q[row * p.headDim + x] * k[size_t(j) * p.headDim + x];
          dp += dout[row * p.headDim + x] * v[size_t(j) * p.headDim + x];
        }
        sum += std::exp(p.scale * s - fwd.lse[row]) * dp;
      }
      CHECK(g.delta[row] == Approx(sum).epsilon(1e-12).margin(1e-12));
    }
}

TEST_CASE("backward reference rejects mismatched sizes",
          "[reference][backward]") {
  ReferenceProblem p;
  p.headsQ = 2;
  p.headsKV = 1;
  p.seqQ = 3;
  p.seqKV = 3;
  p.headDim = 4;
  std::vector<double> q(24), kv(12), lse(6), small(5);
  CHECK_THROWS_AS(referenceAttentionBackward(p, q, kv, kv, q, lse, small),
                  std::invalid_argument);
  p.headsKV = 3; // 2 % 3 != 0
  CHECK_THROWS_AS(referenceAttentionBackward(p, q, kv, kv, q, lse, q),
                  std::invalid_argument);
}
