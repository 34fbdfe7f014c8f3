//===- Decode.h - Paged split-KV decode: arguments, contract ----*- C++ -*-===//
//
// The launch contract of op "decode" (grid rules decode_split_v4 and
// decode_combine_v2). One compiled module holds two kernels:
//   decode_split    grid (num_splits, kv_heads, batch), block meta.block;
//                   parameters, in order, 8 bytes each:
//                   q, k_cache, v_cache, block_table, kv_lens, o_part,
//                   lse_part, o, lse, merge_counts (pointers), batch, seq_q,
//                   num_splits, max_blocks, num_pages, q_stride_b/h/s,
//                   k_stride_p/h/s, v_stride_p/h/s, o_stride_b/h/s,
//                   lse_stride_b/h, write_o, merge_ticket (i64, elements)
//   decode_combine  grid (ceil(seq_q / 16), heads, batch), 256 threads;
//                   o_part, lse_part, o, lse (pointers), batch, seq_q,
//                   num_splits, o_stride_b/h/s, lse_stride_b/h (i64)
// launched back to back on the caller's stream. The workspace holds the
// partials in f32: o_part [num_splits, B, Hq, Sq, D], lse_part
// [num_splits, B, Hq, Sq], then merge_counts [B, Hkv] i64, each 256-byte
// aligned. write_o says who writes O (and LSE):
//   0  the combine kernel, from the partials;
//   1  the split kernel itself (one split): at B=64 L=4k the combine cost
//      6.7 of 245 us (bench/NOTES.md, 2026-11-30);
//   2  (2 to kDecodeMergeMaxSplits splits) the last split program of each
//      (sequence, KV head) to finish merges the group's partials
//      (tile.split_arrive on merge_counts, with this launch's
//      merge_ticket): no combine launch, and no gap before it.
// 1 and 2 need o (and lse) to hold each group's rows as one matrix (seq_q =
// 1, or o_stride_h = seq_q * o_stride_s and lse_stride_h = seq_q), as q.
// The counters need no clearing: a word without this launch's ticket counts
// as zero arrivals, and the merging program leaves its word 0.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_DECODE_H
#define ATTNC_RUNTIME_DECODE_H

#include "attnc/runtime/Launch.h"

#include <array>

