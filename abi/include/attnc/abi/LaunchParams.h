//===- LaunchParams.h - kernel parameter lists of every launch rule -*- C++
//-*-===//
//
// Part of the compiler/runtime contract (attnc/abi): the parameters of the
// kernels of each fixed-list grid rule, in order, one table per rule. The
// compiler declares its kernels' arguments from these tables (names as
// `tile.param`, types from ParamType) and the runtime packs its arguments
// by the same names, so a list changes in one place. Header-only, the C++
// standard library only (the runtime has no LLVM/MLIR).
//
// Every slot is 8 bytes in the kernel's parameter buffer except I32 and F32
// (4 bytes) and tensor maps (a 128-byte CUtensorMap passed by value). Sizes
// and strides are in elements. Pointers come first in every table.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_ABI_LAUNCHPARAMS_H
#define ATTNC_ABI_LAUNCHPARAMS_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attnc::abi {

/// What one kernel parameter holds.
enum class ParamType : uint8_t {
  ElementPtr, // a tensor of the kernel's element type (bf16 or f16)
  F32Ptr,     // an f32 tensor (LSE, partial results)
  I32Ptr,     // an i32 tensor (block table, lengths)
  I64Ptr,     // an i64 tensor (slot mapping, counters)
  BytePtr,    // untyped bytes (a workspace, Workspace.h)
  I64,        // a size, stride or mode
  I32,        // a 32-bit schedule value (the stream-K parameters)
  F32,        // a scalar the kernel reads at launch (scale, softcap)
  TensorMap,  // a CUtensorMap built by the runtime (TensorMaps.h)
};

constexpr bool isPointer(ParamType type) {
  return type == ParamType::ElementPtr || type == ParamType::F32Ptr ||
         type == ParamType::I32Ptr || type == ParamType::I64Ptr ||
         type == ParamType::BytePtr;
}

struct ParamDesc {
  std::string_view name;
  ParamType type;
};

/// How many entries of `table` lead it as pointers.
template <size_t N>
constexpr size_t leadingPointers(const std::array<ParamDesc, N> &table) {
  size_t n = 0;
  while (n < N && isPointer(table[n].type))
    ++n;
  return n;
}

/// The position of `name` in `table`, or N when it is not there.
template <size_t N>
constexpr size_t indexOf(const std::array<ParamDesc, N> &table,
                         std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (table[i].name == name)
      return i;
  return N;
}

namespace detail {
constexpr ParamDesc elt(std::string_view n) {
  return {n, ParamType::ElementPtr};
}
constexpr ParamDesc f32p(std::string_view n) { return {n, ParamType::F32Ptr}; }
constexpr ParamDesc i32p(std::string_view n) { return {n, ParamType::I32Ptr}; }
constexpr ParamDesc i64p(std::string_view n) { return {n, ParamType::I64Ptr}; }
constexpr ParamDesc i64(std::string_view n) { return {n, ParamType::I64}; }
} // namespace detail

/// attention_fwd_v1 and attention_fwd_persistent_v1 (GridRules.h): Q, K, V,
/// O of the logical [B, H, S, D] layout (D stride 1), LSE [B, Hq, Sq] f32
/// (S stride 1; null without LSE), then the sizes and b/h/s strides.
inline constexpr std::array<ParamDesc, 22> kAttentionFwdParams = {{
    detail::elt("q"),
    detail::elt("k"),
    detail::elt("v"),
    detail::elt("o"),
    detail::f32p("lse"),
    detail::i64("batch"),
    detail::i64("seq_q"),
    detail::i64("seq_kv"),
    detail::i64("q_stride_b"),
    detail::i64("q_stride_h"),
    detail::i64("q_stride_s"),
    detail::i64("k_stride_b"),
    detail::i64("k_stride_h"),
    detail::i64("k_stride_s"),
    detail::i64("v_stride_b"),
    detail::i64("v_stride_h"),
    detail::i64("v_stride_s"),
    detail::i64("o_stride_b"),
    detail::i64("o_stride_h"),
    detail::i64("o_stride_s"),
    detail::i64("lse_stride_b"),
    detail::i64("lse_stride_h"),
}};

