//===- reference_attention.cu - Plain GPU reference attention -------------===//
//
// A deliberately simple attention kernel used as the GPU reference by the
// tests and benchmarks; it shares no code with the compiler.
//
// Entry: attnc_reference_attention(ReferenceAttentionParams p)
//   block = (kReferenceThreads = 128, 1, 1): warp w of the block owns query
//           row blockIdx.x * kReferenceRowsPerBlock + w;
//   grid  = (ceil(seqQ / kReferenceRowsPerBlock), headsQ, batch);
//   no shared memory (static or dynamic).
//
// Algorithm (per warp = per query row), everything in fp32:
//   lane l holds q[d] and an output accumulator for d = l, l+32, l+64, ...;
//   for each visible key j (in increasing order):
//     s   = score(<q, k_j>)                (butterfly shuffle reduction: every
//                                           lane ends with the same bits)
//     m'  = max(m, s);  a = exp(m - m');  p = exp(s - m')
//     l   = l * a + p;  acc = acc * a + p * v_j;  m = m'
//   O = acc / l and LSE = m + log(l), or O = 0 and LSE = -inf when the row
//   saw no key. This is the exact online softmax (Milakov & Gimelshein) with
//   accurate expf/logf/tanhf (NVRTC is not given --use_fast_math).
//
//===----------------------------------------------------------------------===//

#include "attnc/common.cuh"

using attnc::templates::kReferenceRowsPerBlock;
using attnc::templates::kReferenceThreads;
using attnc::templates::ReferenceAttentionParams;

namespace {
constexpr int kHeadDim = ATTNC_HEAD_DIM;
constexpr int kPerLane = (kHeadDim + 31) / 32;
} // namespace

extern "C" __global__ void __launch_bounds__(kReferenceThreads)
    attnc_reference_attention(const ReferenceAttentionParams p) {
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kReferenceRowsPerBlock + warp;
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  if (row >= p.seqQ)
    return; // whole warp leaves together; the kernel has no block barrier
  const int hkv = h / (p.headsQ / p.headsKV);

  const attnc_elem_t *q = static_cast<const attnc_elem_t *>(p.q) +
                          b * p.qStrideB + h * p.qStrideH + row * p.qStrideS;
  const attnc_elem_t *kBase = static_cast<const attnc_elem_t *>(p.k) +
                              b * p.kStrideB + hkv * p.kStrideH;
  const attnc_elem_t *vBase = static_cast<const attnc_elem_t *>(p.v) +
                              b * p.vStrideB + hkv * p.vStrideH;

  float qReg[kPerLane];
  float acc[kPerLane];
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) {
    const int d = lane + 32 * c;
    qReg[c] = d < kHeadDim ? attnc_to_float(q[d]) : 0.0f;
    acc[c] = 0.0f;
  }

  float m = ATTNC_NEG_INF; // running max of the scores seen so far
  float l = 0.0f;          // running sum of exp(s - m)
  const attnc_key_range keys = attnc_visible_keys(
      row, p.seqQ, p.seqKV, p.causal, p.windowLeft, p.windowRight);
  for (int j = keys.lo; j <= keys.hi; ++j) {
    const attnc_elem_t *kj = kBase + j * p.kStrideS;
    float part = 0.0f;
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) {
      const int d = lane + 32 * c;
      if (d < kHeadDim)
        part += qReg[c] * attnc_to_float(kj[d]);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      part += __shfl_xor_sync(0xffffffffu, part, offset);
    const float s = attnc_score(part, p.scale, p.softcap);

    const float mNew = fmaxf(m, s);
    const float alpha = expf(m - mNew); // exp(-inf) = 0 on the first key
    const float pj = expf(s - mNew);
    l = l * alpha + pj;
    const attnc_elem_t *vj = vBase + j * p.vStrideS;
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) {
      const int d = lane + 32 * c;
      const float vd = d < kHeadDim ? attnc_to_float(vj[d]) : 0.0f;
      acc[c] = acc[c] * alpha + pj * vd;
    }
    m = mNew;
  }

  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  attnc_elem_t *o = static_cast<attnc_elem_t *>(p.o) + b * p.oStrideB +
                    h * p.oStrideH + row * p.oStrideS;
  const long long denseRow = ((long long)b * p.headsQ + h) * p.seqQ + row;
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) {
    const int d = lane + 32 * c;
    if (d < kHeadDim) {
      const float out = acc[c] * inv;
      o[d] = attnc_from_float(out);
      if (p.oF32)
        p.oF32[denseRow * kHeadDim + d] = out;
    }
  }
  if (lane == 0 && p.lse)
    p.lse[denseRow] = l > 0.0f ? m + logf(l) : ATTNC_NEG_INF;
}
