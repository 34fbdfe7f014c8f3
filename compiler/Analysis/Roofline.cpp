//===- Roofline.cpp - FLOPs, bytes and the floor of an attention ----------===//
#include "compiler/Analysis/Roofline.h"

#include <algorithm>

using namespace attnc;

int64_t attnc::visiblePairs(const AttentionProblem &p) {
  int64_t shift = p.seqKV - p.seqQ; // bottom-right alignment
  int64_t left = p.windowLeft.value_or(-1);
  int64_t right = p.causal ? 0 : p.windowRight.value_or(-1);
  int64_t total = 0;
  for (int64_t i = 0; i < p.seqQ; ++i) {
    int64_t diag = i + shift;
    int64_t lo = left < 0 ? 0 : std::max<int64_t>(0, diag - left);
    int64_t hi =
        right < 0 ? p.seqKV - 1 : std::min<int64_t>(p.seqKV - 1, diag + right);
    if (hi >= lo)
      total += hi - lo + 1;
  }
  return total;
}

double attnc::attentionFlops(const AttentionProblem &p) {
  return 4.0 * static_cast<double>(p.batch) * p.heads * p.headDim *
         static_cast<double>(visiblePairs(p));
}

double attnc::fusedBytes(const AttentionProblem &p) {
  double b = static_cast<double>(p.batch) * p.headDim * p.eltBytes;
  double q = b * p.heads * p.seqQ, o = q;
  double kv = 2.0 * b * p.kvHeads * p.seqKV;
  double lse = p.withLse ? 4.0 * p.batch * p.heads * p.seqQ : 0.0;
  return q + kv + o + lse;
}

double attnc::unfusedBytes(const AttentionProblem &p) {
  double matrix = static_cast<double>(p.batch) * p.heads * p.seqQ *
                  static_cast<double>(p.seqKV) * p.eltBytes;
  AttentionProblem noLse = p;
  noLse.withLse = false;
  return fusedBytes(noLse) + 4.0 * matrix;
}

std::vector<Device> attnc::knownDevices() {
  return {{"H100 SXM (datasheet)", 989e12, 3.35e12},
          {"H200 SXM (datasheet)", 989e12, 4.8e12},
          {"H200 (measured: 752 TFLOP/s, 4.22 TB/s)", 752e12, 4.22e12}};
}

double attnc::floorSeconds(double flops, double bytes, const Device &d) {
  return std::max(flops / d.flopsPerSec, bytes / d.bytesPerSec);
}
