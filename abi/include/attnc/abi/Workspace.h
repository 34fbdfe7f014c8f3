//===- Workspace.h - layouts of the kernels' global workspaces --*- C++ -*-===//
//
// Part of the compiler/runtime contract (attnc/abi): the caller-provided
// global memory some kernels use besides their tensors. The runtime sizes
// and carves the workspace with these functions; the kernels address it by
// the same offsets (the decode partials through their own pointer
// parameters, the stream-K tail from one base pointer). Every region starts
// at a multiple of kWorkspaceAlign bytes, and so does the workspace.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_ABI_WORKSPACE_H
#define ATTNC_ABI_WORKSPACE_H

#include <cstdint>

namespace attnc::abi {

inline constexpr int64_t kWorkspaceAlign = 256;

constexpr int64_t alignWorkspace(int64_t bytes) {
  return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

/// A region: `bytes` at byte offset `offset` of the workspace.
struct WorkspaceRegion {
  int64_t offset = 0, bytes = 0;
  constexpr int64_t end() const { return offset + bytes; }
};

/// decode_split / decode_combine (GridRules.h): the f32 partials o_part
/// [splits, B, Hq, Sq, D] and lse_part [splits, B, Hq, Sq], contiguous,
/// then merge_counts [B, Hkv] (i64, one arrival counter per KV head's
/// group, tagged with the launch's merge ticket; no clearing needed).
struct DecodeWorkspaceLayout {
  WorkspaceRegion oPart, lsePart, mergeCounts;
  int64_t total = 0;
};

constexpr DecodeWorkspaceLayout
decodeWorkspaceLayout(int64_t splits, int64_t batch, int64_t heads,
                      int64_t kvHeads, int64_t seqQ, int64_t headDim) {
  const int64_t rows = splits * batch * heads * seqQ;
  DecodeWorkspaceLayout w;
  w.oPart = {0, rows * headDim * 4};
  w.lsePart = {alignWorkspace(w.oPart.end()), rows * 4};
  w.mergeCounts = {alignWorkspace(w.lsePart.end()), batch * kvHeads * 8};
  w.total = alignWorkspace(w.mergeCounts.end());
  return w;
}

/// The stream-K tail of a persistent attention kernel (its workspace
/// parameter, kAttentionWorkspaceParam). Per (block, consumer warpgroup) a
/// u32 flag, the flags padded to kWorkspaceAlign; then per (block,
/// warpgroup) a slot of head_dim / 8 + 1 chunks: chunk q holds each of the
/// warpgroup's kStreamKSlotThreads threads' n8 tile q of O (unnormalised,
/// f32), the last one its rows' running max and sum, thread t at
/// t · kStreamKThreadBytes. A consumer warpgroup owns
/// kStreamKRowsPerWarpgroup query rows of the block's tile. The flags must
/// be zero before the first launch; every launch leaves them zero.
inline constexpr int64_t kStreamKFlagBytes = 4;
inline constexpr int64_t kStreamKRowsPerWarpgroup = 64;
inline constexpr int64_t kStreamKSlotThreads = 128;
inline constexpr int64_t kStreamKThreadBytes = 16;
inline constexpr int64_t kStreamKChunkBytes =
    kStreamKSlotThreads * kStreamKThreadBytes;

constexpr int64_t streamKWarpgroups(int64_t blockM) {
  return blockM / kStreamKRowsPerWarpgroup > 1
             ? blockM / kStreamKRowsPerWarpgroup
             : 1;
}
constexpr int64_t streamKSlotChunks(int64_t headDim) { return headDim / 8 + 1; }

struct StreamKWorkspaceLayout {
  WorkspaceRegion flags, slots;
  int64_t slotBytes = 0; // one (block, warpgroup)'s slot
  int64_t total = 0;
};

/// For `blocks` persistent blocks of a kernel of block_m `blockM` query
/// rows and head dim `headDim`.
constexpr StreamKWorkspaceLayout
streamKWorkspaceLayout(int64_t blocks, int64_t blockM, int64_t headDim) {
  const int64_t slots = blocks * streamKWarpgroups(blockM);
  StreamKWorkspaceLayout w;
  w.slotBytes = streamKSlotChunks(headDim) * kStreamKChunkBytes;
  w.flags = {0, slots * kStreamKFlagBytes};
  w.slots = {alignWorkspace(w.flags.end()), slots * w.slotBytes};
  w.total = w.slots.end();
  return w;
}

} // namespace attnc::abi

#endif // ATTNC_ABI_WORKSPACE_H
