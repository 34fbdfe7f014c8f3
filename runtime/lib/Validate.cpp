//===- Validate.cpp - Attention launch argument validation ----------------===//
//
// Pure checks run before every launch; each message names the tensor, the
// dimension and both values so the caller can fix the call site.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Launch.h"

#include <algorithm>
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
  int64_t maxOffset = 0, bytes;
  for (int d = 0; d < rank; ++d) {
    int64_t term;
    if (__builtin_mul_overflow(t.shape[d] - 1, t.stride[d], &term) ||
        __builtin_add_overflow(maxOffset, term, &maxOffset) ||
        __builtin_mul_overflow(maxOffset, elemSize, &term))
      return bad(std::string(tensor) +
                 ": shape and strides address beyond 2^63 bytes");
  }
  // ... and so must its address: the last byte may not wrap past 2^64.
  uintptr_t end;
  if (__builtin_add_overflow(maxOffset, int64_t(1), &bytes) ||
      __builtin_mul_overflow(bytes, elemSize, &bytes) ||
      __builtin_add_overflow(reinterpret_cast<uintptr_t>(t.data),
                             static_cast<uintptr_t>(bytes), &end))
    return bad(std::string(tensor) + ": data pointer " + pointerText(t.data) +
               " plus the tensor's extent wraps past the end of the address "
               "space");
  return Status::ok();
}

// The bytes [begin, end) between a tensor's first and last element (checked
// by checkLayout not to overflow).
struct Extent {
  uintptr_t begin, end;
};

Extent extentOf(const TensorArg &t, int64_t elemSize, int rank) {
  int64_t maxOffset = 0;
  for (int d = 0; d < rank; ++d)
    maxOffset += (t.shape[d] - 1) * t.stride[d];
  uintptr_t begin = reinterpret_cast<uintptr_t>(t.data);
  return {begin, begin + static_cast<uintptr_t>((maxOffset + 1) * elemSize)};
}

// An output must give each element its own memory: taken by increasing
// stride, every dimension of more than one element must step past all the
// elements of the ones before it. (Conservative: interleaved layouts that
// do not overlap but fail this are rejected too; no framework makes them.)
Status checkNoSelfOverlap(const char *tensor, const TensorArg &t, int rank) {
  int order[4] = {0, 1, 2, 3};
  std::sort(order, order + rank,
            [&](int a, int b) { return t.stride[a] < t.stride[b]; });
  int64_t extent = 0; // elements spanned by the dims so far, less one
  for (int i = 0; i < rank; ++i) {
    int d = order[i];
    if (t.shape[d] <= 1)
      continue;
    if (t.stride[d] <= extent)
      return bad(std::string(tensor) + ".stride[" + std::to_string(d) + "] (" +
                 kDimNames[d] + ") = " + std::to_string(t.stride[d]) +
                 " makes elements of the output share memory (strides " +
                 "must not overlap)");
    extent += (t.shape[d] - 1) * t.stride[d];
  }
  return Status::ok();
}

Status checkDisjoint(const char *output, const Extent &o, const char *other,
                     const Extent &x) {
  if (o.begin < x.end && x.begin < o.end)
    return bad(std::string(output) + " [" +
               pointerText(reinterpret_cast<const void *>(o.begin)) + ", " +
               pointerText(reinterpret_cast<const void *>(o.end)) +
               ") overlaps " + other + " [" +
               pointerText(reinterpret_cast<const void *>(x.begin)) + ", " +
               pointerText(reinterpret_cast<const void *>(x.end)) +
               "): outputs may not alias inputs or each other");
  return Status::ok();
}

