//===- Metadata.cpp - Kernel metadata stored beside the PTX ---------------===//

#include "attnc/runtime/Metadata.h"

#include "attnc/abi/GridRules.h"
#include "attnc/abi/LaunchParams.h"
#include "attnc/abi/TensorMaps.h"
#include "attnc/runtime/JsonReader.h"

#include <cctype>
#include <set>

namespace attnc {

const char *paramKindName(ParamKind kind) {
  switch (kind) {
  case ParamKind::Ptr:
    return "ptr";
  case ParamKind::I64:
    return "i64";
  case ParamKind::I32:
    return "i32";
  case ParamKind::F32:
    return "f32";
  case ParamKind::TensorMap:
    return "tensormap";
  }
  return "?";
}

std::optional<ParamKind> parseParamKind(std::string_view name) {
  for (ParamKind kind : {ParamKind::Ptr, ParamKind::I64, ParamKind::I32,
                         ParamKind::F32, ParamKind::TensorMap})
    if (name == paramKindName(kind))
      return kind;
  return std::nullopt;
}

size_t paramKindSize(ParamKind kind) {
  if (kind == ParamKind::TensorMap)
    return size_t(abi::kTensorMapBytes);
  return kind == ParamKind::Ptr || kind == ParamKind::I64 ? 8 : 4;
}

const FileChecksum *KernelMetadata::findFile(std::string_view name) const {
  for (const FileChecksum &file : files)
    if (file.name == name)
      return &file;
  return nullptr;
}

namespace {
Status invalid(const std::string &message) {
  return Status(ErrorCode::ParseError, "invalid kernel metadata: " + message);
}

bool isIdentifier(const std::string &s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
          c == '.'))
      return false;
  return true;
}

bool isCaptureDtype(const std::string &dtype) {
  for (const char *name : {"f32", "f16", "bf16", "i32", "i64", "i8"})
    if (dtype == name)
      return true;
  return false;
}

bool isHex128(const std::string &s) {
  if (s.size() != 32)
    return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}
} // namespace

