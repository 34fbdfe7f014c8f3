//===- Decode.h - Paged split-KV decode: arguments, contract ----*- C++ -*-===//
//
// The runtime's side of op "decode" (grid rules abi::kGridRuleDecodeSplit
// and abi::kGridRuleDecodeCombine; their parameters, write_o modes and
// workspace layout are attnc/abi's). One compiled module holds two
// kernels, decode_split (its metadata's) and decode_combine (geometry fixed
// by its rule), launched back to back on the caller's stream. The runtime
// picks, per launch, the split count (from the SM count, B · Hkv, the
// longest length and the split kernel's K/V tile and ring depth, which the
// metadata records) and who writes O:
//   kDecodeWriteCombine    the combine kernel;
//   kDecodeWriteOneSplit   one split: at B=64 L=4k the combine cost 6.7 of
//                          245 us (bench/NOTES.md, 2026-11-30);
//   kDecodeWriteLastSplit  2 to kDecodeMergeMaxSplits splits: the last
//                          split program of each group merges; no combine
//                          launch, and no gap before it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_DECODE_H
#define ATTNC_RUNTIME_DECODE_H

#include "attnc/abi/GridRules.h"
#include "attnc/abi/LaunchParams.h"
#include "attnc/abi/Workspace.h"
#include "attnc/runtime/Launch.h"

namespace attnc {

// The most splits the last split program merges itself (write_o = 2): it
// reads the group's partials one split at a time, an L2 round trip each,
// where the combine kernel spreads many splits over 8 warps. On the H200
// (attnc-gpu-decode --bench --ab-merge --splits, bench/NOTES.md,
// 2026-12-03) the merge was as fast or faster up to 6 splits (B64 L4k: -2.5% at
// 6, -3.3% at 3) and 1.3% slower at 8 (B16 L32k).
inline constexpr int64_t kDecodeMergeMaxSplits = 6;

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
  // Attention sinks: one f32 logit per query head (spec.sinks: required,
  // 4-byte aligned; otherwise null). The combine kernel merges them, so a
  // kernel with sinks always runs it, even for one split.
  const float *sinks = nullptr;
};

// Split programs per SM the split count aims for. With the swizzled,
// three-stage split kernel (two 8 KiB tiles in flight per program) four per
// SM read fastest on the H200: filling all nine resident slots read 2-8%
// slower (more programs contend for DRAM, more partials to combine;
// bench/NOTES.md, 2026-11-29).
inline constexpr int kDecodeProgramsPerSm = 4;

// Key rows the split programs of one SM aim to keep in flight together:
// each program has (stages - 1) tiles of block_n keys in flight while it
// computes on one. 128 rows (64 KiB of K+V at D = 128, bf16) are four
// programs of the default 16-key, 3-stage kernel (kDecodeProgramsPerSm)
// and two of the 32-key one: on the H200 the 32-key kernel read fastest at
// two per SM (B1 L128k 4.00-4.07 TB/s at 33 splits against 3.96-4.00 at 66;
// B16 L32k 4.42-4.45 at 2 splits against 4.30-4.32 at 4), and 16-key
// 4-stage at about three (bench/NOTES.md, decode, 2026-12-03).
inline constexpr int64_t kDecodeRowsInFlightPerSm = 128;

// The split programs per SM the split count aims for with a split kernel
// of K/V tiles of `blockN` keys in a ring of `kvStages` (its metadata's
// block_n and kv_stages): kDecodeRowsInFlightPerSm / ((stages - 1) x
// block_n), rounded, within [2, kDecodeProgramsPerSm]; 1 when one program
// keeps that many rows in flight by itself (a wide tile, as several warps
// along the keys take).
int decodeProgramsPerSm(int64_t blockN, int64_t kvStages);

// The split count: the one whose busiest SM has the fewest K/V tiles to
// read (programs = batch x kv_heads x splits dealt evenly over smCount SMs,
// at most smCount x min(slotsPerSm, maxPerSm) of them unless one split is
// already more; fewer than that per SM read slower), at least 256 keys per
// split, at most 256 splits. slotsPerSm: the programs that fit one SM
// (decodeResidentPerSm; 6 when unknown). blockN: the kernel's K/V tile
// (its metadata's block_n).
int64_t chooseDecodeSplits(int64_t batch, int64_t kvHeads, int64_t maxKvLen,
                           int smCount, int slotsPerSm, int maxPerSm,
                           int64_t blockN);

// The split count of a launch: args.numSplits, or chooseDecodeSplits for
// the split kernel's tile and ring (meta.blockN, meta.kvStages) when it is
// 0.
int64_t decodeSplitsFor(const KernelSpec &spec, const KernelMetadata &meta,
                        const DecodeArgs &args, int smCount, int slotsPerSm);

// Split-kernel programs resident on one SM (sm_80/sm_90: 64K registers,
// 2048 threads, 32 blocks, 227 KiB of shared memory per SM, 1 KiB of it
// reserved per block), from the kernel's registers per thread, threads per
// block and shared memory. 0 when registers are unknown.
int decodeResidentPerSm(int regsPerThread, int threads, int64_t sharedBytes);

// Bytes of workspace for `splits` partials and the merge counters
// (abi::decodeWorkspaceLayout).
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
  int64_t writeO = abi::kDecodeWriteCombine;
  // False when the split kernel writes O itself (write_o 1, 2).
  bool runCombine() const { return writeO == abi::kDecodeWriteCombine; }
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