// A varlen launch (spec.varlen): the packed tensors as [1, H, total, D]
// views, B + 1 sequence starts per side, and the longest lengths that size
// the grid. The starts' values live on the device and are not read here.
// A paged varlen launch (spec.pageSize): the block table and key counts in
// place of cu_seqlens_k, the caches [pages, Hkv, page_size, D].
Status validatePagedSizes(const KernelSpec &spec, const AttentionArgs &args) {
  if (args.cuSeqlensK)
    return bad("cu_seqlens_k must be null for a paged kernel (spec "
               "page_size=" +
               std::to_string(spec.pageSize) +
               "): the key counts are kv_lens (seqused_k)");
  for (auto [name, p] : {std::pair<const char *, const int32_t *>{
                             "block_table", args.blockTable},
                         {"kv_lens", args.kvLens}}) {
    if (!p)
      return bad(std::string(name) +
                 ": data pointer is null but the paged kernel reads it");
    if (reinterpret_cast<uintptr_t>(p) % alignof(int32_t))
      return bad(std::string(name) + ": data pointer " + pointerText(p) +
                 " is not 4-byte aligned");
  }
  if (args.maxBlocks < 1 || args.maxBlocks > abi::kMaxSeqLen / spec.pageSize)
    return bad("max_blocks (the block table's columns) must be 1 to " +
               std::to_string(abi::kMaxSeqLen / spec.pageSize) +
               " (2^30 keys of page size " + std::to_string(spec.pageSize) +
               "), got " + std::to_string(args.maxBlocks));
  if (args.maxSeqlenK < 0 || args.maxSeqlenK > args.maxBlocks * spec.pageSize)
    return bad("max_seqlen_k is " + std::to_string(args.maxSeqlenK) +
               "; it must be 0 to max_blocks x page_size = " +
               std::to_string(args.maxBlocks * spec.pageSize) +
               " (no sequence holds more keys than its block table row)");
  if (args.v.shape[0] != args.k.shape[0])
    return bad("v_cache has " + std::to_string(args.v.shape[0]) +
               " pages but k_cache " + std::to_string(args.k.shape[0]) +
               "; the block table indexes both");
  for (auto [name, t] :
       {std::pair<const char *, const TensorArg *>{"k_cache", &args.k},
        {"v_cache", &args.v}}) {
    if (t->shape[0] < 1)
      return bad(std::string(name) + ".shape[0] (pages) must be >= 1, got " +
                 std::to_string(t->shape[0]));
    ATTNC_RETURN_IF_ERROR(
        expectDim(name, *t, 2, spec.pageSize, "the kernel's spec page_size"));
  }
  return Status::ok();
}

Status validateVarlenSizes(const KernelSpec &spec, const AttentionArgs &args) {
  const bool paged = spec.pageSize > 0;
  if (!paged && (args.blockTable || args.kvLens || args.maxBlocks))
    return bad("block_table and kv_lens must be null and max_blocks 0 "
               "because the kernel was built without a paged cache (spec "
               "page_size=0)");
  if (!args.cuSeqlensQ || (!paged && !args.cuSeqlensK))
    return bad(std::string(args.cuSeqlensQ ? "cu_seqlens_k" : "cu_seqlens_q") +
               ": data pointer is null but the kernel reads B + 1 i32 "
               "sequence starts (spec varlen=true)");
  for (auto [name, p] : {std::pair<const char *, const int32_t *>{
                             "cu_seqlens_q", args.cuSeqlensQ},
                         {"cu_seqlens_k", args.cuSeqlensK}})
    if (reinterpret_cast<uintptr_t>(p) % alignof(int32_t))
      return bad(std::string(name) + ": data pointer " + pointerText(p) +
                 " is not 4-byte aligned");
  if (args.varlenBatch < 0 || args.varlenBatch > 65535)
    return bad("varlen batch (sequences) must be 0 to 65535 (grid z), got " +
               std::to_string(args.varlenBatch));
  if (paged)
    ATTNC_RETURN_IF_ERROR(validatePagedSizes(spec, args));
  for (auto [name, t] :
       {std::pair<const char *, const TensorArg *>{"q", &args.q},
        {"k", &args.k},
        {"v", &args.v},
        {"o", &args.o}})
    if (t->shape[0] != 1 && !(paged && (t == &args.k || t == &args.v)))
      return bad(std::string(name) +
                 ".shape[0] must be 1 for a varlen kernel (packed [total, H, "
                 "D] tensors as [1, H, total, D] views), got " +
                 std::to_string(t->shape[0]));
  if (spec.hasLse && args.lse.shape[0] != 1)
    return bad("lse.shape[0] must be 1 for a varlen kernel (the [H, total_q] "
               "LSE as a [1, H, total_q] view), got " +
               std::to_string(args.lse.shape[0]));
  const int64_t totalQ = args.q.shape[2], totalK = args.k.shape[2];
  const std::pair<const char *, int64_t> sides[] = {{"q", args.maxSeqlenQ},
                                                    {"k", args.maxSeqlenK}};
  for (auto [side, maxLen] : sides) {
    if (paged && side[0] == 'k')
      continue; // validatePagedSizes
    const int64_t total = side[0] == 'q' ? totalQ : totalK;
    const std::string name = std::string("max_seqlen_") + side;
    if (total < 0)
      return bad(std::string(side) + ".shape[2] (total rows) is negative (" +
                 std::to_string(total) + ")");
    if (maxLen < 0 || maxLen > total)
      return bad(name + " is " + std::to_string(maxLen) +
                 "; it must be 0 to the total rows " + std::to_string(total) +
                 " (no sequence is longer than the packed tensor)");
    if (total > 0 && maxLen == 0 && args.varlenBatch > 0 && side[0] == 'q')
      return bad(name + " is 0 but " + std::string(side) + " has " +
                 std::to_string(total) +
                 " rows: pass the longest sequence's length");
    if (maxLen > abi::kMaxSeqLen)
      return bad(name + " " + std::to_string(maxLen) +
                 ": sequences longer than 2^30 are not supported");
  }
  return Status::ok();
}

} // namespace

