//===- LaunchAbi.cpp - Attention parameter packing and grid rule ----------===//

#include "attnc/runtime/Launch.h"

#include "attnc/runtime/Driver.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace attnc {

namespace {

// What the value behind each known parameter name is.
enum class ValueType { Pointer, Integer, Float, TensorMap };

struct NamedSource {
  std::string_view name;
  ParamSource source;
  ValueType type;
};

// The order of the first 22 entries is the attention_fwd_v1 contract.
constexpr NamedSource kSources[] = {
    {"q", ParamSource::Q, ValueType::Pointer},
    {"k", ParamSource::K, ValueType::Pointer},
    {"v", ParamSource::V, ValueType::Pointer},
    {"o", ParamSource::O, ValueType::Pointer},
    {"lse", ParamSource::Lse, ValueType::Pointer},
    {"batch", ParamSource::Batch, ValueType::Integer},
    {"seq_q", ParamSource::SeqQ, ValueType::Integer},
    {"seq_kv", ParamSource::SeqKv, ValueType::Integer},
    {"q_stride_b", ParamSource::QStrideB, ValueType::Integer},
    {"q_stride_h", ParamSource::QStrideH, ValueType::Integer},
    {"q_stride_s", ParamSource::QStrideS, ValueType::Integer},
    {"k_stride_b", ParamSource::KStrideB, ValueType::Integer},
    {"k_stride_h", ParamSource::KStrideH, ValueType::Integer},
    {"k_stride_s", ParamSource::KStrideS, ValueType::Integer},
    {"v_stride_b", ParamSource::VStrideB, ValueType::Integer},
    {"v_stride_h", ParamSource::VStrideH, ValueType::Integer},
    {"v_stride_s", ParamSource::VStrideS, ValueType::Integer},
    {"o_stride_b", ParamSource::OStrideB, ValueType::Integer},
    {"o_stride_h", ParamSource::OStrideH, ValueType::Integer},
    {"o_stride_s", ParamSource::OStrideS, ValueType::Integer},
    {"lse_stride_b", ParamSource::LseStrideB, ValueType::Integer},
    {"lse_stride_h", ParamSource::LseStrideH, ValueType::Integer},
    {"scale", ParamSource::Scale, ValueType::Float},
    {"softcap", ParamSource::Softcap, ValueType::Float},
    {kAttentionTensorMapParams[0], ParamSource::QTensorMap,
     ValueType::TensorMap},
    {kAttentionTensorMapParams[1], ParamSource::KTensorMap,
     ValueType::TensorMap},
    {kAttentionTensorMapParams[2], ParamSource::VTensorMap,
     ValueType::TensorMap},
    {kAttentionOutputTensorMapParam, ParamSource::OTensorMap,
     ValueType::TensorMap},
    {kAttentionStreamKParams[0], ParamSource::SkRounds, ValueType::Integer},
    {kAttentionStreamKParams[1], ParamSource::SkRoundRem, ValueType::Integer},
    {kAttentionStreamKParams[2], ParamSource::SkUnits, ValueType::Integer},
    {kAttentionStreamKParams[3], ParamSource::SkUnitsRem, ValueType::Integer},
    {kAttentionStreamKParams[4], ParamSource::SkTiles, ValueType::Integer},
    {kAttentionStreamKParams[5], ParamSource::SkTilesMul, ValueType::Integer},
    {kAttentionStreamKParams[6], ParamSource::SkTilesShr, ValueType::Integer},
    {kAttentionWorkspaceParam, ParamSource::Workspace, ValueType::Pointer},
};
constexpr size_t kContractParams = 22;

const NamedSource *findSource(std::string_view name) {
  for (const NamedSource &source : kSources)
    if (source.name == name)
      return &source;
  return nullptr;
}

bool kindFits(ValueType type, ParamKind kind) {
  switch (type) {
  case ValueType::Pointer:
    return kind == ParamKind::Ptr;
  case ValueType::Integer:
    return kind == ParamKind::I64 || kind == ParamKind::I32;
  case ValueType::Float:
    return kind == ParamKind::F32;
  case ValueType::TensorMap:
    return kind == ParamKind::TensorMap;
  }
  return false;
}

const char *expectedKinds(ValueType type) {
  switch (type) {
  case ValueType::Pointer:
    return "ptr";
  case ValueType::Integer:
    return "i64 or i32";
  case ValueType::Float:
    return "f32";
  case ValueType::TensorMap:
    return "tensormap";
  }
  return "?";
}

const void *pointerValue(ParamSource source, const AttentionArgs &args) {
  switch (source) {
  case ParamSource::Q:
    return args.q.data;
  case ParamSource::K:
    return args.k.data;
  case ParamSource::V:
    return args.v.data;
  case ParamSource::O:
    return args.o.data;
  case ParamSource::Workspace:
    return args.workspace;
  default:
    return args.lse.data;
  }
}

int64_t integerValue(ParamSource source, const AttentionArgs &args,
                     const StreamKSchedule &sk) {
  switch (source) {
  case ParamSource::SkRounds:
    return sk.rounds;
  case ParamSource::SkRoundRem:
    return sk.roundRem;
  case ParamSource::SkUnits:
    return sk.units;
  case ParamSource::SkUnitsRem:
    return sk.unitsRem;
  case ParamSource::SkTiles:
    return sk.tiles;
  case ParamSource::SkTilesMul:
    return sk.tilesMul;
  case ParamSource::SkTilesShr:
    return sk.tilesShr;
  case ParamSource::Batch:
    return args.q.shape[0];
  case ParamSource::SeqQ:
    return args.q.shape[2];
  case ParamSource::SeqKv:
    return args.k.shape[2];
  case ParamSource::QStrideB:
    return args.q.stride[0];
  case ParamSource::QStrideH:
    return args.q.stride[1];
  case ParamSource::QStrideS:
    return args.q.stride[2];
  case ParamSource::KStrideB:
    return args.k.stride[0];
  case ParamSource::KStrideH:
    return args.k.stride[1];
  case ParamSource::KStrideS:
    return args.k.stride[2];
  case ParamSource::VStrideB:
    return args.v.stride[0];
  case ParamSource::VStrideH:
    return args.v.stride[1];
  case ParamSource::VStrideS:
    return args.v.stride[2];
  case ParamSource::OStrideB:
    return args.o.stride[0];
  case ParamSource::OStrideH:
    return args.o.stride[1];
  case ParamSource::OStrideS:
    return args.o.stride[2];
  // A kernel without LSE still takes the slots; zeros are harmless.
  case ParamSource::LseStrideB:
    return args.lse.data ? args.lse.stride[0] : 0;
  case ParamSource::LseStrideH:
    return args.lse.data ? args.lse.stride[1] : 0;
  default:
    return 0;
  }
}

/// The CUtensorMap of a [B, H, S, D] view for TMA copies of 64 columns x
/// `boxRows` rows with the 128-byte swizzle (the layout the wgmma
/// descriptors read); rows past S read as zeros, and a store (O's map)
/// leaves them unwritten.
Status encodeTensorMap(const DriverApi *driver, std::string_view name,
                       const TensorArg &view, bool bf16, int64_t boxRows,
                       void *out) {
  // Messages are built only on failure: a launch allocates nothing.
  auto what = [&] { return "tensor map " + std::string(name); };
  if (!driver || !driver->cuTensorMapEncodeTiled)
    return Status(ErrorCode::Unsupported,
                  "this kernel copies by TMA (tuning.kv_sync \"tma\"), which "
                  "needs the driver's cuTensorMapEncodeTiled (CUDA 12 or "
                  "newer); it is missing");
  constexpr int64_t kElem = 2, kAlign = 16;
  if (reinterpret_cast<uintptr_t>(view.data) % kAlign)
    return Status(ErrorCode::InvalidArgument,
                  what() + ": TMA needs the base address 16-byte aligned");
  if (view.stride[3] != 1)
    return Status(ErrorCode::InvalidArgument,
                  what() + ": TMA needs the head dim contiguous (stride 1)");
  // Dims innermost first (D, S, H, B); a dim of extent 1 takes any stride
  // (never stepped), so it gets the packed one.
  cuuint64_t dims[4], strides[3];
  int64_t packed = view.shape[3] * kElem;
  for (int d = 0; d < 4; ++d) {
    int64_t extent = view.shape[3 - d];
    dims[d] = cuuint64_t(std::max<int64_t>(1, extent));
    if (d == 0)
      continue;
    int64_t bytes = extent <= 1 ? packed : view.stride[3 - d] * kElem;
    if (bytes <= 0 || bytes % kAlign || bytes >= (int64_t(1) << 40))
      return Status(ErrorCode::InvalidArgument,
                    what() +
                        ": TMA needs every stride a positive multiple of " +
                        "16 bytes below 2^40; dim " + std::to_string(3 - d) +
                        " has " + std::to_string(bytes) + " bytes");
    strides[d - 1] = cuuint64_t(bytes);
    packed = std::max(packed, bytes * std::max<int64_t>(1, extent));
  }
  cuuint32_t box[4] = {64, cuuint32_t(boxRows), 1, 1};
  cuuint32_t elementStrides[4] = {1, 1, 1, 1};
  CUresult r = driver->cuTensorMapEncodeTiled(
      static_cast<CUtensorMap *>(out),
      bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
      4, const_cast<void *>(view.data), dims, strides, box, elementStrides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return driver->check(r, "cuTensorMapEncodeTiled (" + what() + ")");
  return Status::ok();
}

} // namespace

std::vector<KernelParam> attentionFwdV1Params() {
  std::vector<KernelParam> params;
  for (size_t i = 0; i < kContractParams; ++i)
    params.push_back({std::string(kSources[i].name),
                      kSources[i].type == ValueType::Pointer ? ParamKind::Ptr
                                                             : ParamKind::I64});
  return params;
}

Result<std::vector<ParamSlot>>
planAttentionParams(const std::vector<KernelParam> &params) {
  if (params.size() > kMaxKernelParams)
    return Status(ErrorCode::Unsupported,
                  "kernel has " + std::to_string(params.size()) +
                      " parameters; the runtime packs at most " +
                      std::to_string(kMaxKernelParams));
  std::vector<ParamSlot> plan;
  for (const KernelParam &param : params) {
    const NamedSource *source = findSource(param.name);
    if (!source)
      return Status(ErrorCode::Unsupported,
                    "kernel parameter '" + param.name +
                        "' is not provided by the attention launch ABI");
    if (!kindFits(source->type, param.kind))
      return Status(ErrorCode::Unsupported,
                    "kernel parameter '" + param.name + "' has kind " +
                        paramKindName(param.kind) + "; expected " +
                        expectedKinds(source->type));
    plan.push_back({source->source, param.kind, source->name, param.boxRows});
  }
  return plan;
}

Status packAttentionParams(const std::vector<ParamSlot> &plan,
                           const KernelSpec &spec, const AttentionArgs &args,
                           PackedParams &out, const DriverApi *driver,
                           const StreamKSchedule &schedule) {
  out.count = plan.size();
  size_t tensorMaps = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const ParamSlot &slot = plan[i];
    uint64_t &storage = out.storage[i];
    storage = 0;
    out.pointers[i] = &storage;
    switch (slot.kind) {
    case ParamKind::Ptr: {
      const void *p = pointerValue(slot.source, args);
      std::memcpy(&storage, &p, sizeof(p));
      break;
    }
    case ParamKind::I64: {
      int64_t value = integerValue(slot.source, args, schedule);
      std::memcpy(&storage, &value, sizeof(value));
      break;
    }
    case ParamKind::I32: {
      int64_t value = integerValue(slot.source, args, schedule);
      if (value < INT32_MIN || value > INT32_MAX)
        return Status(ErrorCode::InvalidArgument,
                      "kernel parameter '" + std::string(slot.name) +
                          "' is i32 but its value " + std::to_string(value) +
                          " does not fit in 32 bits");
      int32_t narrow = static_cast<int32_t>(value);
      std::memcpy(&storage, &narrow, sizeof(narrow));
      break;
    }
    case ParamKind::F32: {
      float value = static_cast<float>(slot.source == ParamSource::Scale
                                           ? spec.effectiveScale()
                                           : spec.softcap);
      std::memcpy(&storage, &value, sizeof(value));
      break;
    }
    case ParamKind::TensorMap: {
      if (tensorMaps == kMaxTensorMaps)
        return Status(ErrorCode::Unsupported,
                      "kernel has more than " + std::to_string(kMaxTensorMaps) +
                          " tensor-map parameters");
      const TensorArg &view = slot.source == ParamSource::QTensorMap   ? args.q
                              : slot.source == ParamSource::KTensorMap ? args.k
                              : slot.source == ParamSource::VTensorMap ? args.v
                                                                       : args.o;
      void *map = out.tensorMaps[tensorMaps++];
      ATTNC_RETURN_IF_ERROR(encodeTensorMap(
          driver, slot.name, view, spec.dtype == "bf16", slot.boxRows, map));
      out.pointers[i] = map;
      break;
    }
    }
  }
  return Status::ok();
}

