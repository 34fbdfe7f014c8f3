//===- AttentionGpuTest.cpp - attnc's attention kernels on a real GPU -----===//
//
// Loads the kernels from a bundle with the runtime alone, runs them on fresh
// random inputs with NaN-poisoned outputs, and compares with the float64
// reference: odd lengths, causal with Sq < Skv and Sq > Skv (fully masked
// rows), windows, softcap, GQA/MQA, both layouts, large logits, sinks, and
// varlen batches (random lengths with 0 and 1; `--only varlen`). `--bench`
// times the PEERS.md D=128 cells with CUDA events instead.
//
// Usage: attnc-gpu-attention --bundle DIR [--bench] [--only SUBSTR]
//        attnc-gpu-attention --write-specs FILE   (the specs to bundle)
//
// --only runs the cases whose name (or bench tiles) contain SUBSTR. The
// kv_sync = "mbarrier", "producer", "pingpong" and "tma" cases (names and
// bench tiles with those words) run only so, e.g. `--only pingpong`: a
// protocol bug hangs the kernel, and scripts/gpu-run.sh runs them in steps
// of their own under `timeout` (producer, pingpong and tma have not yet run
// on a GPU).
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Context.h"
#include "attnc/runtime/Driver.h"
#include "attnc/runtime/Spec.h"
#include "templates/ReferenceAttention.h"
#include "tests/common/AttentionCheck.h"
#include "tests/gpu/GpuHarness.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace attnc;
using attnc::test::DeviceBuffer;
using attnc::test::kernelFor;

namespace {

struct Case {
  std::string name;
  KernelSpec spec;
  int batch, seqQ, seqKV;
  bool bshd;
  float qScale = 1.f;
  std::string tiles;
  // K row s scaled by 1 + kRamp * s / seqKV: row maxima that keep growing
  // along the keys (rescale=threshold must rescale mid-loop, many times).
  float kRamp = 0.f;
  // Persistent kernels: launch this many blocks (ContextOptions::
  // persistentBlocks; 0: the runtime's min(work items, SMs)), so that each
  // block loops over many work items.
  int blocks = 0;
  // A custom-IR case (spec.customIr) whose score/mask regions compute what
  // these built-in options would: the reference applies them.
  double regionSoftcap = 0;
  bool regionCausal = false;
  // Varlen cases (spec.varlen): `batch` sequences with random lengths up to
  // seqQ / seqKV (one 0 and one 1 among them), or keys = queries + this.
  std::optional<int> varlenKeysMinusQueries;
};

/// attn IR for Hq/Hkv heads of dim d whose regions are written in math ops
/// (libdevice calls on the GPU): soft-cap 2 as 2·tanh(s/2) passed through
/// exp and log, and causal (for Sq = Skv) as sqrt(|j|) <= sqrt(i).
std::string mathRegionsIr(int hq, int hkv, int d) {
  auto t = [&](int h) {
    return "tensor<?x" + std::to_string(h) + "x?x" + std::to_string(d) +
           "xbf16>";
  };
  std::string lse = "tensor<?x" + std::to_string(hq) + "x?xf32>";
  return "func.func @math_regions(%q: " + t(hq) + ", %k: " + t(hkv) +
         ", %v: " + t(hkv) + ") -> (" + t(hq) + ", " + lse +
         ") {\n"
         "  %o, %lse = attn.attention %q, %k, %v : " +
         t(hq) + ", " + t(hkv) + ", " + t(hkv) + " -> " + t(hq) + ", " + lse +
         R"mlir(
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 2.0 : f32
    %x = arith.divf %s, %c : f32
    %t = math.tanh %x : f32
    %y = arith.mulf %t, %c : f32
    %e = math.exp %y : f32
    %l = math.log %e : f32
    attn.yield %l : f32
  } mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_cast %j : index to i64
    %fi = arith.sitofp %i64 : i64 to f32
    %fj = arith.sitofp %j64 : i64 to f32
    %aj = math.absf %fj : f32
    %si = math.sqrt %fi : f32
    %sj = math.sqrt %aj : f32
    %keep = arith.cmpf ole, %sj, %si : f32
    attn.yield %keep : i1
  }
  return %o, %lse : )mlir" +
         t(hq) + ", " + lse + "\n}\n";
}

KernelSpec spec(int hq, int hkv, int d, const char *dtype) {
  KernelSpec s;
  s.heads = hq;
  s.kvHeads = hkv;
  s.headDim = d;
  s.dtype = dtype;
  s.hasLse = true;
  s.arch = "sm_90a";
  return s;
}