Status validateSinks(const KernelSpec &spec, const float *sinks) {
  if (!spec.sinks && sinks)
    return bad("sinks: data pointer must be null because the kernel was "
               "built without sinks (spec sinks=false)");
  if (spec.sinks && !sinks)
    return bad("sinks: data pointer is null but the kernel reads one f32 "
               "logit per query head (spec sinks=true)");
  if (reinterpret_cast<uintptr_t>(sinks) % alignof(float))
    return bad("sinks: data pointer is not 4-byte aligned");
  return Status::ok();
}

Status validateCaptures(const std::vector<CaptureDesc> &expected,
                        const KernelSpec &spec, const AttentionArgs &args) {
  if (args.numCaptures != expected.size() ||
      (args.numCaptures && !args.captures))
    return bad("the kernel's mods read " + std::to_string(expected.size()) +
               " captured tensor(s); the launch passes " +
               std::to_string(args.captures ? args.numCaptures : 0));
  if (expected.empty()) // most kernels: nothing more to check per launch
    return Status::ok();
  // The outputs' bytes, as validateAttentionArgs checked them.
  const bool varlenEmpty = spec.varlen && args.q.shape[2] == 0;
  const Extent ox =
      varlenEmpty ? Extent{0, 0} : extentOf(args.o, elementSize(spec), 4);
  const Extent lx =
      spec.hasLse && !varlenEmpty ? extentOf(args.lse, 4, 3) : Extent{0, 0};
  for (size_t i = 0; i < expected.size(); ++i) {
    const CaptureArg &c = args.captures[i];
    const std::string name = "capture " + std::to_string(i);
    if (c.dtype != expected[i].dtype || c.rank != expected[i].rank)
      return bad(name + " is " + std::string(c.dtype) + " of rank " +
                 std::to_string(c.rank) + " but the kernel reads " +
                 expected[i].dtype + " of rank " +
                 std::to_string(expected[i].rank));
    const int64_t size = c.dtype == "f32" || c.dtype == "i32" ? 4
                         : c.dtype == "i64"                   ? 8
                         : c.dtype == "i8"                    ? 1
                                                              : 2;
    if (!c.data)
      return bad(name + ": data pointer is null");
    if (reinterpret_cast<uintptr_t>(c.data) % size != 0)
      return bad(name + ": data pointer " + pointerText(c.data) +
                 " is not aligned to its " + std::to_string(size) +
                 "-byte elements");
    TensorArg t;
    t.data = c.data;
    for (int d = 0; d < 4; ++d) {
      t.shape[d] = d < c.rank ? c.shape[d] : 1;
      t.stride[d] = d < c.rank ? c.stride[d] : 0;
      if (d < c.rank && (c.shape[d] < 1 || c.stride[d] < 0))
        return bad(name + ".shape[" + std::to_string(d) +
                   "] = " + std::to_string(c.shape[d]) + ", .stride[" +
                   std::to_string(d) + "] = " + std::to_string(c.stride[d]) +
                   ": sizes must be >= 1 and strides >= 0");
    }
    int64_t maxOffset = 0, term;
    uintptr_t end;
    for (int d = 0; d < c.rank; ++d)
      if (__builtin_mul_overflow(c.shape[d] - 1, c.stride[d], &term) ||
          __builtin_add_overflow(maxOffset, term, &maxOffset))
        return bad(name + ": shape and strides address beyond 2^63 elements");
    if (__builtin_add_overflow(maxOffset, int64_t(1), &term) ||
        __builtin_mul_overflow(term, size, &term) ||
        __builtin_add_overflow(reinterpret_cast<uintptr_t>(c.data),
                               static_cast<uintptr_t>(term), &end))
      return bad(name + ": data pointer " + pointerText(c.data) +
                 " plus the tensor's extent wraps past the end of the "
                 "address space");
    const Extent cx = extentOf(t, size, 4);
    ATTNC_RETURN_IF_ERROR(checkDisjoint("o", ox, name.c_str(), cx));
    ATTNC_RETURN_IF_ERROR(checkDisjoint("lse", lx, name.c_str(), cx));
    // A persistent kernel's workspace is written too.
    const auto ws = reinterpret_cast<uintptr_t>(args.workspace);
    if (ws)
      ATTNC_RETURN_IF_ERROR(checkDisjoint(
          "workspace", Extent{ws, ws + args.workspaceBytes}, name.c_str(), cx));
  }
  return Status::ok();
}

