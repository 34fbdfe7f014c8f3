//===- Validate.cpp - Attention launch argument validation ----------------===//
//
// Pure checks run before every launch; each message names the tensor, the
// dimension and both values so the caller can fix the call site.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Launch.h"

#include <cstdio>

namespace attnc {

namespace {

const char *const kDimNames[4] = {"batch", "heads", "seq", "head dim"};

Status bad(const std::string &message) {
  return Status(ErrorCode::InvalidArgument,
                "invalid attention arguments: " + message);
}

std::string dim(const char *tensor, int d) {
  return std::string(tensor) + ".shape[" + std::to_string(d) + "] (" +
         kDimNames[d] + ")";
}

std::string pointerText(const void *p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

// `why` is a C string so the success path never allocates.
Status expectDim(const char *tensor, const TensorArg &t, int d,
                 int64_t expected, const char *why) {
  if (t.shape[d] != expected)
    return bad(dim(tensor, d) + " is " + std::to_string(t.shape[d]) + " but " +
               why + " is " + std::to_string(expected));
  return Status::ok();
}

// Null pointer, head-dim stride, alignment, non-negative strides and an
// in-range largest offset for one of q/k/v/o.
Status checkLayout(const char *tensor, const TensorArg &t, int64_t elemSize,
                   int rank, int64_t alignment) {
  if (!t.data)
    return bad(std::string(tensor) + ": data pointer is null");
  if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0)
    return bad(std::string(tensor) + ": data pointer " + pointerText(t.data) +
               " is not 16-byte aligned");
  for (int d = 0; d < rank; ++d)
    if (t.stride[d] < 0)
      return bad(std::string(tensor) + ".stride[" + std::to_string(d) +
                 "] is negative (" + std::to_string(t.stride[d]) + ")");
  int64_t unitDim = rank - 1;
  if (t.stride[unitDim] != 1)
    return bad(std::string(tensor) + ".stride[" + std::to_string(unitDim) +
               "] (" + kDimNames[rank == 4 ? 3 : 2] + ") must be 1, got " +
               std::to_string(t.stride[unitDim]));
  for (int d = 0; d < rank - 1; ++d) {
    int64_t bytes;
    if (__builtin_mul_overflow(t.stride[d], elemSize, &bytes) ||
        bytes % alignment != 0)
      return bad(std::string(tensor) + ".stride[" + std::to_string(d) + "] (" +
                 kDimNames[d] + ") = " + std::to_string(t.stride[d]) +
                 " elements is not a multiple of " + std::to_string(alignment) +
                 " bytes");
  }
  // The largest element offset must be representable: kernels index in i64.
  int64_t maxOffset = 0;
  for (int d = 0; d < rank; ++d) {
    int64_t term;
    if (__builtin_mul_overflow(t.shape[d] - 1, t.stride[d], &term) ||
        __builtin_add_overflow(maxOffset, term, &maxOffset) ||
        __builtin_mul_overflow(maxOffset, elemSize, &term))
      return bad(std::string(tensor) +
                 ": shape and strides address beyond 2^63 bytes");
  }
  return Status::ok();
}

} // namespace

Status validateAttentionArgs(const KernelSpec &spec,
                             const AttentionArgs &args) {
  const int64_t elemSize = elementSize(spec);
  const TensorArg &q = args.q;
  const TensorArg &k = args.k;
  const TensorArg &v = args.v;
  const TensorArg &o = args.o;
  const TensorArg &lse = args.lse;

  for (auto [name, t] : {std::pair<const char *, const TensorArg *>{"q", &q},
                         {"k", &k},
                         {"v", &v},
                         {"o", &o}})
    if (!t->data)
      return bad(std::string(name) + ": data pointer is null");
  // Sizes before layouts: they make the later messages meaningful.
  if (q.shape[0] < 1)
    return bad("batch must be >= 1 (q.shape[0] is " +
               std::to_string(q.shape[0]) + ")");
  if (q.shape[2] < 1)
    return bad("seq_q must be >= 1 (q.shape[2] is " +
               std::to_string(q.shape[2]) + ")");
  if (k.shape[2] < 1)
    return bad("seq_kv must be >= 1 (k.shape[2] is " +
               std::to_string(k.shape[2]) + ")");
  const int64_t batch = q.shape[0];
  const int64_t seqQ = q.shape[2];
  const int64_t seqKv = k.shape[2];
  // The kernels compare positions in 32 bits (the masks' registers).
  if (seqQ > kMaxSeqLen || seqKv > kMaxSeqLen)
    return bad("seq_q " + std::to_string(seqQ) + " / seq_kv " +
               std::to_string(seqKv) +
               ": sequences longer than 2^30 are not "
               "supported");

  ATTNC_RETURN_IF_ERROR(
      expectDim("q", q, 1, spec.heads, "the kernel's spec heads"));
  ATTNC_RETURN_IF_ERROR(
      expectDim("q", q, 3, spec.headDim, "the kernel's spec head_dim"));
  for (auto [name, t] :
       {std::pair<const char *, const TensorArg *>{"k", &k}, {"v", &v}}) {
    ATTNC_RETURN_IF_ERROR(expectDim(name, *t, 0, batch, "q's batch"));
    ATTNC_RETURN_IF_ERROR(
        expectDim(name, *t, 1, spec.kvHeads, "the kernel's spec kv_heads"));
    ATTNC_RETURN_IF_ERROR(expectDim(name, *t, 2, seqKv, "k's seq_kv"));
    ATTNC_RETURN_IF_ERROR(
        expectDim(name, *t, 3, spec.headDim, "the kernel's spec head_dim"));
  }
  ATTNC_RETURN_IF_ERROR(expectDim("o", o, 0, batch, "q's batch"));
  ATTNC_RETURN_IF_ERROR(
      expectDim("o", o, 1, spec.heads, "the kernel's spec heads"));
  ATTNC_RETURN_IF_ERROR(expectDim("o", o, 2, seqQ, "q's seq_q"));
  ATTNC_RETURN_IF_ERROR(
      expectDim("o", o, 3, spec.headDim, "the kernel's spec head_dim"));

  ATTNC_RETURN_IF_ERROR(checkLayout("q", q, elemSize, 4, 16));
  ATTNC_RETURN_IF_ERROR(checkLayout("k", k, elemSize, 4, 16));
  ATTNC_RETURN_IF_ERROR(checkLayout("v", v, elemSize, 4, 16));
  ATTNC_RETURN_IF_ERROR(checkLayout("o", o, elemSize, 4, 16));

  if (!spec.hasLse) {
    if (lse.data)
      return bad("lse: data pointer must be null because the kernel was "
                 "built with has_lse=false");
    return Status::ok();
  }
  if (!lse.data)
    return bad("lse: data pointer is null but the kernel writes LSE "
               "(has_lse=true)");
  ATTNC_RETURN_IF_ERROR(expectDim("lse", lse, 0, batch, "q's batch"));
  ATTNC_RETURN_IF_ERROR(
      expectDim("lse", lse, 1, spec.heads, "the kernel's spec heads"));
  ATTNC_RETURN_IF_ERROR(expectDim("lse", lse, 2, seqQ, "q's seq_q"));
  if (lse.shape[3] != 1 || lse.stride[3] != 1)
    return bad("lse is [B, H, S]: shape[3] and stride[3] must be 1 (got " +
               std::to_string(lse.shape[3]) + " and " +
               std::to_string(lse.stride[3]) + ")");
  return checkLayout("lse", lse, 4, 3, 4);
}

} // namespace attnc