std::vector<Case> correctnessCases() {
  std::vector<Case> cs;
  Case c{"GQA 8/2 D128 bf16 causal, S=1000, BSHD",
         spec(8, 2, 128, "bf16"),
         1,
         1000,
         1000,
         true};
  c.spec.causal = true;
  cs.push_back(c);
  cs.push_back({"MQA 4/1 D64 fp16, Sq=333 Skv=1025, BHSD",
                spec(4, 1, 64, "fp16"), 2, 333, 1025, false});
  c = {"D256 causal, Sq=300 > Skv=200 (masked rows)",
       spec(2, 2, 256, "bf16"),
       1,
       300,
       200,
       true};
  c.spec.causal = true;
  cs.push_back(c);
  c = {"window (128,0) + softcap 30, D128, B=2 S=700",
       spec(4, 4, 128, "bf16"),
       2,
       700,
       700,
       true};
  c.spec.windowLeft = 128;
  c.spec.windowRight = 0;
  c.spec.softcap = 30.0;
  cs.push_back(c);
  c = {
      "large logits (Q x 40), D96", spec(2, 1, 96, "bf16"), 1, 257, 513, false};
  c.qScale = 40.f;
  cs.push_back(c);
  // Row maxima growing along the keys (K x 1 to 7): sm_90a's default
  // rescale=threshold keeps a stale max for a while and then rescales,
  // again and again; beside it the exact rescale.
  c = {"K ramp x7, Q x 2, D128 causal, Sq=Skv=3000 (max grows mid-loop)",
       spec(4, 2, 128, "bf16"),
       1,
       3000,
       3000,
       true};
  c.spec.causal = true;
  c.qScale = 2.f;
  c.kRamp = 6.f;
  cs.push_back(c);
  c.name = "K ramp x7, Q x 2, D128, Sq=Skv=3000, BHSD, rescale exact";
  c.spec.causal = false;
  c.bshd = false;
  c.spec.tuning.rescale = "exact";
  cs.push_back(c);
  c.name = "K ramp x7, Q x 2, D64 fp16, Sq=Skv=3000, BHSD";
  c.spec = spec(4, 4, 64, "fp16");
  cs.push_back(c);
  cs.push_back(
      {"D192 fp16, S=129", spec(2, 2, 192, "fp16"), 1, 129, 129, true});
  c = {"tuned 128x32 tiles, D128 causal, S=999",
       spec(4, 2, 128, "bf16"),
       1,
       999,
       999,
       true};
  c.spec.causal = true;
  c.spec.tuning.blockM = 128;
  c.spec.tuning.blockN = 32;
  cs.push_back(c);
  // 32 query rows per warp (two m16 tiles; Q staged in shared memory at
  // D >= 128), with odd lengths, Sq != Skv and masked rows.
  c = {"128x64 tiles, 4 warps (32 rows/warp, Q in smem), D128 causal, "
       "Sq=1000 Skv=1037",
       spec(8, 2, 128, "bf16"),
       2,
       1000,
       1037,
       true};
  c.spec.causal = true;
  c.spec.tuning = {128, 64, 0, 4};
  cs.push_back(c);
  c = {"128x64 tiles, 4 warps, D64 fp16 window (64,16), S=777",
       spec(4, 4, 64, "fp16"),
       2,
       777,
       777,
       true};
  c.spec.windowLeft = 64;
  c.spec.windowRight = 16;
  c.spec.tuning = {128, 64, 0, 4};
  cs.push_back(c);
  c = {"64x64 tiles, 2 warps, D128 causal, Sq=300 > Skv=200 (masked rows)",
       spec(2, 2, 128, "bf16"),
       1,
       300,
       200,
       true};
  c.spec.causal = true;
  c.spec.tuning = {64, 64, 0, 2};
  cs.push_back(c);
  // sm_90a takes the wgmma mapping for D = 64 and 128 (the cases above with
  // those head dims already do); these add what only it can get wrong:
  // two warpgroups per block, Sq > Skv masked rows on the wgmma
  // accumulator layout, the sm_80 mma.sync kernel of the same spec as a
  // cross-check, and fp16 at D = 128.
  c = {"wgmma 2 warpgroups 128x32, D128 fp16, Sq=190 Skv=77 causal",
       spec(2, 1, 128, "fp16"),
       2,
       190,
       77,
       false};
  c.spec.causal = true;
  c.spec.tuning.blockM = 128;
  c.spec.tuning.blockN = 32;
  cs.push_back(c);
  c = {"wgmma D64 bf16 window (33,17), S=1031, BSHD",
       spec(6, 3, 64, "bf16"),
       1,
       1031,
       1031,
       true};
  c.spec.windowLeft = 33;
  c.spec.windowRight = 17;
  cs.push_back(c);
  c = {"128x64 tiles at D128, S=515",
       spec(4, 4, 128, "bf16"),
       1,
       515,
       515,
       true};
  c.spec.tuning.blockM = 128;
  c.spec.tuning.blockN = 64;
  cs.push_back(c);
  // The wgmma K/V rings (kv-stages): one tile only (prologue and epilogue
  // alone), two tiles, three stages with fewer tiles than stages, and
  // 128-key tiles with rows that see no key at all.
  c = {"wgmma 128x128 s2, D128, Sq=Skv=100 (one tile)",
       spec(2, 2, 128, "bf16"),
       1,
       100,
       100,
       true};
  c.spec.tuning = {128, 128, 2, 0};
  cs.push_back(c);
  c = {"wgmma 64x64 s3, D128 causal, Sq=Skv=130 (fewer tiles than stages)",
       spec(4, 2, 128, "bf16"),
       2,
       130,
       130,
       false};
  c.spec.causal = true;
  c.spec.tuning = {64, 64, 3, 0};
  cs.push_back(c);
  c = {"wgmma 128x128 s3, D64 fp16, Sq=1000 Skv=1777, window (300,40)",
       spec(4, 1, 64, "fp16"),
       2,
       1000,
       1777,
       true};
  c.spec.windowLeft = 300;
  c.spec.windowRight = 40;
  c.spec.tuning = {128, 128, 3, 0};
  cs.push_back(c);
  c = {"wgmma 128x128 s2, D128 causal, Sq=700 > Skv=333 (masked rows), "
       "softcap 20",
       spec(4, 4, 128, "bf16"),
       1,
       700,
       333,
       true};
  c.spec.causal = true;
  c.spec.softcap = 20.0;
  c.spec.tuning = {128, 128, 2, 0};
  cs.push_back(c);
  c = {"wgmma 192x64 s4, D128, Sq=Skv=2049",
       spec(3, 1, 128, "bf16"),
       1,
       2049,
       2049,
       false};
  c.spec.tuning = {192, 64, 4, 0};
  cs.push_back(c);
  c = {"sm_80 mma.sync, same as the first case",
       cs[0].spec,
       cs[0].batch,
       cs[0].seqQ,
       cs[0].seqKV,
       cs[0].bshd};
  c.spec.arch = "sm_80";
  cs.push_back(c);
  // sm_80's default tiles at D128 without a mask (128x64 on 4 warps), odd
  // lengths, GQA, BHSD.
  c = {"sm_80 default tiles, D128 bf16, Sq=1531 Skv=2055, GQA 8/2, BHSD",
       spec(8, 2, 128, "bf16"),
       2,
       1531,
       2055,
       false};
  c.spec.arch = "sm_80";
  cs.push_back(c);
  // sm_80's default causal kernel: programs started longest first over all
  // heads and batches (tile.dim0_major), bottom-right aligned (Sq < Skv),
  // GQA, three batches, BHSD: a wrong split of the block index reads or
  // writes another (batch, head) and shows as an error or poison.
  c = {"sm_80 default tiles, D128 causal, Sq=777 Skv=1500, GQA 6/2, B=3, BHSD",
       spec(6, 2, 128, "bf16"),
       3,
       777,
       1500,
       false};
  c.spec.causal = true;
  c.spec.arch = "sm_80";
  cs.push_back(c);
  // mma.sync's K/V rings deeper than two tiles (kv-stages 3 and 4; the
  // second with fewer tiles than stages).
  c = {"sm_80 mma.sync 128x64 w4 s3, D128 causal, Sq=Skv=1031",
       spec(4, 2, 128, "bf16"),
       2,
       1031,
       1031,
       true};
  c.spec.causal = true;
  c.spec.arch = "sm_80";
  c.spec.tuning = {128, 64, 3, 4};
  cs.push_back(c);
  c = {"sm_80 mma.sync 64x64 w4 s4, D64 fp16, Sq=Skv=130",
       spec(2, 1, 64, "fp16"),
       1,
       130,
       130,
       false};
  c.spec.arch = "sm_80";
  c.spec.tuning = {64, 64, 4, 4};
  cs.push_back(c);
  // kv_sync = "mbarrier" (issue #6): the wgmma rings on per-stage
  // full/empty mbarriers. The first case and the ring cases above again
  // (default tiles; one tile; fewer tiles than stages; a window, so the
  // loop starts past key 0; rows that see no key; 3 warpgroups, 4 stages),
  // plus many tiles at 128x128 s2 and 4 warpgroups.
  const size_t plain = cs.size();
  auto mbarrier = [&](Case m) {
    m.name = "mbarrier " + m.name;
    m.spec.tuning.kvSync = "mbarrier";
    cs.push_back(m);
  };
  mbarrier(cs[0]);
  for (size_t i = 0; i < plain; ++i)
    if (cs[i].name.rfind("wgmma ", 0) == 0 && cs[i].spec.tuning.stages > 0)
      mbarrier(cs[i]);
  c = {"128x128 s2, D128 bf16, Sq=Skv=1031 (9 tiles)",
       spec(4, 2, 128, "bf16"),
       2,
       1031,
       1031,
       true};
  c.spec.tuning = {128, 128, 2, 0};
  mbarrier(c);
  c = {"256x64 s2 (4 warpgroups), D64 fp16 causal, S=1500",
       spec(4, 4, 64, "fp16"),
       1,
       1500,
       1500,
       false};
  c.spec.causal = true;
  c.spec.tuning = {256, 64, 2, 0};
  mbarrier(c);
  // kv_sync = "producer" / "pingpong" / "tma" (issue #6, warp
  // specialisation): a producer warpgroup fills Q and the rings (tma: one
  // thread, by TMA from the runtime's tensor maps), the consumer
  // warpgroups only wait and compute (pingpong, tma: taking turns on the
  // tensor cores). The
  // ring cases again (one tile, fewer tiles than stages, a window, rows
  // that see no key, softcap, 4 stages), then the shapes only these
  // schedules are meant for: 128-key and 176-key tiles on two consumer
  // warpgroups at every head dim, causal with Sq > Skv and Sq < Skv.
  auto specialised = [&](Case m, const char *sync) {
    if (std::string(sync) != "producer" && m.spec.tuning.blockM &&
        m.spec.tuning.blockM < 128)
      return; // pingpong and tma need two consumer warpgroups
    m.name = std::string(sync) + " " + m.name;
    m.spec.tuning.kvSync = sync;
    cs.push_back(m);
  };
  const size_t withMbarrier = cs.size();
  std::vector<Case> extra;
  c = {"128x176 s2, D128 bf16 causal, Sq=1500 Skv=1037, GQA 4/1",
       spec(4, 1, 128, "bf16"),
       2,
       1500,
       1037,
       true};
  c.spec.causal = true;
  c.spec.tuning = {128, 176, 2, 0};
  extra.push_back(c);
  c = {"128x128 s3, D128 fp16, Sq=777 Skv=4099, window (512,0), BHSD",
       spec(4, 2, 128, "fp16"),
       1,
       777,
       4099,
       false};
  c.spec.windowLeft = 512;
  c.spec.windowRight = 0;
  c.spec.tuning = {128, 128, 3, 0};
  extra.push_back(c);
  c = {"128x128 s2, D64 bf16 causal, S=2000, large logits",
       spec(4, 2, 64, "bf16"),
       1,
       2000,
       2000,
       true};
  c.spec.causal = true;
  c.spec.tuning = {128, 128, 2, 0};
  c.qScale = 8.f;
  extra.push_back(c);
  c = {"128x64 s2, D256 bf16, Sq=Skv=1100",
       spec(2, 1, 256, "bf16"),
       1,
       1100,
       1100,
       true};
  c.spec.tuning = {128, 64, 2, 0};
  extra.push_back(c);
  c = {"128x64 s2, D192 fp16 causal, Sq=333 Skv=999",
       spec(2, 2, 192, "fp16"),
       1,
       333,
       999,
       false};
  c.spec.causal = true;
  c.spec.tuning = {128, 64, 2, 0};
  extra.push_back(c);
  for (const char *sync : {"producer", "pingpong", "tma"}) {
    specialised(cs[0], sync);
    for (size_t i = 0; i < plain; ++i)
      if (cs[i].name.rfind("wgmma ", 0) == 0 && cs[i].spec.tuning.stages > 0)
        specialised(cs[i], sync);
    for (size_t i = plain; i < withMbarrier; ++i)
      if (cs[i].name.rfind("mbarrier wgmma", 0) != 0 && i != plain) {
        Case m = cs[i];
        m.name = m.name.substr(std::string("mbarrier ").size());
        specialised(m, sync);
      }
    for (const Case &e : extra)
      specialised(e, sync);
  }
  // Persistent blocks (tuning.grid "persistent"; sm_90a's default for
  // causal attention with kv_sync tma up to head dim 192, so the causal tma
  // cases above take it): those cases again on each grid by name (one block
  // per tile, "tiles", and persistent blocks over the runtime's grid:
  // every item a block takes after its first starts its rings' stages at
  // the phases the earlier items left, odd tile counts included), then
  // persistent grids
  // of a few blocks, each looping over many work items of different
  // lengths: items without a key among them (Sq > Skv causal: no Q load,
  // no turn), windows, GQA, an odd item count (the last pair half empty),
  // D64 to D192, and the runtime's own grid over 512 items.
  for (size_t i = withMbarrier, n = cs.size(); i < n; ++i)
    if (cs[i].spec.tuning.kvSync == "tma")
      for (const char *grid : {"tiles", "persistent"}) {
        Case t = cs[i];
        t.name = std::string(grid) + " " + t.name;
        t.spec.tuning.grid = grid;
        cs.push_back(t);
      }
  auto persistent = [&](Case p, int blocks) {
    p.name = "persistent " +
             (blocks ? std::to_string(blocks) + " blocks" : "default grid") +
             ", " + p.name;
    p.spec.tuning.grid = "persistent";
    p.blocks = blocks;
    cs.push_back(p);
  };
  c = {"D128 causal GQA 8/2, B=2, S=1000 (128 items)",
       spec(8, 2, 128, "bf16"),
       2,
       1000,
       1000,
       true};
  c.spec.causal = true;
  persistent(c, 1);
  persistent(c, 3);
  c = {"D128 causal Sq=700 > Skv=333 (items without keys), softcap 20",
       spec(4, 4, 128, "bf16"),
       1,
       700,
       333,
       true};
  c.spec.causal = true;
  c.spec.softcap = 20.0;
  persistent(c, 3);
  c = {"D64 fp16 window (300,40), Sq=1000 Skv=1777, GQA 4/1, BHSD",
       spec(4, 1, 64, "fp16"),
       2,
       1000,
       1777,
       false};
  c.spec.windowLeft = 300;
  c.spec.windowRight = 40;
  persistent(c, 7);
  c = {"D192 fp16 causal, Sq=333 Skv=999",
       spec(2, 2, 192, "fp16"),
       1,
       333,
       999,
       false};
  c.spec.causal = true;
  persistent(c, 5);
  c = {"D128, Sq=515 Skv=777 (15 items), BHSD",
       spec(3, 3, 128, "bf16"),
       1,
       515,
       777,
       false};
  persistent(c, 2);
  c = {"K ramp x7, Q x 2, D128 causal, S=2000 (rescales mid-loop)",
       spec(4, 2, 128, "bf16"),
       1,
       2000,
       2000,
       true};
  c.spec.causal = true;
  c.qScale = 2.f;
  c.kRamp = 6.f;
  persistent(c, 4);
  // The stream-K tail (persistent, no causal or window bound, with the
  // workspace runCase passes): the last round's items cut into pieces that
  // span two blocks or more (middle pieces at 5 blocks), merged with very
  // different row maxima (the K ramp), at D64 and with softcap, and a tail
  // of 8 units over the runtime's 132 blocks (an item in 8 pieces).
  c = {"D128 GQA 8/2, B=3, Sq=1000 Skv=1999 (192 items, stream-K)",
       spec(8, 2, 128, "bf16"),
       3,
       1000,
       1999,
       true};
  persistent(c, 5);
  c = {"K ramp x7, Q x 2, D128, Sq=900 Skv=2100 (stream-K)",
       spec(4, 4, 128, "bf16"),
       1,
       900,
       2100,
       false};
  c.qScale = 2.f;
  c.kRamp = 6.f;
  persistent(c, 3);
  c = {"D64 fp16, Sq=777 Skv=1001, softcap 30 (stream-K)",
       spec(6, 3, 64, "fp16"),
       2,
       777,
       1001,
       true};
  c.spec.softcap = 30.0;
  persistent(c, 7);
  c = {"D128, H=19, Sq=896 Skv=1024 (133 items, stream-K)",
       spec(19, 19, 128, "bf16"),
       1,
       896,
       1024,
       true};
  persistent(c, 0);
  c = {"D128 causal, B=4 H=8, S=1536 (384 items)",
       spec(8, 8, 128, "bf16"),
       4,
       1536,
       1536,
       true};
  c.spec.causal = true;
  persistent(c, 0);
  // Score and mask regions in math ops (libdevice linked into the PTX), on
  // sm_90a's wgmma mapping and sm_80's mma.sync; large logits so that the
  // soft-cap bites.
  for (const char *arch : {"sm_90a", "sm_80"}) {
    c = {std::string("math regions (tanh/exp/log soft-cap, sqrt causal), ") +
             arch + ", D128 GQA 4/2, S=777",
         spec(4, 2, 128, "bf16"),
         2,
         777,
         777,
         true};
    c.spec.arch = arch;
    c.spec.customIr = mathRegionsIr(4, 2, 128);
    c.qScale = 4.f;
    c.regionSoftcap = 2.0;
    c.regionCausal = true;
    cs.push_back(c);
  }
  // Attention sinks (runCase draws one logit per head, some far above the
  // rows' LSE) on each mapping and schedule: sm_90a's default (causal:
  // TMA rings), its persistent grid with the stream-K tail (the sink joins
  // once, after the pieces merge), rows without keys, and sm_80's mma.sync.
  c = {"sinks, GQA 8/2 D128 bf16 causal, S=1000",
       spec(8, 2, 128, "bf16"),
       1,
       1000,
       1000,
       true};
  c.spec.causal = true;
  c.spec.sinks = true;
  cs.push_back(c);
  c = {"sinks, D128 Sq=777 Skv=1001, B=2",
       spec(4, 4, 128, "bf16"),
       2,
       777,
       1001,
       false};
  c.spec.sinks = true;
  c.blocks = 20;
  c.spec.tuning.grid = "persistent";
  cs.push_back(c);
  c = {"sinks, D64 fp16 causal, Sq=700 > Skv=333 (rows without keys)",
       spec(4, 1, 64, "fp16"),
       1,
       700,
       333,
       true};
  c.spec.causal = true;
  c.spec.sinks = true;
  cs.push_back(c);
  c = {"sinks, sm_80 mma.sync, D128 GQA 4/2 window (64,0) + softcap 20, "
       "S=513",
       spec(4, 2, 128, "bf16"),
       2,
       513,
       513,
       true};
  c.spec.arch = "sm_80";
  c.spec.windowLeft = 64;
  c.spec.windowRight = 0;
  c.spec.softcap = 20.0;
  c.spec.sinks = true;
  cs.push_back(c);
  // Varlen prefill (packed sequences, cu_seqlens; runVarlenCase): random
  // lengths with 0 and 1, padding rows before and after the sequences that
  // must keep their poison, each sequence against float64 on its own. The
  // sm_90a default (wgmma on the mbarrier rings) and sm_80's mma.sync.
  c = {"varlen, GQA 8/2 D128 bf16 causal, B=5 up to 700/900",
       spec(8, 2, 128, "bf16"),
       5,
       700,
       900,
       true};
  c.spec.causal = true;
  c.spec.varlen = true;
  cs.push_back(c);
  c = {"varlen, D128 causal, Skv = Sq + 37 (chunked prefill), B=4",
       spec(4, 4, 128, "bf16"),
       4,
       500,
       0,
       true};
  c.spec.causal = true;
  c.spec.varlen = true;
  c.varlenKeysMinusQueries = 37;
  cs.push_back(c);
  // Persistent blocks (sm_90a's varlen default at D128 and causal up to
  // D192) over items of different lengths: 7 blocks, so that each block
  // loops over dozens of items, many past their sequence's last tile.
  c = {"varlen, D128 causal GQA 8/2, B=9 up to 700, 7 persistent blocks",
       spec(8, 2, 128, "bf16"),
       9,
       700,
       700,
       true};
  c.spec.causal = true;
  c.spec.varlen = true;
  c.blocks = 7;
  cs.push_back(c);
  // Fewer keys than queries (causal rows without a key beside rows with
  // tiles) on persistent blocks, and D64 causal: three consumer
  // warpgroups (192 query rows) on persistent blocks.
  c = {"varlen, D128 causal, Skv = Sq - 50, B=6 up to 500, 5 persistent "
       "blocks",
       spec(4, 2, 128, "bf16"),
       6,
       500,
       0,
       true};
  c.spec.causal = true;
  c.spec.varlen = true;
  c.varlenKeysMinusQueries = -50;
  c.blocks = 5;
  cs.push_back(c);
  // The opt-in TMA store of O (tuning.epilogue "tma"): warpgroups whose
  // rows lie inside their sequence store by TMA at the sequence's rows,
  // the rest from registers; the padding rows around the sequences must
  // stay poisoned.
  c = {"varlen, D128 GQA 8/2, epilogue tma (O by TMA where inside), B=6 up "
       "to 1000, 5 persistent blocks",
       spec(8, 2, 128, "bf16"),
       6,
       1000,
       1000,
       true};
  c.spec.varlen = true;
  c.spec.tuning.epilogue = "tma";
  c.blocks = 5;
  cs.push_back(c);
  c = {"varlen, D64 causal GQA 8/2, B=7 up to 800, 6 persistent blocks",
       spec(8, 2, 64, "bf16"),
       7,
       800,
       800,
       true};
  c.spec.causal = true;
  c.spec.varlen = true;
  c.blocks = 6;
  cs.push_back(c);
  c = {"varlen, D64 fp16 window (100, 0) MQA 4/1, B=4 up to 513",
       spec(4, 1, 64, "fp16"),
       4,
       513,
       513,
       true};
  c.spec.windowLeft = 100;
  c.spec.windowRight = 0;
  c.spec.varlen = true;
  cs.push_back(c);
  c = {"varlen, D256 softcap 30 + sinks, Q x 4, B=3 up to 300",
       spec(4, 2, 256, "bf16"),
       3,
       300,
       300,
       true};
  c.spec.softcap = 30.0;
  c.spec.sinks = true;
  c.spec.varlen = true;
  c.qScale = 4.f;
  cs.push_back(c);
  c = {"varlen, D192 causal + sinks, B=5 up to 400 (rows without keys)",
       spec(4, 2, 192, "bf16"),
       5,
       400,
       250,
       true};
  c.spec.causal = true;
  c.spec.sinks = true;
  c.spec.varlen = true;
  cs.push_back(c);
  c = {"varlen, sm_80 mma.sync, D128 GQA 4/2 causal + sinks, B=5 up to 600",
       spec(4, 2, 128, "bf16"),
       5,
       600,
       600,
       true};
  c.spec.arch = "sm_80";
  c.spec.causal = true;
  c.spec.sinks = true;
  c.spec.varlen = true;
  cs.push_back(c);
  c = {"varlen, sm_80 mma.sync, D64 window (64, 16), Q x 8, B=5 up to 333",
       spec(4, 4, 64, "bf16"),
       5,
       333,
       333,
       true};
  c.spec.arch = "sm_80";
  c.spec.windowLeft = 64;
  c.spec.windowRight = 16;
  c.spec.varlen = true;
  c.qScale = 8.f;
  cs.push_back(c);
  // sm_90a's varlen default is the dense kernel's TMA schedule (copies
  // that start at each sequence's first row and read past its end into the
  // next one's) on persistent blocks; the mbarrier rings, whose copies are
  // bounded per row, are the opt-in (tuning.kv_sync "mbarrier"; in the
  // mbarrier step, --only mbarrier, and with --only varlen). The GQA,
  // D64 window and D256 varlen cases above again.
  for (size_t from : {cs.size() - 11, cs.size() - 5, cs.size() - 4}) {
    Case t = cs[from];
    t.name = "varlen mbarrier" + t.name.substr(std::string("varlen").size());
    t.spec.tuning.kvSync = "mbarrier";
    cs.push_back(t);
  }
  c = {"varlen, no keys in any sequence, B=3",
       spec(4, 2, 128, "bf16"),
       3,
       200,
       0,
       true};
  c.spec.varlen = true;
  c.varlenKeysMinusQueries = -1000000;
  cs.push_back(c);
  return cs;
}