/// The three kernels of an attention backward (GridRules.h:
/// attention_bwd_preprocess_v1, attention_bwd_v1, attention_bwd_convert_v1)
/// take one list: Q, K, V, O, dO and dQ of the logical [B, Hq, Sq, D] or
/// [B, Hkv, Skv, D] layout (D stride 1; dO and dQ of Q's shape, dK and dV
/// of K's), LSE [B, Hq, Sq] f32 (S stride 1), the f32 workspaces dq_accum
/// (dense [B, Hq, Sq, D]) and delta (dense [B, Hq, Sq]), then the sizes and
/// b/h/s strides. Each kernel reads the parameters it needs.
inline constexpr std::array<ParamDesc, 40> kAttentionBwdParams = {{
    detail::elt("q"),
    detail::elt("k"),
    detail::elt("v"),
    detail::elt("o"),
    detail::elt("dout"),
    detail::f32p("lse"),
    detail::elt("dq"),
    detail::elt("dk"),
    detail::elt("dv"),
    detail::f32p("dq_accum"),
    detail::f32p("delta"),
    detail::i64("batch"),
    detail::i64("seq_q"),
    detail::i64("seq_kv"),
    detail::i64("q_stride_b"),
    detail::i64("q_stride_h"),
    detail::i64("q_stride_s"),
    detail::i64("k_stride_b"),
    detail::i64("k_stride_h"),
    detail::i64("k_stride_s"),
    detail::i64("v_stride_b"),
    detail::i64("v_stride_h"),
    detail::i64("v_stride_s"),
    detail::i64("o_stride_b"),
    detail::i64("o_stride_h"),
    detail::i64("o_stride_s"),
    detail::i64("dout_stride_b"),
    detail::i64("dout_stride_h"),
    detail::i64("dout_stride_s"),
    detail::i64("dq_stride_b"),
    detail::i64("dq_stride_h"),
    detail::i64("dq_stride_s"),
    detail::i64("dk_stride_b"),
    detail::i64("dk_stride_h"),
    detail::i64("dk_stride_s"),
    detail::i64("dv_stride_b"),
    detail::i64("dv_stride_h"),
    detail::i64("dv_stride_s"),
    detail::i64("lse_stride_b"),
    detail::i64("lse_stride_h"),
}};

/// Parameters an attention kernel may take after kAttentionFwdParams, by
/// name (the runtime knows each; the kernel's metadata lists those it
/// takes). The order below is the order the wgmma mapping appends them:
/// the tensor maps of Q, K, V (kv_sync "tma"), O's (epilogue "tma"), the
/// stream-K tail's schedule (StreamKSchedule in the runtime) and its
/// workspace (Workspace.h), last. "scale" and "softcap" are f32 values a
/// kernel may read at launch instead of baking them in.
inline constexpr std::array<const char *, 3> kAttentionTensorMapParams = {
    "q_tmap", "k_tmap", "v_tmap"};
inline constexpr const char *kAttentionOutputTensorMapParam = "o_tmap";
inline constexpr std::array<const char *, 7> kAttentionStreamKParams = {
    "sk_rounds", "sk_round_rem", "sk_units",    "sk_units_rem",
    "sk_tiles",  "sk_tiles_mul", "sk_tiles_shr"};
/// Persistent kernels whose work items all have the same KV length (no
/// causal or window bound) take the stream-K schedule and a workspace
/// (Workspace.h): with it the items of the last, partial round are cut into
/// pieces along the keys so that every block ends at about the same time,
/// and the piece that starts an item merges the others' partials. A null
/// workspace: the tail runs as whole items.
inline constexpr const char *kAttentionWorkspaceParam = "workspace";
/// Attention sinks (attn.attention's `sinks`): an f32 array of one logit per
/// query head, read by kernels whose spec has sinks.
inline constexpr const char *kAttentionSinksParam = "sinks";
/// Varlen kernels (attn.attention's `varlen`): the i32 arrays of B + 1
/// sequence starts of the packed queries and keys, after the sinks. Such a
/// kernel reads the contract's parameters as: `batch` the number of
/// sequences B, `seq_q` and `seq_kv` the longest query and key lengths
/// (the grid's first dimension is ceil(seq_q / block_m)), the `_stride_b`
/// strides unused, and Q/K/V/O/LSE as [1, H, total, D] views whose
/// sequence `b` starts at row cu_seqlens[b].
inline constexpr std::array<const char *, 2> kAttentionCuSeqlensParams = {
    "cu_seqlens_q", "cu_seqlens_k"};