Result<LaunchGeometry> attentionGeometry(const KernelMetadata &meta,
                                         const AttentionArgs &args,
                                         int smCount) {
  const bool persistent = meta.gridRule == kGridRuleAttentionFwdPersistentV1;
  if (!persistent && meta.gridRule != kGridRuleAttentionFwdV1)
    return Status(ErrorCode::Unsupported,
                  "unknown grid rule '" + meta.gridRule + "'");
  if (meta.blockM < 1)
    return Status(ErrorCode::Unsupported,
                  "grid rule " + meta.gridRule + " needs block_m >= 1");
  const int64_t seqQ = args.q.shape[2];
  const int64_t heads = args.q.shape[1];
  const int64_t batch = args.q.shape[0];
  const int64_t programs = seqQ / meta.blockM + (seqQ % meta.blockM != 0);
  LaunchGeometry geometry;
  if (persistent) {
    // Work items (query tile, head, batch), dealt round-robin over
    // min(items, SMs) blocks; their count is checked against 31 bits one
    // factor at a time, so that the product cannot overflow.
    int64_t items = programs;
    bool fits = items <= INT32_MAX;
    for (int64_t factor : {heads, batch}) {
      fits =
          fits && factor >= 0 && (factor == 0 || items <= INT32_MAX / factor);
      if (fits)
        items *= factor;
    }
    if (!fits)
      return Status(
          ErrorCode::InvalidArgument,
          "grid rule " + meta.gridRule + ": " + std::to_string(programs) +
              " query tiles x " + std::to_string(heads) + " heads x " +
              std::to_string(batch) + " batch = more work items than 2^31-1");
    const int64_t blocks =
        smCount > 0 ? std::min<int64_t>(items, smCount) : items;
    geometry.grid = {static_cast<uint32_t>(blocks), 1, 1};
  } else {
    // CUDA's grid limits: x < 2^31, y and z <= 65535.
    if (programs > INT32_MAX)
      return Status(ErrorCode::InvalidArgument,
                    "seq_q " + std::to_string(seqQ) + " needs " +
                        std::to_string(programs) +
                        " programs along grid x; CUDA allows 2^31-1");
    if (heads > 65535)
      return Status(ErrorCode::InvalidArgument,
                    "heads " + std::to_string(heads) +
                        " exceeds CUDA's grid y limit of 65535");
    if (batch > 65535)
      return Status(ErrorCode::InvalidArgument,
                    "batch " + std::to_string(batch) +
                        " exceeds CUDA's grid z limit of 65535");
    geometry.grid = {static_cast<uint32_t>(programs),
                     static_cast<uint32_t>(heads),
                     static_cast<uint32_t>(batch)};
  }
  for (int i = 0; i < 3; ++i)
    geometry.block[i] = static_cast<uint32_t>(meta.block[i]);
  geometry.dynamicSmem = static_cast<uint32_t>(meta.dynamicSmem);
  return geometry;
}

