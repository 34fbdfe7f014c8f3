//===- Templates.cpp - NVRTC attention templates --------------------------===//

#include "templates/Templates.h"

#include <cstddef>

namespace attnc::templates {

namespace embedded {
extern const char reference_attention_cu[];
extern const std::size_t reference_attention_cu_size;
extern const char standard_attention_cu[];
extern const std::size_t standard_attention_cu_size;
extern const char common_cuh[];
extern const std::size_t common_cuh_size;
extern const char template_params_h[];
extern const std::size_t template_params_h_size;
} // namespace embedded

// The structs cross the host/device boundary by value: pin their layout
// (x86-64 and NVPTX64 agree on the alignment of these built-in types).
static_assert(sizeof(void *) == 8, "64-bit host required");
static_assert(sizeof(ReferenceAttentionParams) == 6 * 8 + 12 * 8 + 12 * 4,
              "ReferenceAttentionParams layout changed");
static_assert(offsetof(ReferenceAttentionParams, qStrideB) == 48);
static_assert(offsetof(ReferenceAttentionParams, batch) == 144);
static_assert(offsetof(ReferenceAttentionParams, scale) == 168);
static_assert(sizeof(StandardAttentionParams) == 8 * 8 + 12 * 8 + 12 * 4,
              "StandardAttentionParams layout changed");
static_assert(offsetof(StandardAttentionParams, qStrideB) == 64);
static_assert(offsetof(StandardAttentionParams, batch) == 160);
static_assert(offsetof(StandardAttentionParams, scale) == 184);

const char *dtypeName(DType dtype) {
  return dtype == DType::BF16 ? "bf16" : "fp16";
}

int dtypeBytes(DType) { return 2; }

const char *templateKindName(TemplateKind kind) {
  return kind == TemplateKind::ReferenceAttention ? "reference_attention"
                                                  : "standard_attention";
}

std::string_view templateSource(TemplateKind kind) {
  if (kind == TemplateKind::ReferenceAttention)
    return {embedded::reference_attention_cu,
            embedded::reference_attention_cu_size};
  return {embedded::standard_attention_cu,
          embedded::standard_attention_cu_size};
}

std::vector<NvrtcHeader> templateHeaders() {
  return {
      {"attnc/TemplateParams.h", std::string(embedded::template_params_h,
                                             embedded::template_params_h_size)},
      {"attnc/common.cuh",
       std::string(embedded::common_cuh, embedded::common_cuh_size)},
  };
}

std::vector<std::string> templateEntryNames(TemplateKind kind) {
  if (kind == TemplateKind::ReferenceAttention)
    return {"attnc_reference_attention"};
  return {"attnc_std_scores", "attnc_std_softmax", "attnc_std_pv"};
}

NvrtcCompileOptions templateCompileOptions(const TemplateConfig &config) {
  NvrtcCompileOptions options;
  options.arch = config.arch;
  options.programName = std::string(templateKindName(config.kind)) + ".cu";
  options.defines.emplace_back(config.dtype == DType::BF16 ? "ATTNC_DTYPE_BF16"
                                                           : "ATTNC_DTYPE_FP16",
                               "1");
  options.defines.emplace_back("ATTNC_HEAD_DIM",
                               std::to_string(config.headDim));
  if (config.scoresF32)
    options.defines.emplace_back("ATTNC_SP_F32", "1");
  options.includePaths.push_back(config.cudaIncludePath.empty()
                                     ? defaultCudaHome() + "/include"
                                     : config.cudaIncludePath);
  options.headers = templateHeaders();
  return options;
}

NvrtcCompileResult compileTemplate(const Nvrtc &nvrtc,
                                   const TemplateConfig &config) {
  if (config.headDim < 1 || config.headDim > 256) {
    NvrtcCompileResult bad;
    bad.error = "attnc: template head dim " + std::to_string(config.headDim) +
                " is outside 1..256";
    return bad;
  }
  if (config.scoresF32 && config.kind != TemplateKind::StandardAttention) {
    NvrtcCompileResult bad;
    bad.error = "attnc: scoresF32 applies to the standard-attention template "
                "only";
    return bad;
  }
  return nvrtc.compile(templateSource(config.kind),
                       templateCompileOptions(config));
}

namespace {
unsigned ceilDiv(long long a, long long b) {
  return static_cast<unsigned>((a + b - 1) / b);
}

LaunchDims dims(unsigned gx, unsigned gy, unsigned gz, unsigned threads) {
  LaunchDims d;
  d.grid[0] = gx;
  d.grid[1] = gy;
  d.grid[2] = gz;
  d.block[0] = threads;
  return d;
}

/// Checks shared by both parameter structs.
template <typename Params>
std::string validateCommon(const Params &p, int headDim) {
  if (!p.q || !p.k || !p.v || !p.o)
    return "q, k, v and o must be non-null";
  if (p.batch <= 0 || p.headsQ <= 0 || p.headsKV <= 0 || p.seqQ <= 0 ||
      p.seqKV <= 0)
    return "batch, heads and sequence lengths must be positive";
  if (p.headsQ % p.headsKV != 0)
    return "headsQ (" + std::to_string(p.headsQ) +
           ") is not a multiple of headsKV (" + std::to_string(p.headsKV) + ")";
  if (p.headDim != headDim)
    return "headDim " + std::to_string(p.headDim) +
           " does not match the compiled ATTNC_HEAD_DIM " +
           std::to_string(headDim);
  if (p.causal != 0 && p.causal != 1)
    return "causal must be 0 or 1";
  if (p.windowLeft < -1 || p.windowRight < -1)
    return "window sizes must be >= -1";
  if (p.batch > 65535 || p.headsQ > 65535)
    return "batch and headsQ must be <= 65535 (grid limits)";
  return "";
}
} // namespace

LaunchDims referenceAttentionLaunch(const ReferenceAttentionParams &p) {
  return dims(ceilDiv(p.seqQ, kReferenceRowsPerBlock), p.headsQ, p.batch,
              kReferenceThreads);
}

LaunchDims standardScoresLaunch(const StandardAttentionParams &p) {
  return dims(ceilDiv(p.seqKV, kStdScoresTileN),
              ceilDiv(p.seqQ, kStdScoresTileM),
              static_cast<unsigned>(p.batch) * p.headsQ, kStdThreads);
}

LaunchDims standardSoftmaxLaunch(const StandardAttentionParams &p) {
  return dims(p.seqQ, p.headsQ, p.batch, kStdThreads);
}

LaunchDims standardPvLaunch(const StandardAttentionParams &p) {
  return dims(ceilDiv(p.seqQ, kStdPvTileM), p.headsQ, p.batch, kStdThreads);
}

std::string validate(const ReferenceAttentionParams &p, int headDim) {
  return validateCommon(p, headDim);
}

std::string validate(const StandardAttentionParams &p, int headDim) {
  std::string common = validateCommon(p, headDim);
  if (!common.empty())
    return common;
  if (!p.s || !p.p)
    return "s and p must be non-null (p may equal s)";
  if (static_cast<long long>(p.batch) * p.headsQ > 65535)
    return "batch * headsQ must be <= 65535 (attnc_std_scores grid.z)";
  if (ceilDiv(p.seqQ, kStdScoresTileM) > 65535)
    return "seqQ too large for attnc_std_scores grid.y";
  return "";
}

StandardAttentionTraffic standardAttentionTraffic(const AttentionShape &s,
                                                  int elementBytes,
                                                  int scoreBytes,
                                                  bool writeLse) {
  const uint64_t e = static_cast<uint64_t>(elementBytes);
  const uint64_t q = e * s.batch * s.headsQ * s.seqQ * s.headDim;
  const uint64_t k = e * s.batch * s.headsKV * s.seqKV * s.headDim;
  const uint64_t v = k;
  const uint64_t o = q;
  const uint64_t sp =
      static_cast<uint64_t>(scoreBytes) * s.batch * s.headsQ * s.seqQ * s.seqKV;
  const uint64_t lse = writeLse ? 4ull * s.batch * s.headsQ * s.seqQ : 0;
  StandardAttentionTraffic t;
  t.scores = q + k + sp;
  t.softmax = sp + sp + lse;
  t.pv = sp + v + o;
  t.total = t.scores + t.softmax + t.pv;
  t.fused = q + k + v + o + lse;
  return t;
}

} // namespace attnc::templates
