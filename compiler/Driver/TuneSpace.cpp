//===- TuneSpace.cpp - the candidate configurations `attnc tune` sweeps ---===//
#include "compiler/Driver/TuneSpace.h"

#include "attnc/runtime/Spec.h"
#include "compiler/Conversion/TileToGPU/WGMMASupport.h"

#include <algorithm>
#include <charconv>

namespace attnc {

namespace {

std::vector<std::string> numbers(std::initializer_list<int64_t> values) {
  std::vector<std::string> out;
  for (int64_t v : values)
    out.push_back(std::to_string(v));
  return out;
}

int64_t toInt(const std::string &text) {
  int64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

} // namespace

int64_t smemLimitBytes(const std::string &arch) {
  // sm_90: 227 KiB; sm_80 (A100): 163 KiB.
  return arch == "sm_90a" ? wgmma::kSmemLimit : 163 * 1024;
}

Result<std::vector<TuneKnob>>
tuneKnobs(const KernelSpec &spec,
          const std::map<std::string, std::vector<std::string>> &overrides) {
  std::vector<TuneKnob> knobs;
  auto knob = [&](std::string name, std::vector<std::string> values,
                  std::function<void(TuneCandidate &, int64_t)> set) {
    knobs.push_back(
        {std::move(name), std::move(values),
         [set](TuneCandidate &c, const std::string &v) { set(c, toInt(v)); }});
  };
  if (spec.op == "decode") {
    // The split kernel's key tile (64 spills at D = 128 on sm_90a: kept in
    // the sweep so that the plan shows it dropped), and the split count the
    // runtime launches with (0: its own choice from the SM count).
    knob("block_n", numbers({16, 32, 64}),
         [](TuneCandidate &c, int64_t v) { c.tuning.blockN = v; });
    knob("splits", numbers({0, 4, 8, 16, 32, 64, 128}),
         [](TuneCandidate &c, int64_t v) { c.splits = v; });
    // The K/V ring depth (0: the compiler's default, 3).
    knob("stages", numbers({0, 1, 2}),
         [](TuneCandidate &c, int64_t v) { c.tuning.stages = v; });
    // Warps along the keys of each tile (0: one); not swept by default
    // (--knob warps=0,4 --knob block_n=128 asks for them).
    knob("warps", numbers({0}),
         [](TuneCandidate &c, int64_t v) { c.tuning.warps = v; });
  } else if (spec.op == "attention_fwd") {
    std::vector<std::string> mappings =
        spec.arch == "sm_90a" ? std::vector<std::string>{"wgmma", "mma"}
                              : std::vector<std::string>{""};
    knobs.push_back(
        {"mapping", mappings,
         [](TuneCandidate &c, const std::string &v) { c.tuning.mapping = v; }});
    knob("block_m", numbers({64, 128, 192}),
         [](TuneCandidate &c, int64_t v) { c.tuning.blockM = v; });
    knob("block_n", numbers({32, 64, 128}),
         [](TuneCandidate &c, int64_t v) { c.tuning.blockN = v; });
    // mma.sync: rows per warp = block_m / warps; wgmma ignores it (one
    // warpgroup per 64 rows), so only 0 is swept there (staticRejection).
    knob("warps", numbers({0, 4, 8}),
         [](TuneCandidate &c, int64_t v) { c.tuning.warps = v; });
    // The K/V ring depth, when a mapping reads it (0: the mapping's own).
    knob("stages", numbers({0, 3}),
         [](TuneCandidate &c, int64_t v) { c.tuning.stages = v; });
    // The wgmma KV loop's schedule ("": the default, tma where the tiles
    // have two consumer warpgroups and mbarrier below; mbarrier: no
    // producer, every warpgroup copies and computes).
    if (spec.arch == "sm_90a") {
      knobs.push_back({"kv_sync",
                       {"", "mbarrier"},
                       [](TuneCandidate &c, const std::string &v) {
                         c.tuning.kvSync = v;
                       }});
      // The grid of the tma schedule ("": the default, persistent CTAs for
      // causal attention up to head dim 192, else one CTA per tile; tiles;
      // persistent). staticRejection drops both names where the schedule
      // is not tma: tiles is then the only grid, persistent does not exist.
      knobs.push_back(
          {"grid",
           {"", "tiles", "persistent"},
           [](TuneCandidate &c, const std::string &v) { c.tuning.grid = v; }});
      // How the tma schedule writes O ("": the default, tma; registers;
      // tma: staged in shared memory, stored by TMA). staticRejection drops
      // both names where the schedule is not tma, as for the grid.
      knobs.push_back({"epilogue",
                       {"", "registers", "tma"},
                       [](TuneCandidate &c, const std::string &v) {
                         c.tuning.epilogue = v;
                       }});
    }
  } else {
    return Status(ErrorCode::InvalidArgument,
                  "attnc tune sweeps ops attention_fwd and decode, not '" +
                      spec.op + "'");
  }
  for (const auto &[name, values] : overrides) {
    auto it = std::find_if(knobs.begin(), knobs.end(),
                           [&](const TuneKnob &k) { return k.name == name; });
    if (it == knobs.end()) {
      std::string known;
      for (const TuneKnob &k : knobs)
        known += (known.empty() ? "" : ", ") + k.name;
      return Status(ErrorCode::InvalidArgument, "no knob '" + name +
                                                    "' for op " + spec.op +
                                                    " (knobs: " + known + ")");
    }
    for (const std::string &v : values) {
      int64_t parsed = 0;
      auto r = std::from_chars(v.data(), v.data() + v.size(), parsed);
      bool number =
          r.ec == std::errc() && r.ptr == v.data() + v.size() && parsed >= 0;
      if (name != "mapping" && name != "kv_sync" && name != "grid" &&
          name != "epilogue" && !number)
        return Status(ErrorCode::InvalidArgument,
                      "knob " + name + ": '" + v +
                          "' is not a non-negative integer");
    }
    it->values = values;
  }
  return knobs;
}

std::string staticRejection(const KernelSpec &spec, const TuneCandidate &c) {
  const TuningConfig &t = c.tuning;
  if (spec.op == "decode") {
    if (t.blockN <= 0 || t.blockN % 16)
      return "decode needs block_n a positive multiple of 16";
    // Warps along the keys (tuning.warps): the runtime's own rule.
    KernelSpec candidate = spec;
    candidate.tuning = t;
    if (Status s = validateSpec(candidate); !s.isOk())
      return s.message();
    return "";
  }
  if (!t.kvSync.empty() && t.mapping != "wgmma")
    return "kv_sync is a knob of the wgmma mapping only";
  if (!t.grid.empty() && t.mapping != "wgmma")
    return "grid is a knob of the wgmma mapping only";
  if (!t.epilogue.empty() && t.mapping != "wgmma")
    return "epilogue is a knob of the wgmma mapping only";
  if (t.mapping == "wgmma") {
    if (t.warps != 0)
      return "wgmma takes one warpgroup per 64 rows; warps is not a knob";
    if ((t.kvSync == "pingpong" || t.kvSync == "tma") && t.blockM < 128)
      return "kv_sync " + t.kvSync +
             " needs two consumer warpgroups (block_m >= 128)";
    // kv_sync unset is tma from block_m 128, for varlen kernels too.
    const bool tma = t.kvSync == "tma" || (t.kvSync.empty() && t.blockM >= 128);
    if (t.grid == "persistent" && !tma)
      return "grid persistent needs kv_sync tma (the default at block_m >= "
             "128)";
    if (t.grid == "tiles" && !tma)
      return "grid tiles is the only grid of kv_sync " +
             (t.kvSync.empty() ? std::string("mbarrier") : t.kvSync) +
             ": the default's kernel";
    if (t.epilogue == "tma" && !tma)
      return "epilogue tma needs kv_sync tma (the default at block_m >= "
             "128)";
    if (t.epilogue == "registers" && !tma)
      return "epilogue registers is the only epilogue of kv_sync " +
             (t.kvSync.empty() ? std::string("mbarrier") : t.kvSync) +
             ": the default's kernel";
    // A paged cache goes by TMA, one block per query tile.
    if (spec.pageSize > 0 && (!tma || t.grid == "persistent"))
      return "a paged cache's K/V go by TMA (kv_sync tma, block_m >= 128) "
             "with grid tiles";
    std::string why = wgmma::unsupportedReason(
        spec.headDim, t.blockM, t.blockN, 16, t.stages > 0 ? t.stages : 2,
        /*leftWindow=*/spec.windowLeft >= 0, spec.pageSize);
    return why.empty() ? "" : "the wgmma mapping " + why;
  }
  // mma.sync (explicitly, or the only mapping of the target).
  if (t.warps <= 0)
    return "mma.sync needs warps (rows per warp = block_m / warps)";
  if (t.stages != 0 && (t.stages < 2 || t.stages > 4))
    return "mma.sync's K/V rings take 2 to 4 stages";
  if (t.blockM % t.warps != 0 ||
      (t.blockM / t.warps != 16 && t.blockM / t.warps != 32))
    return "mma.sync takes 16 or 32 query rows per warp, not block_m " +
           std::to_string(t.blockM) + " / " + std::to_string(t.warps) +
           " warps";
  if (t.blockN % 16)
    return "mma.sync needs block_n a multiple of 16";
  return "";
}

Result<std::vector<TuneCandidate>> enumerateCandidates(
    const KernelSpec &spec,
    const std::map<std::string, std::vector<std::string>> &overrides) {
  ATTNC_ASSIGN_OR_RETURN(std::vector<TuneKnob> knobs,
                         tuneKnobs(spec, overrides));
  std::vector<TuneCandidate> out;
  TuneCandidate base;
  base.id = "c0";
  base.heuristic = true;
  out.push_back(base);
  // Odometer over the knobs' values, the last knob fastest.
  std::vector<size_t> at(knobs.size(), 0);
  for (const TuneKnob &k : knobs)
    if (k.values.empty())
      return out;
  while (true) {
    TuneCandidate c;
    for (size_t i = 0; i < knobs.size(); ++i)
      knobs[i].apply(c, knobs[i].values[at[i]]);
    c.id = "c" + std::to_string(out.size());
    c.dropped = staticRejection(spec, c);
    out.push_back(std::move(c));
    size_t i = knobs.size();
    while (i > 0 && ++at[i - 1] == knobs[i - 1].values.size())
      at[--i] = 0;
    if (i == 0)
      break;
  }
  return out;
}

} // namespace attnc
