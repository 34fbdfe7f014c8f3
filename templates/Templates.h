//===- Templates.h - NVRTC attention templates: sources, entries, launch --===//
//
// The CUDA C++ templates embedded in attnc_templates, how to compile them with
// NVRTC, and how to launch what comes out. The launcher itself (driver API
// through the runtime's dlopen'd table) lives in the runtime; everything it
// needs is here:
//
// 1. GPU reference attention -- TemplateKind::ReferenceAttention
//    source cuda/reference_attention.cu, one entry:
//      attnc_reference_attention(ReferenceAttentionParams p)  [by value]
//      block (128, 1, 1); grid (ceil(Sq / 4), Hq, B); shared memory: none.
//    Warp w of block x computes query row 4x + w with an fp32 online softmax
//    over the visible keys (exact expf/logf). Writes O (input dtype, strided),
//    and, when non-null, oF32 (dense fp32 O) and lse (dense [B, Hq, Sq]).
//
// 2. Unfused standard attention -- TemplateKind::StandardAttention
//    source cuda/standard_attention.cu, three entries run in this order on
//    one stream, all taking the same StandardAttentionParams by value, all
//    with block (256, 1, 1) and only static shared memory (no dynamic):
//      attnc_std_scores  grid (ceil(Skv / 64), ceil(Sq / 64), B * Hq)
//                        static smem 2 * 64 * 33 * 4 = 16896 B
//                        S = softcap(scale * Q K^T), masked -> -inf
//      attnc_std_softmax grid (Sq, Hq, B); static smem 64 B
//                        P = softmax(S) per row (P may alias S), lse
//      attnc_std_pv      grid (ceil(Sq / 32), Hq, B)
//                        static smem (32 * 32 + 32 * roundup(D, 32)) * 4 B
//                        O = P V (input dtype), oF32 when non-null
//    S and P are dense [B, Hq, Sq, Skv] in the input dtype by default, fp32
//    when compiled with scoresF32 (-DATTNC_SP_F32); s and p must each hold
//    B * Hq * Sq * Skv elements of that type. Grid y/z limits: B * Hq and
//    Hq, B <= 65535 (validate() checks).
//
// Compile-time configuration (NVRTC -D): ATTNC_DTYPE_BF16 or ATTNC_DTYPE_FP16,
// ATTNC_HEAD_DIM=<1..256>, optionally ATTNC_SP_F32. Entry names are extern
// "C", so they are the same in every variant. Semantics (masking, softcap,
// GQA, strides, LSE) are documented in TemplateParams.h.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEMPLATES_TEMPLATES_H
#define ATTNC_TEMPLATES_TEMPLATES_H

#include "templates/Nvrtc.h"
#include "templates/TemplateParams.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnc::templates {

enum class DType { BF16, FP16 };
/// "bf16" / "fp16".
const char *dtypeName(DType dtype);
/// Bytes per element of the input dtype (2 for both).
int dtypeBytes(DType dtype);

enum class TemplateKind { ReferenceAttention, StandardAttention };
const char *templateKindName(TemplateKind kind);

/// The embedded CUDA source of a template (a .cu file, verbatim).
std::string_view templateSource(TemplateKind kind);
/// The in-memory headers the sources include: "attnc/TemplateParams.h" and
/// "attnc/common.cuh".
std::vector<NvrtcHeader> templateHeaders();
/// The extern "C" entry names of a template, in launch order.
std::vector<std::string> templateEntryNames(TemplateKind kind);

struct TemplateConfig {
  TemplateKind kind = TemplateKind::ReferenceAttention;
  DType dtype = DType::BF16;
  int headDim = 128;           ///< 1..256
  std::string arch = "sm_90a"; ///< "sm_80", "sm_90", "sm_90a", ...
  bool scoresF32 = false;      ///< StandardAttention only: S and P in fp32
  /// Toolkit include directory for cuda_bf16.h / cuda_fp16.h; empty means
  /// defaultCudaHome() + "/include".
  std::string cudaIncludePath;
};

/// NVRTC options (arch, defines, headers, include path) for a template.
NvrtcCompileOptions templateCompileOptions(const TemplateConfig &config);
/// Compiles a template; result.error is set for a bad config (head dim out
/// of range, scoresF32 on the reference) without calling NVRTC.
NvrtcCompileResult compileTemplate(const Nvrtc &nvrtc,
                                   const TemplateConfig &config);

/// Launch geometry of one entry.
struct LaunchDims {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned dynamicSharedBytes = 0; ///< always 0 for these templates
};

LaunchDims referenceAttentionLaunch(const ReferenceAttentionParams &p);
LaunchDims standardScoresLaunch(const StandardAttentionParams &p);
LaunchDims standardSoftmaxLaunch(const StandardAttentionParams &p);
LaunchDims standardPvLaunch(const StandardAttentionParams &p);

/// "" when `p` is launchable with a variant compiled for `headDim`, else a
/// message naming the first problem (null pointers, non-positive sizes, head
/// count not divisible, head dim mismatch, grid limits).
std::string validate(const ReferenceAttentionParams &p, int headDim);
std::string validate(const StandardAttentionParams &p, int headDim);

/// Problem shape for the traffic model.
struct AttentionShape {
  int64_t batch = 1, headsQ = 1, headsKV = 1, seqQ = 1, seqKV = 1, headDim = 1;
};

/// HBM bytes moved by the three standard-attention kernels, counting each
/// tensor once per kernel that touches it (the FlashAttention paper's
/// accounting; re-reads served by caches are not counted): Q, K and V are
/// read once (K and V at their own, possibly GQA-reduced, size).
struct StandardAttentionTraffic {
  uint64_t scores = 0;  ///< Q read + K read + S written
  uint64_t softmax = 0; ///< S read + P written (+ LSE written)
  uint64_t pv = 0;      ///< P read + V read + O written
  uint64_t total = 0;   ///< scores + softmax + pv
  uint64_t fused = 0;   ///< Q, K, V read + O (+ LSE) written: a fused kernel
};
StandardAttentionTraffic standardAttentionTraffic(const AttentionShape &shape,
                                                  int elementBytes,
                                                  int scoreBytes,
                                                  bool writeLse = false);

} // namespace attnc::templates

#endif // ATTNC_TEMPLATES_TEMPLATES_H