Status validateKVBounds(bool takesBounds, const KernelSpec &spec,
                        const AttentionArgs &args) {
  if (!takesBounds) {
    if (args.kvBounds)
      return bad("kv_bounds: data pointer must be null because the kernel "
                 "takes no key ranges (its attention has no kv_bounds)");
    return Status::ok();
  }
  if (!args.kvBounds)
    return bad("kv_bounds: data pointer is null but the kernel reads each "
               "query row's key range ([batch, seq_q, 2] i32)");
  if (reinterpret_cast<uintptr_t>(args.kvBounds) % 4 != 0)
    return bad("kv_bounds: data pointer " + pointerText(args.kvBounds) +
               " is not 4-byte aligned");
  const auto at = reinterpret_cast<uintptr_t>(args.kvBounds);
  const Extent bx{at, at + uintptr_t(args.q.shape[0]) *
                               uintptr_t(args.q.shape[2]) * 2 * 4};
  ATTNC_RETURN_IF_ERROR(checkDisjoint(
      "o", extentOf(args.o, elementSize(spec), 4), "kv_bounds", bx));
  if (spec.hasLse)
    ATTNC_RETURN_IF_ERROR(
        checkDisjoint("lse", extentOf(args.lse, 4, 3), "kv_bounds", bx));
  return Status::ok();
}

