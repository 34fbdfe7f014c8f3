//===- LaunchABI.h - the kernel parameters the runtime passes ---*- C++ -*-===//
//
// The contract between generated kernels and the runtime's launcher: the
// parameter list of an `attention_fwd_v1` kernel, every entry 8 bytes.
// Pointers first (Q, K, V, O, LSE), then batch, seq_q, seq_kv, then element
// strides of the logical [B, H, S, D] tensors (the D stride is 1) and of the
// [B, H, S] LSE (the S stride is 1). Grid: (ceil(seq_q / block_m), heads,
// batch). A persistent kernel (`attention_fwd_persistent_v1`, TileOptions::
// persistent) takes the same list on grid (min(items, SMs), 1, 1), items =
// ceil(seq_q / block_m) x heads x batch, each block looping over items
// blockIdx.x, blockIdx.x + gridDim.x, ... (correct for any grid.x >= 1).
// The runtime packs arguments by these names. The decode, KV append
// and LSE merge lists and rule names are the runtime's own
// (attnc/runtime/Decode.h, CacheOps.h), aliased here: one list per
// contract.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_LAUNCHABI_H
#define ATTNC_COMPILER_LAUNCHABI_H

#include "attnc/runtime/CacheOps.h"
#include "attnc/runtime/Decode.h"
#include "attnc/runtime/Launch.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <array>

