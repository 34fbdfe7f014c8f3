//===- Launch.h - Attention launch ABI, validation and packing --*- C++ -*-===//
//
// The fixed contract between the compiler and the runtime for attention
// kernels (grid rule "attention_fwd_v1"). Kernel parameters, in order, each
// 8 bytes:
//   q, k, v, o, lse                         pointers (lse null iff !has_lse)
//   batch, seq_q, seq_kv                    i64
//   q_stride_b, q_stride_h, q_stride_s      i64 strides in elements of the
//   k_stride_b, k_stride_h, k_stride_s      logical [B, H, S, D] layout;
//   v_stride_b, v_stride_h, v_stride_s      the head-dim stride is 1
//   o_stride_b, o_stride_h, o_stride_s
//   lse_stride_b, lse_stride_h              LSE is [B, Hq, Sq] f32, seq
//                                           stride 1
// Launch: grid = (ceil(seq_q / block_m), heads, batch), block = meta.block,
// dynamic shared memory = meta.dynamic_smem.
//
// Grid rule "attention_fwd_persistent_v1" (tuning.grid "persistent", the
// wgmma mapping on kv_sync "tma"): the same parameters, block and dynamic
// shared memory; grid = (min(items, SMs), 1, 1) with work items = ceil(seq_q /
// block_m) x heads x batch, and each block takes items w = blockIdx.x,
// blockIdx.x + gridDim.x, ... (any grid.x >= 1 is correct: the cap is a
// performance choice). The items must fit 31 bits, as blockIdx.x does.
//
// Parameters are packed by name from the metadata, so a kernel with another
// list (extra "scale"/"softcap" f32 values, i32 sizes) needs no runtime
// change. Everything here is pure (no driver) and allocation-free on the
// launch path.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_LAUNCH_H
#define ATTNC_RUNTIME_LAUNCH_H

