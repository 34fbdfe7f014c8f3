//===- CacheOps.h - KV append and LSE merge: arguments, contract -*- C++
//-*-===//
//
// The runtime's side of two small decode-side kernels (their parameter
// lists and grid rules are attnc/abi's, shared with the compiler):
//
// op "kv_append" (grid rule kv_append_v1, attn.kv_append): writes new K/V
//   rows [tokens, Hkv, D] into a paged cache [pages, Hkv, page_size, D] at
//   slot_mapping[t] = page * page_size + offset (i64, device memory; a
//   negative slot is padding and writes nothing, as does a slot past the
//   last page). Grid (ceil(tokens * Hkv / meta.blockM), 1, 1), block
//   meta.block; parameters abi::kKVAppendParams. The spec's heads and
//   kv_heads are the cache's KV heads.
//
// op "lse_merge" (grid rule lse_merge_v1, attn.lse_merge; cascade
//   attention): o = (e^lse_a o_a + e^lse_b o_b) / (e^lse_a + e^lse_b),
//   lse = log(e^lse_a + e^lse_b); a side with lse = -inf weighs 0, both
//   -inf give o = 0, lse = -inf. O tensors [B, H, S, D], LSE [B, H, S] f32,
//   each with its own strides. Grid (ceil(S / meta.blockM), H, B);
//   parameters abi::kLseMergeParams.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_CACHEOPS_H
#define ATTNC_RUNTIME_CACHEOPS_H

#include "attnc/abi/GridRules.h"
#include "attnc/abi/LaunchParams.h"
#include "attnc/runtime/Launch.h"

namespace attnc {

struct KVAppendArgs {
  TensorArg key, value;                 // [tokens, Hkv, D] (shape[3] unused)
  const int64_t *slotMapping = nullptr; // [tokens], contiguous
  TensorArg kCache, vCache;             // [pages, Hkv, page_size, D]
};

struct MergeArgs {
  TensorArg oA, lseA, oB, lseB; // O [B, H, S, D]; LSE [B, H, S] f32
  TensorArg o, lse;             // lse.data null unless the spec has_lse
};

std::vector<KernelParam> kvAppendV1Params();
std::vector<KernelParam> lseMergeV1Params();

// Shapes against the spec, null pointers, 16-byte alignment of bases and
// outer strides, unit innermost strides. Each error names the argument.
Status validateKVAppendArgs(const KernelSpec &spec, const KVAppendArgs &args);
Status validateMergeArgs(const KernelSpec &spec, const MergeArgs &args);

// Parameter buffers and grids for validated arguments (tokens == 0: an
// empty grid, nothing to launch).
Status planKVAppendLaunch(const KernelSpec &spec, const KernelMetadata &meta,
                          const KVAppendArgs &args, PackedParams &params,
                          LaunchGeometry &geometry);
Status planMergeLaunch(const KernelSpec &spec, const KernelMetadata &meta,
                       const MergeArgs &args, PackedParams &params,
                       LaunchGeometry &geometry);

} // namespace attnc

#endif // ATTNC_RUNTIME_CACHEOPS_H
