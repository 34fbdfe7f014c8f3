//===- Launch.h - Attention launch ABI, validation and packing --*- C++ -*-===//
//
// The runtime's side of the attention kernels' contract (grid rules
// attention_fwd_v1 and attention_fwd_persistent_v1): argument validation,
// parameter packing by name, the grid and the stream-K tail's schedule.
// The contract itself (parameter names, order and types, the grid rules,
// tensor-map boxes and swizzle, the workspace layout, the magic divisors)
// is attnc/abi, shared with the compiler. Launch: grid by the metadata's
// grid rule, block = meta.block, dynamic shared memory = meta.dynamic_smem.
//
// Parameters are packed by name from the metadata, so a kernel with another
// list (extra "scale"/"softcap" f32 values, i32 sizes) needs no runtime
// change. Everything here is pure (no driver) and allocation-free on the
// launch path.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_LAUNCH_H
#define ATTNC_RUNTIME_LAUNCH_H

#include "attnc/abi/GridRules.h"
#include "attnc/abi/LaunchParams.h"
#include "attnc/abi/MagicDivisor.h"
#include "attnc/abi/TensorMaps.h"
#include "attnc/abi/Workspace.h"
#include "attnc/runtime/Metadata.h"
#include "attnc/runtime/Spec.h"
#include "attnc/runtime/Status.h"

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace attnc {

struct DriverApi;

// A tensor in the logical [B, H, S, D] layout; strides in elements. For LSE
// only dims 0..2 ([B, Hq, Sq]) are used and shape[3], stride[3] must be 1.
struct TensorArg {
  const void *data = nullptr;
  std::array<int64_t, 4> shape{};
  std::array<int64_t, 4> stride{};
};

// A tensor a score or mask mod reads (KernelMetadata::captures): device
// memory of `dtype` ("f32", "f16", "bf16", "i32", "i64" or "i8"), `rank`
// dims of `shape` elements each, `stride` in elements (entries past the
// rank are ignored).
struct CaptureArg {
  const void *data = nullptr;
  std::string_view dtype;
  int rank = 0;
  int64_t shape[4] = {0, 0, 0, 0};
  int64_t stride[4] = {0, 0, 0, 0};
};

struct AttentionArgs {
  TensorArg q, k, v, o, lse;
  // Optional: the stream-K tail's workspace of a persistent kernel
  // (attentionWorkspaceBytes; 256-byte aligned, zeroed before its first
  // use). Null: the kernel runs without the tail. Kernels without a
  // workspace parameter ignore it.
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  // Attention sinks: one f32 logit per query head (spec.sinks: required,
  // 4-byte aligned; otherwise it must be null).
  const float *sinks = nullptr;
  // Varlen kernels (spec.varlen; FlashAttention's flash_attn_varlen_func):
  // q, k, v and o are the packed [total, H, D] tensors given as
  // [1, H, total, D] views (shape[0] 1, stride[0] ignored), the LSE
  // [Hq, total_q] as a [1, Hq, total_q] view; cuSeqlensQ and cuSeqlensK
  // the B + 1 i32 sequence starts in device memory (0 first, non-decreasing,
  // last = total: the kernel reads them, nothing checks their values);
  // maxSeqlenQ and maxSeqlenK at least every sequence's length (the grid
  // covers maxSeqlenQ rows per sequence). All must be null or 0 for a
  // kernel without varlen.
  const int32_t *cuSeqlensQ = nullptr;
  const int32_t *cuSeqlensK = nullptr;
  int64_t varlenBatch = 0; // B, the number of sequences
  int64_t maxSeqlenQ = 0, maxSeqlenK = 0;
  // Key ranges of a kernel whose attention has kv_bounds: contiguous
  // [B, seq_q, 2] i32 in device memory, each query row's first and end key,
  // both non-decreasing along the rows (the kernel skips the KV tiles
  // outside a query tile's range; the keys outside must be masked anyway).
  // Null for other kernels.
  const int32_t *kvBounds = nullptr;
  // Paged varlen kernels (spec.varlen with spec.pageSize; vLLM's
  // flash_attn_varlen_func with block_table and seqused_k): k and v are the
  // caches [pages, Hkv, page_size, D] (any strides), cuSeqlensK is null,
  // blockTable the contiguous [varlenBatch, maxBlocks] i32 page indices and
  // kvLens the [varlenBatch] i32 key counts, each at most maxSeqlenK (and
  // maxBlocks · page_size), in device memory. Null and 0 otherwise.
  const int32_t *blockTable = nullptr;
  int64_t maxBlocks = 0;
  const int32_t *kvLens = nullptr;
  // The captured tensors of a kernel whose mods read some, in the order of
  // its metadata's captures (none: null and 0).
  const CaptureArg *captures = nullptr;
  size_t numCaptures = 0;
};

// Checks null pointers, shapes against the spec, batch/seq consistency,
// unit head-dim stride, 16-byte alignment of base pointers and of the
// b/h/s strides of q/k/v/o (LSE rows are f32 and need 4 bytes), positive
// sizes and offsets that fit in int64 (and addresses that do not wrap),
// sequences of at most abi::kMaxSeqLen; o and lse each give every element its
// own memory (no zero or overlapping strides) and overlap no other tensor.
// Each error names the tensor and the dimension.
Status validateAttentionArgs(const KernelSpec &spec, const AttentionArgs &args);

// The captured tensors against the kernel's (`expected`, from its
// metadata): their count, each one's dtype and rank, a non-null data pointer
// aligned to its element, sizes >= 1, strides >= 0, an extent that does not
// wrap, and no overlap with o, lse or the workspace. The kernel does not
// bounds-check its mods' indices beyond the sequences' positions: a mod
// that indexes past a tensor reads past it.
Status validateCaptures(const std::vector<CaptureDesc> &expected,
                        const KernelSpec &spec, const AttentionArgs &args);

// Key ranges: given iff the kernel takes them (`takesBounds`, from its
// parameters), 4-byte aligned, not overlapping o or lse (after
// validateAttentionArgs).
Status validateKVBounds(bool takesBounds, const KernelSpec &spec,
                        const AttentionArgs &args);

// Attention sinks of an attention or decode launch: given iff the spec has
// sinks, and then 4-byte aligned.
Status validateSinks(const KernelSpec &spec, const float *sinks);

// A fixed-list contract's parameters (abi/LaunchParams.h) as metadata
// entries: pointers as ptr, integers as i64.
template <size_t N>
std::vector<KernelParam>
contractParams(const std::array<abi::ParamDesc, N> &table) {
  std::vector<KernelParam> params;
  for (const abi::ParamDesc &p : table)
    params.push_back({std::string(p.name), abi::isPointer(p.type)
                                               ? ParamKind::Ptr
                                               : ParamKind::I64});
  return params;
}

// The parameter list of the attention_fwd_v1 contract, for the compiler's
// metadata.
std::vector<KernelParam> attentionFwdV1Params();

// Where a kernel parameter's value comes from: the entries of
// abi::kAttentionFwdParams, then of abi::kAttentionOptionalParams, in their
// tables' order (LaunchAbi.cpp checks the counts).
enum class ParamSource : uint8_t {
  Q,
  K,
  V,
  O,
  Lse,
  Batch,
  SeqQ,
  SeqKv,
  QStrideB,
  QStrideH,
  QStrideS,
  KStrideB,
  KStrideH,
  KStrideS,
  VStrideB,
  VStrideH,
  VStrideS,
  OStrideB,
  OStrideH,
  OStrideS,
  LseStrideB,
  LseStrideH,
  Scale,
  Softcap,
  // Attention sinks: AttentionArgs::sinks.
  Sinks,
  // Varlen kernels: AttentionArgs::cuSeqlensQ and cuSeqlensK.
  CuSeqlensQ,
  CuSeqlensK,
  // Key ranges: AttentionArgs::kvBounds.
  KvBounds,
  // Paged varlen kernels: AttentionArgs::blockTable, kvLens, maxBlocks and
  // the caches' page count.
  BlockTable,
  KvLens,
  MaxBlocks,
  NumPages,
  // TMA kernels (tuning.kv_sync "tma"): tensor maps of Q, K and V.
  QTensorMap,
  KTensorMap,
  VTensorMap,
  // A TMA store of O (tuning.epilogue "tma"): O's tensor map.
  OTensorMap,
  // Persistent kernels over items of equal KV length: the stream-K tail's
  // schedule (StreamKSchedule, abi::kAttentionStreamKParams) and workspace
  // (AttentionArgs::workspace).
  SkRounds,
  SkRoundRem,
  SkUnits,
  SkUnitsRem,
  SkTiles,
  SkTilesMul,
  SkTilesShr,
  Workspace,
  // Captured tensors of mods (abi::captureParamName): a tensor's data, one
  // of its sizes, one of its strides (ParamSlot::capture and ::dim say
  // which).
  CaptureData,
  CaptureSize,
  CaptureStride,
};

// The stream-K tail's schedule of one launch of a persistent kernel (its
// sk_* parameters). With G blocks, `items` work items of T KV tiles each:
// every block runs `rounds` whole items (blocks c < roundRem one more), and
// the tail's (item, tile) units are dealt as block c taking `units` of them
// (blocks c < unitsRem one more) in order. Without a tail (no workspace,
// or the tail's units past 2^31), roundRem = items mod G and units = 0.
// tilesMul and tilesShr are abi::magicDivisor(T) (the kernel divides by T
// with abi::magicDivide; tilesMul as the i32 of the same bits).
struct StreamKSchedule {
  int64_t rounds = 0, roundRem = 0, units = 0, unitsRem = 0;
  int64_t tiles = 1, tilesMul = 0, tilesShr = 0;
};
StreamKSchedule streamKSchedule(int64_t items, int64_t blocks, int64_t tiles,
                                bool tail);

struct ParamSlot {
  ParamSource source;
  ParamKind kind;
  std::string_view name; // static storage; for error messages
  int64_t boxRows = 0;   // TensorMap: the box's rows (KernelParam)
  // CaptureData/Size/Stride: which captured tensor, which dim.
  uint8_t capture = 0, dim = 0;
};

// The contract's 22, the optional ones and eight captured tensors of rank
// 4 (72) fit.
inline constexpr size_t kMaxKernelParams = 128;

// Resolved once when a kernel is loaded: every name must be known and its
// kind must fit the value (pointers as ptr, sizes/strides as i64 or i32,
// scale/softcap as f32).
Result<std::vector<ParamSlot>>
planAttentionParams(const std::vector<KernelParam> &params);

inline constexpr size_t kMaxTensorMaps = 4;

// The kernelParams array for cuLaunchKernel, built on the stack.
struct PackedParams {
  alignas(8) uint64_t storage[kMaxKernelParams];
  // CUtensorMap values (by-value parameters of TMA kernels).
  alignas(
      abi::kTensorMapParamAlign) unsigned char tensorMaps[kMaxTensorMaps]
                                                         [abi::kTensorMapBytes];
  void *pointers[kMaxKernelParams];
  size_t count = 0;
};

// Fills `out` (no allocation). Fails when an i32 parameter's value does
// not fit in 32 bits, and for a TMA kernel when the driver cannot encode a
// tensor map (`driver` null or without cuTensorMapEncodeTiled, or a view
// TMA cannot address: a base not 16-byte aligned, a stride not a multiple
// of 16 bytes).
Status packAttentionParams(const std::vector<ParamSlot> &plan,
                           const KernelSpec &spec, const AttentionArgs &args,
                           PackedParams &out, const DriverApi *driver = nullptr,
                           const StreamKSchedule &schedule = {});

struct LaunchGeometry {
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
  uint32_t dynamicSmem = 0;
};

// Applies the metadata's grid rule (abi::kGridRuleAttentionFwd or
// abi::kGridRuleAttentionFwdPersistent) to validated arguments; fails when the
// grid exceeds CUDA's limits (persistent: when the work items do not fit 31
// bits). `smCount` (the device's SMs, Context::smCount) caps the persistent
// grid; when it is unknown (<= 0) the grid is one block per item: correct,
// and as many blocks as attention_fwd_v1 would launch. attention_fwd_v1
// ignores it.
Result<LaunchGeometry> attentionGeometry(const KernelMetadata &meta,
                                         const AttentionArgs &args,
                                         int smCount);

// The workspace bytes a launch of this geometry takes (0: the kernel has no
// workspace parameter): abi::streamKWorkspaceLayout's total for its
// blocks, the metadata's block_m and the spec's head dim.
size_t attentionWorkspaceBytes(const std::vector<ParamSlot> &plan,
                               const KernelMetadata &meta,
                               const KernelSpec &spec,
                               const LaunchGeometry &geometry);

// A workspace given to a launch that takes one must be abi::kWorkspaceAlign
// (256-byte) aligned and
// hold `needed` bytes (a null one is allowed: no stream-K tail).
Status checkAttentionWorkspace(const AttentionArgs &args, size_t needed);

// The schedule a launch of this geometry runs (a default one for kernels
// without the stream-K parameters): with a tail when the arguments carry a
// workspace. The KV tile is the K tensor map's box.
StreamKSchedule attentionStreamKSchedule(const std::vector<ParamSlot> &plan,
                                         const KernelMetadata &meta,
                                         const AttentionArgs &args,
                                         const LaunchGeometry &geometry);

} // namespace attnc

#endif // ATTNC_RUNTIME_LAUNCH_H
