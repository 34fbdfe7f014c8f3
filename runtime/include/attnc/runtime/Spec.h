//===- Spec.h - Kernel specification, canonical form, cache key -*- C++ -*-===//
//
// A KernelSpec names one kernel variant without any MLIR: the runtime keys
// its caches on it and the compiler builds IR from it. Its canonical string
// prints every field in a fixed order; the cache key hashes that string with
// the compiler build id, so every knob that changes code changes the key.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_SPEC_H
#define ATTNC_RUNTIME_SPEC_H

#include "attnc/abi/GridRules.h"
#include "attnc/runtime/Json.h"
#include "attnc/runtime/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnc {

// Tile and schedule choices; 0 means "the compiler's default for the target".
struct TuningConfig {
  int64_t blockM = 0;
  int64_t blockN = 0;
  int64_t stages = 0;
  // Prefill (mma.sync): warps per block, rows per warp = block_m / warps.
  // Decode: warps along the keys of each K/V tile (1, 2, 4 or 8; 0 means
  // 1), each taking block_n / warps of its keys, their online-softmax
  // states merged in the block after the KV loop.
  int64_t warps = 0;
  // Prefill attention's GPU mapping: "" (auto: wgmma on sm_90a where the
  // variant allows it, else mma.sync), "wgmma" or "mma". In the canonical
  // string only when set, so untuned keys are unchanged.
  std::string mapping;
  // The wgmma mapping's K/V ring schedule: "" (the default), "barrier"
  // (every thread copies, one CTA barrier per tile), "mbarrier" (every
  // thread copies, per-stage full/empty mbarriers), "producer" (warp
  // specialisation: a producer warpgroup copies, setmaxnreg gives the
  // consumers its registers), "pingpong" (producer, and the consumer
  // warpgroups take turns on the tensor cores) or "tma" (pingpong whose
  // producer is one thread issuing TMA copies; the kernel takes tensor
  // maps the runtime encodes at launch). In the canonical string only when
  // set, as mapping.
  std::string kvSync;
  // The wgmma mapping's rescale of O when a row's running max grows: ""
  // (the default: "threshold" from head dim 128, "exact" below), "threshold"
  // (FlashAttention-4's: keep the old max, and O unscaled, until a row's max
  // grows by more than 2^8; exact, the probabilities are then at most 256) or
  // "exact" (a new max whenever it grows; the multiplies skipped only when no
  // row's max grew in the warp). In the canonical string only when set.
  std::string rescale;
  // Attention's grid on the wgmma mapping: "" (the compiler's choice:
  // heuristicTuning's, see TuningDb.h), "tiles" (one program per (query
  // tile, head, batch): grid rule attention_fwd_v1) or "persistent" (grid
  // rule attention_fwd_persistent_v1: min(work items, SMs) programs, each
  // looping over the items; needs kv_sync "tma"). In the canonical string
  // only when set.
  std::string grid;
  // How the wgmma mapping writes O: "" (the compiler's choice:
  // heuristicTuning's, "tma" on the tma schedule), "registers" (each
  // thread stores its accumulator fragments) or "tma" (each consumer
  // warpgroup stages its 64 rows in shared memory and one thread stores them
  // by a TMA copy of the o_tmap tensor-map parameter; needs kv_sync "tma").
  // In the canonical string only when set.
  std::string epilogue;
  // Row kernels: blocks that must fit one SM at once (ptxas caps registers
  // to fit; 0: no cap). Keyed for elementwise ops only.
  int64_t minBlocksPerSm = 0;

  bool operator==(const TuningConfig &) const = default;
};

// Sizes past which a spec is refused: beyond any model's, and small enough
// that the compiler finishes in seconds (a row of 10^9 elements or a tile
// of 10^6 keys once ran for minutes).
inline constexpr int64_t kMaxHidden = abi::kMaxRowLength; // row kernels' d
inline constexpr int64_t kMaxTileSize = 256; // attention/decode block_m, n
// Tokens per KV-cache page: a contiguous cache is one page per sequence, so
// the longest context a model serves (2^20 tokens).
inline constexpr int64_t kMaxPageSize = int64_t(1) << 20;
inline constexpr int64_t kMaxHeads = 4096; // heads, kv_heads