Status validateMetadata(const KernelMetadata &meta) {
  if (!isIdentifier(meta.entry))
    return invalid("entry \"" + meta.entry + "\" is not a kernel symbol name");
  if (meta.arch.empty())
    return invalid("arch is empty");
  int64_t threads = 1;
  for (int64_t extent : meta.block) {
    if (extent < 1 || extent > 1024)
      return invalid("block extents must be in [1, 1024]");
    threads *= extent;
  }
  if (threads > 1024)
    return invalid("block has " + std::to_string(threads) +
                   " threads; CUDA allows at most 1024");
  if (meta.gridRule.empty())
    return invalid("grid_rule is empty");
  if (meta.blockM < 0)
    return invalid("block_m must be >= 0");
  if (meta.blockN < 0 || meta.kvStages < 0)
    return invalid("block_n and kv_stages must be >= 0");
  if (meta.gridRule == abi::kGridRuleDecodeSplit &&
      (meta.blockN < 1 || meta.kvStages < 1))
    return invalid("grid rule " + meta.gridRule +
                   " needs block_n and kv_stages >= 1 (the split count is "
                   "chosen from them)");
  if (meta.dynamicSmem < 0 || meta.dynamicSmem > (int64_t(1) << 30))
    return invalid("dynamic_smem " + std::to_string(meta.dynamicSmem) +
                   " is out of range");
  std::set<std::string> names;
  for (const KernelParam &param : meta.params) {
    if (!isIdentifier(param.name))
      return invalid("parameter name \"" + param.name + "\" is not valid");
    if (!names.insert(param.name).second)
      return invalid("parameter \"" + param.name + "\" appears twice");
    if ((param.kind == ParamKind::TensorMap) != (param.boxRows > 0) ||
        param.boxRows > abi::kTensorMapMaxBoxRows)
      return invalid("parameter \"" + param.name +
                     "\": a tensormap needs box_rows 1 to " +
                     std::to_string(abi::kTensorMapMaxBoxRows) +
                     ", and only a tensormap has box_rows");
  }
  if (meta.captures.size() > abi::kMaxCaptures)
    return invalid("captures: " + std::to_string(meta.captures.size()) +
                   " captured tensors; at most " +
                   std::to_string(abi::kMaxCaptures));
  for (const CaptureDesc &capture : meta.captures)
    if (!isCaptureDtype(capture.dtype) || capture.rank < 1 ||
        capture.rank > int64_t(abi::kMaxCaptureRank))
      return invalid("captures: dtype \"" + capture.dtype + "\" and rank " +
                     std::to_string(capture.rank) +
                     " (expected f32, f16, bf16, i32, i64 or i8, rank 1 to " +
                     std::to_string(abi::kMaxCaptureRank) + ")");
  // A captured tensor's parameters name one of the captures listed and one
  // of its dims; its data is a pointer, its sizes and strides i64; and each
  // capture listed has all 1 + 2 x rank of them.
  size_t captureParams = 0, expectedParams = 0;
  for (const CaptureDesc &capture : meta.captures)
    expectedParams += 1 + 2 * size_t(capture.rank);
  for (const KernelParam &param : meta.params) {
    std::optional<abi::CaptureParam> cp = abi::parseCaptureParam(param.name);
    if (!cp)
      continue;
    ++captureParams;
    const bool data = cp->part == abi::CapturePart::Data;
    if (cp->index >= meta.captures.size() ||
        (!data && int64_t(cp->dim) >= meta.captures[cp->index].rank) ||
        param.kind != (data ? ParamKind::Ptr : ParamKind::I64))
      return invalid("parameter \"" + param.name +
                     "\" does not fit the captures listed (" +
                     std::to_string(meta.captures.size()) +
                     " captured tensors; data is ptr, sizes and strides "
                     "i64)");
  }
  if (captureParams != expectedParams)
    return invalid("captures: " + std::to_string(meta.captures.size()) +
                   " captured tensors need " + std::to_string(expectedParams) +
                   " parameters (data, sizes, strides); the kernel lists " +
                   std::to_string(captureParams));
  std::set<std::string> files;
  for (const FileChecksum &file : meta.files) {
    if (file.name.empty() || file.name.find('/') != std::string::npos ||
        file.name[0] == '.')
      return invalid("file name \"" + file.name + "\" is not valid");
    if (!files.insert(file.name).second)
      return invalid("file \"" + file.name + "\" appears twice");
    if (!isHex128(file.xxh3))
      return invalid("checksum of \"" + file.name +
                     "\" is not 32 lowercase hex digits");
  }
  return Status::ok();
}

Json metadataToJson(const KernelMetadata &meta) {
  Json::Array block;
  for (int64_t extent : meta.block)
    block.emplace_back(extent);
  Json params = Json::array();
  for (const KernelParam &param : meta.params) {
    Json p = Json::object();
    p.set("name", param.name);
    p.set("kind", paramKindName(param.kind));
    if (param.boxRows > 0)
      p.set("box_rows", param.boxRows);
    params.push(std::move(p));
  }
  Json captures = Json::array();
  for (const CaptureDesc &capture : meta.captures) {
    Json c = Json::object();
    c.set("dtype", capture.dtype);
    c.set("rank", capture.rank);
    captures.push(std::move(c));
  }
  Json files = Json::object();
  for (const FileChecksum &file : meta.files) {
    Json f = Json::object();
    f.set("size", static_cast<int64_t>(file.size));
    f.set("xxh3_128", file.xxh3);
    files.set(file.name, std::move(f));
  }
  Json out = Json::object();
  out.set("meta_version", kMetadataVersion);
  out.set("entry", meta.entry);
  out.set("arch", meta.arch);
  out.set("block", std::move(block));
  out.set("grid_rule", meta.gridRule);
  out.set("block_m", meta.blockM);
  if (meta.blockN > 0)
    out.set("block_n", meta.blockN);
  if (meta.kvStages > 0)
    out.set("kv_stages", meta.kvStages);
  out.set("dynamic_smem", meta.dynamicSmem);
  out.set("params", std::move(params));
  if (!meta.captures.empty())
    out.set("captures", std::move(captures));
  out.set("spec", meta.spec);
  out.set("build_id", meta.buildId);
  if (!meta.mapping.empty())
    out.set("mapping", meta.mapping);
  if (!meta.mappingWhy.empty())
    out.set("mapping_why", meta.mappingWhy);
  out.set("files", std::move(files));
  return out;
}