size_t attentionWorkspaceBytes(const std::vector<ParamSlot> &plan,
                               const KernelMetadata &meta,
                               const KernelSpec &spec,
                               const LaunchGeometry &geometry) {
  bool takesOne = std::any_of(plan.begin(), plan.end(), [](const ParamSlot &s) {
    return s.source == ParamSource::Workspace;
  });
  if (!takesOne)
    return 0;
  return static_cast<size_t>(streamKWorkspaceBytes(
      geometry.grid[0], std::max<int64_t>(1, meta.blockM / 64), spec.headDim));
}

std::pair<uint32_t, uint32_t> unsignedDivisor(uint32_t d) {
  // CUTLASS's FastDivmod construction: p = 31 + ceil(log2 d), m =
  // ceil(2^p / d) (< 2^32 as 2^ceil(log2 d) < 2d); exact for x < 2^31.
  uint32_t log2 = 0;
  while ((uint64_t(1) << log2) < d)
    ++log2;
  uint32_t p = 31 + log2;
  uint64_t m = ((uint64_t(1) << p) + d - 1) / d;
  return {static_cast<uint32_t>(m), p - 32};
}

StreamKSchedule streamKSchedule(int64_t items, int64_t blocks, int64_t tiles,
                                bool tail) {
  StreamKSchedule sk;
  if (blocks < 1 || tiles < 1)
    return sk;
  sk.rounds = items / blocks;
  int64_t rest = items % blocks;
  int64_t units = rest * tiles;
  sk.tiles = tiles;
  if (tiles > 1 && tiles <= INT32_MAX) {
    auto [mul, shr] = unsignedDivisor(static_cast<uint32_t>(tiles));
    sk.tilesMul = static_cast<int32_t>(mul); // the same bits as an i32
    sk.tilesShr = shr;
  }
  if (tail && rest > 0 && tiles <= INT32_MAX && units < (int64_t(1) << 31)) {
    sk.units = units / blocks;
    sk.unitsRem = units % blocks;
  } else {
    sk.roundRem = rest;
  }
  return sk;
}