struct KernelSpec {
  std::string op = "attention_fwd";
  std::string dtype = "bf16"; // "bf16" | "fp16"
  int64_t heads = 0;
  int64_t kvHeads = 0; // divides heads (GQA/MQA)
  int64_t headDim = 0;
  bool causal = false;
  int64_t windowLeft = -1;     // -1: unbounded
  int64_t windowRight = -1;    // -1: unbounded
  double softcap = 0.0;        // 0: none
  std::optional<double> scale; // absent: 1/sqrt(headDim)
  bool hasLse = false;
  // Attention sinks (ops attention_fwd and decode): the launch passes one
  // f32 logit per query head (AttentionArgs::sinks, DecodeArgs::sinks) that
  // joins the softmax's denominator.
  bool sinks = false;
  // Varlen prefill (op attention_fwd; FlashAttention's
  // flash_attn_varlen_func): packed [total, H, D] Q/K/V/O with
  // cu_seqlens_q/k, one kernel for every batch composition
  // (AttentionArgs::cuSeqlensQ...). Non-persistent grids only.
  bool varlen = false;
  std::string arch = "sm_90a"; // "sm_80" | "sm_90a"
  std::string customIr;        // MLIR text when the spec came from a file
  TuningConfig tuning;
  // op "decode" only (0 elsewhere): the paged cache's page size and the most
  // query rows per sequence (speculative decoding).
  int64_t pageSize = 0;
  int64_t maxQLen = 0;
  // Fused elementwise ops ("silu_mul", "gelu_mul", "add_rmsnorm"): the row
  // length d (outputs are [rows, d]; the gated ops read [rows, 2d]) and
  // RMSNorm's epsilon. Attention ignores them (and leaves them out of its
  // canonical string); elementwise ops ignore the attention fields.
  int64_t hidden = 0;
  double eps = 1e-6;
  // op "rope" (vLLM's rotary_embedding; heads, kvHeads and headDim give the
  // query/key rows): rotated columns per head (0: headDim), NeoX or GPT-J
  // pairs, and the positions' integer width (64 or 32).
  int64_t rotaryDim = 0;
  bool isNeox = true;
  int64_t positionBits = 64;

  // The softmax scale the kernel applies.
  double effectiveScale() const;

  // Stable "key=value;..." form with every field; the scale is printed as
  // its effective value, so an absent scale and an explicit 1/sqrt(d) name
  // the same kernel. Custom IR enters as its 128-bit hash to keep the string
  // short enough for `attnc cache ls`.
  std::string canonical() const;

  bool operator==(const KernelSpec &) const = default;
};

// The rotated columns of a rope spec (rotaryDim, or headDim when 0).
int64_t effectiveRotaryDim(const KernelSpec &spec);

// Whether `op` names a fused elementwise (row) kernel.
bool isElementwiseOp(std::string_view op);

// Checks value ranges and the allowed sets of op, dtype and arch.
Status validateSpec(const KernelSpec &spec);

// Bytes per element of q/k/v/o for the spec's dtype.
int64_t elementSize(const KernelSpec &spec);

// JSON form used by spec files. Optional keys take the defaults above;
// "kv_heads" defaults to "heads"; unknown keys are errors.
Json specToJson(const KernelSpec &spec);
// The {"block_m", "block_n", "stages", "warps"[, "mapping", "kv_sync",
// "rescale", "grid", "epilogue", "min_blocks_per_sm"]} object of spec files and
// tuning databases; absent keys stay 0, unknown keys are errors.
Json tuningToJson(const TuningConfig &tuning);
Result<TuningConfig> tuningFromJson(const Json &value,
                                    const std::string &where);
Result<KernelSpec> specFromJson(const Json &value,
                                const std::string &where = "spec");

// Spec files: {"specs": [{...}, ...]}.
Result<std::vector<KernelSpec>> parseSpecFile(std::string_view text);
// Reads and parses a spec file: a regular file of at most kMaxSpecFileBytes
// (a FIFO or a device is an error, never a hang).
inline constexpr uint64_t kMaxSpecFileBytes = 16ull << 20;
Result<std::vector<KernelSpec>> readSpecFile(const std::string &path);
std::string writeSpecFile(const std::vector<KernelSpec> &specs);

// The cache key: 32 hex digits of hash(layout version, build id, canonical).
std::string cacheKey(std::string_view buildId, std::string_view canonicalSpec);

// Hash for in-memory maps keyed by the spec itself (cheaper than building
// the canonical string on every lookup).
struct KernelSpecHash {
  size_t operator()(const KernelSpec &spec) const;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_SPEC_H
