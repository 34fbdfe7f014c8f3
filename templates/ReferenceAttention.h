//===- ReferenceAttention.h - CPU float64 reference attention -------------===//
//
// The attention semantics of the templates (TemplateParams.h), computed on
// the host in float64 with an exact two-pass softmax. Header only; the input
// element type is converted with a caller-supplied functor, so the same code
// serves float/double inputs and raw bf16/fp16 bits (HostHalf.h).
//
//   O[b,h,i,:] = sum_j softmax_j(s_ij) V[b,hkv,j,:]   over visible j
//   LSE[b,h,i] = log(sum_j exp(s_ij))                  (natural log)
//   s_ij = scale * <Q[b,h,i,:], K[b,hkv,j,:]>, then softcap * tanh(s/softcap)
//   hkv = h / (headsQ / headsKV)
//   visible: bottom-right aligned causal / sliding window (see keyVisible).
// A row with no visible key gets O = 0 and LSE = -inf. With attention sinks
// (gpt-oss), query head h's logit sinks[h] joins each row's denominator
// (and its LSE) with no value: such a row gets O = 0 and LSE = sinks[h].
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEMPLATES_REFERENCEATTENTION_H
#define ATTNC_TEMPLATES_REFERENCEATTENTION_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnc::templates {

struct ReferenceProblem {
  int batch = 1, headsQ = 1, headsKV = 1, seqQ = 1, seqKV = 1, headDim = 1;
  double scale = 1.0;
  double softcap = 0.0; ///< <= 0: off
  bool causal = false;
  int windowLeft = -1, windowRight = -1; ///< -1: unbounded
  std::vector<double> sinks;             ///< empty, or one logit per headsQ
  /// FlexAttention-style mods (unset: none), applied after the soft-cap:
  /// the score of (s, b, h, i, j), and whether row i keeps key j of (b, h,
  /// i, j) besides the causal and window bounds.
  std::function<double(double, int, int, int, int)> scoreMod;
  std::function<bool(int, int, int, int)> maskMod;
};

/// Element strides of a logical [B, H, S, D] tensor (head-dim stride 1).
struct ReferenceStrides {
  int64_t b = 0, h = 0, s = 0;
  /// Dense (row-major [B, H, S, D]) strides.
  static ReferenceStrides dense(int heads, int seq, int headDim) {
    return {int64_t(heads) * seq * headDim, int64_t(seq) * headDim, headDim};
  }
};

/// Whether query row i sees key j (bottom-right aligned masks).
inline bool keyVisible(const ReferenceProblem &p, int i, int j) {
  if (j < 0 || j >= p.seqKV)
    return false;
  const int64_t diag = int64_t(i) + p.seqKV - p.seqQ;
  if (p.causal && j > diag)
    return false;
  if (p.windowLeft >= 0 && j < diag - p.windowLeft)
    return false;
  if (p.windowRight >= 0 && j > diag + p.windowRight)
    return false;
  return true;
}

/// Computes O (dense [B, Hq, Sq, D]) and, when `lse` is non-null, LSE (dense
/// [B, Hq, Sq]) in float64. `toDouble(T)` converts one input element.
template <typename T, typename ToDouble>
void referenceAttention(const ReferenceProblem &p, const T *q,
                        ReferenceStrides qs, const T *k, ReferenceStrides ks,
                        const T *v, ReferenceStrides vs, ToDouble toDouble,
                        double *o, double *lse) {
  if (p.batch <= 0 || p.headsQ <= 0 || p.headsKV <= 0 || p.seqQ < 0 ||
      p.seqKV < 0 || p.headDim <= 0 || p.headsQ % p.headsKV != 0)
    throw std::invalid_argument("referenceAttention: bad problem shape");
  if (!p.sinks.empty() && p.sinks.size() != size_t(p.headsQ))
    throw std::invalid_argument("referenceAttention: sinks must have one "
                                "logit per query head");
  const int group = p.headsQ / p.headsKV;
  const int d = p.headDim;
  const double negInf = -std::numeric_limits<double>::infinity();
  std::vector<double> scores(static_cast<size_t>(std::max(p.seqKV, 1)));
  std::vector<double> acc(static_cast<size_t>(d));
  for (int b = 0; b < p.batch; ++b) {
    for (int h = 0; h < p.headsQ; ++h) {
      const int hkv = h / group;
      for (int i = 0; i < p.seqQ; ++i) {
        const T *qi = q + b * qs.b + h * qs.h + i * qs.s;
        // Pass 1: scores and their maximum.
        double maxScore = negInf;
        for (int j = 0; j < p.seqKV; ++j) {
          if (!keyVisible(p, i, j) || (p.maskMod && !p.maskMod(b, h, i, j))) {
            scores[j] = negInf;
            continue;
          }
          const T *kj = k + b * ks.b + hkv * ks.h + j * ks.s;
          double dot = 0.0;
          for (int x = 0; x < d; ++x)
            dot += toDouble(qi[x]) * toDouble(kj[x]);
          double s = p.scale * dot;
          if (p.softcap > 0.0)
            s = p.softcap * std::tanh(s / p.softcap);
          if (p.scoreMod)
            s = p.scoreMod(s, b, h, i, j);
          scores[j] = s;
          maxScore = std::max(maxScore, s);
        }
        // A sink is one more logit, of a key whose value is zero.
        const double sink = p.sinks.empty() ? negInf : p.sinks[h];
        maxScore = std::max(maxScore, sink);
        // Pass 2: exp(s - max), their sum and the weighted sum of V.
        std::fill(acc.begin(), acc.end(), 0.0);
        double sum = sink == negInf ? 0.0 : std::exp(sink - maxScore);
        if (maxScore != negInf) {
          for (int j = 0; j < p.seqKV; ++j) {
            if (scores[j] == negInf)
              continue;
            const double w = std::exp(scores[j] - maxScore);
            sum += w;
            const T *vj = v + b * vs.b + hkv * vs.h + j * vs.s;
            for (int x = 0; x < d; ++x)
              acc[x] += w * toDouble(vj[x]);
          }
        }
        const int64_t row = (int64_t(b) * p.headsQ + h) * p.seqQ + i;
        for (int x = 0; x < d; ++x)
          o[row * d + x] = sum > 0.0 ? acc[x] / sum : 0.0;
        if (lse)
          lse[row] = sum > 0.0 ? maxScore + std::log(sum) : negInf;
      }
    }
  }
}

/// Convenience form for dense inputs; returns {O, LSE}.
struct ReferenceResult {
  std::vector<double> o, lse;
};

template <typename T, typename ToDouble>
ReferenceResult referenceAttentionDense(const ReferenceProblem &p, const T *q,
                                        const T *k, const T *v,
                                        ToDouble toDouble) {
  ReferenceResult r;
  r.o.resize(size_t(p.batch) * p.headsQ * p.seqQ * p.headDim);
  r.lse.resize(size_t(p.batch) * p.headsQ * p.seqQ);
  referenceAttention(p, q, ReferenceStrides::dense(p.headsQ, p.seqQ, p.headDim),
                     k, ReferenceStrides::dense(p.headsKV, p.seqKV, p.headDim),
                     v, ReferenceStrides::dense(p.headsKV, p.seqKV, p.headDim),
                     toDouble, r.o.data(), r.lse.data());
  return r;
}

/// Identity conversion for float / double inputs.
struct ToDoubleIdentity {
  template <typename T> double operator()(T x) const {
    return static_cast<double>(x);
  }
};

} // namespace attnc::templates

#endif // ATTNC_TEMPLATES_REFERENCEATTENTION_H
