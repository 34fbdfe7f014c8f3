//===- standard_attention.cu - Unfused three-kernel attention baseline ----===//
//
// The "standard attention" of the FlashAttention paper (Algorithm 0):
//   1. attnc_std_scores:  S = softcap(scale * Q K^T), masked entries = -inf,
//                         written to HBM;
//   2. attnc_std_softmax: P = softmax(S) row by row (read S, write P; P may
//                         alias S), optional LSE;
//   3. attnc_std_pv:      O = P V.
// S and P are dense [B, Hq, Sq, Skv] in the "score dtype": the input dtype by
// default (what an fp16/bf16 framework implementation materialises), fp32
// with -DATTNC_SP_F32. Arithmetic is fp32 everywhere. The GEMMs are plain
// shared-memory tiled loops: correctness first, not speed. Every kernel takes
// one StandardAttentionParams by value; 256 threads per block; static shared
// memory only (no dynamic shared memory). Grids:
//   attnc_std_scores : (ceil(Skv/64), ceil(Sq/64), B*Hq)
//   attnc_std_softmax: (Sq, Hq, B)
//   attnc_std_pv     : (ceil(Sq/32), Hq, B)
//
//===----------------------------------------------------------------------===//

#include "attnc/common.cuh"

using attnc::templates::kStdPvTileK;
using attnc::templates::kStdPvTileM;
using attnc::templates::kStdScoresTileK;
using attnc::templates::kStdScoresTileM;
using attnc::templates::kStdScoresTileN;
using attnc::templates::kStdThreads;
using attnc::templates::StandardAttentionParams;

#ifdef ATTNC_SP_F32
typedef float attnc_sp_t;
static __device__ __forceinline__ float attnc_sp_load(attnc_sp_t x) {
  return x;
}
static __device__ __forceinline__ attnc_sp_t attnc_sp_store(float x) {
  return x;
}
#else
typedef attnc_elem_t attnc_sp_t;
static __device__ __forceinline__ float attnc_sp_load(attnc_sp_t x) {
  return attnc_to_float(x);
}
static __device__ __forceinline__ attnc_sp_t attnc_sp_store(float x) {
  return attnc_from_float(x);
}
#endif

namespace {
constexpr int kHeadDim = ATTNC_HEAD_DIM;

/// Offset of row `row` of the dense [B, Hq, Sq, *] matrix of (b, h).
__device__ __forceinline__ long long denseRow(const StandardAttentionParams &p,
                                              int b, int h, int row) {
  return ((long long)b * p.headsQ + h) * p.seqQ + row;
}
} // namespace

//===----------------------------------------------------------------------===//
// Kernel 1: S = scale * Q K^T (+ softcap, mask).
// Block tile 64 x 64 of S; thread (tx, ty) = (t % 16, t / 16) owns the 4 x 4
// entries (ty + 16a, tx + 16b). The head dim is consumed in chunks of 32
// staged (as fp32) in shared memory.
//===----------------------------------------------------------------------===//

