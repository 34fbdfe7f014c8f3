//===- GridRules.h - launch rules and their fixed geometry ------*- C++ -*-===//
//
// Part of the compiler/runtime contract (attnc/abi): the grid rule names a
// kernel's metadata carries (`grid_rule`), how each maps a launch's sizes
// to a grid, and the few values of a rule the metadata does not carry
// because they are fixed by the rule itself. The compiler stamps the rule on
// each kernel (`tile.launch`) and the runtime applies it at launch.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_ABI_GRIDRULES_H
#define ATTNC_ABI_GRIDRULES_H

#include <cstdint>
#include <string_view>

namespace attnc::abi {

/// Grid (ceil(seq_q / block_m), heads, batch); parameters
/// kAttentionFwdParams (LaunchParams.h).
inline constexpr const char *kGridRuleAttentionFwd = "attention_fwd_v1";
/// The same parameters on grid (min(items, SMs), 1, 1), items =
/// ceil(seq_q / block_m) · heads · batch, each block looping over items
/// blockIdx.x, blockIdx.x + gridDim.x, ... (correct for any grid.x >= 1;
/// the items must fit 31 bits, as blockIdx.x does).
inline constexpr const char *kGridRuleAttentionFwdPersistent =
    "attention_fwd_persistent_v1";
/// Grid (num_splits, kv_heads, batch); parameters kDecodeSplitParams.
inline constexpr const char *kGridRuleDecodeSplit = "decode_split_v4";
/// Grid (ceil(seq_q / kDecodeCombineRows), heads, batch), block
/// kDecodeCombineThreads threads; parameters kDecodeCombineParams. The
/// combine is the second kernel of a decode module (kDecodeCombineEntry),
/// so the metadata (the split kernel's) does not describe it.
inline constexpr const char *kGridRuleDecodeCombine = "decode_combine_v2";
/// Grid (ceil(rows / block_m), 1, 1), rows = tokens · kv_heads; parameters
/// kKVAppendParams.
inline constexpr const char *kGridRuleKVAppend = "kv_append_v1";
/// Grid (ceil(seq_q / block_m), heads, batch); parameters kLseMergeParams.
inline constexpr const char *kGridRuleLseMerge = "lse_merge_v1";
/// Grid (ceil(rows / block_m), 1, 1); parameters named by the kernel
/// (LaunchParams.h, kRowsParam).
inline constexpr const char *kGridRuleRowwise = "rowwise_v1";

/// The attention backward's kernels, in launch order, all with the
/// parameters kAttentionBwdParams: the preprocess (delta = rowsum(dO ∘ O),
/// dq_accum zeroed) on grid (ceil(seq_q / block_m), heads, batch); the
/// main kernel (dK, dV of one K/V tile, dQ added into dq_accum) on grid
/// (ceil(seq_kv / block_n), kv_heads, batch); the convert (dq_accum to dQ's
/// type) on grid (ceil(seq_q / block_m), heads, batch).
inline constexpr const char *kGridRuleAttentionBwdPreprocess =
    "attention_bwd_preprocess_v1";
inline constexpr const char *kGridRuleAttentionBwd = "attention_bwd_v1";
inline constexpr const char *kGridRuleAttentionBwdConvert =
    "attention_bwd_convert_v1";

inline constexpr const char *kDecodeCombineEntry = "decode_combine";
inline constexpr int64_t kDecodeCombineThreads = 256;
inline constexpr int64_t kDecodeCombineRows = 16; // query rows per program
/// Query rows per lse_merge program (the kernel's metadata block_m).
inline constexpr int64_t kLseMergeRows = 16;

/// decode_split's write_o: who writes O (and LSE).
///   kDecodeWriteCombine    the combine kernel, from the partials;
///   kDecodeWriteOneSplit   the split kernel itself (one split);
///   kDecodeWriteLastSplit  (several splits) the last split program of each
///                          (sequence, KV head) to arrive on merge_counts
///                          with the launch's merge_ticket merges the
///                          group's partials.
/// The last two need O (and LSE) to hold each KV head's query rows as one
/// matrix, as q does (seq_q = 1, or o_stride_h = seq_q · o_stride_s and
/// lse_stride_h = seq_q). A counter word without the launch's ticket counts
/// as zero arrivals, and the merging program leaves its word 0.
inline constexpr int64_t kDecodeWriteCombine = 0;
inline constexpr int64_t kDecodeWriteOneSplit = 1;
inline constexpr int64_t kDecodeWriteLastSplit = 2;

/// The longest sequence (queries, keys, or a decode cache's max_blocks ·
/// page_size) a kernel takes: its masks compare positions in 32 bits.
inline constexpr int64_t kMaxSeqLen = int64_t(1) << 30;

/// The longest row (d) a rowwise_v1 kernel takes: each thread's share of a
/// row is unrolled, so very long rows compile for minutes.
inline constexpr int64_t kMaxRowLength = 65536;
/// Row kernels and kv_append move rows in vectors of this many bytes, so
/// their bases and row strides are multiples of it.
inline constexpr int64_t kRowVectorBytes = 16;

/// Whether `rule` is one of the attention_fwd_v1 parameter contract's rules.
constexpr bool isAttentionFwdGridRule(std::string_view rule) {
  return rule == kGridRuleAttentionFwd ||
         rule == kGridRuleAttentionFwdPersistent;
}

/// ceil(n / d) for n >= 0, d >= 1: the program count of a rule's grid axis.
constexpr int64_t ceilDiv(int64_t n, int64_t d) { return (n + d - 1) / d; }

} // namespace attnc::abi

#endif // ATTNC_ABI_GRIDRULES_H
