//===- CacheOps.h - KV append and LSE merge: arguments, contract -*- C++
//-*-===//
//
// The launch contracts of two small decode-side kernels:
//
// op "kv_append" (grid rule kv_append_v1, attn.kv_append): writes new K/V
//   rows [tokens, Hkv, D] into a paged cache [pages, Hkv, page_size, D] at
//   slot_mapping[t] = page * page_size + offset (i64, device memory; a
//   negative slot is padding and writes nothing, as does a slot past the
//   last page). Grid (ceil(tokens * Hkv / meta.blockM), 1, 1), block
//   meta.block; parameters, 8 bytes each: key, value, slot_mapping,
//   key_cache, value_cache (pointers), rows (= tokens * Hkv), num_pages,
//   k_stride_t/h, v_stride_t/h, kc_stride_p/h/s, vc_stride_p/h/s (i64,
//   elements). The spec's heads and kv_heads are the cache's KV heads.
//
// op "lse_merge" (grid rule lse_merge_v1, attn.lse_merge; cascade
//   attention): o = (e^lse_a o_a + e^lse_b o_b) / (e^lse_a + e^lse_b),
//   lse = log(e^lse_a + e^lse_b); a side with lse = -inf weighs 0, both
//   -inf give o = 0, lse = -inf. O tensors [B, H, S, D], LSE [B, H, S] f32,
//   each with its own strides. Grid (ceil(S / 16), H, B); parameters:
//   o_a, lse_a, o_b, lse_b, o, lse (pointers), batch, seq_q, then the b/h/s
//   strides of o_a, b/h of lse_a, b/h/s of o_b, b/h of lse_b, b/h/s of o,
//   b/h of lse.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_CACHEOPS_H
#define ATTNC_RUNTIME_CACHEOPS_H

#include "attnc/runtime/Launch.h"

#include <array>

namespace attnc {

inline constexpr const char *kGridRuleKVAppendV1 = "kv_append_v1";
inline constexpr const char *kGridRuleLseMergeV1 = "lse_merge_v1";
// The kernels' parameters in order, pointers first: the one list the
// compiler's kernels (compiler/LaunchABI.h) and the runtime's packing share.
inline constexpr std::array<const char *, 17> kKVAppendParamNames = {
    "key",         "value",       "slot_mapping", "key_cache",   "value_cache",
    "rows",        "num_pages",   "k_stride_t",   "k_stride_h",  "v_stride_t",
    "v_stride_h",  "kc_stride_p", "kc_stride_h",  "kc_stride_s", "vc_stride_p",
    "vc_stride_h", "vc_stride_s"};
inline constexpr size_t kKVAppendPointerParams = 5;
inline constexpr std::array<const char *, 23> kLseMergeParamNames = {
    "o_a",
    "lse_a",
    "o_b",
    "lse_b",
    "o",
    "lse",
    "batch",
    "seq_q",
    "oa_stride_b",
    "oa_stride_h",
    "oa_stride_s",
    "lsea_stride_b",
    "lsea_stride_h",
    "ob_stride_b",
    "ob_stride_h",
    "ob_stride_s",
    "lseb_stride_b",
    "lseb_stride_h",
    "o_stride_b",
    "o_stride_h",
    "o_stride_s",
    "lse_stride_b",
    "lse_stride_h"};
inline constexpr size_t kLseMergePointerParams = 6;
inline constexpr int64_t kLseMergeRows = 16; // query rows per program

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