extern "C" __global__ void __launch_bounds__(kStdThreads)
    attnc_std_scores(const StandardAttentionParams p) {
  constexpr int TM = kStdScoresTileM, TN = kStdScoresTileN,
                TK = kStdScoresTileK;
  static_assert(TM == TN, "the staging loop fills qs and ks together");
  __shared__ float qs[TM][TK + 1];
  __shared__ float ks[TN][TK + 1];

  const int t = threadIdx.x;
  const int tx = t % 16, ty = t / 16;
  const int col0 = blockIdx.x * TN;
  const int row0 = blockIdx.y * TM;
  const int b = blockIdx.z / p.headsQ;
  const int h = blockIdx.z % p.headsQ;
  const int hkv = h / (p.headsQ / p.headsKV);
  const attnc_elem_t *q =
      static_cast<const attnc_elem_t *>(p.q) + b * p.qStrideB + h * p.qStrideH;
  const attnc_elem_t *k = static_cast<const attnc_elem_t *>(p.k) +
                          b * p.kStrideB + hkv * p.kStrideH;

  float acc[4][4];
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      acc[a][c] = 0.0f;

  for (int d0 = 0; d0 < kHeadDim; d0 += TK) {
    for (int e = t; e < TM * TK; e += kStdThreads) {
      const int r = e / TK, c = e % TK, d = d0 + c;
      const int qi = row0 + r, kj = col0 + r;
      qs[r][c] = (qi < p.seqQ && d < kHeadDim)
                     ? attnc_to_float(q[qi * p.qStrideS + d])
                     : 0.0f;
      ks[r][c] = (kj < p.seqKV && d < kHeadDim)
                     ? attnc_to_float(k[kj * p.kStrideS + d])
                     : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < TK; ++kk) {
      float qa[4], kb[4];
#pragma unroll
      for (int a = 0; a < 4; ++a)
        qa[a] = qs[ty + 16 * a][kk];
#pragma unroll
      for (int c = 0; c < 4; ++c)
        kb[c] = ks[tx + 16 * c][kk];
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int c = 0; c < 4; ++c)
          acc[a][c] += qa[a] * kb[c];
    }
    __syncthreads();
  }

  attnc_sp_t *s = static_cast<attnc_sp_t *>(p.s);
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int i = row0 + ty + 16 * a;
    if (i >= p.seqQ)
      continue;
    const attnc_key_range keys = attnc_visible_keys(
        i, p.seqQ, p.seqKV, p.causal, p.windowLeft, p.windowRight);
    const long long rowOffset = denseRow(p, b, h, i) * p.seqKV;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int j = col0 + tx + 16 * c;
      if (j >= p.seqKV)
        continue;
      const float score = (j >= keys.lo && j <= keys.hi)
                              ? attnc_score(acc[a][c], p.scale, p.softcap)
                              : ATTNC_NEG_INF;
      s[rowOffset + j] = attnc_sp_store(score);
    }
  }
}

//===----------------------------------------------------------------------===//
// Kernel 2: P = softmax(S) along each row, one block per row. Pass 1: each
// thread keeps an online (max, sum) over its strided elements, then the block
// merges them; pass 2 writes P = exp(s - max) / sum. A row whose entries are
// all -inf gets P = 0 and LSE = -inf. In-place (p.p == p.s) is safe: every
// read of pass 1 happens before the block barrier of the merge, and pass 2
// reads and writes each element from the same thread.
//===----------------------------------------------------------------------===//

namespace {
__device__ __forceinline__ void mergeMaxSum(float &m, float &l, float m2,
                                            float l2) {
  const float mNew = fmaxf(m, m2);
  if (mNew == ATTNC_NEG_INF)
    return; // both empty
  l = l * expf(m - mNew) + l2 * expf(m2 - mNew);
  m = mNew;
}
} // namespace

extern "C" __global__ void __launch_bounds__(kStdThreads)
    attnc_std_softmax(const StandardAttentionParams p) {
  constexpr int kWarps = kStdThreads / 32;
  __shared__ float warpMax[kWarps];
  __shared__ float warpSum[kWarps];

  const int row = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const long long offset = denseRow(p, b, h, row) * p.seqKV;
  const attnc_sp_t *src = static_cast<const attnc_sp_t *>(p.s) + offset;
  attnc_sp_t *dst = static_cast<attnc_sp_t *>(p.p) + offset;

  float m = ATTNC_NEG_INF, l = 0.0f;
  for (int j = t; j < p.seqKV; j += kStdThreads) {
    const float s = attnc_sp_load(src[j]);
    if (s == ATTNC_NEG_INF)
      continue; // masked
    mergeMaxSum(m, l, s, 1.0f);
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float l2 = __shfl_xor_sync(0xffffffffu, l, o);
    mergeMaxSum(m, l, m2, l2);
  }
  if (lane == 0) {
    warpMax[warp] = m;
    warpSum[warp] = l;
  }
  __syncthreads();
  m = warpMax[0];
  l = warpSum[0];
  for (int w = 1; w < kWarps; ++w)
    mergeMaxSum(m, l, warpMax[w], warpSum[w]);

  const bool empty = !(l > 0.0f);
  const float inv = empty ? 0.0f : 1.0f / l;
  for (int j = t; j < p.seqKV; j += kStdThreads) {
    const float s = attnc_sp_load(src[j]);
    const float prob = (empty || s == ATTNC_NEG_INF) ? 0.0f : expf(s - m) * inv;
    dst[j] = attnc_sp_store(prob);
  }
  if (t == 0 && p.lse)
    p.lse[denseRow(p, b, h, row)] = empty ? ATTNC_NEG_INF : m + logf(l);
}