Result<KernelMetadata> metadataFromJson(const Json &value,
                                        const std::string &where) {
  KernelMetadata meta;
  JsonObjectReader reader(value, where);
  int64_t version = 0;
  reader.getInt("meta_version", version, true);
  if (version != kMetadataVersion) // type errors were recorded first
    reader.fail("meta_version", "unsupported version " +
                                    std::to_string(version) + " (expected " +
                                    std::to_string(kMetadataVersion) + ")");
  reader.getString("entry", meta.entry, true);
  reader.getString("arch", meta.arch, true);
  if (const Json *block = reader.getValue("block", Json::Kind::Array, true)) {
    const Json::Array &extents = block->asArray();
    bool ok = extents.size() == 3;
    for (size_t i = 0; ok && i < 3; ++i) {
      ok = extents[i].isInt();
      if (ok)
        meta.block[i] = extents[i].asInt();
    }
    if (!ok)
      reader.fail("block", "expected an array of 3 integers");
  }
  reader.getString("grid_rule", meta.gridRule, true);
  reader.getInt("block_m", meta.blockM, true);
  reader.getInt("block_n", meta.blockN, false);
  reader.getInt("kv_stages", meta.kvStages, false);
  reader.getInt("dynamic_smem", meta.dynamicSmem, true);
  if (const Json *params = reader.getValue("params", Json::Kind::Array, true)) {
    const Json::Array &items = params->asArray();
    for (size_t i = 0; i < items.size(); ++i) {
      std::string pwhere = where + ".params[" + std::to_string(i) + "]";
      JsonObjectReader paramReader(items[i], pwhere);
      KernelParam param;
      std::string kind;
      paramReader.getString("name", param.name, true);
      paramReader.getString("kind", kind, true);
      paramReader.getInt("box_rows", param.boxRows, false);
      ATTNC_RETURN_IF_ERROR(paramReader.finish());
      std::optional<ParamKind> parsed = parseParamKind(kind);
      if (!parsed)
        return Status(ErrorCode::ParseError,
                      pwhere + ".kind: unknown parameter kind \"" + kind +
                          "\" (expected ptr, i64, i32, f32 or tensormap)");
      param.kind = *parsed;
      meta.params.push_back(std::move(param));
    }
  }
  if (const Json *captures =
          reader.getValue("captures", Json::Kind::Array, false)) {
    const Json::Array &items = captures->asArray();
    for (size_t i = 0; i < items.size(); ++i) {
      JsonObjectReader captureReader(items[i], where + ".captures[" +
                                                   std::to_string(i) + "]");
      CaptureDesc capture;
      captureReader.getString("dtype", capture.dtype, true);
      captureReader.getInt("rank", capture.rank, true);
      ATTNC_RETURN_IF_ERROR(captureReader.finish());
      meta.captures.push_back(std::move(capture));
    }
  }
  reader.getString("spec", meta.spec, true);
  reader.getString("build_id", meta.buildId, true);
  reader.getString("mapping", meta.mapping, false);
  reader.getString("mapping_why", meta.mappingWhy, false);
  if (const Json *files = reader.getValue("files", Json::Kind::Object, true)) {
    for (const Json::Member &member : files->asObject()) {
      JsonObjectReader fileReader(member.second,
                                  where + ".files." + member.first);
      FileChecksum file;
      file.name = member.first;
      int64_t size = -1;
      fileReader.getInt("size", size, true);
      fileReader.getString("xxh3_128", file.xxh3, true);
      ATTNC_RETURN_IF_ERROR(fileReader.finish());
      if (size < 0)
        return Status(ErrorCode::ParseError,
                      where + ".files." + member.first + ".size is negative");
      file.size = static_cast<uint64_t>(size);
      meta.files.push_back(std::move(file));
    }
  }
  ATTNC_RETURN_IF_ERROR(reader.finish());
  Status valid = validateMetadata(meta);
  if (!valid.isOk())
    return Status(ErrorCode::ParseError, where + ": " + valid.message());
  return meta;
}

std::string writeMetadata(const KernelMetadata &meta) {
  return writeJson(metadataToJson(meta));
}

Result<KernelMetadata> parseMetadata(std::string_view text,
                                     const std::string &where) {
  Result<Json> json = parseJson(text);
  if (!json.isOk())
    return Status(ErrorCode::ParseError,
                  where + ": " + json.status().message());
  return metadataFromJson(*json, where);
}

} // namespace attnc
