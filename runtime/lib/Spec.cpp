//===- Spec.cpp - Kernel specification, canonical form, cache key ---------===//

#include "attnc/runtime/Spec.h"

#include "FileSystem.h"
#include "attnc/abi/Masks.h"
#include "attnc/runtime/Hash.h"
#include "attnc/runtime/JsonReader.h"

#include <charconv>
#include <cmath>
#include <functional>

namespace attnc {

namespace {

// Bumped when the key's hash, the entry layout or the canonical form
// changes, so old entries are never read by a runtime that would
// misinterpret them (v2: XXH3-128 keys and checksums, meta_version 2; v3:
// meta_version 3).
constexpr std::string_view kCacheLayoutVersion = "attnc-cache-v3";

// Shortest decimal that reads back to the same double; deterministic, so
// the canonical string (and the key) is reproducible on any machine.
std::string formatDouble(double value) {
  if (value == 0.0)
    return "0"; // also folds -0.0
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  (void)ec;
  return std::string(buf, ptr);
}

/// The shortest decimal that reads back as the same float.
std::string formatFloat(float value) {
  if (value == 0.0f)
    return "0";
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  (void)ec;
  return std::string(buf, ptr);
}

bool oneOf(const std::string &value, std::initializer_list<const char *> set) {
  for (const char *item : set)
    if (value == item)
      return true;
  return false;
}

Status invalid(const std::string &message) {
  return Status(ErrorCode::InvalidArgument, "invalid kernel spec: " + message);
}

} // namespace

double KernelSpec::effectiveScale() const {
  if (scale && !std::isnan(*scale))
    return *scale;
  return headDim > 0 ? 1.0 / std::sqrt(static_cast<double>(headDim)) : 0.0;
}

bool isElementwiseOp(std::string_view op) {
  return op == "silu_mul" || op == "gelu_mul" || op == "add_rmsnorm" ||
         op == "rope";
}

int64_t effectiveRotaryDim(const KernelSpec &spec) {
  return spec.rotaryDim > 0 ? spec.rotaryDim : spec.headDim;
}

std::string KernelSpec::canonical() const {
  std::string out;
  out.reserve(256);
  auto field = [&](const char *name, const std::string &value) {
    if (!out.empty())
      out += ';';
    out += name;
    out += '=';
    out += value;
  };
  auto intField = [&](const char *name, int64_t value) {
    field(name, std::to_string(value));
  };
  field("op", op);
  field("dtype", dtype);
  intField("heads", heads);
  intField("kv_heads", kvHeads);
  intField("head_dim", headDim);
  intField("causal", causal ? 1 : 0);
  intField("window_left", windowLeft);
  // Causal with a window (left, -1) is causal with (left, 0)
  // (abi::windowRight; the compiler builds it so): one kernel.
  intField("window_right", abi::windowRight(causal, windowLeft, windowRight));
  field("softcap", formatDouble(softcap));
  // The kernel multiplies in f32: scales that round to the same float
  // (1/sqrt(128) computed as D**-0.5 or as 1/sqrt(D)) are one kernel.
  field("scale", formatFloat(float(effectiveScale())));
  intField("has_lse", hasLse ? 1 : 0);
  // Only when set: the specs without sinks keep their strings (and keys).
  if (sinks)
    intField("sinks", 1);
  // Likewise: the specs without varlen keep their keys.
  if (varlen)
    intField("varlen", 1);
  field("arch", arch);
  field("custom_ir", customIr.empty() ? "none" : xxh3_128(customIr).hex());
  intField("block_m", tuning.blockM);
  intField("block_n", tuning.blockN);
  intField("stages", tuning.stages);
  intField("warps", tuning.warps);
  if (!tuning.mapping.empty())
    field("mapping", tuning.mapping);
  if (!tuning.kvSync.empty())
    field("kv_sync", tuning.kvSync);
  if (!tuning.rescale.empty())
    field("rescale", tuning.rescale);
  if (!tuning.grid.empty())
    field("grid", tuning.grid);
  if (!tuning.epilogue.empty())
    field("epilogue", tuning.epilogue);
  if (isElementwiseOp(op)) {
    intField("hidden", hidden);
    field("eps", formatDouble(op == "add_rmsnorm" ? eps : 0.0));
    intField("min_blocks_per_sm", tuning.minBlocksPerSm);
    if (op == "rope") {
      intField("rotary_dim", effectiveRotaryDim(*this));
      intField("is_neox", isNeox ? 1 : 0);
      intField("position_bits", positionBits);
    }
  }
  if (op == "decode") { // attention specs keep their keys
    intField("page_size", pageSize);
    intField("max_q_len", maxQLen);
  }
  if (op == "kv_append" || (op == "attention_fwd" && pageSize))
    intField("page_size", pageSize); // a paged varlen attention's
  return out;
}

namespace {

Status validateRopeSpec(const KernelSpec &spec) {
  if (spec.heads < 1 || spec.kvHeads < 1 || spec.heads > kMaxHeads ||
      spec.kvHeads > kMaxHeads || spec.headDim > 1024)
    return invalid(
        "rope needs heads and kv_heads 1 to " + std::to_string(kMaxHeads) +
        " and head_dim at most 1024 (got " + std::to_string(spec.heads) + ", " +
        std::to_string(spec.kvHeads) + ", " + std::to_string(spec.headDim) +
        ")");
  if (spec.headDim < 8 || spec.headDim % 8 != 0)
    return invalid("rope's head_dim (head size) must be a positive multiple "
                   "of 8, got " +
                   std::to_string(spec.headDim));
  const int64_t rot = effectiveRotaryDim(spec), multiple = spec.isNeox ? 16 : 8;
  if (rot > spec.headDim || rot % multiple != 0)
    return invalid(
        "rotary_dim must be at most head_dim (" + std::to_string(spec.headDim) +
        ") and a multiple of " + std::to_string(multiple) + " (" +
        (spec.isNeox ? "NeoX" : "GPT-J") + "), got " + std::to_string(rot));
  if (spec.positionBits != 32 && spec.positionBits != 64)
    return invalid("position_bits must be 32 or 64, got " +
                   std::to_string(spec.positionBits));
  return Status::ok();
}

Status validateElementwiseSpec(const KernelSpec &spec) {
  if (!oneOf(spec.dtype, {"bf16", "fp16"}))
    return invalid("dtype \"" + spec.dtype +
                   "\" is not supported (expected \"bf16\" or \"fp16\")");
  if (spec.op == "rope") {
    if (Status s = validateRopeSpec(spec); !s.isOk())
      return s;
  } else if (spec.hidden < 8 || spec.hidden % 8 != 0 ||
             spec.hidden > kMaxHidden)
    return invalid("hidden must be a positive multiple of 8 (16-byte rows) "
                   "up to " +
                   std::to_string(kMaxHidden) + ", got " +
                   std::to_string(spec.hidden));
  if (spec.op == "add_rmsnorm" && (!std::isfinite(spec.eps) || spec.eps <= 0))
    return invalid("eps must be finite and > 0 (got " + formatDouble(spec.eps) +
                   ")");
  if (!oneOf(spec.arch, {"sm_80", "sm_90a"}))
    return invalid("arch \"" + spec.arch +
                   "\" is not supported (expected \"sm_80\" or \"sm_90a\")");
  const int64_t t = spec.tuning.blockN, r = spec.tuning.blockM;
  if (t < 0 || r < 0 || (t > 0 && (t & (t - 1)) != 0) || t > 1024 || r > 1024)
    return invalid("tuning.block_n (threads per row) must be 0 or a power of "
                   "two up to 1024 and tuning.block_m (rows per program) 0 to "
                   "1024 (got " +
                   std::to_string(t) + ", " + std::to_string(r) + ")");
  if (spec.tuning.minBlocksPerSm < 0 || spec.tuning.minBlocksPerSm > 32)
    return invalid("tuning.min_blocks_per_sm must be 0 to 32 (got " +
                   std::to_string(spec.tuning.minBlocksPerSm) + ")");
  return Status::ok();
}

} // namespace

Status validateSpec(const KernelSpec &spec) {
  if (spec.sinks && spec.op != "attention_fwd" && spec.op != "decode")
    return invalid("sinks are an attention_fwd and decode field; op \"" +
                   spec.op + "\" takes none");
  if (spec.varlen && spec.op != "attention_fwd")
    return invalid("varlen is an attention_fwd field; op \"" + spec.op +
                   "\" takes none");
  if (!spec.tuning.kvSync.empty()) {
    if (!oneOf(spec.tuning.kvSync,
               {"barrier", "mbarrier", "producer", "pingpong", "tma"}))
      return invalid("tuning.kv_sync \"" + spec.tuning.kvSync +
                     "\" is not supported (expected \"barrier\", "
                     "\"mbarrier\", \"producer\", \"pingpong\", \"tma\" "
                     "or empty for the default)");
    if (spec.op != "attention_fwd")
      return invalid("tuning.kv_sync applies to op \"attention_fwd\" only");
    if (spec.tuning.kvSync != "barrier" && spec.arch != "sm_90a")
      return invalid("tuning.kv_sync \"" + spec.tuning.kvSync +
                     "\" needs arch \"sm_90a\" (got \"" + spec.arch + "\")");
  }
  // A knob of the wgmma mapping: one of two values, or empty for the
  // default; attention_fwd on sm_90a only.
  auto wgmmaKnob = [&](const char *name, const std::string &value,
                       const char *a, const char *b) -> Status {
    if (!oneOf(value, {a, b}))
      return invalid("tuning." + std::string(name) + " \"" + value +
                     "\" is not supported (expected \"" + a + "\", \"" + b +
                     "\" or empty for the default)");
    if (spec.op != "attention_fwd" || spec.arch != "sm_90a")
      return invalid("tuning." + std::string(name) +
                     " applies to op \"attention_fwd\" on arch \"sm_90a\" "
                     "only (the wgmma mapping)");
    return Status::ok();
  };
  if (!spec.tuning.rescale.empty())
    ATTNC_RETURN_IF_ERROR(
        wgmmaKnob("rescale", spec.tuning.rescale, "exact", "threshold"));
  if (!spec.tuning.grid.empty()) {
    ATTNC_RETURN_IF_ERROR(
        wgmmaKnob("grid", spec.tuning.grid, "tiles", "persistent"));
    // Persistent CTAs exist on the TMA schedule only; whether the variant
    // gets wgmma and, with kv_sync unset, tma is the compiler's to say.
    if (spec.tuning.grid == "persistent" && !spec.tuning.kvSync.empty() &&
        spec.tuning.kvSync != "tma")
      return invalid("tuning.grid \"persistent\" needs tuning.kv_sync "
                     "\"tma\" (got \"" +
                     spec.tuning.kvSync + "\")");
    if (spec.tuning.grid == "persistent" && spec.tuning.mapping == "mma")
      return invalid("tuning.grid \"persistent\" needs the wgmma mapping "
                     "(tuning.mapping is \"mma\")");
  }
  if (!spec.tuning.epilogue.empty()) {
    ATTNC_RETURN_IF_ERROR(
        wgmmaKnob("epilogue", spec.tuning.epilogue, "registers", "tma"));
    // The TMA store of O exists on the TMA schedule only (its o_tmap beside
    // q/k/v's); as for the grid, whether kv_sync unset resolves to tma is
    // the compiler's to say.
    if (spec.tuning.epilogue == "tma" && !spec.tuning.kvSync.empty() &&
        spec.tuning.kvSync != "tma")
      return invalid("tuning.epilogue \"tma\" needs tuning.kv_sync \"tma\" "
                     "(got \"" +
                     spec.tuning.kvSync + "\")");
    if (spec.tuning.epilogue == "tma" && spec.tuning.mapping == "mma")
      return invalid("tuning.epilogue \"tma\" needs the wgmma mapping "
                     "(tuning.mapping is \"mma\")");
  }
  if (isElementwiseOp(spec.op))
    return validateElementwiseSpec(spec);
  if (!oneOf(spec.op, {"attention_fwd", "decode", "lse_merge", "kv_append"}))
    return invalid("op \"" + spec.op + "\" is not supported (expected " +
                   "\"attention_fwd\", \"decode\", \"lse_merge\", "
                   "\"kv_append\", \"silu_mul\", \"gelu_mul\", "
                   "\"add_rmsnorm\" or \"rope\")");
  if (spec.op == "kv_append") {
    // K/V rows into a paged cache: heads are the cache's KV heads.
    if (spec.pageSize < 1 || spec.pageSize > kMaxPageSize)
      return invalid("kv_append needs page_size 1 to " +
                     std::to_string(kMaxPageSize) + " (got " +
                     std::to_string(spec.pageSize) + ")");
    if (spec.maxQLen != 0)
      return invalid("max_q_len is a decode field; op \"kv_append\" takes 0");
    if (spec.headDim % 8 != 0)
      return invalid("kv_append copies rows in 16-byte vectors: head_dim "
                     "must be a multiple of 8 (got " +
                     std::to_string(spec.headDim) + ")");
  } else if (spec.op == "decode") {
    if (spec.pageSize < 1 || spec.pageSize > kMaxPageSize)
      return invalid("decode needs page_size 1 to " +
                     std::to_string(kMaxPageSize) + " (got " +
                     std::to_string(spec.pageSize) + ")");
    if (spec.maxQLen < 1 || spec.maxQLen > 16)
      return invalid("decode needs max_q_len in 1..16 (got " +
                     std::to_string(spec.maxQLen) + ")");
    if (spec.kvHeads >= 1 && spec.heads % spec.kvHeads == 0 &&
        spec.heads / spec.kvHeads * spec.maxQLen > 64)
      return invalid("decode packs heads / kv_heads x max_q_len query rows "
                     "into one program, at most 64 (got " +
                     std::to_string(spec.heads / spec.kvHeads) + " x " +
                     std::to_string(spec.maxQLen) + ")");
    // tuning.warps: warps along the keys, 16 or more keys each.
    const int64_t keyWarps = spec.tuning.warps;
    if (keyWarps != 0 && keyWarps != 1 && keyWarps != 2 && keyWarps != 4 &&
        keyWarps != 8)
      return invalid("decode's tuning.warps (warps along the keys of a K/V "
                     "tile) must be 1, 2, 4 or 8, 0 meaning 1 (got " +
                     std::to_string(keyWarps) + ")");
    if (keyWarps > 1 && spec.tuning.blockN % (16 * keyWarps) != 0)
      return invalid("decode with tuning.warps " + std::to_string(keyWarps) +
                     " needs tuning.block_n a multiple of " +
                     std::to_string(16 * keyWarps) +
                     " (16 keys per warp; got " +
                     std::to_string(spec.tuning.blockN) + ")");
  } else if (spec.op == "attention_fwd" && spec.pageSize != 0) {
    // Paged prefill: varlen queries over a paged cache.
    if (!spec.varlen)
      return invalid("page_size on attention_fwd (a paged KV cache) needs "
                     "varlen=true: paged prefill takes packed queries");
    if (spec.pageSize < 1 || spec.pageSize > kMaxPageSize)
      return invalid("page_size must be 1 to " + std::to_string(kMaxPageSize) +
                     " (got " + std::to_string(spec.pageSize) + ")");
    if (spec.maxQLen != 0)
      return invalid("max_q_len is a decode field; attention_fwd takes 0");
  } else if (spec.pageSize != 0 || spec.maxQLen != 0) {
    return invalid("page_size and max_q_len are decode (and paged varlen "
                   "attention_fwd) fields; op \"" +
                   spec.op + "\" takes 0");
  }
  if (!oneOf(spec.dtype, {"bf16", "fp16"}))
    return invalid("dtype \"" + spec.dtype +
                   "\" is not supported (expected \"bf16\" or \"fp16\")");
  if (spec.heads < 1)
    return invalid("heads must be >= 1 (got " + std::to_string(spec.heads) +
                   ")");
  if (spec.kvHeads < 1)
    return invalid("kv_heads must be >= 1 (got " +
                   std::to_string(spec.kvHeads) + ")");
  if (spec.heads > kMaxHeads)
    return invalid("heads must be at most " + std::to_string(kMaxHeads) +
                   " (got " + std::to_string(spec.heads) + ")");
  if (spec.heads % spec.kvHeads != 0)
    return invalid("heads (" + std::to_string(spec.heads) +
                   ") must be a multiple of kv_heads (" +
                   std::to_string(spec.kvHeads) + ")");
  if (spec.headDim < 1)
    return invalid("head_dim must be >= 1 (got " +
                   std::to_string(spec.headDim) + ")");
  if (spec.windowLeft < -1)
    return invalid("window_left must be >= 0, or -1 for unbounded (got " +
                   std::to_string(spec.windowLeft) + ")");
  if (spec.windowRight < -1)
    return invalid("window_right must be >= 0, or -1 for unbounded (got " +
                   std::to_string(spec.windowRight) + ")");
  if (!std::isfinite(spec.softcap) || spec.softcap < 0)
    return invalid("softcap must be finite and >= 0, 0 meaning none (got " +
                   formatDouble(spec.softcap) + ")");
  if (spec.scale && !std::isnan(*spec.scale) &&
      (!std::isfinite(*spec.scale) || *spec.scale <= 0))
    return invalid("scale must be finite and > 0 (got " +
                   formatDouble(*spec.scale) + ")");
  if (!oneOf(spec.arch, {"sm_80", "sm_90a"}))
    return invalid("arch \"" + spec.arch +
                   "\" is not supported (expected \"sm_80\" or \"sm_90a\")");
  const std::pair<const char *, int64_t> tuning[] = {
      {"block_m", spec.tuning.blockM},
      {"block_n", spec.tuning.blockN},
      {"stages", spec.tuning.stages},
      {"warps", spec.tuning.warps}};
  for (auto [name, value] : tuning)
    if (value < 0)
      return invalid(std::string("tuning.") + name +
                     " must be >= 0, 0 meaning default (got " +
                     std::to_string(value) + ")");
  if (spec.tuning.blockM > kMaxTileSize || spec.tuning.blockN > kMaxTileSize ||
      spec.tuning.stages > 8 || spec.tuning.warps > 32)
    return invalid("tuning.block_m and tuning.block_n must be at most " +
                   std::to_string(kMaxTileSize) +
                   ", tuning.stages at most 8 and tuning.warps at most 32 "
                   "(got " +
                   std::to_string(spec.tuning.blockM) + ", " +
                   std::to_string(spec.tuning.blockN) + ", " +
                   std::to_string(spec.tuning.stages) + ", " +
                   std::to_string(spec.tuning.warps) + ")");
  if (!spec.tuning.mapping.empty()) {
    if (!oneOf(spec.tuning.mapping, {"wgmma", "mma"}))
      return invalid("tuning.mapping \"" + spec.tuning.mapping +
                     "\" is not supported (expected \"wgmma\", \"mma\" or "
                     "empty for the compiler's choice)");
    if (spec.op != "attention_fwd")
      return invalid("tuning.mapping applies to op \"attention_fwd\" only");
    if (spec.tuning.mapping == "wgmma" && spec.arch != "sm_90a")
      return invalid("tuning.mapping \"wgmma\" needs arch \"sm_90a\" (got \"" +
                     spec.arch + "\")");
  }
  return Status::ok();
}

int64_t elementSize(const KernelSpec &spec) {
  (void)spec; // bf16 and fp16 are both two bytes.
  return 2;
}

Json tuningToJson(const TuningConfig &tuning) {
  Json out = Json::object();
  out.set("block_m", tuning.blockM);
  out.set("block_n", tuning.blockN);
  out.set("stages", tuning.stages);
  out.set("warps", tuning.warps);
  if (!tuning.mapping.empty())
    out.set("mapping", tuning.mapping);
  if (!tuning.kvSync.empty())
    out.set("kv_sync", tuning.kvSync);
  if (!tuning.rescale.empty())
    out.set("rescale", tuning.rescale);
  if (!tuning.grid.empty())
    out.set("grid", tuning.grid);
  if (!tuning.epilogue.empty())
    out.set("epilogue", tuning.epilogue);
  if (tuning.minBlocksPerSm != 0)
    out.set("min_blocks_per_sm", tuning.minBlocksPerSm);
  return out;
}

Result<TuningConfig> tuningFromJson(const Json &value,
                                    const std::string &where) {
  TuningConfig tuning;
  JsonObjectReader reader(value, where);
  reader.getInt("block_m", tuning.blockM, false);
  reader.getInt("block_n", tuning.blockN, false);
  reader.getInt("stages", tuning.stages, false);
  reader.getInt("warps", tuning.warps, false);
  reader.getString("mapping", tuning.mapping, false);
  reader.getString("kv_sync", tuning.kvSync, false);
  reader.getString("rescale", tuning.rescale, false);
  reader.getString("grid", tuning.grid, false);
  reader.getString("epilogue", tuning.epilogue, false);
  reader.getInt("min_blocks_per_sm", tuning.minBlocksPerSm, false);
  ATTNC_RETURN_IF_ERROR(reader.finish());
  return tuning;
}

Json specToJson(const KernelSpec &spec) {
  Json tuning = tuningToJson(spec.tuning);

  Json out = Json::object();
  out.set("op", spec.op);
  out.set("dtype", spec.dtype);
  out.set("heads", spec.heads);
  out.set("kv_heads", spec.kvHeads);
  out.set("head_dim", spec.headDim);
  out.set("causal", spec.causal);
  out.set("window_left", spec.windowLeft);
  out.set("window_right", spec.windowRight);
  out.set("softcap", spec.softcap);
  if (spec.scale && !std::isnan(*spec.scale))
    out.set("scale", *spec.scale);
  else
    out.set("scale", nullptr);
  out.set("has_lse", spec.hasLse);
  if (spec.sinks)
    out.set("sinks", true);
  if (spec.varlen)
    out.set("varlen", true);
  out.set("arch", spec.arch);
  out.set("custom_ir", spec.customIr);
  out.set("tuning", std::move(tuning));
  if (isElementwiseOp(spec.op)) {
    out.set("hidden", spec.hidden);
    out.set("eps", spec.eps);
  }
  if (spec.op == "rope") {
    out.set("rotary_dim", spec.rotaryDim);
    out.set("is_neox", spec.isNeox);
    out.set("position_bits", spec.positionBits);
  }
  if (spec.op == "decode") {
    out.set("page_size", spec.pageSize);
    out.set("max_q_len", spec.maxQLen);
  }
  if (spec.op == "kv_append" || (spec.op == "attention_fwd" && spec.pageSize))
    out.set("page_size", spec.pageSize);
  return out;
}

Result<KernelSpec> specFromJson(const Json &value, const std::string &where) {
  KernelSpec spec;
  JsonObjectReader reader(value, where);
  reader.getString("op", spec.op, false);
  // Elementwise ops need a row length instead of the attention shape.
  const bool rows = isElementwiseOp(spec.op) && spec.op != "rope";
  reader.getString("dtype", spec.dtype, true);
  reader.getInt("heads", spec.heads, !rows);
  spec.kvHeads = spec.heads;
  reader.getInt("kv_heads", spec.kvHeads, false);
  reader.getInt("head_dim", spec.headDim, !rows);
  reader.getInt("hidden", spec.hidden, rows);
  reader.getNumber("eps", spec.eps, false);
  reader.getInt("rotary_dim", spec.rotaryDim, false);
  reader.getBool("is_neox", spec.isNeox, false);
  reader.getInt("position_bits", spec.positionBits, false);
  reader.getBool("causal", spec.causal, false);
  reader.getInt("window_left", spec.windowLeft, false);
  reader.getInt("window_right", spec.windowRight, false);
  reader.getNumber("softcap", spec.softcap, false);
  if (const Json *scale = reader.getAny("scale", false)) {
    if (scale->isNumber())
      spec.scale = scale->asDouble();
    else if (!scale->isNull())
      reader.fail("scale", std::string("expected number or null but found ") +
                               jsonKindName(scale->kind()));
  }
  reader.getBool("has_lse", spec.hasLse, false);
  reader.getBool("sinks", spec.sinks, false);
  reader.getBool("varlen", spec.varlen, false);
  reader.getString("arch", spec.arch, false);
  reader.getString("custom_ir", spec.customIr, false);
  if (const Json *tuning =
          reader.getValue("tuning", Json::Kind::Object, false)) {
    ATTNC_ASSIGN_OR_RETURN(spec.tuning,
                           tuningFromJson(*tuning, where + ".tuning"));
  }
  reader.getInt("page_size", spec.pageSize, false);
  reader.getInt("max_q_len", spec.maxQLen, false);
  if (spec.op == "decode" && spec.maxQLen == 0)
    spec.maxQLen = 1; // one new token per sequence unless told
  ATTNC_RETURN_IF_ERROR(reader.finish());
  Status valid = validateSpec(spec);
  if (!valid.isOk())
    return Status(ErrorCode::InvalidArgument, where + ": " + valid.message());
  return spec;
}

Result<std::vector<KernelSpec>> parseSpecFile(std::string_view text) {
  ATTNC_ASSIGN_OR_RETURN(Json document, parseJson(text));
  JsonObjectReader reader(document, "spec file");
  const Json *list = reader.getValue("specs", Json::Kind::Array, true);
  ATTNC_RETURN_IF_ERROR(reader.finish());
  std::vector<KernelSpec> specs;
  const Json::Array &items = list->asArray();
  for (size_t i = 0; i < items.size(); ++i) {
    ATTNC_ASSIGN_OR_RETURN(
        KernelSpec spec,
        specFromJson(items[i], "specs[" + std::to_string(i) + "]"));
    specs.push_back(std::move(spec));
  }
  return specs;
}

Result<std::vector<KernelSpec>> readSpecFile(const std::string &path) {
  ATTNC_ASSIGN_OR_RETURN(std::string text,
                         fs::readFile(path, kMaxSpecFileBytes));
  return parseSpecFile(text);
}

std::string writeSpecFile(const std::vector<KernelSpec> &specs) {
  Json list = Json::array();
  for (const KernelSpec &spec : specs)
    list.push(specToJson(spec));
  Json document = Json::object();
  document.set("specs", std::move(list));
  return writeJson(document);
}

std::string cacheKey(std::string_view buildId, std::string_view canonicalSpec) {
  FieldHasher hasher;
  hasher.updateField(kCacheLayoutVersion);
  hasher.updateField(buildId);
  hasher.updateField(canonicalSpec);
  return hasher.digest().hex();
}

size_t KernelSpecHash::operator()(const KernelSpec &spec) const {
  size_t h = 0;
  auto mix = [&h](size_t value) {
    // boost::hash_combine's mixing step.
    h ^= value + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  std::hash<std::string> hashString;
  std::hash<int64_t> hashInt;
  std::hash<double> hashDouble;
  mix(hashString(spec.op));
  mix(hashString(spec.dtype));
  mix(hashInt(spec.heads));
  mix(hashInt(spec.kvHeads));
  mix(hashInt(spec.headDim));
  mix(spec.causal);
  mix(hashInt(spec.windowLeft));
  mix(hashInt(spec.windowRight));
  mix(hashDouble(spec.softcap));
  mix(spec.scale ? hashDouble(*spec.scale) : 0x5ca1e);
  mix(spec.hasLse);
  mix(spec.sinks);
  if (spec.varlen)
    mix(0x7a71e4);
  mix(hashString(spec.arch));
  mix(hashString(spec.customIr));
  mix(hashInt(spec.tuning.blockM));
  mix(hashInt(spec.tuning.blockN));
  mix(hashInt(spec.tuning.stages));
  mix(hashInt(spec.tuning.warps));
  mix(hashString(spec.tuning.mapping));
  mix(hashString(spec.tuning.kvSync));
  mix(hashString(spec.tuning.rescale));
  mix(hashString(spec.tuning.grid));
  mix(hashString(spec.tuning.epilogue));
  mix(hashInt(spec.tuning.minBlocksPerSm));
  mix(hashInt(spec.rotaryDim));
  mix(hashInt(spec.isNeox ? 1 : 0));
  mix(hashInt(spec.positionBits));
  mix(hashInt(spec.hidden));
  mix(hashDouble(spec.eps));
  mix(hashInt(spec.pageSize));
  mix(hashInt(spec.maxQLen));
  return h;
}

} // namespace attnc
