// Test fixture, compiled to PTX at build time (nvcc -ptx -arch=sm_80): a
// naive attention kernel that follows the attention_fwd_v1 launch contract
// exactly, so the GPU test exercises the runtime's real launch path. One
// thread per query row, online softmax in fp32. Shapes the contract does not
// pass (head_dim, the GQA group) are baked in, as the compiler bakes them.
#include <cuda_bf16.h>

constexpr int kHeadDim = 64;
constexpr int kGroup = 2; // heads / kv_heads

extern "C" __global__ void attnc_fixture_attention(
    const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
    __nv_bfloat16 *o, float *lse, long long batch, long long seqQ,
    long long seqKv, long long qSb, long long qSh, long long qSs, long long kSb,
    long long kSh, long long kSs, long long vSb, long long vSh, long long vSs,
    long long oSb, long long oSh, long long oSs, long long lseSb,
    long long lseSh) {
  // Touch the far end of the dynamic shared memory so a launch without the
  // 64 KiB opt-in cannot pass unnoticed.
  extern __shared__ float scratch[];
  const int smemFloats = 64 * 1024 / 4;
  scratch[smemFloats - 1 - threadIdx.x] = 1.0f;
  __syncthreads();
  const float one = scratch[smemFloats - 1 - threadIdx.x];

  const long long row = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long h = blockIdx.y;
  const long long b = blockIdx.z;
  if (row >= seqQ || b >= batch)
    return;
  const long long kvh = h / kGroup;
  const float scale = rsqrtf((float)kHeadDim);

  float qRow[kHeadDim];
  const __nv_bfloat16 *qp = q + b * qSb + h * qSh + row * qSs;
  for (int d = 0; d < kHeadDim; ++d)
    qRow[d] = __bfloat162float(qp[d]);

  float m = -INFINITY, l = 0.0f, acc[kHeadDim];
  for (int d = 0; d < kHeadDim; ++d)
    acc[d] = 0.0f;
  for (long long j = 0; j < seqKv; ++j) {
    const __nv_bfloat16 *kp = k + b * kSb + kvh * kSh + j * kSs;
    const __nv_bfloat16 *vp = v + b * vSb + kvh * vSh + j * vSs;
    float s = 0.0f;
    for (int d = 0; d < kHeadDim; ++d)
      s += qRow[d] * __bfloat162float(kp[d]);
    s *= scale;
    float mNew = fmaxf(m, s);
    float correction = __expf(m - mNew);
    float p = __expf(s - mNew);
    l = l * correction + p;
    for (int d = 0; d < kHeadDim; ++d)
      acc[d] = acc[d] * correction + p * __bfloat162float(vp[d]);
    m = mNew;
  }
  __nv_bfloat16 *op = o + b * oSb + h * oSh + row * oSs;
  for (int d = 0; d < kHeadDim; ++d)
    op[d] = __float2bfloat16(one * acc[d] / l);
  if (lse)
    lse[b * lseSb + h * lseSh + row] = m + logf(l);
}
