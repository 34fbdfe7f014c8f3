//===- Metadata.h - Kernel metadata stored beside the PTX -------*- C++ -*-===//
//
// What the runtime must know to launch a kernel it did not compile itself:
// entry name, launch geometry rule, shared memory and the parameter list.
// Stored as meta.json in each cache entry, with checksums of the payload
// files so a damaged entry is caught before anything is loaded.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_METADATA_H
#define ATTNC_RUNTIME_METADATA_H

#include "attnc/runtime/Json.h"
#include "attnc/runtime/Status.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnc {

// Bumped on any incompatible change of the meta.json schema.
// 2: XXH3-128 checksums; 3: block_n and kv_stages, which a decode launch
// reads.
constexpr int64_t kMetadataVersion = 3;

// TensorMap: a CUtensorMap (128 bytes, 64-byte aligned) the runtime builds
// for a TMA kernel and passes by value (a __grid_constant__ parameter).
enum class ParamKind { Ptr, I64, I32, F32, TensorMap };

const char *paramKindName(ParamKind kind);
std::optional<ParamKind> parseParamKind(std::string_view name);
// Bytes the parameter occupies in the kernel's parameter buffer.
size_t paramKindSize(ParamKind kind);

struct KernelParam {
  std::string name;
  ParamKind kind = ParamKind::Ptr;
  // TensorMap: rows of the box one TMA copy moves (the kernel's tile);
  // its columns and swizzle are fixed (attnc/abi/TensorMaps.h).
  int64_t boxRows = 0;
  bool operator==(const KernelParam &) const = default;
};

// A captured tensor of a score/mask mod (attn.attention's `captures`): its
// element type ("f32", "f16", "bf16", "i32", "i64" or "i8") and rank (1 to
// 4). Its parameters are abi::captureParamName's.
struct CaptureDesc {
  std::string dtype;
  int64_t rank = 0;
  bool operator==(const CaptureDesc &) const = default;
};

struct FileChecksum {
  std::string name; // file name inside the entry, e.g. "kernel.ptx"
  uint64_t size = 0;
  std::string xxh3; // XXH3-128 of the file, 32 hex digits
  bool operator==(const FileChecksum &) const = default;
};

struct KernelMetadata {
  std::string entry;                     // kernel symbol in the PTX
  std::string arch;                      // "sm_80", "sm_90a", ...
  std::array<int64_t, 3> block{1, 1, 1}; // threads per program
  std::string gridRule;                  // e.g. "attention_fwd_v1"
  int64_t blockM = 0;                    // query rows per program
  // The kernel's K/V tile (keys per loop iteration) and the depth of its
  // K/V ring, as the compiler chose them; 0 where not recorded. A decode
  // split kernel has both: the runtime picks the split count from them.
  int64_t blockN = 0;
  int64_t kvStages = 0;
  int64_t dynamicSmem = 0; // bytes of dynamic shared memory
  std::vector<KernelParam> params;
  // The tensors a launch passes for the kernel's captures, in order (empty
  // for kernels without).
  std::vector<CaptureDesc> captures;
  std::string spec;    // canonical spec string
  std::string buildId; // compiler build id
  // The GPU mapping the compiler chose ("wgmma", "mma.sync", ...) and why
  // (e.g. the reason for a fallback); empty when not recorded.
  std::string mapping;
  std::string mappingWhy;
  // Payload checksums; the compiler leaves this empty and the disk cache
  // fills it when it publishes an entry.
  std::vector<FileChecksum> files;

  const FileChecksum *findFile(std::string_view name) const;
  bool operator==(const KernelMetadata &) const = default;
};

// Structural checks (non-empty entry, sane block, unique parameter names).
Status validateMetadata(const KernelMetadata &meta);

Json metadataToJson(const KernelMetadata &meta);
Result<KernelMetadata> metadataFromJson(const Json &value,
                                        const std::string &where = "meta");
std::string writeMetadata(const KernelMetadata &meta);
Result<KernelMetadata> parseMetadata(std::string_view text,
                                     const std::string &where = "meta");

} // namespace attnc

#endif // ATTNC_RUNTIME_METADATA_H