/// Key ranges (attn.attention's `kv_bounds`): a contiguous [B, seq_q, 2]
/// i32 array, each query row's first and end key (both non-decreasing
/// along the rows), after the cu_seqlens. The kernel skips the KV tiles
/// outside a query tile's range.
inline constexpr const char *kAttentionKVBoundsParam = "kv_bounds";
/// Paged varlen kernels (attn.attention's `paged`): after cu_seqlens_q
/// (there is no cu_seqlens_k) and the kv_bounds slot, the contiguous
/// [B, max_blocks] i32 block table, the [B] i32 key counts, max_blocks and
/// the cache's page count. K/V are the caches [pages, Hkv, page_size, D]:
/// k_stride_b / v_stride_b are their page strides, `seq_kv` the longest
/// key count.
inline constexpr std::array<ParamDesc, 4> kAttentionPagedParams = {{
    {"block_table", ParamType::I32Ptr},
    {"kv_lens", ParamType::I32Ptr},
    {"max_blocks", ParamType::I64},
    {"num_pages", ParamType::I64},
}};
/// Captured tensors (attn.attention's `captures`, the tensors a score or
/// mask mod reads), after the cu_seqlens: capture k (0-based, in the op's
/// order) is `capture<k>` (its data pointer), then `capture<k>_size<d>` for
/// each of its dims d, then `capture<k>_stride<d>` (i64, in elements). The
/// metadata lists each capture's element type and rank.
enum class CapturePart : uint8_t { Data, Size, Stride };
struct CaptureParam {
  unsigned index = 0;
  CapturePart part = CapturePart::Data;
  unsigned dim = 0;
  bool operator==(const CaptureParam &) const = default;
};
inline constexpr std::string_view kAttentionCapturePrefix = "capture";
/// Eight captures of rank 4 take 72 parameters.
inline constexpr unsigned kMaxCaptures = 8;
inline constexpr unsigned kMaxCaptureRank = 4;

inline std::string captureParamName(CaptureParam p) {
  std::string name =
      std::string(kAttentionCapturePrefix) + std::to_string(p.index);
  if (p.part != CapturePart::Data)
    name += (p.part == CapturePart::Size ? "_size" : "_stride") +
            std::to_string(p.dim);
  return name;
}

/// The capture parameter `name` stands for, if it is one (the inverse of
/// captureParamName, for indices below kMaxCaptures and dims below
/// kMaxCaptureRank).
inline std::optional<CaptureParam> parseCaptureParam(std::string_view name) {
  if (name.substr(0, kAttentionCapturePrefix.size()) != kAttentionCapturePrefix)
    return std::nullopt;
  name.remove_prefix(kAttentionCapturePrefix.size());
  auto digit = [&](unsigned limit) -> std::optional<unsigned> {
    if (name.size() < 1 || name[0] < '0' || name[0] > '9' ||
        unsigned(name[0] - '0') >= limit)
      return std::nullopt;
    unsigned v = unsigned(name[0] - '0');
    name.remove_prefix(1);
    return v;
  };
  std::optional<unsigned> index = digit(kMaxCaptures);
  if (!index)
    return std::nullopt;
  if (name.empty())
    return CaptureParam{*index, CapturePart::Data, 0};
  CapturePart part;
  if (name.substr(0, 5) == "_size") {
    part = CapturePart::Size;
    name.remove_prefix(5);
  } else if (name.substr(0, 7) == "_stride") {
    part = CapturePart::Stride;
    name.remove_prefix(7);
  } else {
    return std::nullopt;
  }
  std::optional<unsigned> dim = digit(kMaxCaptureRank);
  if (!dim || !name.empty())
    return std::nullopt;
  return CaptureParam{*index, part, *dim};
}

inline constexpr std::array<ParamDesc, 22> kAttentionOptionalParams = {{
    {"scale", ParamType::F32},
    {"softcap", ParamType::F32},
    {kAttentionSinksParam, ParamType::F32Ptr},
    {kAttentionCuSeqlensParams[0], ParamType::I32Ptr},
    {kAttentionCuSeqlensParams[1], ParamType::I32Ptr},
    {kAttentionKVBoundsParam, ParamType::I32Ptr},
    kAttentionPagedParams[0],
    kAttentionPagedParams[1],
    kAttentionPagedParams[2],
    kAttentionPagedParams[3],
    {kAttentionTensorMapParams[0], ParamType::TensorMap},
    {kAttentionTensorMapParams[1], ParamType::TensorMap},
    {kAttentionTensorMapParams[2], ParamType::TensorMap},
    {kAttentionOutputTensorMapParam, ParamType::TensorMap},
    {kAttentionStreamKParams[0], ParamType::I32},
    {kAttentionStreamKParams[1], ParamType::I32},
    {kAttentionStreamKParams[2], ParamType::I32},
    {kAttentionStreamKParams[3], ParamType::I32},
    {kAttentionStreamKParams[4], ParamType::I32},
    {kAttentionStreamKParams[5], ParamType::I32},
    {kAttentionStreamKParams[6], ParamType::I32},
    {kAttentionWorkspaceParam, ParamType::BytePtr},
}};

