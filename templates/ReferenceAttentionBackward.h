//===- ReferenceAttentionBackward.h - CPU float64 attention gradients -----===//
//
// The gradients of ReferenceAttention.h's attention, in float64: given Q, K,
// V, the output gradient dO and the forward's LSE, dQ, dK and dV. What the
// GPU backward must reproduce, so it follows FlashAttention's recompute
// formulation rather than differentiating a stored softmax:
//
//   r_ij = scale · <Q_i, K_j>,  s_ij = softcap · tanh(r_ij / softcap) (or r)
//   P_ij = exp(s_ij - LSE_i) over visible j (0 elsewhere)
//   D_i  = sum_x dO_ix · O_ix  (= sum_j P_ij dP_ij: the preprocess)
//   dP_ij = <dO_i, V_j>,  dS_ij = P_ij (dP_ij - D_i)
//   dR_ij = dS_ij · (1 - tanh²(r_ij / softcap))   (dS_ij without softcap)
//   dQ_i = scale · sum_j dR_ij K_j,  dK_j = scale · sum_i dR_ij Q_i,
//   dV_j = sum_i P_ij dO_i
// with dK and dV of a KV head summed over the query heads of its group
// (GQA/MQA). A row with no visible key (LSE = -inf) contributes nothing:
// its dQ is 0 and it adds nothing to dK and dV.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEMPLATES_REFERENCEATTENTIONBACKWARD_H
#define ATTNC_TEMPLATES_REFERENCEATTENTIONBACKWARD_H

#include "templates/ReferenceAttention.h"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace attnc::templates {

/// Dense gradients: dQ [B, Hq, Sq, D], dK and dV [B, Hkv, Skv, D], and the
/// preprocess's D [B, Hq, Sq].
struct ReferenceGradients {
  std::vector<double> dq, dk, dv, delta;
};

/// The gradients of the attention of `p` over dense Q [B, Hq, Sq, D], K and
/// V [B, Hkv, Skv, D], with the forward's O and LSE (from referenceAttention,
/// dense) and the output gradient dO [B, Hq, Sq, D].
inline ReferenceGradients referenceAttentionBackward(
    const ReferenceProblem &p, const std::vector<double> &q,
    const std::vector<double> &k, const std::vector<double> &v,
    const std::vector<double> &o, const std::vector<double> &lse,
    const std::vector<double> &dout) {
  if (p.batch <= 0 || p.headsQ <= 0 || p.headsKV <= 0 || p.seqQ < 0 ||
      p.seqKV < 0 || p.headDim <= 0 || p.headsQ % p.headsKV != 0)
    throw std::invalid_argument(
        "referenceAttentionBackward: bad problem shape");
  const size_t d = size_t(p.headDim);
  const size_t qElems = size_t(p.batch) * p.headsQ * p.seqQ * d;
  const size_t kvElems = size_t(p.batch) * p.headsKV * p.seqKV * d;
  if (q.size() != qElems || o.size() != qElems || dout.size() != qElems ||
      k.size() != kvElems || v.size() != kvElems || lse.size() != qElems / d)
    throw std::invalid_argument("referenceAttentionBackward: sizes do not "
                                "match the problem");
  const int group = p.headsQ / p.headsKV;
  ReferenceGradients g;
  g.dq.assign(qElems, 0.0);
  g.dk.assign(kvElems, 0.0);
  g.dv.assign(kvElems, 0.0);
  g.delta.assign(qElems / d, 0.0);
  auto qRow = [&](int b, int h, int i) {
    return (size_t(b) * p.headsQ + h) * p.seqQ + i;
  };
  auto kvRow = [&](int b, int h, int j) {
    return (size_t(b) * p.headsKV + h) * p.seqKV + j;
  };
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.headsQ; ++h) {
      const int hkv = h / group;
      for (int i = 0; i < p.seqQ; ++i) {
        const size_t qi = qRow(b, h, i);
        const double l = lse[qi];
        if (std::isinf(l) && l < 0)
          continue; // no visible key: no gradient
        double delta = 0.0;
        for (size_t x = 0; x < d; ++x)
          delta += dout[qi * d + x] * o[qi * d + x];
        g.delta[qi] = delta;
        for (int j = 0; j < p.seqKV; ++j) {
          if (!keyVisible(p, i, j))
            continue;
          const size_t kj = kvRow(b, hkv, j);
          double dot = 0.0, dp = 0.0;
          for (size_t x = 0; x < d; ++x) {
            dot += q[qi * d + x] * k[kj * d + x];
            dp += dout[qi * d + x] * v[kj * d + x];
          }
          const double r = p.scale * dot;
          double s = r, slope = 1.0;
          if (p.softcap > 0.0) {
            const double t = std::tanh(r / p.softcap);
            s = p.softcap * t;
            slope = 1.0 - t * t;
          }
          const double prob = std::exp(s - l);
          const double dr = prob * (dp - delta) * slope;
          for (size_t x = 0; x < d; ++x) {
            g.dq[qi * d + x] += p.scale * dr * k[kj * d + x];
            g.dk[kj * d + x] += p.scale * dr * q[qi * d + x];
            g.dv[kj * d + x] += prob * dout[qi * d + x];
          }
        }
      }
    }
  return g;
}

} // namespace attnc::templates

#endif // ATTNC_TEMPLATES_REFERENCEATTENTIONBACKWARD_H