/// Whether a case runs: --only SUBSTR in its name or tiles; without it,
/// every case but those named for a kv_sync schedule ("mbarrier",
/// "producer", "pingpong", "tma": gpu-run.sh runs each in a step of its own
/// under a short timeout, since a protocol bug hangs the kernel; sm_90a's
/// defaults take tma, so the default cases cover it).
bool selected(const Case &c, const std::string &only) {
  if (!only.empty())
    return c.name.find(only) != std::string::npos ||
           c.tiles.find(only) != std::string::npos;
  const std::string &sync = c.spec.tuning.kvSync;
  return sync != "mbarrier" && sync != "producer" && sync != "pingpong" &&
         sync != "tma";
}

std::vector<Case> benchCases() {
  // PEERS.md-shaped cells (B*S = 16k tokens, H = 2048 / D, S = 4k): the
  // default tiles beside tuned shapes (16 or 32 query rows per warp for
  // mma.sync; wgmma takes 2 x block_m threads whatever the warps), compared
  // in one run.
  struct Tiles {
    int64_t headDim, blockM, blockN, warps, stages;
    const char *name;
  };
  const Tiles tiles[] = {
      {128, 0, 0, 0, 0, "default"},        {128, 128, 128, 0, 2, "128x128 s2"},
      {128, 128, 64, 0, 2, "128x64 s2"},   {128, 128, 64, 0, 3, "128x64 s3"},
      {128, 64, 128, 0, 2, "64x128 s2"},   {128, 64, 64, 0, 2, "64x64 s2"},
      {128, 128, 128, 0, 3, "128x128 s3"}, {128, 192, 64, 0, 2, "192x64 s2"},
      {128, 128, 64, 4, 0, "128x64 w4"},   {128, 128, 32, 4, 0, "128x32 w4"},
      {64, 0, 0, 0, 0, "default"},         {64, 128, 128, 0, 2, "128x128 s2"},
      {64, 128, 128, 0, 3, "128x128 s3"},  {64, 192, 128, 0, 2, "192x128 s2"},
      {64, 128, 64, 4, 0, "128x64 w4"},    {256, 0, 0, 0, 0, "default"},
      {256, 64, 32, 4, 0, "64x32 w4"}};
  std::vector<Case> cs;
  // One PEERS.md-shaped cell at head dim d, untuned.
  auto cell = [](int64_t d, bool causal) {
    std::string name =
        "D" + std::to_string(d) + " S4k" + (causal ? " causal" : "");
    int64_t heads = 2048 / d;
    Case c{name, spec(heads, heads, d, "bf16"), 4, 4096, 4096, true};
    c.spec.causal = causal;
    c.spec.hasLse = false;
    return c;
  };
  for (const Tiles &t : tiles)
    for (bool causal : {false, true}) {
      Case c = cell(t.headDim, causal);
      c.spec.tuning.blockM = t.blockM;
      c.spec.tuning.blockN = t.blockN;
      c.spec.tuning.warps = t.warps;
      c.spec.tuning.stages = t.stages;
      c.tiles = t.name;
      cs.push_back(c);
    }
  // The same tiles through sm_80's mma.sync mapping where sm_90a takes
  // wgmma (D = 64, 128): the two mappings side by side.
  for (size_t i = 0, n = cs.size(); i < n; ++i)
    if (cs[i].spec.headDim <= 128 && cs[i].spec.tuning.stages == 0) {
      Case c = cs[i];
      c.spec.arch = "sm_80";
      cs.push_back(c);
    }
  // mma.sync with three-tile K/V rings (issue #5: is the copy the limit?).
  for (size_t i = 0, n = cs.size(); i < n; ++i)
    if (cs[i].spec.arch == "sm_80" && cs[i].spec.headDim == 128 &&
        cs[i].spec.tuning.warps > 0) {
      Case c = cs[i];
      c.spec.tuning.stages = 3;
      c.tiles += " s3";
      cs.push_back(c);
    }
  // kv_sync = "mbarrier" beside the CTA barrier at the same tiles (D128).
  for (size_t i = 0, n = cs.size(); i < n; ++i)
    if (cs[i].spec.headDim == 128 && cs[i].spec.tuning.stages > 0 &&
        cs[i].spec.arch == "sm_90a") {
      Case c = cs[i];
      c.spec.tuning.kvSync = "mbarrier";
      c.tiles += " mbarrier";
      cs.push_back(c);
    }
  // rescale=exact beside the default threshold at sm_90a's default tiles
  // (issue #6: FlashAttention-4's trick measured).
  for (size_t i = 0, n = cs.size(); i < n; ++i)
    if (cs[i].tiles == "default" && cs[i].spec.arch == "sm_90a") {
      Case c = cs[i];
      c.spec.tuning.rescale = "exact";
      c.tiles += " exact";
      cs.push_back(c);
    }
  // The other grid beside sm_90a's default at its default tiles (issue
  // #6, persistent blocks measured; heuristicTuning's grid is the default).
  // And O's epilogue (issue #6): the register stores beside
  // the default's TMA store, on both grids.
  for (size_t i = 0, n = cs.size(); i < n; ++i)
    if (cs[i].tiles == "default" && cs[i].spec.arch == "sm_90a" &&
        cs[i].spec.headDim <= 192) {
      const std::string other = heuristicTuning(cs[i].spec).grid == "persistent"
                                    ? "tiles"
                                    : "persistent";
      Case c = cs[i];
      c.spec.tuning.grid = other;
      c.tiles += " " + other;
      cs.push_back(c);
      for (const std::string &grid : {std::string(), other}) {
        Case r = cs[i];
        r.spec.tuning.grid = grid;
        r.spec.tuning.epilogue = "registers";
        r.tiles += (grid.empty() ? "" : " " + grid) + " registers";
        cs.push_back(r);
      }
    }
  // Warp specialisation (kv_sync producer / pingpong) at the tiles it
  // allows: two consumer warpgroups with up to 232 registers each.
  struct Specialised {
    int64_t headDim, blockM, blockN, stages;
    const char *name;
  };
  const Specialised ws[] = {
      {128, 128, 128, 2, "128x128 s2"}, {128, 128, 176, 2, "128x176 s2"},
      {128, 128, 128, 3, "128x128 s3"}, {128, 128, 64, 3, "128x64 s3"},
      {128, 192, 64, 2, "192x64 s2"},   {64, 128, 128, 2, "128x128 s2"},
      {64, 128, 176, 3, "128x176 s3"},  {256, 128, 64, 2, "128x64 s2"},
      {256, 128, 80, 2, "128x80 s2"}};
  for (const Specialised &t : ws)
    for (const char *sync : {"producer", "pingpong", "tma"})
      for (bool causal : {false, true}) {
        Case c = cell(t.headDim, causal);
        c.spec.tuning = {t.blockM, t.blockN, t.stages, 0};
        c.spec.tuning.kvSync = sync;
        c.tiles = std::string(t.name) + " " + sync;
        cs.push_back(c);
      }
  // Varlen against the dense kernel at the same tokens (issue #35: varlen
  // within 3% of the padded dense kernel): B = 4 sequences of 4k tokens,
  // packed, beside the dense default over the same memory layout (BSHD).
  // `--bench --only varlen` runs both.
  for (int64_t d : {64, 128})
    for (bool causal : {false, true}) {
      Case dense = cell(d, causal);
      dense.tiles = "varlen dense";
      cs.push_back(dense);
      Case packed = cell(d, causal);
      packed.spec.varlen = true;
      packed.tiles = "varlen";
      cs.push_back(packed);
      // Both epilogues at D128 (the default takes one of them).
      for (const char *epilogue : {"registers", "tma"})
        if (d == 128) {
          Case e = packed;
          e.spec.tuning.epilogue = epilogue;
          e.tiles = std::string("varlen epilogue ") + epilogue;
          cs.push_back(e);
        }
      // Paged prefill over the same keys (issue #35: >= 0.95x contiguous):
      // the packed K/V memory as a cache of 16- and 128-row pages, its
      // pages in shuffled order.
      for (int64_t page : {16, 128}) {
        Case paged = packed;
        paged.spec.pageSize = page;
        paged.tiles = "varlen paged " + std::to_string(page);
        cs.push_back(paged);
      }
      packed.spec.tuning.kvSync = "mbarrier";
      packed.spec.tuning.blockM = d <= 128 ? 192 : 128;
      packed.spec.tuning.blockN = 64;
      packed.tiles = "varlen mbarrier";
      cs.push_back(packed);
    }
  return cs;
}

