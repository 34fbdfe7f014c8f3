//===- RowReference.h - float64 references of the row kernels ---*- C++ -*-===//
//
// What silu_mul, gelu_mul and add_rmsnorm compute, in double from the
// 16-bit inputs, and the comparison the CPU and GPU numerics tests share:
// relative L2 error and a count of non-finite outputs.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_COMMON_ROWREFERENCE_H
#define ATTNC_TESTS_COMMON_ROWREFERENCE_H

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnc::test {

/// x: rows x (2d) with row stride xStride; out: rows x d (dense).
inline void referenceGated(bool gelu, int64_t rows, int64_t d,
                           const std::function<double(int64_t)> &x,
                           int64_t xStride, std::vector<double> &out) {
  out.assign(rows * d, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < d; ++j) {
      double g = x(r * xStride + j), u = x(r * xStride + d + j);
      double act = gelu ? 0.5 * g *
                              (1.0 + std::tanh(0.7978845608028654 *
                                               (g + 0.044715 * g * g * g)))
                        : g / (1.0 + std::exp(-g));
      out[r * d + j] = act * u;
    }
}

/// h = round(x + r) (rounded by `round`, the element type); y = h /
/// sqrt(mean(h^2) + eps) * w. Dense rows x d.
inline void referenceAddRMSNorm(int64_t rows, int64_t d,
                                const std::function<double(int64_t)> &x,
                                const std::function<double(int64_t)> &res,
                                const std::function<double(int64_t)> &w,
                                double eps,
                                const std::function<double(double)> &round,
                                std::vector<double> &y,
                                std::vector<double> &h) {
  y.assign(rows * d, 0.0);
  h.assign(rows * d, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) {
      double v = round(x(r * d + j) + res(r * d + j));
      h[r * d + j] = v;
      ss += v * v;
    }
    double inv = 1.0 / std::sqrt(ss / double(d) + eps);
    for (int64_t j = 0; j < d; ++j)
      y[r * d + j] = h[r * d + j] * inv * w(j);
  }
}

struct RowComparison {
  double relL2 = 0;
  int64_t nonFinite = 0;
  bool ok(double tol) const { return nonFinite == 0 && relL2 <= tol; }
};

/// got(i) for i < ref.size() against ref.
inline RowComparison compareRows(const std::function<double(int64_t)> &got,
                                 const std::vector<double> &ref) {
  RowComparison c;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = got(static_cast<int64_t>(i));
    if (!std::isfinite(g)) {
      ++c.nonFinite;
      continue;
    }
    num += (g - ref[i]) * (g - ref[i]);
    den += ref[i] * ref[i];
  }
  c.relL2 = std::sqrt(num / (den > 0 ? den : 1.0));
  return c;
}

/// RoPE in float64: NeoX pairs (i, i + r) or GPT-J pairs (2i, 2i + 1) of
/// each head's first 2r = rot columns, angle row `cache(pos[t], .)` (cos in
/// columns [0, r), sin in [r, 2r)); other columns unchanged. `x(i)` reads
/// element i of the dense [tokens, width] tensor.
inline void referenceRope(bool neox, int64_t tokens, int64_t width, int64_t hs,
                          int64_t rot, const std::vector<int64_t> &pos,
                          const std::function<double(int64_t)> &x,
                          const std::function<double(int64_t, int64_t)> &cache,
                          std::vector<double> &out) {
  out.assign(tokens * width, 0);
  const int64_t r = rot / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 0; j < width; ++j)
      out[t * width + j] = x(t * width + j);
    for (int64_t h = 0; h < width / hs; ++h)
      for (int64_t i = 0; i < r; ++i) {
        int64_t ia = h * hs + (neox ? i : 2 * i);
        int64_t ib = h * hs + (neox ? i + r : 2 * i + 1);
        double a = x(t * width + ia), b = x(t * width + ib);
        double c = cache(pos[t], i), s = cache(pos[t], r + i);
        out[t * width + ia] = a * c - b * s;
        out[t * width + ib] = b * c + a * s;
      }
  }
}

} // namespace attnc::test

#endif