#include "attnc/runtime/Metadata.h"
#include "attnc/runtime/Spec.h"
#include "attnc/runtime/Status.h"

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace attnc {

struct DriverApi;

inline constexpr const char *kGridRuleAttentionFwdV1 = "attention_fwd_v1";
inline constexpr const char *kGridRuleAttentionFwdPersistentV1 =
    "attention_fwd_persistent_v1";

// Whether `rule` is one of the attention_fwd_v1 parameter contract's grid
// rules (one program per item, or persistent programs).
inline bool isAttentionFwdGridRule(std::string_view rule) {
  return rule == kGridRuleAttentionFwdV1 ||
         rule == kGridRuleAttentionFwdPersistentV1;
}

// A TMA kernel's tensor maps of Q, K and V (tuning.kv_sync "tma"), after
// the attention_fwd_v1 parameters, in this order; each names its box rows.
inline constexpr std::array<const char *, 3> kAttentionTensorMapParams = {
    "q_tmap", "k_tmap", "v_tmap"};
// A TMA kernel whose epilogue stores O by TMA (tuning.epilogue "tma") takes
// O's tensor map after those, boxes of kAttentionOutputTensorMapBoxRows
// rows (one consumer warpgroup's).
inline constexpr const char *kAttentionOutputTensorMapParam = "o_tmap";
inline constexpr int64_t kAttentionOutputTensorMapBoxRows = 64;

// Persistent kernels whose work items all have the same KV length (no
// causal or window bound) take a workspace pointer last: with it, the
// items of the last, partial round are cut into pieces along the keys so
// that every block ends at about the same time, and the piece that starts
// an item merges the others' partials (the stream-K tail). Null: the tail
// runs as whole items. Layout: one u32 flag per (block, consumer
// warpgroup), padded to 256 bytes, then per (block, warpgroup) a slot of
// head_dim / 8 + 1 chunks of 128 threads x 16 bytes. The flags must be
// zero before the first launch; every launch leaves them zero.
inline constexpr const char *kAttentionWorkspaceParam = "workspace";
// Before the workspace, the tail's schedule as i32 parameters
// (StreamKSchedule, in this order).
inline constexpr std::array<const char *, 7> kAttentionStreamKParams = {
    "sk_rounds", "sk_round_rem", "sk_units",    "sk_units_rem",
    "sk_tiles",  "sk_tiles_mul", "sk_tiles_shr"};
inline constexpr int64_t
streamKWorkspaceBytes(int64_t blocks, int64_t warpgroups, int64_t headDim) {
  return (blocks * warpgroups * 4 + 255) / 256 * 256 +
         blocks * warpgroups * (headDim / 8 + 1) * 128 * 16;
}

// A tensor in the logical [B, H, S, D] layout; strides in elements. For LSE
// only dims 0..2 ([B, Hq, Sq]) are used and shape[3], stride[3] must be 1.
struct TensorArg {
  const void *data = nullptr;
  std::array<int64_t, 4> shape{};
  std::array<int64_t, 4> stride{};
};

struct AttentionArgs {
  TensorArg q, k, v, o, lse;
  // Optional: the stream-K tail's workspace of a persistent kernel
  // (attentionWorkspaceBytes; 256-byte aligned, zeroed before its first
  // use). Null: the kernel runs without the tail. Kernels without a
  // workspace parameter ignore it.
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

// The longest sequence (queries, keys, or a decode cache's max_blocks x
// page_size) a kernel takes: its masks compare positions in 32 bits.
inline constexpr int64_t kMaxSeqLen = int64_t(1) << 30;

// Checks null pointers, shapes against the spec, batch/seq consistency,
// unit head-dim stride, 16-byte alignment of base pointers and of the
// b/h/s strides of q/k/v/o (LSE rows are f32 and need 4 bytes), positive
// sizes and offsets that fit in int64 (and addresses that do not wrap),
// sequences of at most kMaxSeqLen; o and lse each give every element its
// own memory (no zero or overlapping strides) and overlap no other tensor.
// Each error names the tensor and the dimension.
Status validateAttentionArgs(const KernelSpec &spec, const AttentionArgs &args);

// A contract's parameters from its names in order, the first `pointers`
// of them pointers and the rest i64 (decode, KV append, LSE merge).
template <size_t N>
std::vector<KernelParam>
contractParams(const std::array<const char *, N> &names, size_t pointers) {
  std::vector<KernelParam> params;
  for (size_t i = 0; i < N; ++i)
    params.push_back(
        {names[i], i < pointers ? ParamKind::Ptr : ParamKind::I64});
  return params;
}

// The parameter list of the attention_fwd_v1 contract, for the compiler's
// metadata.
std::vector<KernelParam> attentionFwdV1Params();

// Where a kernel parameter's value comes from.
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
  // TMA kernels (tuning.kv_sync "tma"): tensor maps of Q, K and V.
  QTensorMap,
  KTensorMap,
  VTensorMap,
  // A TMA store of O (tuning.epilogue "tma"): O's tensor map.
  OTensorMap,
  // Persistent kernels over items of equal KV length: the stream-K tail's
  // schedule (StreamKSchedule, kAttentionStreamKParams) and workspace
  // (AttentionArgs::workspace).
  SkRounds,
  SkRoundRem,
  SkUnits,
  SkUnitsRem,
  SkTiles,
  SkTilesMul,
  SkTilesShr,
  Workspace,
};

// The stream-K tail's schedule of one launch of a persistent kernel (its
// sk_* parameters). With G blocks, `items` work items of T KV tiles each:
// every block runs `rounds` whole items (blocks c < roundRem one more), and
// the tail's (item, tile) units are dealt as block c taking `units` of them
// (blocks c < unitsRem one more) in order. Without a tail (no workspace,
// or the tail's units past 2^31), roundRem = items mod G and units = 0.
// floor(x / T) = umulhi(x, tilesMul) >> tilesShr for 0 <= x < 2^31 and
// T > 1 (tilesMul as the i32 of the same bits).
struct StreamKSchedule {
  int64_t rounds = 0, roundRem = 0, units = 0, unitsRem = 0;
  int64_t tiles = 1, tilesMul = 0, tilesShr = 0;
};
StreamKSchedule streamKSchedule(int64_t items, int64_t blocks, int64_t tiles,
                                bool tail);
// The multiplier and shift of floor(x / d) for 0 <= x < 2^31, d >= 2.
std::pair<uint32_t, uint32_t> unsignedDivisor(uint32_t d);

struct ParamSlot {
  ParamSource source;
  ParamKind kind;
  std::string_view name; // static storage; for error messages
  int64_t boxRows = 0;   // TensorMap: the box's rows (KernelParam)
};

inline constexpr size_t kMaxKernelParams = 64;

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
  alignas(64) unsigned char tensorMaps[kMaxTensorMaps][128];
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

// Applies the metadata's grid rule ("attention_fwd_v1" or
// "attention_fwd_persistent_v1") to validated arguments; fails when the grid
// exceeds CUDA's limits (persistent: when the work items do not fit 31
// bits). `smCount` (the device's SMs, Context::smCount) caps the persistent
// grid; when it is unknown (<= 0) the grid is one block per item: correct,
// and as many blocks as attention_fwd_v1 would launch. attention_fwd_v1
// ignores it.
Result<LaunchGeometry> attentionGeometry(const KernelMetadata &meta,
                                         const AttentionArgs &args,
                                         int smCount);

// The workspace bytes a launch of this geometry takes (0: the kernel has no
// workspace parameter): streamKWorkspaceBytes for its blocks, block_m / 64
// consumer warpgroups and the spec's head dim.
size_t attentionWorkspaceBytes(const std::vector<ParamSlot> &plan,
                               const KernelMetadata &meta,
                               const KernelSpec &spec,
                               const LaunchGeometry &geometry);

// A workspace given to a launch that takes one must be 256-byte aligned and
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