test::AttentionComparison runCase(Context &ctx, const Case &c,
                                  std::mt19937_64 &rng) {
  const DriverApi *api = &ctx.driver();
  auto kernel = ctx.getKernel(c.spec);
  if (!kernel.isOk()) {
    std::fprintf(stderr, "getKernel: %s\n", kernel.status().message().c_str());
    std::exit(1);
  }
  const KernelSpec &s = c.spec;
  bool bf16 = s.dtype == "bf16";
  auto toBits = [&](float x) { return test::toHalfBits(bf16, x); };
  int hq = s.heads, hkv = s.kvHeads, d = s.headDim;
  size_t nq = size_t(c.batch) * hq * c.seqQ * d;
  size_t nkv = size_t(c.batch) * hkv * c.seqKV * d;
  std::vector<uint16_t> q(nq), k(nkv), v(nkv), o(nq);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto &x : q)
    x = toBits(normal(rng) * c.qScale);
  for (size_t i = 0; i < nkv; ++i) {
    size_t pos = c.bshd ? i / (size_t(d) * hkv) % c.seqKV : i / d % c.seqKV;
    k[i] = toBits(normal(rng) * (1.f + c.kRamp * float(pos) / c.seqKV));
  }
  for (auto &x : v)
    x = toBits(normal(rng));
  std::vector<float> lse(size_t(c.batch) * hq * c.seqQ);

  DeviceBuffer dq(api, nq * 2), dk(api, nkv * 2), dv(api, nkv * 2),
      dout(api, nq * 2), dlse(api, lse.size() * 4);
  CHECK_CU(api->cuMemcpyHtoD(dq.ptr, q.data(), nq * 2));
  CHECK_CU(api->cuMemcpyHtoD(dk.ptr, k.data(), nkv * 2));
  CHECK_CU(api->cuMemcpyHtoD(dv.ptr, v.data(), nkv * 2));
  // Poison: 0xFF bytes are NaN in bf16, fp16 and f32.
  CHECK_CU(api->cuMemsetD8(dout.ptr, 0xFF, nq * 2));
  CHECK_CU(api->cuMemsetD8(dlse.ptr, 0xFF, lse.size() * 4));

  auto qs = test::attentionStrides(hq, c.seqQ, d, c.bshd);
  auto kvs = test::attentionStrides(hkv, c.seqKV, d, c.bshd);
  AttentionArgs args;
  args.q = {reinterpret_cast<void *>(dq.ptr), {c.batch, hq, c.seqQ, d}, qs};
  args.k = {reinterpret_cast<void *>(dk.ptr), {c.batch, hkv, c.seqKV, d}, kvs};
  args.v = {reinterpret_cast<void *>(dv.ptr), {c.batch, hkv, c.seqKV, d}, kvs};
  args.o = {reinterpret_cast<void *>(dout.ptr), {c.batch, hq, c.seqQ, d}, qs};
  args.lse = {reinterpret_cast<void *>(dlse.ptr),
              {c.batch, hq, c.seqQ, 1},
              {int64_t(hq) * c.seqQ, c.seqQ, 1, 1}};
  const std::vector<float> sinks = test::randomSinks(s.sinks, hq, rng);
  DeviceBuffer dsinks(api, std::max<size_t>(sinks.size(), 1) * 4);
  if (s.sinks) {
    CHECK_CU(api->cuMemcpyHtoD(dsinks.ptr, sinks.data(), sinks.size() * 4));
    args.sinks = reinterpret_cast<const float *>(dsinks.ptr);
  }
  // Persistent kernels over items of equal KV length take the stream-K
  // tail's workspace: zeroed once, garbage after the flags (so that a
  // piece merging a slot nobody wrote shows), and its flags must be zero
  // again after the launch.
  auto wsBytes = ctx.workspaceSize(**kernel, args);
  if (!wsBytes.isOk()) {
    std::fprintf(stderr, "workspaceSize: %s\n",
                 wsBytes.status().message().c_str());
    std::exit(1);
  }
  DeviceBuffer dws(api, *wsBytes);
  size_t flagBytes = 0;
  if (*wsBytes) {
    // The flags' bytes: the layout's, for the grid whose size it is.
    const int64_t blockM = (*kernel)->metadata().blockM;
    for (int64_t g = 1; g <= 1 << 20 && !flagBytes; ++g) {
      abi::StreamKWorkspaceLayout layout =
          abi::streamKWorkspaceLayout(g, blockM, d);
      if (size_t(layout.total) == *wsBytes)
        flagBytes = size_t(layout.slots.offset);
    }
    if (!flagBytes) {
      std::fprintf(stderr, "workspace of %zu bytes fits no grid\n", *wsBytes);
      std::exit(1);
    }
    CHECK_CU(api->cuMemsetD8(dws.ptr, 0xFF, *wsBytes));
    CHECK_CU(api->cuMemsetD8(dws.ptr, 0, flagBytes));
    args.workspace = dws.get();
    args.workspaceBytes = *wsBytes;
  }
  Status st = ctx.launch(**kernel, args, nullptr);
  if (!st.isOk()) {
    std::fprintf(stderr, "launch: %s\n", st.message().c_str());
    std::exit(1);
  }
  CHECK_CU(api->cuCtxSynchronize());
  CHECK_CU(api->cuMemcpyDtoH(o.data(), dout.ptr, nq * 2));
  CHECK_CU(api->cuMemcpyDtoH(lse.data(), dlse.ptr, lse.size() * 4));
  if (flagBytes) {
    std::vector<uint8_t> flags(flagBytes);
    CHECK_CU(api->cuMemcpyDtoH(flags.data(), dws.ptr, flagBytes));
    if (std::any_of(flags.begin(), flags.end(), [](uint8_t x) { return x; })) {
      std::printf("FAIL %s: the stream-K flags were not all cleared\n",
                  c.name.c_str());
      std::exit(1);
    }
  }

  templates::ReferenceProblem p;
  p.batch = c.batch;
  p.headsQ = hq;
  p.headsKV = hkv;
  p.seqQ = c.seqQ;
  p.seqKV = c.seqKV;
  p.headDim = d;
  p.scale = s.effectiveScale();
  p.softcap = s.softcap > 0 ? s.softcap : c.regionSoftcap;
  p.causal = s.causal || c.regionCausal;
  p.windowLeft = int(s.windowLeft);
  p.windowRight = int(s.windowRight);
  p.sinks.assign(sinks.begin(), sinks.end());
  std::vector<double> refO(nq), refLse(lse.size());
  auto toDouble = [&](uint16_t x) {
    return double(test::fromHalfBits(bf16, x));
  };
  templates::referenceAttention(
      p, q.data(), {qs[0], qs[1], qs[2]}, k.data(), {kvs[0], kvs[1], kvs[2]},
      v.data(), {kvs[0], kvs[1], kvs[2]}, toDouble, refO.data(), refLse.data());
  return test::compareAttention(bf16, o, qs, lse, refO, refLse, c.batch, hq,
                                c.seqQ, d);
}