//===----------------------------------------------------------------------===//
// Kernel 3: O = P V. Block tile: 32 query rows x the whole head dim; keys in
// stages of 32. Thread (tx, ty) = (t % 32, t / 32) owns rows 4ty .. 4ty+3 and
// head-dim columns tx, tx+32, ...
//===----------------------------------------------------------------------===//

extern "C" __global__ void __launch_bounds__(kStdThreads)
    attnc_std_pv(const StandardAttentionParams p) {
  constexpr int TM = kStdPvTileM, TK = kStdPvTileK;
  constexpr int kCols = (kHeadDim + 31) / 32; // columns per thread
  constexpr int kPadD = 32 * kCols;
  constexpr int kRows = TM / (kStdThreads / 32); // rows per thread (4)
  __shared__ float ps[TM][TK];
  __shared__ float vs[TK][kPadD];

  const int t = threadIdx.x;
  const int tx = t % 32, ty = t / 32;
  const int row0 = blockIdx.x * TM;
  const int h = blockIdx.y, b = blockIdx.z;
  const int hkv = h / (p.headsQ / p.headsKV);
  const attnc_sp_t *prob = static_cast<const attnc_sp_t *>(p.p);
  const attnc_elem_t *v = static_cast<const attnc_elem_t *>(p.v) +
                          b * p.vStrideB + hkv * p.vStrideH;

  float acc[kRows][kCols];
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      acc[r][c] = 0.0f;

  for (int j0 = 0; j0 < p.seqKV; j0 += TK) {
    for (int e = t; e < TM * TK; e += kStdThreads) {
      const int r = e / TK, c = e % TK;
      const int i = row0 + r, j = j0 + c;
      ps[r][c] = (i < p.seqQ && j < p.seqKV)
                     ? attnc_sp_load(prob[denseRow(p, b, h, i) * p.seqKV + j])
                     : 0.0f;
    }
    for (int e = t; e < TK * kPadD; e += kStdThreads) {
      const int r = e / kPadD, d = e % kPadD;
      const int j = j0 + r;
      vs[r][d] = (j < p.seqKV && d < kHeadDim)
                     ? attnc_to_float(v[j * p.vStrideS + d])
                     : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < TK; ++kk) {
      float pr[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        pr[r] = ps[kRows * ty + r][kk];
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const float vd = vs[kk][tx + 32 * c];
#pragma unroll
        for (int r = 0; r < kRows; ++r)
          acc[r][c] += pr[r] * vd;
      }
    }
    __syncthreads();
  }

  attnc_elem_t *o =
      static_cast<attnc_elem_t *>(p.o) + b * p.oStrideB + h * p.oStrideH;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int i = row0 + kRows * ty + r;
    if (i >= p.seqQ)
      continue;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int d = tx + 32 * c;
      if (d >= kHeadDim)
        continue;
      o[i * p.oStrideS + d] = attnc_from_float(acc[r][c]);
      if (p.oF32)
        p.oF32[denseRow(p, b, h, i) * kHeadDim + d] = acc[r][c];
    }
  }
}
