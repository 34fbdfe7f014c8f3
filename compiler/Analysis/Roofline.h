//===- Roofline.h - FLOPs, bytes and the floor of an attention -*- C++ -*-===//
//
// The seed article's arithmetic. Standard (unfused) attention writes the n×n
// scores S, reads them for the softmax, writes P, and reads P for P·V: four
// trips of the n×n matrix through HBM. The fused kernel moves only Q, K, V and
// O (and the LSE row). FLOPs are counted on the (i, j) pairs a mask keeps.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_ANALYSIS_ROOFLINE_H
#define ATTNC_COMPILER_ANALYSIS_ROOFLINE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnc {

struct AttentionProblem {
  int64_t batch = 1;
  int64_t heads = 32;
  int64_t kvHeads = 8;
  int64_t seqQ = 8192;
  int64_t seqKV = 8192;
  int64_t headDim = 128;
  int64_t eltBytes = 2;
  bool causal = false;
  std::optional<int64_t> windowLeft, windowRight; // -1 = unbounded
  bool withLse = true;
};

/// Number of (query, key) pairs one head computes after causal/window masks,
/// with FlashAttention-2's bottom-right alignment (row i is aligned to key
/// i + seqKV - seqQ).
int64_t visiblePairs(const AttentionProblem &p);

/// 2 matmuls × 2 FLOPs per multiply-add × D per visible pair, per query head.
double attentionFlops(const AttentionProblem &p);
/// Q, K, V read once, O (+ LSE) written once.
double fusedBytes(const AttentionProblem &p);
/// fusedBytes plus S written, S read, P written, P read (in the input dtype).
double unfusedBytes(const AttentionProblem &p);

struct Device {
  std::string name;
  double flopsPerSec; // dense bf16 tensor-core rate
  double bytesPerSec; // HBM bandwidth
};
/// Datasheet H100 SXM and H200 SXM, and the H200 ceilings measured in
/// ../shared/PEERS.md (8192³ bf16 matmul, device copy).
std::vector<Device> knownDevices();

/// The roofline floor: the larger of compute time and memory time.
double floorSeconds(double flops, double bytes, const Device &d);

} // namespace attnc

#endif