/// `n` random lengths in [0, maxLen] with one 0 and one 1 among them.
std::vector<int> randomLengths(int n, int maxLen, std::mt19937_64 &rng) {
  std::uniform_int_distribution<int> len(0, std::max(maxLen, 0));
  std::vector<int> out(n);
  for (int &x : out)
    x = len(rng);
  if (n >= 2 && maxLen >= 1) {
    std::uniform_int_distribution<int> at(0, n - 1);
    int zero = at(rng), one = at(rng);
    while (one == zero)
      one = at(rng);
    out[zero] = 0;
    out[one] = 1;
  }
  return out;
}

/// A varlen case: packed [total, H, D] Q/K/V/O (rows of H·D elements) with
/// padding rows before the first and after the last sequence, LSE [Hq,
/// total_q]; O and LSE poisoned with NaN, each sequence compared with the
/// float64 reference on its own (the worst sequence's errors are
/// returned), and the padding rows must still be NaN (counted as
/// maskedWrong otherwise).
test::AttentionComparison runVarlenCase(Context &ctx, const Case &c,
                                        std::mt19937_64 &rng) {
  const DriverApi *api = &ctx.driver();
  auto kernel = ctx.getKernel(c.spec);
  if (!kernel.isOk()) {
    std::fprintf(stderr, "getKernel: %s\n", kernel.status().message().c_str());
    std::exit(1);
  }
  const KernelSpec &s = c.spec;
  const bool bf16 = s.dtype == "bf16";
  const int hq = s.heads, hkv = s.kvHeads, d = s.headDim;
  std::vector<int> lensQ = randomLengths(c.batch, c.seqQ, rng), lensK;
  if (c.varlenKeysMinusQueries)
    for (int l : lensQ)
      lensK.push_back(std::max(0, l + *c.varlenKeysMinusQueries));
  else
    lensK = randomLengths(c.batch, c.seqKV, rng);
  const int padQ = 5, padK = 3;
  std::vector<int32_t> cuQ{padQ}, cuK{padK};
  for (int b = 0; b < c.batch; ++b) {
    cuQ.push_back(cuQ.back() + lensQ[b]);
    cuK.push_back(cuK.back() + lensK[b]);
  }
  const int totalQ = cuQ.back() + padQ, totalK = cuK.back() + padK;
  std::printf("     lengths q/k:");
  for (int b = 0; b < c.batch; ++b)
    std::printf(" %d/%d", lensQ[b], lensK[b]);
  std::printf("\n");
  const int64_t sQ = int64_t(hq) * d, sK = int64_t(hkv) * d;
  std::vector<uint16_t> q(size_t(totalQ) * sQ), k(size_t(totalK) * sK),
      v(size_t(totalK) * sK), o(q.size());
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto &x : q)
    x = test::toHalfBits(bf16, normal(rng) * c.qScale);
  for (auto *t : {&k, &v})
    for (auto &x : *t)
      x = test::toHalfBits(bf16, normal(rng));
  std::vector<float> lse(size_t(hq) * totalQ);
  DeviceBuffer dq(api, q.size() * 2), dk(api, k.size() * 2),
      dv(api, v.size() * 2), dout(api, o.size() * 2), dlse(api, lse.size() * 4),
      dcuQ(api, cuQ.size() * 4), dcuK(api, cuK.size() * 4);
  CHECK_CU(api->cuMemcpyHtoD(dq.ptr, q.data(), q.size() * 2));
  CHECK_CU(api->cuMemcpyHtoD(dk.ptr, k.data(), k.size() * 2));
  CHECK_CU(api->cuMemcpyHtoD(dv.ptr, v.data(), v.size() * 2));
  CHECK_CU(api->cuMemcpyHtoD(dcuQ.ptr, cuQ.data(), cuQ.size() * 4));
  CHECK_CU(api->cuMemcpyHtoD(dcuK.ptr, cuK.data(), cuK.size() * 4));
  CHECK_CU(api->cuMemsetD8(dout.ptr, 0xFF, o.size() * 2));
  CHECK_CU(api->cuMemsetD8(dlse.ptr, 0xFF, lse.size() * 4));
  AttentionArgs args;
  args.q = {dq.get(), {1, hq, totalQ, d}, {0, d, sQ, 1}};
  args.k = {dk.get(), {1, hkv, totalK, d}, {0, d, sK, 1}};
  args.v = {dv.get(), {1, hkv, totalK, d}, {0, d, sK, 1}};
  args.o = {dout.get(), {1, hq, totalQ, d}, {0, d, sQ, 1}};
  args.lse = {dlse.get(), {1, hq, totalQ, 1}, {0, totalQ, 1, 1}};
  args.cuSeqlensQ = reinterpret_cast<const int32_t *>(dcuQ.ptr);
  args.cuSeqlensK = reinterpret_cast<const int32_t *>(dcuK.ptr);
  args.varlenBatch = c.batch;
  args.maxSeqlenQ = *std::max_element(lensQ.begin(), lensQ.end());
  args.maxSeqlenK = *std::max_element(lensK.begin(), lensK.end());
  const std::vector<float> sinks = test::randomSinks(s.sinks, hq, rng);
  DeviceBuffer dsinks(api, std::max<size_t>(sinks.size(), 1) * 4);
  if (s.sinks) {
    CHECK_CU(api->cuMemcpyHtoD(dsinks.ptr, sinks.data(), sinks.size() * 4));
    args.sinks = reinterpret_cast<const float *>(dsinks.ptr);
  }
  Status st = ctx.launch(**kernel, args, nullptr);
  if (!st.isOk()) {
    std::fprintf(stderr, "launch: %s\n", st.message().c_str());
    std::exit(1);
  }
  CHECK_CU(api->cuCtxSynchronize());
  CHECK_CU(api->cuMemcpyDtoH(o.data(), dout.ptr, o.size() * 2));
  CHECK_CU(api->cuMemcpyDtoH(lse.data(), dlse.ptr, lse.size() * 4));

  test::AttentionComparison worst;
  auto toDouble = [&](uint16_t x) {
    return double(test::fromHalfBits(bf16, x));
  };
  for (int b = 0; b < c.batch; ++b) {
    const int lq = lensQ[b];
    if (lq == 0)
      continue;
    templates::ReferenceProblem p;
    p.batch = 1;
    p.headsQ = hq;
    p.headsKV = hkv;
    p.seqQ = lq;
    p.seqKV = lensK[b];
    p.headDim = d;
    p.scale = s.effectiveScale();
    p.softcap = s.softcap;
    p.causal = s.causal;
    p.windowLeft = int(s.windowLeft);
    p.windowRight = int(s.windowRight);
    p.sinks.assign(sinks.begin(), sinks.end());
    std::vector<double> refO(size_t(hq) * lq * d), refLse(size_t(hq) * lq);
    templates::referenceAttention(p, q.data() + cuQ[b] * sQ, {0, d, sQ},
                                  k.data() + cuK[b] * sK, {0, d, sK},
                                  v.data() + cuK[b] * sK, {0, d, sK}, toDouble,
                                  refO.data(), refLse.data());
    std::vector<uint16_t> seqO(o.begin() + cuQ[b] * sQ,
                               o.begin() + cuQ[b + 1] * sQ);
    std::vector<float> seqLse;
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < lq; ++i)
        seqLse.push_back(lse[size_t(h) * totalQ + cuQ[b] + i]);
    test::AttentionComparison r = test::compareAttention(
        bf16, seqO, {0, d, sQ, 1}, seqLse, refO, refLse, 1, hq, lq, d);
    worst.relL2 = std::max(worst.relL2, r.relL2);
    worst.lseErr = std::max(worst.lseErr, r.lseErr);
    worst.nonFinite += r.nonFinite;
    worst.maskedRows += r.maskedRows;
    worst.maskedWrong += r.maskedWrong;
  }
  // The padding rows: never written (O and LSE still NaN).
  int written = 0;
  for (int r = 0; r < totalQ; ++r) {
    if (r >= cuQ.front() && r < cuQ.back())
      continue;
    for (int64_t x = 0; x < sQ; ++x)
      written += !std::isnan(test::fromHalfBits(bf16, o[size_t(r) * sQ + x]));
    for (int h = 0; h < hq; ++h)
      written += !std::isnan(lse[size_t(h) * totalQ + r]);
  }
  if (written)
    std::printf("     %d elements of the padding rows were written\n", written);
  worst.maskedWrong += written;
  return worst;
}

