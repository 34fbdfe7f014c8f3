//===- LaunchAbi.cpp - Attention parameter packing and grid rule ----------===//

#include "attnc/runtime/Launch.h"

#include "attnc/runtime/Driver.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>

namespace attnc {

namespace {

// What the value behind each known parameter name is.
enum class ValueType { Pointer, Integer, Float, TensorMap };

ValueType valueType(abi::ParamType type) {
  switch (type) {
  case abi::ParamType::I64:
  case abi::ParamType::I32:
    return ValueType::Integer;
  case abi::ParamType::F32:
    return ValueType::Float;
  case abi::ParamType::TensorMap:
    return ValueType::TensorMap;
  default:
    return ValueType::Pointer;
  }
}

// ParamSource lists the contract's parameters, then the optional ones, in
// the abi tables' order.
constexpr size_t kContractParams = abi::kAttentionFwdParams.size();
static_assert(size_t(ParamSource::Workspace) + 1 ==
                  kContractParams + abi::kAttentionOptionalParams.size(),
              "ParamSource follows abi::kAttentionFwdParams and "
              "abi::kAttentionOptionalParams");
static_assert(
    abi::kAttentionOptionalParams[size_t(ParamSource::Scale) - kContractParams]
            .name == "scale" &&
    abi::kAttentionOptionalParams[size_t(ParamSource::KvBounds) -
                                  kContractParams]
            .name == abi::kAttentionKVBoundsParam &&
    abi::kAttentionOptionalParams[size_t(ParamSource::BlockTable) -
                                  kContractParams]
            .name == abi::kAttentionPagedParams[0].name &&
    abi::kAttentionOptionalParams[size_t(ParamSource::NumPages) -
                                  kContractParams]
            .name == abi::kAttentionPagedParams[3].name &&
    abi::kAttentionOptionalParams[size_t(ParamSource::QTensorMap) -
                                  kContractParams]
            .name == abi::kAttentionTensorMapParams[0] &&
    abi::kAttentionOptionalParams[size_t(ParamSource::SkRounds) -
                                  kContractParams]
            .name == abi::kAttentionStreamKParams[0] &&
    abi::kAttentionOptionalParams[size_t(ParamSource::Workspace) -
                                  kContractParams]
            .name == abi::kAttentionWorkspaceParam);

struct NamedSource {
  std::string_view name;
  ParamSource source;
  ValueType type;
};

std::optional<NamedSource> findSource(std::string_view name) {
  size_t i = abi::indexOf(abi::kAttentionFwdParams, name);
  if (i < kContractParams)
    return NamedSource{abi::kAttentionFwdParams[i].name, ParamSource(i),
                       valueType(abi::kAttentionFwdParams[i].type)};
  size_t j = abi::indexOf(abi::kAttentionOptionalParams, name);
  if (j < abi::kAttentionOptionalParams.size())
    return NamedSource{abi::kAttentionOptionalParams[j].name,
                       ParamSource(kContractParams + j),
                       valueType(abi::kAttentionOptionalParams[j].type)};
  return std::nullopt;
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
  case ParamSource::Sinks:
    return args.sinks;
  case ParamSource::CuSeqlensQ:
    return args.cuSeqlensQ;
  case ParamSource::CuSeqlensK:
    return args.cuSeqlensK;
  case ParamSource::KvBounds:
    return args.kvBounds;
  case ParamSource::BlockTable:
    return args.blockTable;
  case ParamSource::KvLens:
    return args.kvLens;
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
  // Varlen: the number of sequences and the longest lengths.
  case ParamSource::Batch:
    return args.cuSeqlensQ ? args.varlenBatch : args.q.shape[0];
  case ParamSource::SeqQ:
    return args.cuSeqlensQ ? args.maxSeqlenQ : args.q.shape[2];
  case ParamSource::SeqKv:
    return args.cuSeqlensQ ? args.maxSeqlenK : args.k.shape[2];
  // Paged: K/V are the caches [pages, Hkv, page_size, D].
  case ParamSource::MaxBlocks:
    return args.maxBlocks;
  case ParamSource::NumPages:
    return args.k.shape[0];
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

/// The CUtensorMap of a [B, H, S, D] view for TMA copies of boxes of
/// abi::kTensorMapBoxCols columns x `boxRows` rows in abi::kTensorMapSwizzle
/// (abi/TensorMaps.h); rows past S read as zeros, and a store (O's map)
/// leaves them unwritten.
CUtensorMapSwizzle swizzleMode(abi::TensorMapSwizzle swizzle) {
  switch (swizzle) {
  case abi::TensorMapSwizzle::None:
    return CU_TENSOR_MAP_SWIZZLE_NONE;
  case abi::TensorMapSwizzle::B32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case abi::TensorMapSwizzle::B64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case abi::TensorMapSwizzle::B128:
    break;
  }
  return CU_TENSOR_MAP_SWIZZLE_128B;
}

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
  constexpr int64_t kElem = abi::kTensorMapElementBytes,
                    kAlign = abi::kTensorMapAlignBytes;
  // An empty tensor (no keys at all, e.g. a varlen batch whose sequences
  // have none) is never copied from: the kernel runs no KV tile. The driver
  // refuses to encode it (a null address, a zero extent), so its map is
  // zeros.
  if (std::find(view.shape.begin(), view.shape.end(), 0) != view.shape.end()) {
    std::memset(out, 0, sizeof(CUtensorMap));
    return Status::ok();
  }
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
    if (bytes <= 0 || bytes % kAlign ||
        bytes >= abi::kTensorMapStrideLimitBytes)
      return Status(ErrorCode::InvalidArgument,
                    what() +
                        ": TMA needs every stride a positive multiple of " +
                        "16 bytes below 2^40; dim " + std::to_string(3 - d) +
                        " has " + std::to_string(bytes) + " bytes");
    strides[d - 1] = cuuint64_t(bytes);
    packed = std::max(packed, bytes * std::max<int64_t>(1, extent));
  }
  cuuint32_t box[4] = {cuuint32_t(abi::kTensorMapBoxCols), cuuint32_t(boxRows),
                       1, 1};
  cuuint32_t elementStrides[4] = {1, 1, 1, 1};
  CUresult r = driver->cuTensorMapEncodeTiled(
      static_cast<CUtensorMap *>(out),
      bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
      4, const_cast<void *>(view.data), dims, strides, box, elementStrides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzleMode(abi::kTensorMapSwizzle),
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return driver->check(r, "cuTensorMapEncodeTiled (" + what() + ")");
  return Status::ok();
}

} // namespace

std::vector<KernelParam> attentionFwdV1Params() {
  return contractParams(abi::kAttentionFwdParams);
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
    // A captured tensor's data, size or stride (validateMetadata checked
    // the index and dim against the metadata's captures).
    if (std::optional<abi::CaptureParam> cp =
            abi::parseCaptureParam(param.name)) {
      const bool data = cp->part == abi::CapturePart::Data;
      if (param.kind != (data ? ParamKind::Ptr : ParamKind::I64))
        return Status(ErrorCode::Unsupported,
                      "kernel parameter '" + param.name + "' has kind " +
                          paramKindName(param.kind) + "; expected " +
                          (data ? "ptr" : "i64"));
      ParamSlot slot{data ? ParamSource::CaptureData
                     : cp->part == abi::CapturePart::Size
                         ? ParamSource::CaptureSize
                         : ParamSource::CaptureStride,
                     param.kind, abi::kAttentionCapturePrefix};
      slot.capture = static_cast<uint8_t>(cp->index);
      slot.dim = static_cast<uint8_t>(cp->dim);
      plan.push_back(slot);
      continue;
    }
    std::optional<NamedSource> source = findSource(param.name);
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

/// The captured tensor a capture slot reads (validateCaptures checked that
/// the launch has each of the kernel's; a launch without them packs zeros).
static const CaptureArg &captureAt(const AttentionArgs &args,
                                   const ParamSlot &slot) {
  static const CaptureArg none;
  return slot.capture < args.numCaptures ? args.captures[slot.capture] : none;
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
      const void *p = slot.source == ParamSource::CaptureData
                          ? captureAt(args, slot).data
                          : pointerValue(slot.source, args);
      std::memcpy(&storage, &p, sizeof(p));
      break;
    }
    case ParamKind::I64: {
      int64_t value = slot.source == ParamSource::CaptureSize
                          ? captureAt(args, slot).shape[slot.dim]
                      : slot.source == ParamSource::CaptureStride
                          ? captureAt(args, slot).stride[slot.dim]
                          : integerValue(slot.source, args, schedule);
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
  const bool persistent = meta.gridRule == abi::kGridRuleAttentionFwdPersistent;
  if (!persistent && meta.gridRule != abi::kGridRuleAttentionFwd)
    return Status(ErrorCode::Unsupported,
                  "unknown grid rule '" + meta.gridRule + "'");
  if (meta.blockM < 1)
    return Status(ErrorCode::Unsupported,
                  "grid rule " + meta.gridRule + " needs block_m >= 1");
  // Varlen: one program row (or item row) per sequence, sized by the
  // longest; a shorter sequence's programs past its tiles end at once.
  const bool varlen = args.cuSeqlensQ != nullptr;
  const int64_t seqQ = varlen ? args.maxSeqlenQ : args.q.shape[2];
  const int64_t heads = args.q.shape[1];
  const int64_t batch = varlen ? args.varlenBatch : args.q.shape[0];
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
  return static_cast<size_t>(
      abi::streamKWorkspaceLayout(geometry.grid[0], meta.blockM, spec.headDim)
          .total);
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
  if (tiles <= INT32_MAX) {
    abi::MagicDivisor div = abi::magicDivisor(static_cast<uint32_t>(tiles));
    sk.tilesMul = static_cast<int32_t>(div.mul); // the same bits as an i32
    sk.tilesShr = div.shr;
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
  if (reinterpret_cast<uintptr_t>(args.workspace) % abi::kWorkspaceAlign != 0)
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