/// decode_split_v4: q [B, Hq, Sq, D] (with Sq > 1 a KV head's query rows
/// are one matrix: q_stride_h = Sq · q_stride_s), the paged caches [pages,
/// Hkv, page_size, D], block_table [B, max_blocks] and kv_lens [B] (i32,
/// contiguous), the f32 partials o_part and lse_part and the merge counters
/// (Workspace.h), O and LSE (written by the split kernel when write_o is
/// not kDecodeWriteCombine, GridRules.h), then sizes, strides, write_o and
/// the launch's merge ticket.
inline constexpr std::array<ParamDesc, 31> kDecodeSplitParams = {{
    detail::elt("q"),
    detail::elt("k_cache"),
    detail::elt("v_cache"),
    detail::i32p("block_table"),
    detail::i32p("kv_lens"),
    detail::f32p("o_part"),
    detail::f32p("lse_part"),
    detail::elt("o"),
    detail::f32p("lse"),
    detail::i64p("merge_counts"),
    detail::i64("batch"),
    detail::i64("seq_q"),
    detail::i64("num_splits"),
    detail::i64("max_blocks"),
    detail::i64("num_pages"),
    detail::i64("q_stride_b"),
    detail::i64("q_stride_h"),
    detail::i64("q_stride_s"),
    detail::i64("k_stride_p"),
    detail::i64("k_stride_h"),
    detail::i64("k_stride_s"),
    detail::i64("v_stride_p"),
    detail::i64("v_stride_h"),
    detail::i64("v_stride_s"),
    detail::i64("o_stride_b"),
    detail::i64("o_stride_h"),
    detail::i64("o_stride_s"),
    detail::i64("lse_stride_b"),
    detail::i64("lse_stride_h"),
    detail::i64("write_o"),
    detail::i64("merge_ticket"),
}};

/// decode_combine_v2: the partials of kDecodeSplitParams merged by their LSE
/// weights into O [B, Hq, Sq, D] and LSE [B, Hq, Sq].
inline constexpr std::array<ParamDesc, 12> kDecodeCombineParams = {{
    detail::f32p("o_part"),
    detail::f32p("lse_part"),
    detail::elt("o"),
    detail::f32p("lse"),
    detail::i64("batch"),
    detail::i64("seq_q"),
    detail::i64("num_splits"),
    detail::i64("o_stride_b"),
    detail::i64("o_stride_h"),
    detail::i64("o_stride_s"),
    detail::i64("lse_stride_b"),
    detail::i64("lse_stride_h"),
}};

/// kv_append_v1: key and value [tokens, Hkv, D], slot_mapping [tokens] i64
/// (contiguous), the caches [pages, Hkv, page_size, D]; rows = tokens · Hkv.
inline constexpr std::array<ParamDesc, 17> kKVAppendParams = {{
    detail::elt("key"),
    detail::elt("value"),
    detail::i64p("slot_mapping"),
    detail::elt("key_cache"),
    detail::elt("value_cache"),
    detail::i64("rows"),
    detail::i64("num_pages"),
    detail::i64("k_stride_t"),
    detail::i64("k_stride_h"),
    detail::i64("v_stride_t"),
    detail::i64("v_stride_h"),
    detail::i64("kc_stride_p"),
    detail::i64("kc_stride_h"),
    detail::i64("kc_stride_s"),
    detail::i64("vc_stride_p"),
    detail::i64("vc_stride_h"),
    detail::i64("vc_stride_s"),
}};

/// lse_merge_v1: two attention results (O [B, H, S, D], LSE [B, H, S] f32)
/// and their merge, each tensor with its own b/h(/s) strides.
inline constexpr std::array<ParamDesc, 23> kLseMergeParams = {{
    detail::elt("o_a"),
    detail::f32p("lse_a"),
    detail::elt("o_b"),
    detail::f32p("lse_b"),
    detail::elt("o"),
    detail::f32p("lse"),
    detail::i64("batch"),
    detail::i64("seq_q"),
    detail::i64("oa_stride_b"),
    detail::i64("oa_stride_h"),
    detail::i64("oa_stride_s"),
    detail::i64("lsea_stride_b"),
    detail::i64("lsea_stride_h"),
    detail::i64("ob_stride_b"),
    detail::i64("ob_stride_h"),
    detail::i64("ob_stride_s"),
    detail::i64("lseb_stride_b"),
    detail::i64("lseb_stride_h"),
    detail::i64("o_stride_b"),
    detail::i64("o_stride_h"),
    detail::i64("o_stride_s"),
    detail::i64("lse_stride_b"),
    detail::i64("lse_stride_h"),
}};

/// rowwise_v1 has no fixed list: one pointer per tensor, named by the
/// kernel (its metadata's params), then kRowsParam (i64), then
/// `<tensor><kRowStrideSuffix>` (i64, elements between rows) for every
/// [rows, d] tensor; [d] tensors (weights) have no stride.
inline constexpr std::string_view kRowsParam = "rows";
inline constexpr std::string_view kRowStrideSuffix = "_stride";

} // namespace attnc::abi

#endif // ATTNC_ABI_LAUNCHPARAMS_H
