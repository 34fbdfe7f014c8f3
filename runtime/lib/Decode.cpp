//===- Decode.cpp - Paged split-KV decode: validation, splits, packing ----===//

#include "attnc/runtime/Decode.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

namespace attnc {

namespace {

Status bad(const std::string &message) {
  return Status(ErrorCode::InvalidArgument,
                "invalid decode arguments: " + message);
}

std::string str(int64_t v) { return std::to_string(v); }

bool aligned(const void *p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Null pointer, 16-byte alignment of the base and of the outer strides,
// unit innermost stride, non-negative strides.
Status checkTensor(const char *name, const TensorArg &t, int64_t elemSize,
                   int rank) {
  if (!t.data)
    return bad(std::string(name) + ": data pointer is null");
  if (!aligned(t.data, 16))
    return bad(std::string(name) + ": data pointer is not 16-byte aligned");
  if (t.stride[rank - 1] != 1)
    return bad(std::string(name) + ".stride[" + str(rank - 1) +
               "] must be 1, got " + str(t.stride[rank - 1]));
  for (int d = 0; d < rank - 1; ++d) {
    if (t.stride[d] < 0)
      return bad(std::string(name) + ".stride[" + str(d) + "] is negative (" +
                 str(t.stride[d]) + ")");
    if ((t.stride[d] * elemSize) % (rank == 4 ? 16 : 4) != 0)
      return bad(std::string(name) + ".stride[" + str(d) +
                 "] = " + str(t.stride[d]) + " elements is not a multiple of " +
                 (rank == 4 ? "16" : "4") + " bytes");
  }
  return Status::ok();
}

Status expect(const char *name, const TensorArg &t, int d, int64_t expected,
              const char *why) {
  if (t.shape[d] != expected)
    return bad(std::string(name) + ".shape[" + str(d) + "] is " +
               str(t.shape[d]) + " but " + why + " is " + str(expected));
  return Status::ok();
}

abi::DecodeWorkspaceLayout workspaceLayout(const KernelSpec &spec,
                                           int64_t batch, int64_t seqQ,
                                           int64_t splits) {
  return abi::decodeWorkspaceLayout(splits, batch, spec.heads, spec.kvHeads,
                                    seqQ, spec.headDim);
}

void packPointer(PackedParams &out, size_t i, const void *p) {
  std::memcpy(&out.storage[i], &p, sizeof(p));
  out.pointers[i] = &out.storage[i];
}

void packInt(PackedParams &out, size_t i, int64_t v) {
  std::memcpy(&out.storage[i], &v, sizeof(v));
  out.pointers[i] = &out.storage[i];
}

} // namespace

int64_t chooseDecodeSplits(int64_t batch, int64_t kvHeads, int64_t maxKvLen,
                           int smCount, int slotsPerSm, int maxPerSm,
                           int64_t blockN) {
  // Streams per SM the split count aims for: decodeResidentPerSm of the
  // loaded kernel (6 when unknown), at most maxPerSm. Each program is one
  // stream of K/V loads in flight; past a few per SM more streams only
  // contend (bench/NOTES.md, the decode measurements of 2026-11-29).
  const int64_t perSm =
      std::min(slotsPerSm > 0 ? slotsPerSm : 6, maxPerSm > 0 ? maxPerSm : 32);
  const int64_t sms = smCount > 0 ? smCount : 108;
  const int64_t groups = std::max<int64_t>(1, batch * kvHeads);
  const int64_t tiles = std::max<int64_t>(1, (maxKvLen + blockN - 1) /
                                                 std::max<int64_t>(blockN, 1));
  // At least 256 keys per split: a split of a few tiles costs more in
  // launch and combine than it brings.
  const int64_t most = std::clamp<int64_t>((maxKvLen + 255) / 256, 1, 256);
  // The cost of s splits is the busiest SM's time: with all programs
  // resident at once, the block scheduler deals ceil(programs / SMs) to
  // it, each with ceil(tiles / s) K/V tiles, and fewer than perSm streams
  // draw only that share of the SM's bandwidth. A program count that is
  // not a multiple of the SM count leaves some SMs a program behind the
  // rest: at B=1 L=128k, 57 splits (456 programs, 3 or 4 per SM) took
  // 129 us where cuDNN's kernel took 120 (bench/NOTES.md, 2026-11-30).
  // Fewest splits among equal costs: fewer partials to combine.
  double best = 0;
  int64_t bestSplits = 1;
  for (int64_t s = 1; s <= most; ++s) {
    const int64_t programs = groups * s;
    if (s > 1 && programs > sms * perSm)
      break;
    const int64_t busiest = (programs + sms - 1) / sms;
    const double cost = double(busiest * ((tiles + s - 1) / s)) *
                        double(perSm) / double(std::min(busiest, perSm));
    if (s == 1 || cost < best) {
      best = cost;
      bestSplits = s;
    }
  }
  return bestSplits;
}

int decodeProgramsPerSm(int64_t blockN, int64_t kvStages) {
  const int64_t inFlight =
      std::max<int64_t>(1, kvStages - 1) * std::max<int64_t>(1, blockN);
  // A block that keeps the SM's share in flight by itself (a wide tile, as
  // several warps along the keys take) is one per SM.
  if (inFlight >= kDecodeRowsInFlightPerSm)
    return 1;
  const int64_t programs =
      (kDecodeRowsInFlightPerSm + inFlight / 2) / inFlight; // rounded
  return int(std::clamp<int64_t>(programs, 2, kDecodeProgramsPerSm));
}

int64_t decodeSplitsFor(const KernelSpec &spec, const KernelMetadata &meta,
                        const DecodeArgs &args, int smCount, int slotsPerSm) {
  return args.numSplits > 0
             ? args.numSplits
             : chooseDecodeSplits(
                   args.q.shape[0], spec.kvHeads, args.maxKvLen, smCount,
                   slotsPerSm, decodeProgramsPerSm(meta.blockN, meta.kvStages),
                   meta.blockN);
}

int decodeResidentPerSm(int regsPerThread, int threads, int64_t sharedBytes) {
  if (regsPerThread <= 0 || threads <= 0)
    return 0;
  const int warps = (threads + 31) / 32;
  // Registers are allocated per warp in units of 256.
  const int regsPerWarp = (regsPerThread * 32 + 255) / 256 * 256;
  int byRegs = 65536 / (regsPerWarp * warps);
  int byThreads = 2048 / (warps * 32);
  int bySmem = int((227 * 1024) / (sharedBytes + 1024));
  return std::max(0, std::min({byRegs, byThreads, bySmem, 32}));
}

size_t decodeWorkspaceBytes(const KernelSpec &spec, int64_t batch, int64_t seqQ,
                            int64_t splits) {
  return size_t(workspaceLayout(spec, batch, seqQ, splits).total);
}

uint32_t nextDecodeMergeTicket() {
  // Consecutive launches get distant tickets (a multiplicative hash of a
  // process-wide count), so that a stale counter word left by an earlier
  // launch, or an index in a recycled buffer, is unlikely to match.
  static std::atomic<uint32_t> launches{0};
  for (;;) {
    uint32_t t =
        (launches.fetch_add(1, std::memory_order_relaxed) + 1) * 0x9E3779B1u;
    if (t != 0)
      return t;
  }
}

std::vector<KernelParam> decodeSplitV1Params() {
  return contractParams(abi::kDecodeSplitParams);
}

std::vector<KernelParam> decodeCombineV1Params() {
  return contractParams(abi::kDecodeCombineParams);
}

Status validateDecodeArgs(const KernelSpec &spec, const DecodeArgs &args) {
  if (spec.op != "decode")
    return bad("the kernel's op is \"" + spec.op + "\", not \"decode\"");
  const int64_t elem = elementSize(spec);
  const TensorArg &q = args.q, &k = args.kCache, &v = args.vCache;
  if (!q.data)
    return bad("q: data pointer is null");
  if (q.shape[0] < 1)
    return bad("batch must be >= 1 (q.shape[0] is " + str(q.shape[0]) + ")");
  if (q.shape[2] < 1 || q.shape[2] > spec.maxQLen)
    return bad("seq_q (q.shape[2]) is " + str(q.shape[2]) +
               "; the kernel takes 1 to max_q_len = " + str(spec.maxQLen));
  const int64_t seqQ = q.shape[2];
  ATTNC_RETURN_IF_ERROR(expect("q", q, 1, spec.heads, "the spec's heads"));
  ATTNC_RETURN_IF_ERROR(expect("q", q, 3, spec.headDim, "the spec's head_dim"));
  ATTNC_RETURN_IF_ERROR(checkTensor("q", q, elem, 4));
  if (seqQ > 1 && q.stride[1] != seqQ * q.stride[2])
    return bad("q: with seq_q > 1 the rows of a head must be contiguous "
               "rows of one matrix (stride[1] = seq_q * stride[2]; got " +
               str(q.stride[1]) + " and " + str(q.stride[2]) +
               "): use a [B, H, S, D] layout");
  for (auto [name, t] :
       {std::pair<const char *, const TensorArg *>{"k_cache", &k},
        {"v_cache", &v}}) {
    if (t->shape[0] < 1)
      return bad(std::string(name) + ": needs at least one page");
    ATTNC_RETURN_IF_ERROR(
        expect(name, *t, 1, spec.kvHeads, "the spec's kv_heads"));
    ATTNC_RETURN_IF_ERROR(
        expect(name, *t, 2, spec.pageSize, "the spec's page_size"));
    ATTNC_RETURN_IF_ERROR(
        expect(name, *t, 3, spec.headDim, "the spec's head_dim"));
    ATTNC_RETURN_IF_ERROR(checkTensor(name, *t, elem, 4));
  }
  if (v.shape[0] != k.shape[0])
    return bad("v_cache has " + str(v.shape[0]) + " pages, k_cache " +
               str(k.shape[0]));
  if (!args.blockTable || !aligned(args.blockTable, 4))
    return bad("block_table: data pointer is null or not 4-byte aligned");
  if (args.maxBlocks < 1)
    return bad("max_blocks must be >= 1 (got " + str(args.maxBlocks) + ")");
  if (!args.kvLens || !aligned(args.kvLens, 4))
    return bad("kv_lens: data pointer is null or not 4-byte aligned");
  if (args.maxBlocks > abi::kMaxSeqLen / spec.pageSize)
    return bad("max_blocks " + str(args.maxBlocks) + " x page_size " +
               str(spec.pageSize) +
               ": sequences longer than 2^30 are not supported");
  if (args.maxKvLen < 0 || args.maxKvLen > args.maxBlocks * spec.pageSize)
    return bad("max_kv_len " + str(args.maxKvLen) +
               " must be in 0..max_blocks * page_size = " +
               str(args.maxBlocks * spec.pageSize));
  const TensorArg &o = args.o;
  if (!o.data)
    return bad("o: data pointer is null");
  for (int d = 0; d < 4; ++d)
    ATTNC_RETURN_IF_ERROR(expect("o", o, d, q.shape[d], "q's"));
  ATTNC_RETURN_IF_ERROR(checkTensor("o", o, elem, 4));
  if (spec.hasLse) {
    if (!args.lse.data)
      return bad("lse: data pointer is null but the kernel writes LSE");
    for (int d = 0; d < 3; ++d)
      ATTNC_RETURN_IF_ERROR(expect("lse", args.lse, d, q.shape[d], "q's"));
    ATTNC_RETURN_IF_ERROR(checkTensor("lse", args.lse, 4, 3));
  } else if (args.lse.data) {
    return bad("lse: data pointer must be null because the kernel was "
               "built with has_lse=false");
  }
  ATTNC_RETURN_IF_ERROR(validateSinks(spec, args.sinks));
  if (args.numSplits < 0 || args.numSplits > 65535)
    return bad("num_splits must be in 0..65535, 0 meaning automatic (got " +
               str(args.numSplits) + ")");
  if (!args.workspace)
    return bad("workspace: data pointer is null (ask for its size first)");
  if (!aligned(args.workspace, abi::kWorkspaceAlign))
    return bad("workspace: data pointer is not " + str(abi::kWorkspaceAlign) +
               "-byte aligned");
  return Status::ok();
}

Status planDecodeLaunch(const KernelSpec &spec, const KernelMetadata &meta,
                        const DecodeArgs &args, int smCount,
                        DecodeLaunchPlan &out, int slotsPerSm,
                        uint32_t ticket) {
  const int64_t batch = args.q.shape[0], seqQ = args.q.shape[2];
  const int64_t splits = decodeSplitsFor(spec, meta, args, smCount, slotsPerSm);
  const abi::DecodeWorkspaceLayout layout =
      workspaceLayout(spec, batch, seqQ, splits);
  const size_t needed = size_t(layout.total);
  if (args.workspaceBytes < needed)
    return bad("workspace has " + std::to_string(args.workspaceBytes) +
               " bytes; " + str(splits) + " splits need " +
               std::to_string(needed));
  if (batch > 65535 || spec.heads > 65535)
    return bad("batch " + str(batch) + " exceeds CUDA's grid z limit");
  char *ws = static_cast<char *>(args.workspace);
  void *oPart = ws + layout.oPart.offset;
  void *lsePart = ws + layout.lsePart.offset;
  void *mergeCounts = ws + layout.mergeCounts.offset;

  // One split writes O itself when o and lse hold each KV head's group of
  // rows as one strided matrix, as q does (abi::kDecodeWriteOneSplit).
  const bool lse = args.lse.data != nullptr;
  const bool groupRowsO =
      seqQ == 1 || (args.o.stride[1] == seqQ * args.o.stride[2] &&
                    (!lse || args.lse.stride[1] == seqQ));
  // Sinks are merged by the combine only (one program per query head).
  out.writeO = !groupRowsO || spec.sinks ? abi::kDecodeWriteCombine
               : splits == 1             ? abi::kDecodeWriteOneSplit
               : args.combineKernel || splits > kDecodeMergeMaxSplits
                   ? abi::kDecodeWriteCombine
                   : abi::kDecodeWriteLastSplit;

  // The values in abi::kDecodeSplitParams' order.
  constexpr size_t kSplitPointers =
      abi::leadingPointers(abi::kDecodeSplitParams);
  const void *splitPtrs[kSplitPointers] = {args.q.data,      args.kCache.data,
                                           args.vCache.data, args.blockTable,
                                           args.kvLens,      oPart,
                                           lsePart,          args.o.data,
                                           args.lse.data,    mergeCounts};
  for (size_t i = 0; i < kSplitPointers; ++i)
    packPointer(out.split, i, splitPtrs[i]);
  const int64_t splitInts[] = {batch,
                               seqQ,
                               splits,
                               args.maxBlocks,
                               args.kCache.shape[0],
                               args.q.stride[0],
                               args.q.stride[1],
                               args.q.stride[2],
                               args.kCache.stride[0],
                               args.kCache.stride[1],
                               args.kCache.stride[2],
                               args.vCache.stride[0],
                               args.vCache.stride[1],
                               args.vCache.stride[2],
                               args.o.stride[0],
                               args.o.stride[1],
                               args.o.stride[2],
                               lse ? args.lse.stride[0] : 0,
                               lse ? args.lse.stride[1] : 0,
                               out.writeO,
                               int64_t(ticket)};
  static_assert(std::size(splitInts) + kSplitPointers ==
                abi::kDecodeSplitParams.size());
  for (size_t i = 0; i < std::size(splitInts); ++i)
    packInt(out.split, kSplitPointers + i, splitInts[i]);
  out.split.count = abi::kDecodeSplitParams.size();

  constexpr size_t kCombinePointers =
      abi::leadingPointers(abi::kDecodeCombineParams);
  const void *combinePtrs[kCombinePointers] = {oPart, lsePart, args.o.data,
                                               args.lse.data};
  for (size_t i = 0; i < kCombinePointers; ++i)
    packPointer(out.combine, i, combinePtrs[i]);
  const int64_t combineInts[] = {batch,
                                 seqQ,
                                 splits,
                                 args.o.stride[0],
                                 args.o.stride[1],
                                 args.o.stride[2],
                                 lse ? args.lse.stride[0] : 0,
                                 lse ? args.lse.stride[1] : 0};
  static_assert(std::size(combineInts) + kCombinePointers ==
                abi::kDecodeCombineParams.size());
  for (size_t i = 0; i < std::size(combineInts); ++i)
    packInt(out.combine, kCombinePointers + i, combineInts[i]);
  out.combine.count = abi::kDecodeCombineParams.size();
  if (spec.sinks) // the combine's optional parameter (TileDecode)
    packPointer(out.combine, out.combine.count++, args.sinks);

  out.splitGeometry.grid = {uint32_t(splits), uint32_t(spec.kvHeads),
                            uint32_t(batch)};
  for (int i = 0; i < 3; ++i)
    out.splitGeometry.block[i] = uint32_t(meta.block[i]);
  out.splitGeometry.dynamicSmem = uint32_t(meta.dynamicSmem);
  out.combineGeometry.grid = {
      uint32_t(abi::ceilDiv(seqQ, abi::kDecodeCombineRows)),
      uint32_t(spec.heads), uint32_t(batch)};
  out.combineGeometry.block = {uint32_t(abi::kDecodeCombineThreads), 1, 1};
  return Status::ok();
}

} // namespace attnc