StreamKSchedule attentionStreamKSchedule(const std::vector<ParamSlot> &plan,
                                         const KernelMetadata &meta,
                                         const AttentionArgs &args,
                                         const LaunchGeometry &geometry) {
  int64_t blockN = 0;
  bool takesSchedule = false;
  for (const ParamSlot &slot : plan) {
    if (slot.source == ParamSource::KTensorMap)
      blockN = slot.boxRows;
    takesSchedule = takesSchedule || slot.source == ParamSource::SkRounds;
  }
  if (!takesSchedule || blockN < 1 || meta.blockM < 1)
    return {};
  int64_t seqQ = args.q.shape[2], seqKv = args.k.shape[2];
  int64_t items = (seqQ + meta.blockM - 1) / meta.blockM * args.q.shape[1] *
                  args.q.shape[0];
  return streamKSchedule(items, geometry.grid[0], (seqKv + blockN - 1) / blockN,
                         args.workspace != nullptr);
}

Status checkAttentionWorkspace(const AttentionArgs &args, size_t needed) {
  if (!args.workspace || needed == 0)
    return Status::ok();
  if (reinterpret_cast<uintptr_t>(args.workspace) % 256 != 0)
    return Status(ErrorCode::InvalidArgument,
                  "workspace: data pointer is not 256-byte aligned");
  if (args.workspaceBytes < needed)
    return Status(ErrorCode::InvalidArgument,
                  "workspace has " + std::to_string(args.workspaceBytes) +
                      " bytes; this launch needs " + std::to_string(needed) +
                      " (attention workspace size)");
  return Status::ok();
}

} // namespace attnc
