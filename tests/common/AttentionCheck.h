//===- AttentionCheck.h - comparing an attention output with float64 ------===//
//
// Shared by the host (CPU) and GPU numerics tests: the element strides of
// the two memory layouts, 16-bit float conversion, and the comparison of a
// kernel's O and LSE with the float64 reference (relative L2 error, LSE
// error, NaN/Inf, and fully masked rows that must be exactly O = 0 and
// LSE = -inf).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_COMMON_ATTENTIONCHECK_H
#define ATTNC_TESTS_COMMON_ATTENTIONCHECK_H

#include "templates/HostHalf.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace attnc::test {

/// Random attention-sink logits for `heads` query heads (none when `on` is
/// false): near the rows' LSE, and far above it every third head, where the
/// sink takes nearly all the weight.
inline std::vector<float> randomSinks(bool on, int heads,
                                      std::mt19937_64 &rng) {
  std::vector<float> sinks;
  std::normal_distribution<float> normal(0.f, 1.f);
  if (on)
    for (int h = 0; h < heads; ++h)
      sinks.push_back(2.f * normal(rng) + (h % 3 == 2 ? 12.f : 2.f));
  // Head 0's sink does not survive a trip through the log2 domain in f32
  // ((x · log2 e) · ln 2 != x, as for about 15% of floats), so that a
  // kernel computing a keyless row's LSE that way is caught every run.
  volatile float log2e = 1.4426950408889634f, ln2 = 0.6931471805599453f;
  while (on && heads > 0) {
    volatile float inLog2 = sinks[0] * log2e;
    if (inLog2 * ln2 != sinks[0])
      break;
    sinks[0] = std::nextafter(sinks[0], 100.f);
  }
  return sinks;
}

/// Element strides of a logical [B, H, S, D] tensor stored as BSHD or BHSD.
inline std::array<int64_t, 4> attentionStrides(int64_t h, int64_t s, int64_t d,
                                               bool bshd) {
  if (bshd)
    return {s * h * d, d, h * d, 1};
  return {h * s * d, s * d, d, 1};
}

inline uint16_t toHalfBits(bool bf16, float x) {
  return bf16 ? templates::floatToBf16Bits(x) : templates::floatToHalfBits(x);
}

inline float fromHalfBits(bool bf16, uint16_t x) {
  return bf16 ? templates::bf16BitsToFloat(x) : templates::halfBitsToFloat(x);
}

struct AttentionComparison {
  double relL2 = 0;  // ‖O − ref‖ / ‖ref‖ over the whole output
  double lseErr = 0; // max |LSE − ref| / max(1, |ref|) over visible rows
  int nonFinite = 0; // NaN/Inf in O, or in the LSE of a visible row
  int maskedRows = 0;
  int maskedWrong = 0; // masked-row elements not O = 0 / LSE = -inf
  bool ok(double maxRelL2 = 1e-2, double maxLseErr = 1e-3) const {
    return relL2 <= maxRelL2 && lseErr <= maxLseErr && nonFinite == 0 &&
           maskedWrong == 0;
  }
};

/// `o` is the kernel's output in 16-bit floats with element strides
/// `oStrides` ([B, H, S, D]); `lse`, `refO` and `refLse` are dense
/// ([B, H, S] and [B, H, S, D]).
inline AttentionComparison
compareAttention(bool bf16, const std::vector<uint16_t> &o,
                 std::array<int64_t, 4> oStrides, const std::vector<float> &lse,
                 const std::vector<double> &refO,
                 const std::vector<double> &refLse, int64_t batch,
                 int64_t heads, int64_t seq, int64_t dim) {
  AttentionComparison c;
  double errSq = 0, refSq = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < seq; ++i) {
        int64_t row = (b * heads + h) * seq + i;
        bool masked = std::isinf(refLse[row]);
        c.maskedRows += masked;
        if (masked)
          c.maskedWrong += !(std::isinf(lse[row]) && lse[row] < 0);
        else if (!std::isfinite(lse[row]))
          ++c.nonFinite;
        else
          c.lseErr =
              std::max(c.lseErr, std::abs(lse[row] - refLse[row]) /
                                     std::max(1.0, std::abs(refLse[row])));
        for (int64_t x = 0; x < dim; ++x) {
          float g = fromHalfBits(
              bf16, o[b * oStrides[0] + h * oStrides[1] + i * oStrides[2] + x]);
          double r = refO[row * dim + x];
          c.nonFinite += !std::isfinite(g);
          if (masked)
            c.maskedWrong += g != 0.0f; // fully masked row: O = 0 exactly
          errSq += (g - r) * (g - r);
          refSq += r * r;
        }
      }
  c.relL2 = std::sqrt(errSq / std::max(refSq, 1e-300));
  return c;
}

} // namespace attnc::test

#endif
