//===- CacheOps.cpp - KV append and LSE merge: validation and packing -----===//

#include "attnc/runtime/CacheOps.h"

#include <cstring>
#include <iterator>
#include <string>

namespace attnc {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

Status bad(const char *op, const std::string &message) {
  return Status(ErrorCode::InvalidArgument,
                std::string("invalid ") + op + " arguments: " + message);
}

bool aligned(const void *p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

/// Null pointer, base alignment, unit innermost stride, non-negative outer
/// strides whose bytes are multiples of `strideBytes`, and a last element
/// whose offset fits in int64 and whose address does not wrap.
Status checkTensor(const char *op, const char *name, const TensorArg &t,
                   int rank, int64_t elemSize, size_t align) {
  if (!t.data)
    return bad(op, std::string(name) + ": data pointer is null");
  if (!aligned(t.data, align))
    return bad(op, std::string(name) + ": data pointer is not " + str(align) +
                       "-byte aligned");
  if (t.stride[rank - 1] != 1)
    return bad(op, std::string(name) + ".stride[" + str(rank - 1) +
                       "] must be 1, got " + str(t.stride[rank - 1]));
  for (int d = 0; d < rank - 1; ++d) {
    int64_t bytes;
    if (t.stride[d] < 0 ||
        __builtin_mul_overflow(t.stride[d], elemSize, &bytes) ||
        bytes % int64_t(align) != 0)
      return bad(op, std::string(name) + ".stride[" + str(d) +
                         "] = " + str(t.stride[d]) +
                         " elements is negative, past 2^63 bytes or not a "
                         "multiple of " +
                         str(align) + " bytes");
  }
  for (int d = 0; d < rank; ++d)
    if (t.shape[d] < 1)
      return Status::ok(); // no element (tokens == 0): nothing addressed
  int64_t last = 0, term, bytes;
  uintptr_t end;
  for (int d = 0; d < rank; ++d)
    if (__builtin_mul_overflow(t.shape[d] - 1, t.stride[d], &term) ||
        __builtin_add_overflow(last, term, &last))
      return bad(op, std::string(name) +
                         ": shape and strides address beyond 2^63 elements");
  if (__builtin_add_overflow(last, int64_t(1), &bytes) ||
      __builtin_mul_overflow(bytes, elemSize, &bytes) ||
      __builtin_add_overflow(reinterpret_cast<uintptr_t>(t.data),
                             static_cast<uintptr_t>(bytes), &end))
    return bad(op, std::string(name) +
                       ": its last byte lies past 2^63 bytes or the end of "
                       "the address space");
  return Status::ok();
}

Status expectDim(const char *op, const char *name, const TensorArg &t, int d,
                 int64_t expected, const std::string &why) {
  if (t.shape[d] != expected)
    return bad(op, std::string(name) + ".shape[" + str(d) + "] is " +
                       str(t.shape[d]) + " but " + why + " is " +
                       str(expected));
  return Status::ok();
}

void pack(PackedParams &out, size_t i, const void *p) {
  std::memcpy(&out.storage[i], &p, sizeof(p));
  out.pointers[i] = &out.storage[i];
}

void pack(PackedParams &out, size_t i, int64_t v) {
  std::memcpy(&out.storage[i], &v, sizeof(v));
  out.pointers[i] = &out.storage[i];
}

} // namespace

std::vector<KernelParam> kvAppendV1Params() {
  return contractParams(abi::kKVAppendParams);
}

std::vector<KernelParam> lseMergeV1Params() {
  return contractParams(abi::kLseMergeParams);
}

Status validateKVAppendArgs(const KernelSpec &spec, const KVAppendArgs &args) {
  const char *op = "kv_append";
  if (spec.op != "kv_append")
    return bad(op, "the kernel's op is \"" + spec.op + "\", not \"kv_append\"");
  const int64_t elem = elementSize(spec);
  const int64_t tokens = args.key.shape[0];
  if (tokens < 0)
    return bad(op, "key.shape[0] (tokens) is negative: " + str(tokens));
  for (auto [name, t] :
       {std::pair<const char *, const TensorArg *>{"key", &args.key},
        {"value", &args.value}}) {
    ATTNC_RETURN_IF_ERROR(expectDim(op, name, *t, 0, tokens, "key's tokens"));
    ATTNC_RETURN_IF_ERROR(
        expectDim(op, name, *t, 1, spec.kvHeads, "the spec's kv_heads"));
    ATTNC_RETURN_IF_ERROR(
        expectDim(op, name, *t, 2, spec.headDim, "the spec's head_dim"));
    ATTNC_RETURN_IF_ERROR(checkTensor(op, name, *t, 3, elem, 16));
  }
  for (auto [name, t] :
       {std::pair<const char *, const TensorArg *>{"k_cache", &args.kCache},
        {"v_cache", &args.vCache}}) {
    if (t->shape[0] < 1)
      return bad(op, std::string(name) + ": needs at least one page");
    ATTNC_RETURN_IF_ERROR(
        expectDim(op, name, *t, 1, spec.kvHeads, "the spec's kv_heads"));
    ATTNC_RETURN_IF_ERROR(
        expectDim(op, name, *t, 2, spec.pageSize, "the spec's page_size"));
    ATTNC_RETURN_IF_ERROR(
        expectDim(op, name, *t, 3, spec.headDim, "the spec's head_dim"));
    ATTNC_RETURN_IF_ERROR(checkTensor(op, name, *t, 4, elem, 16));
  }
  if (args.vCache.shape[0] != args.kCache.shape[0])
    return bad(op, "v_cache has " + str(args.vCache.shape[0]) +
                       " pages, k_cache " + str(args.kCache.shape[0]));
  if (!args.slotMapping || !aligned(args.slotMapping, 8))
    return bad(op, "slot_mapping: data pointer is null or not 8-byte aligned");
  return Status::ok();
}

Status validateMergeArgs(const KernelSpec &spec, const MergeArgs &args) {
  const char *op = "lse_merge";
  if (spec.op != "lse_merge")
    return bad(op, "the kernel's op is \"" + spec.op + "\", not \"lse_merge\"");
  const int64_t elem = elementSize(spec);
  const TensorArg &oa = args.oA;
  if (oa.shape[0] < 1 || oa.shape[2] < 1)
    return bad(op, "o_a: batch and seq (shape[0], shape[2]) must be >= 1, "
                   "got " +
                       str(oa.shape[0]) + " and " + str(oa.shape[2]));
  ATTNC_RETURN_IF_ERROR(
      expectDim(op, "o_a", oa, 1, spec.heads, "the spec's heads"));
  ATTNC_RETURN_IF_ERROR(
      expectDim(op, "o_a", oa, 3, spec.headDim, "the spec's head_dim"));
  for (auto [name, t] :
       {std::pair<const char *, const TensorArg *>{"o_a", &args.oA},
        {"o_b", &args.oB},
        {"o", &args.o}}) {
    for (int d = 0; d < 4; ++d)
      ATTNC_RETURN_IF_ERROR(expectDim(op, name, *t, d, oa.shape[d], "o_a's"));
    ATTNC_RETURN_IF_ERROR(checkTensor(op, name, *t, 4, elem, 16));
  }
  for (auto [name, t] :
       {std::pair<const char *, const TensorArg *>{"lse_a", &args.lseA},
        {"lse_b", &args.lseB},
        {"lse", &args.lse}}) {
    if (t == &args.lse && !spec.hasLse) {
      if (t->data)
        return bad(op, "lse: data pointer must be null because the kernel "
                       "was built with has_lse=false");
      continue;
    }
    if (t == &args.lse && !t->data)
      return bad(op, "lse: data pointer is null but the kernel writes LSE");
    for (int d = 0; d < 3; ++d)
      ATTNC_RETURN_IF_ERROR(expectDim(op, name, *t, d, oa.shape[d], "o_a's"));
    ATTNC_RETURN_IF_ERROR(checkTensor(op, name, *t, 3, 4, 4));
  }
  if (oa.shape[0] > 65535 || spec.heads > 65535)
    return bad(op, "batch " + str(oa.shape[0]) +
                       " or heads exceed CUDA's grid limits");
  return Status::ok();
}

Status planKVAppendLaunch(const KernelSpec &spec, const KernelMetadata &meta,
                          const KVAppendArgs &args, PackedParams &params,
                          LaunchGeometry &geometry) {
  // The values in abi::kKVAppendParams' order.
  constexpr size_t kPointers = abi::leadingPointers(abi::kKVAppendParams);
  const void *ptrs[kPointers] = {args.key.data, args.value.data,
                                 args.slotMapping, args.kCache.data,
                                 args.vCache.data};
  for (size_t i = 0; i < kPointers; ++i)
    pack(params, i, ptrs[i]);
  const int64_t rows = args.key.shape[0] * spec.kvHeads;
  const int64_t ints[] = {rows,
                          args.kCache.shape[0],
                          args.key.stride[0],
                          args.key.stride[1],
                          args.value.stride[0],
                          args.value.stride[1],
                          args.kCache.stride[0],
                          args.kCache.stride[1],
                          args.kCache.stride[2],
                          args.vCache.stride[0],
                          args.vCache.stride[1],
                          args.vCache.stride[2]};
  static_assert(kPointers + std::size(ints) == abi::kKVAppendParams.size());
  for (size_t i = 0; i < std::size(ints); ++i)
    pack(params, kPointers + i, ints[i]);
  params.count = abi::kKVAppendParams.size();
  const int64_t perBlock = meta.blockM > 0 ? meta.blockM : 1;
  const int64_t blocks = (rows + perBlock - 1) / perBlock;
  if (blocks > 0x7FFFFFFF)
    return bad("kv_append", "tokens x kv_heads = " + str(rows) +
                                " rows exceed CUDA's grid x limit");
  geometry.grid = {uint32_t(blocks), 1, 1};
  for (int i = 0; i < 3; ++i)
    geometry.block[i] = uint32_t(meta.block[i]);
  geometry.dynamicSmem = 0;
  return Status::ok();
}

Status planMergeLaunch(const KernelSpec &spec, const KernelMetadata &meta,
                       const MergeArgs &args, PackedParams &params,
                       LaunchGeometry &geometry) {
  const bool lse = args.lse.data != nullptr;
  // The values in abi::kLseMergeParams' order.
  constexpr size_t kPointers = abi::leadingPointers(abi::kLseMergeParams);
  const void *ptrs[kPointers] = {args.oA.data,   args.lseA.data, args.oB.data,
                                 args.lseB.data, args.o.data,    args.lse.data};
  for (size_t i = 0; i < kPointers; ++i)
    pack(params, i, ptrs[i]);
  const TensorArg &oa = args.oA, &ob = args.oB, &o = args.o;
  const int64_t ints[] = {oa.shape[0],
                          oa.shape[2],
                          oa.stride[0],
                          oa.stride[1],
                          oa.stride[2],
                          args.lseA.stride[0],
                          args.lseA.stride[1],
                          ob.stride[0],
                          ob.stride[1],
                          ob.stride[2],
                          args.lseB.stride[0],
                          args.lseB.stride[1],
                          o.stride[0],
                          o.stride[1],
                          o.stride[2],
                          lse ? args.lse.stride[0] : 0,
                          lse ? args.lse.stride[1] : 0};
  static_assert(kPointers + std::size(ints) == abi::kLseMergeParams.size());
  for (size_t i = 0; i < std::size(ints); ++i)
    pack(params, kPointers + i, ints[i]);
  params.count = abi::kLseMergeParams.size();
  // Programs of meta.blockM query rows of one head (abi::kLseMergeRows).
  if (meta.blockM < 1)
    return Status(ErrorCode::CacheCorrupt, "lse_merge kernel with block_m < 1");
  geometry.grid = {uint32_t(abi::ceilDiv(oa.shape[2], meta.blockM)),
                   uint32_t(spec.heads), uint32_t(oa.shape[0])};
  for (int i = 0; i < 3; ++i)
    geometry.block[i] = uint32_t(meta.block[i]);
  geometry.dynamicSmem = uint32_t(meta.dynamicSmem);
  return Status::ok();
}

} // namespace attnc