namespace attnc {

inline constexpr const char *kAttentionFwdRule = "attention_fwd_v1";
/// Persistent CTAs (kv_sync "tma"): the runtime's rule, one name for both.
inline constexpr const char *kAttentionFwdPersistentRule =
    kGridRuleAttentionFwdPersistentV1;

inline constexpr std::array<const char *, 22> kAttentionFwdParams = {
    "q",           "k",          "v",
    "o",           "lse",        "batch",
    "seq_q",       "seq_kv",     "q_stride_b",
    "q_stride_h",  "q_stride_s", "k_stride_b",
    "k_stride_h",  "k_stride_s", "v_stride_b",
    "v_stride_h",  "v_stride_s", "o_stride_b",
    "o_stride_h",  "o_stride_s", "lse_stride_b",
    "lse_stride_h"};

/// kv_sync "tma": the tensor maps after these are the runtime's
/// kAttentionTensorMapParams (attnc/runtime/Launch.h), one list for both;
/// with epilogue "tma" (TileOptions::epilogue) O's map follows them,
/// kAttentionOutputTensorMapParam with kAttentionOutputTensorMapBoxRows.

/// Pointers are rank-0 memrefs: with the bare-pointer calling convention
/// they become plain pointers, and memref.reinterpret_cast gives them shape.
inline llvm::SmallVector<mlir::Type>
attentionFwdParamTypes(mlir::MLIRContext *ctx, mlir::Type elt) {
  auto ptr = mlir::MemRefType::get({}, elt);
  auto lsePtr = mlir::MemRefType::get({}, mlir::Float32Type::get(ctx));
  llvm::SmallVector<mlir::Type> types{ptr, ptr, ptr, ptr, lsePtr};
  types.append(kAttentionFwdParams.size() - types.size(),
               mlir::IntegerType::get(ctx, 64));
  return types;
}

/// Decode, split over the KV sequence (`decode_split_v4`). Grid:
/// (num_splits, kv_heads, batch). Each program computes the GQA group of one
/// KV head (its Hq / Hkv query heads x seq_q rows) over its chunk of the
/// sequence and writes a partial O and LSE (f32) into the workspace:
/// o_part [num_splits, batch, Hq, seq_q, D], lse_part [num_splits, batch,
/// Hq, seq_q], both contiguous. The cache is [pages, Hkv, page_size, D] with
/// strides; the block table [batch, max_blocks] i32 is contiguous; kv_lens
/// [batch] i32. The query rows of a group are read as one [Hq/Hkv · seq_q,
/// D] matrix: q_stride_h = seq_q · q_stride_s when seq_q > 1.
/// v3: with write_o != 0 (one split only) the program writes O [B, Hq,
/// seq_q, D] and LSE [B, Hq, seq_q] itself (strides as the combine's; the
/// same one-matrix rule for o and lse when seq_q > 1: o_stride_h = seq_q ·
/// o_stride_s, lse_stride_h = seq_q) and the combine is not launched.
/// v4: write_o = 2 (several splits): each program stores its partials,
/// then arrives on merge_counts[b, kv_head] (tile.split_arrive, ticket
/// merge_ticket); the last to arrive merges the group's partials and
/// writes O and LSE as write_o = 1 does.
inline constexpr const char *kDecodeSplitRule = kGridRuleDecodeSplit;
inline constexpr const auto &kDecodeSplitParams = kDecodeSplitParamNames;

/// An integer attribute on a decode split kernel: its paged, length-bounded
/// K/V loads are copied into rings of that many tiles (tuning.stages >= 2),
/// the tiles of the next stages - 1 iterations in flight.
inline constexpr const char *kPrefetchPagedAttr = "tile.prefetch_paged";

/// An integer attribute on a decode split kernel: the most query rows of
/// its tile that can be live (heads per KV head x max_q_len); the rows past
/// them are padding up to the mma.sync m16. At most 8, the GPU mapping
/// leaves the softmax of each lane's upper row (g + 8) out.
inline constexpr const char *kLiveRowsAttr = "tile.live_rows";

/// The combine of the partials (`decode_combine_v2`): grid (ceil(seq_q /
/// block_m), heads, batch); O [B, Hq, seq_q, D] and LSE [B, Hq, seq_q] with
/// strides, as in attention_fwd_v1.
/// v2: the combine's block is kDecodeCombineBlock threads (the splits
/// spread over its warps, compiler/Conversion/TileToGPU/CombineToGPU.cpp);
/// v1 was one warp.
inline constexpr const char *kDecodeCombineRule = "decode_combine_v2";
inline constexpr int64_t kDecodeCombineBlock = kDecodeCombineThreads;
inline constexpr const auto &kDecodeCombineParams = kDecodeCombineParamNames;

/// attn.lse_merge (`lse_merge_v1`): grid (ceil(seq_q / block_m), heads,
/// batch); two attention results (O [B, H, S, D] in bf16/f16, LSE [B, H, S]
/// f32) in, their merge out, each tensor with its own strides.
inline constexpr const char *kLseMergeRule = kGridRuleLseMergeV1;
inline constexpr const auto &kLseMergeParams = kLseMergeParamNames;

inline llvm::SmallVector<mlir::Type> lseMergeParamTypes(mlir::MLIRContext *ctx,
                                                        mlir::Type elt) {
  auto ptr = mlir::MemRefType::get({}, elt);
  auto f32Ptr = mlir::MemRefType::get({}, mlir::Float32Type::get(ctx));
  llvm::SmallVector<mlir::Type> types{ptr, f32Ptr, ptr, f32Ptr, ptr, f32Ptr};
  types.append(kLseMergeParams.size() - types.size(),
               mlir::IntegerType::get(ctx, 64));
  return types;
}

/// attn.kv_append (`kv_append_v1`): one program per (token, KV head) row,
/// `rows` = tokens x kv_heads, row r = (token r / Hkv, head r mod Hkv); a
/// program copies the row of key and value to slot slot_mapping[token] of
/// the caches (skipped when negative or >= num_pages x page_size). Grid:
/// (ceil(rows / block_m), 1, 1), block: block_n x block_m threads (block_n
/// threads per row in 16-byte vectors). key/value [tokens, Hkv, D] and the
/// caches [pages, Hkv, page_size, D] have strides (elements, innermost 1);
/// slot_mapping [tokens] i64 is contiguous.
inline constexpr const char *kKVAppendRule = kGridRuleKVAppendV1;
inline constexpr const auto &kKVAppendParams = kKVAppendParamNames;

inline llvm::SmallVector<mlir::Type> kvAppendParamTypes(mlir::MLIRContext *ctx,
                                                        mlir::Type elt) {
  auto ptr = mlir::MemRefType::get({}, elt);
  auto i64Ptr = mlir::MemRefType::get({}, mlir::IntegerType::get(ctx, 64));
  llvm::SmallVector<mlir::Type> types{ptr, ptr, i64Ptr, ptr, ptr};
  types.append(kKVAppendParams.size() - types.size(),
               mlir::IntegerType::get(ctx, 64));
  return types;
}

inline llvm::SmallVector<mlir::Type>
decodeSplitParamTypes(mlir::MLIRContext *ctx, mlir::Type elt) {
  auto ptr = mlir::MemRefType::get({}, elt);
  auto i32Ptr = mlir::MemRefType::get({}, mlir::IntegerType::get(ctx, 32));
  auto f32Ptr = mlir::MemRefType::get({}, mlir::Float32Type::get(ctx));
  auto i64Ptr = mlir::MemRefType::get({}, mlir::IntegerType::get(ctx, 64));
  llvm::SmallVector<mlir::Type> types{ptr,    ptr,    ptr, i32Ptr, i32Ptr,
                                      f32Ptr, f32Ptr, ptr, f32Ptr, i64Ptr};
  types.append(kDecodeSplitParams.size() - types.size(),
               mlir::IntegerType::get(ctx, 64));
  return types;
}

inline llvm::SmallVector<mlir::Type>
decodeCombineParamTypes(mlir::MLIRContext *ctx, mlir::Type elt) {
  auto f32Ptr = mlir::MemRefType::get({}, mlir::Float32Type::get(ctx));
  llvm::SmallVector<mlir::Type> types{f32Ptr, f32Ptr,
                                      mlir::MemRefType::get({}, elt), f32Ptr};
  types.append(kDecodeCombineParams.size() - types.size(),
               mlir::IntegerType::get(ctx, 64));
  return types;
}

} // namespace attnc

#endif
