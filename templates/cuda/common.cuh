//===- common.cuh - Shared device helpers of the NVRTC templates ----------===//
//
// Embedded into the library and handed to NVRTC as the in-memory header
// "attnc/common.cuh". Selects the input element type from the -D defines and
// implements the masking and score rules documented in TemplateParams.h.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEMPLATES_CUDA_COMMON_CUH
#define ATTNC_TEMPLATES_CUDA_COMMON_CUH

#include "attnc/TemplateParams.h"

#if defined(ATTNC_DTYPE_BF16) && defined(ATTNC_DTYPE_FP16)
#error "define only one of ATTNC_DTYPE_BF16 and ATTNC_DTYPE_FP16"
#elif defined(ATTNC_DTYPE_BF16)
#include <cuda_bf16.h>
typedef __nv_bfloat16 attnc_elem_t;
static __device__ __forceinline__ float attnc_to_float(attnc_elem_t x) {
  return __bfloat162float(x);
}
static __device__ __forceinline__ attnc_elem_t attnc_from_float(float x) {
  return __float2bfloat16_rn(x);
}
#elif defined(ATTNC_DTYPE_FP16)
#include <cuda_fp16.h>
typedef __half attnc_elem_t;
static __device__ __forceinline__ float attnc_to_float(attnc_elem_t x) {
  return __half2float(x);
}
static __device__ __forceinline__ attnc_elem_t attnc_from_float(float x) {
  return __float2half_rn(x);
}
#else
#error "define ATTNC_DTYPE_BF16 or ATTNC_DTYPE_FP16"
#endif

#ifndef ATTNC_HEAD_DIM
#error "define ATTNC_HEAD_DIM (1..256)"
#endif
static_assert(ATTNC_HEAD_DIM >= 1 && ATTNC_HEAD_DIM <= 256,
              "ATTNC_HEAD_DIM must be in 1..256");

#define ATTNC_NEG_INF (__int_as_float(0xff800000))

/// Inclusive range [lo, hi] of keys visible to query row `row` (empty when
/// lo > hi); see the masking rule in TemplateParams.h.
struct attnc_key_range {
  int lo, hi;
};

static __device__ __forceinline__ attnc_key_range attnc_visible_keys(
    int row, int seqQ, int seqKV, int causal, int windowLeft, int windowRight) {
  const long long diag = (long long)row + seqKV - seqQ;
  long long lo = 0, hi = (long long)seqKV - 1;
  if (windowLeft >= 0 && diag - windowLeft > lo)
    lo = diag - windowLeft;
  if (causal && diag < hi)
    hi = diag;
  if (windowRight >= 0 && diag + windowRight < hi)
    hi = diag + windowRight;
  attnc_key_range r;
  if (lo > hi) {
    r.lo = 0;
    r.hi = -1;
  } else {
    r.lo = (int)lo;
    r.hi = (int)hi;
  }
  return r;
}

/// Scaled and (optionally) soft-capped score.
static __device__ __forceinline__ float attnc_score(float dot, float scale,
                                                    float softcap) {
  float s = dot * scale;
  if (softcap > 0.0f)
    s = softcap * tanhf(s / softcap);
  return s;
}

#endif // ATTNC_TEMPLATES_CUDA_COMMON_CUH