namespace attnc {

inline constexpr const char *kGridRuleDecodeSplit = "decode_split_v4";
// The two kernels' parameters in order, pointers first: the one list the
// compiler's kernels (compiler/LaunchABI.h) and the runtime's packing share.
inline constexpr std::array<const char *, 31> kDecodeSplitParamNames = {
    "q",
    "k_cache",
    "v_cache",
    "block_table",
    "kv_lens",
    "o_part",
    "lse_part",
    "o",
    "lse",
    "merge_counts",
    "batch",
    "seq_q",
    "num_splits",
    "max_blocks",
    "num_pages",
    "q_stride_b",
    "q_stride_h",
    "q_stride_s",
    "k_stride_p",
    "k_stride_h",
    "k_stride_s",
    "v_stride_p",
    "v_stride_h",
    "v_stride_s",
    "o_stride_b",
    "o_stride_h",
    "o_stride_s",
    "lse_stride_b",
    "lse_stride_h",
    "write_o",
    "merge_ticket"};
inline constexpr size_t kDecodeSplitPointerParams = 10;
// write_o's values (see above).
inline constexpr int64_t kDecodeWriteCombine = 0, kDecodeWriteOneSplit = 1,
                         kDecodeWriteLastSplit = 2;
// The most splits the last split program merges itself (write_o = 2): it
// reads the group's partials one split at a time, an L2 round trip each,
// where the combine kernel spreads many splits over 8 warps. On the H200
// (attnc-gpu-decode --bench --ab-merge --splits, bench/NOTES.md,
// 2026-12-03) the merge was as fast or faster up to 6 splits (B64 L4k: -2.5% at
// 6, -3.3% at 3) and 1.3% slower at 8 (B16 L32k).
inline constexpr int64_t kDecodeMergeMaxSplits = 6;
inline constexpr std::array<const char *, 12> kDecodeCombineParamNames = {
    "o_part",       "lse_part",    "o",          "lse",        "batch",
    "seq_q",        "num_splits",  "o_stride_b", "o_stride_h", "o_stride_s",
    "lse_stride_b", "lse_stride_h"};
inline constexpr size_t kDecodeCombinePointerParams = 4;
inline constexpr const char *kDecodeCombineEntry = "decode_combine";
inline constexpr int64_t kDecodeCombineThreads = 256;
inline constexpr int64_t kDecodeCombineRows = 16;

struct DecodeArgs {
  TensorArg q; // [B, Hq, Sq, D]; when Sq > 1, stride[1] = Sq * stride[2]
  // [pages, Hkv, page_size, D] (NHD or HND pages: any strides, dim 3 unit).
  TensorArg kCache, vCache;
  const int32_t *blockTable = nullptr; // [B, max_blocks], rows contiguous
  int64_t maxBlocks = 0;
  const int32_t *kvLens = nullptr; // [B], each <= max_blocks * page_size
  // A host-side bound on kv_lens: it picks the split count only (each
  // program reads its own sequence's length on the device).
  int64_t maxKvLen = 0;
  TensorArg o;   // [B, Hq, Sq, D]
  TensorArg lse; // [B, Hq, Sq] (data null unless has_lse)
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  int64_t numSplits = 0; // 0: chosen from SM count, batch, heads, length
  // Merge the splits with the combine kernel even where the split kernel's
  // last program could (write_o = 2): for A/B measurements.
  bool combineKernel = false;
};

// Split programs per SM the split count aims for. With the swizzled,
// three-stage split kernel (two 8 KiB tiles in flight per program) four per
// SM read fastest on the H200: filling all nine resident slots read 2-8%
// slower (more programs contend for DRAM, more partials to combine;
// bench/NOTES.md, 2026-11-29).
inline constexpr int kDecodeProgramsPerSm = 4;

// The compiler's decode K/V tile and ring depth when tuning.block_n /
// tuning.stages are 0 (compiler/Pipelines, DecodeTileOptions).
inline constexpr int64_t kDecodeDefaultBlockN = 16;
inline constexpr int64_t kDecodeDefaultStages = 3;

// Key rows the split programs of one SM aim to keep in flight together:
// each program has (stages - 1) tiles of block_n keys in flight while it
// computes on one. 128 rows (64 KiB of K+V at D = 128, bf16) are four
// programs of the default 16-key, 3-stage kernel (kDecodeProgramsPerSm)
// and two of the 32-key one: on the H200 the 32-key kernel read fastest at
// two per SM (B1 L128k 4.00-4.07 TB/s at 33 splits against 3.96-4.00 at 66;
// B16 L32k 4.42-4.45 at 2 splits against 4.30-4.32 at 4), and 16-key
// 4-stage at about three (bench/NOTES.md, decode, 2026-12-03).
inline constexpr int64_t kDecodeRowsInFlightPerSm = 128;

// The split programs per SM the split count aims for with this kernel:
// kDecodeRowsInFlightPerSm / ((stages - 1) x block_n), rounded, within
// [2, kDecodeProgramsPerSm]; 1 when one program keeps that many rows in
// flight by itself (a wide tile, as several warps along the keys take).
int decodeProgramsPerSm(const KernelSpec &spec);

// The split count: the one whose busiest SM has the fewest K/V tiles to
// read (programs = batch x kv_heads x splits dealt evenly over smCount SMs,
// at most smCount x min(slotsPerSm, maxPerSm) of them unless one split is
// already more; fewer than that per SM read slower), at least 256 keys per
// split, at most 256 splits. slotsPerSm: the programs that fit one SM
// (decodeResidentPerSm; 6 when unknown). blockN: the kernel's K/V tile.
int64_t chooseDecodeSplits(int64_t batch, int64_t kvHeads, int64_t maxKvLen,
                           int smCount, int slotsPerSm = 6,
                           int maxPerSm = kDecodeProgramsPerSm,
                           int64_t blockN = kDecodeDefaultBlockN);

// The split kernel's K/V tile: tuning.block_n, or the compiler's default.
inline int64_t decodeBlockN(const KernelSpec &spec) {
  return spec.tuning.blockN > 0 ? spec.tuning.blockN : kDecodeDefaultBlockN;
}

// The split count of a launch: args.numSplits, or chooseDecodeSplits for
// the kernel's tile when it is 0.
int64_t decodeSplitsFor(const KernelSpec &spec, const DecodeArgs &args,
                        int smCount, int slotsPerSm);

// Split-kernel programs resident on one SM (sm_80/sm_90: 64K registers,
// 2048 threads, 32 blocks, 227 KiB of shared memory per SM, 1 KiB of it
// reserved per block), from the kernel's registers per thread, threads per
// block and shared memory. 0 when registers are unknown.
int decodeResidentPerSm(int regsPerThread, int threads, int64_t sharedBytes);

// Bytes of workspace for `splits` partials and the merge counters.
size_t decodeWorkspaceBytes(const KernelSpec &spec, int64_t batch, int64_t seqQ,
                            int64_t splits);

// Shapes against the spec, null pointers, alignments, the GQA packing of q,
// the block table, the workspace. Each error names the argument.
Status validateDecodeArgs(const KernelSpec &spec, const DecodeArgs &args);

// The parameter names of the two kernels, for the compiler's metadata and
// the runtime's check at load time.
std::vector<KernelParam> decodeSplitV1Params();
std::vector<KernelParam> decodeCombineV1Params();

// Both kernels' parameter buffers and grids for validated arguments.
struct DecodeLaunchPlan {
  PackedParams split, combine;
  LaunchGeometry splitGeometry, combineGeometry;
  int64_t writeO = kDecodeWriteCombine;
  // False when the split kernel writes O itself (write_o 1, 2).
  bool runCombine() const { return writeO == kDecodeWriteCombine; }
};
// `ticket`: this launch's merge_ticket (non-zero in its low 32 bits; a new
// one per launch, see nextDecodeMergeTicket).
Status planDecodeLaunch(const KernelSpec &spec, const KernelMetadata &meta,
                        const DecodeArgs &args, int smCount,
                        DecodeLaunchPlan &out, int slotsPerSm = 6,
                        uint32_t ticket = 1);

// A merge ticket for the next launch: different from the last 2^32 - 2
// ones of this process, never 0.
uint32_t nextDecodeMergeTicket();

} // namespace attnc

#endif // ATTNC_RUNTIME_DECODE_H