Status validateAttentionArgs(const KernelSpec &spec,
                             const AttentionArgs &args) {
  const int64_t elemSize = elementSize(spec);
  const TensorArg &q = args.q;
  const TensorArg &k = args.k;
  const TensorArg &v = args.v;
  const TensorArg &o = args.o;
  const TensorArg &lse = args.lse;

  const bool varlen = spec.varlen;
  if (!varlen && (args.cuSeqlensQ || args.cuSeqlensK || args.varlenBatch ||
                  args.maxSeqlenQ || args.maxSeqlenK || args.blockTable ||
                  args.kvLens || args.maxBlocks))
    return bad("cu_seqlens_q/k, block_table and kv_lens must be null and "
               "varlen_batch, max_seqlen_q/k, max_blocks 0 because the kernel "
               "was built without varlen (spec varlen=false)");
  const bool paged = varlen && spec.pageSize > 0;
  if (varlen)
    ATTNC_RETURN_IF_ERROR(validateVarlenSizes(spec, args));
  // A varlen tensor with no rows (every sequence empty) is never read or
  // written; its pointer may be null.
  auto empty = [&](const TensorArg &t) { return varlen && t.shape[2] == 0; };
  for (auto [name, t] : {std::pair<const char *, const TensorArg *>{"q", &q},
                         {"k", &k},
                         {"v", &v},
                         {"o", &o}})
    if (!t->data && !empty(*t))
      return bad(std::string(name) + ": data pointer is null");
  // Sizes before layouts: they make the later messages meaningful.
  if (q.shape[0] < 1)
    return bad("batch must be >= 1 (q.shape[0] is " +
               std::to_string(q.shape[0]) + ")");
  if (q.shape[2] < 1 && !varlen)
    return bad("seq_q must be >= 1 (q.shape[2] is " +
               std::to_string(q.shape[2]) + ")");
  if (k.shape[2] < 1 && !varlen)
    return bad("seq_kv must be >= 1 (k.shape[2] is " +
               std::to_string(k.shape[2]) + ")");
  const int64_t batch = q.shape[0];
  const int64_t seqQ = q.shape[2];
  const int64_t seqKv = k.shape[2];
  // The kernels compare positions in 32 bits (the masks' registers).
  if (seqQ > abi::kMaxSeqLen || seqKv > abi::kMaxSeqLen)
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
    // A paged cache has its own pages (validatePagedSizes).
    if (!paged)
      ATTNC_RETURN_IF_ERROR(expectDim(name, *t, 0, batch, "q's batch"));
    ATTNC_RETURN_IF_ERROR(
        expectDim(name, *t, 1, spec.kvHeads, "the kernel's spec kv_heads"));
    if (!paged)
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

  for (auto [name, t] : {std::pair<const char *, const TensorArg *>{"q", &q},
                         {"k", &k},
                         {"v", &v},
                         {"o", &o}})
    if (!empty(*t))
      ATTNC_RETURN_IF_ERROR(checkLayout(name, *t, elemSize, 4, 16));
  ATTNC_RETURN_IF_ERROR(checkNoSelfOverlap("o", o, 4));
  auto extent = [&](const TensorArg &t, int64_t size, int rank) {
    return empty(t) ? Extent{0, 0} : extentOf(t, size, rank);
  };
  const Extent qx = extent(q, elemSize, 4), kx = extent(k, elemSize, 4),
               vx = extent(v, elemSize, 4), ox = extent(o, elemSize, 4);
  ATTNC_RETURN_IF_ERROR(checkDisjoint("o", ox, "q", qx));
  ATTNC_RETURN_IF_ERROR(checkDisjoint("o", ox, "k", kx));
  ATTNC_RETURN_IF_ERROR(checkDisjoint("o", ox, "v", vx));

  const auto sinksAt = reinterpret_cast<uintptr_t>(args.sinks);
  const Extent sinksExtent{sinksAt,
                           sinksAt + uintptr_t(spec.heads) * sizeof(float)};
  ATTNC_RETURN_IF_ERROR(validateSinks(spec, args.sinks));
  if (spec.sinks)
    ATTNC_RETURN_IF_ERROR(checkDisjoint("o", ox, "sinks", sinksExtent));

  if (!spec.hasLse) {
    if (lse.data)
      return bad("lse: data pointer must be null because the kernel was "
                 "built with has_lse=false");
    return Status::ok();
  }
  if (!lse.data && !(varlen && seqQ == 0))
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
  if (varlen && seqQ == 0)
    return Status::ok();
  ATTNC_RETURN_IF_ERROR(checkLayout("lse", lse, 4, 3, 4));
  ATTNC_RETURN_IF_ERROR(checkNoSelfOverlap("lse", lse, 3));
  const Extent lx = extentOf(lse, 4, 3);
  for (auto [name, x] : {std::pair<const char *, const Extent *>{"q", &qx},
                         {"k", &kx},
                         {"v", &vx},
                         {"o", &ox}})
    ATTNC_RETURN_IF_ERROR(checkDisjoint("lse", lx, name, *x));
  if (spec.sinks)
    ATTNC_RETURN_IF_ERROR(checkDisjoint("lse", lx, "sinks", sinksExtent));
  return Status::ok();
}

} // namespace attnc
