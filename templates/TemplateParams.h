//===- TemplateParams.h - Kernel parameter blocks shared with NVRTC -------===//
//
// Parameter structs of the NVRTC template kernels. This one file is compiled
// twice: by the host compiler (the launcher fills these structs) and, embedded
// into the library, by NVRTC as the in-memory header "attnc/TemplateParams.h"
// (the kernels take them by value). It therefore uses only built-in types:
// pointers, `long long`, `int` and `float`, all naturally aligned, so the
// layout is the same on both sides (the host side static_asserts it in
// Templates.cpp).
//
// Conventions for every kernel:
//  * Logical tensors are [B, H, S, D]; an element (b, h, s, d) lives at
//    base + b*strideB + h*strideH + s*strideS + d (strides in ELEMENTS, the
//    head-dim stride is 1). Any other layout ([B, S, H, D], padded rows, ...)
//    is expressed through the strides.
//  * Q, K, V and O have the input dtype chosen at compile time
//    (-DATTNC_DTYPE_BF16 or -DATTNC_DTYPE_FP16); head dim D is the compile
//    time -DATTNC_HEAD_DIM (1..256) and must equal `headDim` below.
//  * Query head h reads KV head h / (headsQ / headsKV) (GQA/MQA);
//    headsQ % headsKV == 0.
//  * Masking, bottom-right aligned: with diag(i) = i + seqKV - seqQ, query row
//    i sees key j iff  0 <= j < seqKV
//                  and (!causal            || j <= diag(i))
//                  and (windowLeft  < 0    || j >= diag(i) - windowLeft)
//                  and (windowRight < 0    || j <= diag(i) + windowRight).
//  * Score: s = scale * <q_i, k_j>; when softcap > 0, s = softcap *
//    tanh(s / softcap) (after scaling, before masking).
//  * LSE is the natural-log log-sum-exp of the visible scores of a row. A row
//    with no visible key (fully masked) gets O = 0 and LSE = -inf, never NaN.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEMPLATES_TEMPLATEPARAMS_H
#define ATTNC_TEMPLATES_TEMPLATEPARAMS_H

namespace attnc {
namespace templates {

/// Block shape of `attnc_reference_attention`: one warp per query row,
/// kReferenceRowsPerBlock rows (warps) per block.
constexpr int kReferenceRowsPerBlock = 4;
constexpr int kReferenceThreads = 32 * kReferenceRowsPerBlock;

/// Tiles of the three standard-attention kernels.
constexpr int kStdThreads = 256;
constexpr int kStdScoresTileM = 64; // query rows per block
constexpr int kStdScoresTileN = 64; // keys per block
constexpr int kStdScoresTileK = 32; // head-dim chunk staged in shared memory
constexpr int kStdPvTileM = 32;     // query rows per block
constexpr int kStdPvTileK = 32;     // keys per shared-memory stage

/// Parameters of `attnc_reference_attention` (passed by value).
struct ReferenceAttentionParams {
  const void *q; ///< [B, Hq, Sq, D], input dtype
  const void *k; ///< [B, Hkv, Skv, D], input dtype
  const void *v; ///< [B, Hkv, Skv, D], input dtype
  void *o;       ///< [B, Hq, Sq, D], input dtype (strided by oStride*)
  float *oF32; ///< optional (may be null): dense [B, Hq, Sq, D] fp32 copy of O
  float *lse;  ///< optional (may be null): dense [B, Hq, Sq] fp32, natural log
  long long qStrideB, qStrideH, qStrideS;
  long long kStrideB, kStrideH, kStrideS;
  long long vStrideB, vStrideH, vStrideS;
  long long oStrideB, oStrideH, oStrideS;
  int batch, headsQ, headsKV, seqQ, seqKV, headDim;
  float scale;                 ///< softmax scale, usually 1/sqrt(D)
  float softcap;               ///< <= 0: off
  int causal;                  ///< 0 or 1
  int windowLeft, windowRight; ///< -1: unbounded
  int reserved;                ///< keeps the size a multiple of 8; set to 0
};

/// Parameters shared by the three kernels of the unfused "standard attention"
/// baseline (attnc_std_scores, attnc_std_softmax, attnc_std_pv); the launcher
/// fills one struct and passes it by value to all three.
struct StandardAttentionParams {
  const void *q; ///< [B, Hq, Sq, D], input dtype
  const void *k; ///< [B, Hkv, Skv, D], input dtype
  const void *v; ///< [B, Hkv, Skv, D], input dtype
  void *s;       ///< dense [B, Hq, Sq, Skv] scores, score dtype (see below)
  void *p;       ///< dense [B, Hq, Sq, Skv] probabilities; may alias `s`
  void *o;       ///< [B, Hq, Sq, D], input dtype (strided by oStride*)
  float *oF32; ///< optional (may be null): dense [B, Hq, Sq, D] fp32 copy of O
  float *lse;  ///< optional (may be null): dense [B, Hq, Sq] fp32
  long long qStrideB, qStrideH, qStrideS;
  long long kStrideB, kStrideH, kStrideS;
  long long vStrideB, vStrideH, vStrideS;
  long long oStrideB, oStrideH, oStrideS;
  int batch, headsQ, headsKV, seqQ, seqKV, headDim;
  float scale, softcap;
  int causal, windowLeft, windowRight;
  int reserved; ///< set to 0
};

} // namespace templates
} // namespace attnc

#endif // ATTNC_TEMPLATES_TEMPLATEPARAMS_H