/// The GPU mapping the compiler chose for a case's kernel (its metadata).
std::string mappingOf(Context &ctx, const Case &c) {
  auto kernel = ctx.getKernel(c.spec);
  if (!kernel.isOk() || (*kernel)->metadata().mapping.empty())
    return "?";
  return (*kernel)->metadata().mapping;
}

/// The median time of `reps` launches; with `useWorkspace`, a kernel that
/// takes a stream-K workspace gets one (`takesWorkspace`: whether it does).
double timeCase(Context &ctx, const Case &c, int reps, bool useWorkspace,
                bool *takesWorkspace) {
  const DriverApi *api = &ctx.driver();
  if (!api->cuEventCreate || !api->cuEventElapsedTime) {
    std::fprintf(stderr, "the driver has no event API\n");
    std::exit(1);
  }
  auto kernel = ctx.getKernel(c.spec);
  if (!kernel.isOk()) {
    std::fprintf(stderr, "getKernel: %s\n", kernel.status().message().c_str());
    std::exit(1);
  }
  int hq = c.spec.heads, d = c.spec.headDim;
  size_t n = size_t(c.batch) * hq * c.seqQ * d;
  std::vector<uint16_t> host(n);
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto &x : host)
    x = templates::floatToBf16Bits(normal(rng));
  DeviceBuffer dq(api, n * 2), dk(api, n * 2), dv(api, n * 2), dout(api, n * 2);
  for (auto *buf : {&dq, &dk, &dv})
    CHECK_CU(api->cuMemcpyHtoD(buf->ptr, host.data(), n * 2));
  auto st = test::attentionStrides(hq, c.seqQ, d, c.bshd);
  AttentionArgs args;
  args.q = {reinterpret_cast<void *>(dq.ptr), {c.batch, hq, c.seqQ, d}, st};
  args.k = {reinterpret_cast<void *>(dk.ptr), {c.batch, hq, c.seqKV, d}, st};
  args.v = {reinterpret_cast<void *>(dv.ptr), {c.batch, hq, c.seqKV, d}, st};
  args.o = {reinterpret_cast<void *>(dout.ptr), {c.batch, hq, c.seqQ, d}, st};
  // Varlen: the same memory as B packed sequences of seq_q = seq_kv tokens.
  std::vector<int32_t> cu;
  for (int b = 0; b <= c.batch; ++b)
    cu.push_back(int32_t(b) * c.seqQ);
  DeviceBuffer dcu(api, cu.size() * 4);
  if (c.spec.varlen) {
    CHECK_CU(api->cuMemcpyHtoD(dcu.ptr, cu.data(), cu.size() * 4));
    const int64_t total = int64_t(c.batch) * c.seqQ;
    const std::array<int64_t, 4> packed = {0, d, int64_t(hq) * d, 1};
    for (TensorArg *t : {&args.q, &args.k, &args.v, &args.o}) {
      t->shape = {1, hq, total, d};
      t->stride = packed;
    }
    args.cuSeqlensQ = args.cuSeqlensK =
        reinterpret_cast<const int32_t *>(dcu.ptr);
    args.varlenBatch = c.batch;
    args.maxSeqlenQ = args.maxSeqlenK = c.seqQ;
  }
  // Paged: the same K/V memory as NHD pages [total / page, page, H, D],
  // each sequence's pages drawn from a shuffled order.
  const int64_t page = c.spec.pageSize;
  const int64_t blocksPerSeq = page ? (c.seqKV + page - 1) / page : 0;
  std::vector<int32_t> table(size_t(c.batch) * blocksPerSeq),
      lens(size_t(c.batch), int32_t(c.seqKV));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);
  DeviceBuffer dtable(api, std::max<size_t>(table.size(), 1) * 4),
      dlens(api, lens.size() * 4);
  if (page) {
    CHECK_CU(api->cuMemcpyHtoD(dtable.ptr, table.data(), table.size() * 4));
    CHECK_CU(api->cuMemcpyHtoD(dlens.ptr, lens.data(), lens.size() * 4));
    const int64_t pages = int64_t(table.size());
    for (TensorArg *t : {&args.k, &args.v}) {
      t->shape = {pages, hq, page, d};
      t->stride = {page * hq * d, d, int64_t(hq) * d, 1};
    }
    args.cuSeqlensK = nullptr;
    args.blockTable = reinterpret_cast<const int32_t *>(dtable.ptr);
    args.maxBlocks = blocksPerSeq;
    args.kvLens = reinterpret_cast<const int32_t *>(dlens.ptr);
  }
  auto wsBytes = ctx.workspaceSize(**kernel, args);
  DeviceBuffer dws(api, wsBytes.isOk() ? *wsBytes : 0);
  *takesWorkspace = wsBytes.isOk() && *wsBytes > 0;
  if (useWorkspace && wsBytes.isOk() && *wsBytes) {
    CHECK_CU(api->cuMemsetD8(dws.ptr, 0, *wsBytes));
    args.workspace = dws.get();
    args.workspaceBytes = *wsBytes;
  }
  CUevent start, stop;
  CHECK_CU(api->cuEventCreate(&start, 0));
  CHECK_CU(api->cuEventCreate(&stop, 0));
  std::vector<float> ms;
  for (int i = 0; i < reps + 2; ++i) {
    CHECK_CU(api->cuEventRecord(start, nullptr));
    Status s = ctx.launch(**kernel, args, nullptr);
    if (!s.isOk()) {
      std::fprintf(stderr, "launch: %s\n", s.message().c_str());
      std::exit(1);
    }
    CHECK_CU(api->cuEventRecord(stop, nullptr));
    CHECK_CU(api->cuEventSynchronize(stop));
    float t = 0;
    CHECK_CU(api->cuEventElapsedTime(&t, start, stop));
    if (i >= 2) // warm-up
      ms.push_back(t);
  }
  api->cuEventDestroy(start);
  api->cuEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  std::string bundle, writeSpecs, only;
  bool bench = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bundle" && i + 1 < argc)
      bundle = argv[++i];
    else if (a == "--write-specs" && i + 1 < argc)
      writeSpecs = argv[++i];
    else if (a == "--bench")
      bench = true;
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (!writeSpecs.empty()) {
    std::vector<KernelSpec> specs;
    for (const Case &c : correctnessCases())
      specs.push_back(c.spec);
    for (const Case &c : benchCases())
      specs.push_back(c.spec);
    std::ofstream(writeSpecs) << writeSpecFile(specs);
    return 0;
  }

  // Line-buffered, so that a step killed by `timeout` (a hung kernel) still
  // logs every case that finished.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::unique_ptr<Context> ctx = attnc::test::openBundleContext(bundle);

  if (bench) {
    for (const Case &c : benchCases()) {
      if (!selected(c, only))
        continue;
      double flops = 4.0 * c.batch * c.spec.heads * double(c.seqQ) * c.seqKV *
                     c.spec.headDim * (c.spec.causal ? 0.5 : 1.0);
      // Kernels with the stream-K tail: with the workspace, then without
      // (the last round as whole items), alternating, as an A/B.
      bool ab = false;
      for (int round = 0; round < (ab ? 4 : 1); ++round) {
        bool withWs = round % 2 == 0;
        double ms = timeCase(*ctx, c, 10, withWs, &ab);
        std::printf("bench %-18s tiles %-10s %-8s B=%d H=%lld S=%d: %.3f ms, "
                    "%.1f TFLOP/s%s\n",
                    c.name.c_str(), c.tiles.c_str(), mappingOf(*ctx, c).c_str(),
                    c.batch, (long long)c.spec.heads, c.seqQ, ms,
                    flops / (ms * 1e-3) / 1e12,
                    ab ? (withWs ? " [stream-K tail]" : " [no tail]") : "");
      }
    }
    return 0;
  }

  uint64_t seed = std::chrono::steady_clock::now().time_since_epoch().count();
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    seed = std::strtoull(s, nullptr, 10);
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  int passed = 0, failed = 0;
  int skipped = 0;
  // Cases with a persistent grid of their own: a context each (the CUDA
  // context current now is adopted, so the buffers are shared).
  std::map<int, std::unique_ptr<Context>> fewBlocks;
  auto contextFor = [&](int blocks) -> Context & {
    if (!blocks)
      return *ctx;
    std::unique_ptr<Context> &few = fewBlocks[blocks];
    if (!few) {
      ContextOptions o;
      o.cacheDir = bundle;
      o.persistentBlocks = blocks;
      auto made = Context::create(o);
      if (!made.isOk()) {
        std::fprintf(stderr, "context: %s\n", made.status().message().c_str());
        std::exit(1);
      }
      few = std::move(*made);
    }
    return *few;
  };
  for (const Case &c : correctnessCases()) {
    if (!selected(c, only)) {
      ++skipped;
      continue;
    }
    std::printf("run  %s\n", c.name.c_str());
    test::AttentionComparison r =
        c.spec.varlen ? runVarlenCase(contextFor(c.blocks), c, rng)
                      : runCase(contextFor(c.blocks), c, rng);
    bool ok = r.ok(1e-2, 1e-3);
    std::printf("%s %-48s [%s] rel L2 %.2e  LSE err %.2e  masked rows %d  "
                "non-finite %d  masked wrong %d\n",
                ok ? "PASS" : "FAIL", c.name.c_str(),
                mappingOf(*ctx, c).c_str(), r.relL2, r.lseErr, r.maskedRows,
                r.nonFinite, r.maskedWrong);
    (ok ? passed : failed)++;
  }
  std::printf("%d passed, %d failed, %d not selected%s\n", passed, failed,
              skipped,
              only.empty() ? " (kv_sync mbarrier / producer / pingpong / "
                             "tma: --only mbarrier|producer|pingpong|tma)"
                           : "");
  return failed ? 1 : 0;
}
