//===- DecodeGpuTest.cpp - attnc's paged split-KV decode on a real GPU ----===//
//
// Loads the decode kernels from a bundle with the runtime alone and checks
// them against the float64 reference on fresh random inputs with poisoned
// outputs and workspace: random block tables over a shuffled page pool,
// page sizes 1 to 256, lengths that are not multiples of the page size (and
// 0), split counts from 1 to more than there are tiles, q_len > 1 with
// causal, NHD and HND pages, and paged == contiguous (the same cache seen
// as one page per sequence). `--bench` times the PEERS.md decode table in
// TB/s of K+V read.
//
// `--bench --sweep` times every variant of the split kernel's knobs
// (block_n, stages, split count) side by side on the same rows, each
// checked first.
//
// `--bench --ab-merge` times the default kernel with 2-6 splits merged by
// the last split program against the combine kernel, alternating.
//
// `--random N` runs N random configurations instead (the differential test
// of decode): a kernel from a fixed pool (page sizes 1 to 1000, odd ones
// included; GQA/MQA ratios; head dims 64 and 128; bf16 and fp16; q_len up
// to 4 with causal; soft-cap; warps along the keys), then random batch,
// lengths (0, 1, primes, page and tile edges, up to 6000), q_len, split
// count (the runtime's, 1, up to 40), merge (the last split or the combine
// kernel), page layout and repeated launches on one workspace. The seed is
// printed; ATTNC_TEST_SEED=N replays a run.
//
// Usage: attnc-gpu-decode --bundle DIR [--bench [--sweep | --ab-merge]]
//        attnc-gpu-decode --bundle DIR --random N
//        attnc-gpu-decode --write-specs FILE   (the specs to bundle)
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/CacheOps.h"
#include "attnc/runtime/Context.h"
#include "attnc/runtime/Decode.h"
#include "attnc/runtime/Driver.h"
#include "attnc/runtime/Spec.h"
#include "templates/ReferenceAttention.h"
#include "tests/common/AttentionCheck.h"
#include "tests/common/RowReference.h"
#include "tests/gpu/GpuHarness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace attnc;
using attnc::test::DeviceBuffer;
using attnc::test::kernelFor;

namespace {

/// bf16 (or fp16) bits as doubles.
std::vector<double> halfsToDoubles(bool bf16, const std::vector<uint16_t> &h) {
  std::vector<double> out(h.size());
  for (size_t i = 0; i < h.size(); ++i)
    out[i] = test::fromHalfBits(bf16, h[i]);
  return out;
}

KernelSpec decodeSpec(int hq, int hkv, int d, const char *dtype, int page,
                      int maxQLen = 1) {
  KernelSpec s;
  s.op = "decode";
  s.heads = hq;
  s.kvHeads = hkv;
  s.headDim = d;
  s.dtype = dtype;
  s.hasLse = true;
  s.arch = "sm_90a";
  s.pageSize = page;
  s.maxQLen = maxQLen;
  return s;
}

struct Case {
  const char *name;
  KernelSpec spec;
  std::vector<int> lens;
  int seqQ = 1;
  int splits = 0; // 0: the runtime's choice
  bool nhd = true;
  bool shuffle = true; // random block table (else pages in order)
  // O as [B, H, Sq, D] (else [B, Sq, H, D]): with one split and seq_q > 1
  // the split kernel then writes O itself (write_o).
  bool oBhsd = false;
  // DecodeArgs::combineKernel: the combine kernel merges even 2-6 splits.
  bool combineKernel = false;
  // Launches on the same workspace (the merge counters must come back
  // usable); the last one's output is checked.
  int launches = 1;
};

std::vector<Case> correctnessCases() {
  std::vector<Case> cs;
  cs.push_back({"GQA 32/8 D128, page 16, ragged {1, 1000, 4097}",
                decodeSpec(32, 8, 128, "bf16", 16),
                {1, 1000, 4097}});
  cs.push_back({"page 1, MQA 8/1 D64 fp16, lengths {77, 300}",
                decodeSpec(8, 1, 64, "fp16", 1),
                {77, 300}});
  Case c{"page 64, HND pages, 7 splits, {63, 65, 2000}",
         decodeSpec(16, 4, 128, "bf16", 64),
         {63, 65, 2000}};
  c.splits = 7;
  c.nhd = false;
  cs.push_back(c);
  c = {"page 256, 64 splits (more than tiles), {300, 10}",
       decodeSpec(32, 8, 128, "bf16", 256),
       {300, 10}};
  c.splits = 64;
  cs.push_back(c);
  c = {"q_len 4, causal, GQA 8/2 D128 fp16, page 16",
       decodeSpec(8, 2, 128, "fp16", 16, 4),
       {4, 129, 1500}};
  c.seqQ = 4;
  c.spec.causal = true;
  cs.push_back(c);
  // The combine spreads splits over 8 warps x 4 in flight: more splits
  // than its 256 threads (the LSE max loop runs twice), a count that is
  // no multiple of 32, and query rows past one.
  c = {"300 splits, MQA 16/1 D64, q_len 3, page 16, {2, 9000, 40000}",
       decodeSpec(16, 1, 64, "bf16", 16, 3),
       {2, 9000, 40000}};
  c.splits = 300;
  c.seqQ = 3;
  cs.push_back(c);
  c = {"37 splits, GQA 32/8 D128, page 16, {1, 131, 20000}",
       decodeSpec(32, 8, 128, "bf16", 16),
       {1, 131, 20000}};
  c.splits = 37;
  cs.push_back(c);
  c = {"empty sequence in the batch, softcap 30, 1 split",
       decodeSpec(32, 8, 128, "bf16", 16),
       {0, 513}};
  c.splits = 1;
  c.spec.softcap = 30.0;
  cs.push_back(c);
  // One split writing O and LSE itself with q_len > 1 (write_o needs each
  // group's rows as one matrix: O [B, H, Sq, D]).
  c = {"q_len 3, 1 split, O [B, H, Sq, D], causal, GQA 8/2 fp16, page 16",
       decodeSpec(8, 2, 128, "fp16", 16, 4),
       {3, 200, 1001}};
  c.seqQ = 3;
  c.splits = 1;
  c.oBhsd = true;
  c.spec.causal = true;
  cs.push_back(c);
  // 2-6 splits: the last split program of each (sequence, KV head) merges
  // them (write_o = 2) on a workspace of 0xFF bytes (stale counters), three
  // launches on the same workspace; then the same through the combine
  // kernel. Two warps per program (GQA 8 x q_len 4 = 32 rows).
  c = {"4 splits merged by the last, GQA 32/8 D128, page 16, 3 launches",
       decodeSpec(32, 8, 128, "bf16", 16),
       {1, 1000, 4097}};
  c.splits = 4;
  c.launches = 3;
  cs.push_back(c);
  c.name = "4 splits merged by the combine kernel, same shapes";
  c.combineKernel = true;
  c.launches = 1;
  cs.push_back(c);
  c = {"6 splits merged by the last, empty sequence, softcap 30, page 256",
       decodeSpec(32, 8, 128, "bf16", 256),
       {0, 300, 7000}};
  c.splits = kDecodeMergeMaxSplits;
  c.spec.softcap = 30.0;
  cs.push_back(c);
  c = {"2 warps: 5 splits merged by the last, GQA 16/2, q_len 4, causal",
       decodeSpec(16, 2, 128, "bf16", 16, 4),
       {4, 200, 3001}};
  c.seqQ = 4;
  c.splits = 5;
  c.oBhsd = true;
  c.spec.causal = true;
  c.launches = 2;
  cs.push_back(c);
  // Warps along the keys (tuning.warps): each takes block_n / warps keys of
  // every tile, and the block merges their states after the KV loop.
  // Lengths 1 and 100 leave some warps only -inf (past the end) in every
  // tile, 0 leaves all of them.
  c = {"4 key warps, 128-key tiles, 1 split, page 256, {1, 100, 4097}",
       decodeSpec(32, 8, 128, "bf16", 256),
       {1, 100, 4097}};
  c.spec.tuning = {.blockN = 128, .stages = 3, .warps = 4};
  c.splits = 1;
  cs.push_back(c);
  c = {"4 key warps, 2 splits merged by the last, page 16, softcap 30",
       decodeSpec(32, 8, 128, "bf16", 16),
       {0, 129, 5000}};
  c.spec.tuning = {.blockN = 128, .stages = 2, .warps = 4};
  c.spec.softcap = 30.0;
  c.splits = 2;
  c.launches = 2;
  cs.push_back(c);
  c = {"2 key warps x 2 row warps, GQA 16/2 q_len 4, causal, 3 splits",
       decodeSpec(16, 2, 128, "fp16", 64, 4),
       {4, 77, 2100}};
  c.spec.tuning = {.blockN = 64, .stages = 3, .warps = 2};
  c.seqQ = 4;
  c.splits = 3;
  c.oBhsd = true;
  c.spec.causal = true;
  cs.push_back(c);
  c = {"8 key warps (16 keys each), 9 splits, combine kernel, HND page 64",
       decodeSpec(32, 8, 128, "bf16", 64),
       {63, 300, 9000}};
  c.spec.tuning = {.blockN = 128, .stages = 2, .warps = 8};
  c.splits = 9;
  c.nhd = false;
  cs.push_back(c);
  // Attention sinks (gpt-oss: 64/8 heads, D64): the combine merges each
  // head's sink once, after the splits, with one split too; an empty
  // sequence gives O = 0, LSE = the sink.
  c = {"sinks, GQA 64/8 D64, page 16, {0, 300, 5000}, runtime splits",
       decodeSpec(64, 8, 64, "bf16", 16),
       {0, 300, 5000}};
  c.spec.sinks = true;
  cs.push_back(c);
  c = {"sinks, one split, GQA 32/8 D128 q_len 2 causal, softcap 30",
       decodeSpec(32, 8, 128, "bf16", 16, 2),
       {2, 700}};
  c.spec.sinks = true;
  c.spec.causal = true;
  c.spec.softcap = 30.0;
  c.seqQ = 2;
  c.splits = 1;
  cs.push_back(c);
  return cs;
}

struct BenchRow {
  int batch, len;
  int page;
};

std::vector<BenchRow> benchRows() {
  // PEERS.md's decode table (32 q heads / 8 KV heads, D = 128, one token),
  // the cache seen as pages of 256 (contiguous) and 16 (vLLM-like).
  const std::pair<int, int> sizes[] = {
      {1, 131072}, {16, 32768}, {64, 4096}, {64, 16384}};
  std::vector<BenchRow> rows;
  for (int page : {256, 16})
    for (auto [b, l] : sizes)
      rows.push_back({b, l, page});
  return rows;
}

/// A paged cache on the host: pages [pages, page, Hkv, D] (NHD) or [pages,
/// Hkv, page, D] (HND), with the table.
struct Paged {
  int page, pages, maxBlocks;
  bool nhd;
  std::array<int64_t, 4> strides;
  std::vector<int32_t> table;
};

Paged makePaging(const std::vector<int> &lens, int page, int hkv, int d,
                 bool nhd, bool shuffle, std::mt19937_64 &rng) {
  Paged p;
  p.page = page;
  p.nhd = nhd;
  p.maxBlocks = 1;
  int used = 0;
  for (int len : lens) {
    p.maxBlocks = std::max(p.maxBlocks, (len + page - 1) / page);
    used += (len + page - 1) / page;
  }
  p.pages = used + 2;
  std::vector<int32_t> pool(p.pages);
  std::iota(pool.begin(), pool.end(), 0);
  if (shuffle)
    std::shuffle(pool.begin(), pool.end(), rng);
  p.table.assign(lens.size() * p.maxBlocks, 0);
  int next = 0;
  for (size_t b = 0; b < lens.size(); ++b)
    for (int i = 0; i < (lens[b] + page - 1) / page; ++i)
      p.table[b * p.maxBlocks + i] = pool[next++];
  p.strides = nhd ? std::array<int64_t, 4>{int64_t(page) * hkv * d, d,
                                           int64_t(hkv) * d, 1}
                  : std::array<int64_t, 4>{int64_t(hkv) * page * d,
                                           int64_t(page) * d, d, 1};
  return p;
}

struct Outputs {
  std::vector<uint16_t> o;
  std::vector<float> lse;
};

/// The host image of a paged cache holding logical per-sequence K/V
/// ([B][Hkv][len][D] values) at `paging`'s pages; the rest is NaN.
std::pair<std::vector<uint16_t>, std::vector<uint16_t>>
scatterCache(const KernelSpec &spec, const std::vector<int> &lens,
             const Paged &paging,
             const std::vector<std::vector<uint16_t>> &kSeq,
             const std::vector<std::vector<uint16_t>> &vSeq) {
  int hkv = spec.kvHeads, d = spec.headDim;
  size_t cacheElems = size_t(paging.pages) * paging.page * hkv * d;
  std::vector<uint16_t> kc(cacheElems, 0x7FC0), vc(cacheElems, 0x7FC0);
  for (size_t b = 0; b < lens.size(); ++b)
    for (int h = 0; h < hkv; ++h)
      for (int j = 0; j < lens[b]; ++j) {
        int64_t pg = paging.table[b * paging.maxBlocks + j / paging.page];
        int64_t at = pg * paging.strides[0] + h * paging.strides[1] +
                     (j % paging.page) * paging.strides[2];
        for (int x = 0; x < d; ++x) {
          kc[at + x] = kSeq[b][(size_t(h) * lens[b] + j) * d + x];
          vc[at + x] = vSeq[b][(size_t(h) * lens[b] + j) * d + x];
        }
      }
  return {std::move(kc), std::move(vc)};
}

Outputs runDecodeOnCache(Context &ctx, const KernelSpec &spec, const Case &c,
                         const Paged &paging, const std::vector<uint16_t> &q,
                         const std::vector<uint16_t> &kc,
                         const std::vector<uint16_t> &vc);

/// The sink logits of a spec with sinks (one per query head): around the
/// rows' LSE, and far above it every third head.
std::vector<float> sinksFor(const KernelSpec &spec) {
  std::vector<float> s;
  if (spec.sinks)
    for (int h = 0; h < spec.heads; ++h)
      s.push_back(2.f + 2.f * std::sin(1.7f * float(h)) +
                  (h % 3 == 2 ? 10.f : 0.f));
  return s;
}

/// Runs decode with the cache given as logical per-sequence K/V
/// ([B][Hkv][len][D] values) scattered into `paging`.
Outputs runDecode(Context &ctx, const KernelSpec &spec, const Case &c,
                  const Paged &paging, const std::vector<uint16_t> &q,
                  const std::vector<std::vector<uint16_t>> &kSeq,
                  const std::vector<std::vector<uint16_t>> &vSeq) {
  auto [kc, vc] = scatterCache(spec, c.lens, paging, kSeq, vSeq);
  return runDecodeOnCache(ctx, spec, c, paging, q, kc, vc);
}

/// Runs decode over a paged cache given as its host image.
Outputs runDecodeOnCache(Context &ctx, const KernelSpec &spec, const Case &c,
                         const Paged &paging, const std::vector<uint16_t> &q,
                         const std::vector<uint16_t> &kc,
                         const std::vector<uint16_t> &vc) {
  const DriverApi *api = &ctx.driver();
  const Kernel *kernel = &kernelFor(ctx, spec);
  int batch = int(c.lens.size()), hq = spec.heads, hkv = spec.kvHeads;
  int d = spec.headDim, sq = c.seqQ;
  size_t cacheElems = kc.size();
  auto qs = test::attentionStrides(hq, sq, d, /*bshd=*/sq == 1);
  auto os = test::attentionStrides(hq, sq, d, /*bshd=*/!c.oBhsd);
  DeviceBuffer dq(api, q.size() * 2), dk(api, cacheElems * 2),
      dv(api, cacheElems * 2), dtable(api, paging.table.size() * 4),
      dlens(api, c.lens.size() * 4), dout(api, q.size() * 2),
      dlse(api, size_t(batch) * hq * sq * 4);
  std::vector<int32_t> lens(c.lens.begin(), c.lens.end());
  CHECK_CU(api->cuMemcpyHtoD(dq.ptr, q.data(), q.size() * 2));
  CHECK_CU(api->cuMemcpyHtoD(dk.ptr, kc.data(), cacheElems * 2));
  CHECK_CU(api->cuMemcpyHtoD(dv.ptr, vc.data(), cacheElems * 2));
  CHECK_CU(api->cuMemcpyHtoD(dtable.ptr, paging.table.data(),
                             paging.table.size() * 4));
  CHECK_CU(api->cuMemcpyHtoD(dlens.ptr, lens.data(), lens.size() * 4));
  CHECK_CU(api->cuMemsetD8(dout.ptr, 0xFF, q.size() * 2));
  CHECK_CU(api->cuMemsetD8(dlse.ptr, 0xFF, size_t(batch) * hq * sq * 4));

  DecodeArgs args;
  args.q = {dq.get(), {batch, hq, sq, d}, qs};
  args.kCache = {dk.get(), {paging.pages, hkv, paging.page, d}, paging.strides};
  args.vCache = {dv.get(), {paging.pages, hkv, paging.page, d}, paging.strides};
  args.blockTable = static_cast<const int32_t *>(dtable.get());
  args.maxBlocks = paging.maxBlocks;
  args.kvLens = static_cast<const int32_t *>(dlens.get());
  args.maxKvLen = *std::max_element(c.lens.begin(), c.lens.end());
  args.o = {dout.get(), {batch, hq, sq, d}, os};
  args.lse = {dlse.get(), {batch, hq, sq, 1}, {int64_t(hq) * sq, sq, 1, 1}};
  args.numSplits = c.splits;
  const std::vector<float> sinks = sinksFor(spec);
  DeviceBuffer dsinks(api, std::max<size_t>(sinks.size(), 1) * 4);
  if (!sinks.empty()) {
    CHECK_CU(api->cuMemcpyHtoD(dsinks.ptr, sinks.data(), sinks.size() * 4));
    args.sinks = static_cast<const float *>(dsinks.get());
  }
  auto bytes = ctx.decodeWorkspaceSize(*kernel, args);
  if (!bytes.isOk()) {
    std::fprintf(stderr, "workspace: %s\n", bytes.status().message().c_str());
    std::exit(1);
  }
  DeviceBuffer ws(api, *bytes);
  CHECK_CU(api->cuMemsetD8(ws.ptr, 0xFF, std::max<size_t>(*bytes, 256)));
  args.workspace = ws.get();
  args.workspaceBytes = *bytes;
  args.combineKernel = c.combineKernel;
  for (int launch = 0; launch < c.launches; ++launch) {
    CHECK_CU(api->cuMemsetD8(dout.ptr, 0xFF, q.size() * 2));
    CHECK_CU(api->cuMemsetD8(dlse.ptr, 0xFF, size_t(batch) * hq * sq * 4));
    Status st = ctx.launchDecode(*kernel, args, nullptr);
    if (!st.isOk()) {
      std::fprintf(stderr, "launchDecode: %s\n", st.message().c_str());
      std::exit(1);
    }
    CHECK_CU(api->cuCtxSynchronize());
  }
  // The merge counters (the workspace's last [B, Hkv] words): 0 where the
  // last split program merged, the poison where the combine kernel did;
  // anything else is a count left behind.
  {
    size_t words = size_t(batch) * hkv;
    size_t region = (words * 8 + 255) / 256 * 256;
    std::vector<uint64_t> counts(words);
    CHECK_CU(api->cuMemcpyDtoH(counts.data(), ws.ptr + (*bytes - region),
                               words * 8));
    for (uint64_t w : counts)
      if (w != 0 && w != ~uint64_t(0)) {
        std::printf("FAIL %s: a merge counter holds %#llx after the launch\n",
                    c.name, (unsigned long long)w);
        std::exit(1);
      }
  }
  Outputs out{std::vector<uint16_t>(q.size()),
              std::vector<float>(size_t(batch) * hq * sq)};
  CHECK_CU(api->cuMemcpyDtoH(out.o.data(), dout.ptr, q.size() * 2));
  CHECK_CU(api->cuMemcpyDtoH(out.lse.data(), dlse.ptr, out.lse.size() * 4));
  return out;
}

/// `contiguous`: also check paged == contiguous where the case allows it
/// (its contiguous spec must be bundled).
bool runCase(Context &ctx, const Case &c, std::mt19937_64 &rng,
             bool contiguous = true) {
  const KernelSpec &s = c.spec;
  bool bf16 = s.dtype == "bf16";
  int batch = int(c.lens.size()), hq = s.heads, hkv = s.kvHeads;
  int d = s.headDim, sq = c.seqQ;
  std::normal_distribution<float> normal(0.f, 1.f);
  auto bits = [&](float x) { return test::toHalfBits(bf16, x); };
  std::vector<uint16_t> q(size_t(batch) * hq * sq * d);
  for (auto &x : q)
    x = bits(normal(rng));
  std::vector<std::vector<uint16_t>> kSeq(batch), vSeq(batch);
  for (int b = 0; b < batch; ++b) {
    kSeq[b].resize(size_t(hkv) * c.lens[b] * d);
    vSeq[b].resize(kSeq[b].size());
    for (auto &x : kSeq[b])
      x = bits(normal(rng));
    for (auto &x : vSeq[b])
      x = bits(normal(rng));
  }
  Paged paging = makePaging(c.lens, s.pageSize, hkv, d, c.nhd, c.shuffle, rng);
  Outputs got = runDecode(ctx, s, c, paging, q, kSeq, vSeq);

  auto qs = test::attentionStrides(hq, sq, d, /*bshd=*/sq == 1);
  auto os = test::attentionStrides(hq, sq, d, /*bshd=*/!c.oBhsd);
  std::vector<double> refO(q.size()), refLse(got.lse.size());
  auto toDouble = [&](uint16_t x) {
    return double(test::fromHalfBits(bf16, x));
  };
  for (int b = 0; b < batch; ++b) {
    templates::ReferenceProblem p;
    p.headsQ = hq;
    p.headsKV = hkv;
    p.seqQ = sq;
    p.seqKV = c.lens[b];
    p.headDim = d;
    p.scale = s.effectiveScale();
    p.softcap = s.softcap;
    p.causal = s.causal;
    const std::vector<float> sinks = sinksFor(s);
    p.sinks.assign(sinks.begin(), sinks.end());
    auto dense = templates::ReferenceStrides::dense(hkv, c.lens[b], d);
    templates::referenceAttention(
        p, q.data() + b * qs[0], {qs[0], qs[1], qs[2]}, kSeq[b].data(), dense,
        vSeq[b].data(), dense, toDouble, refO.data() + size_t(b) * hq * sq * d,
        refLse.data() + size_t(b) * hq * sq);
  }
  test::AttentionComparison r = test::compareAttention(
      bf16, got.o, os, got.lse, refO, refLse, batch, hq, sq, d);
  bool ok = r.ok(1e-2, 1e-3);
  std::printf("%s %-52s rel L2 %.2e  LSE err %.2e  masked rows %d  "
              "non-finite %d  masked wrong %d\n",
              ok ? "PASS" : "FAIL", c.name, r.relL2, r.lseErr, r.maskedRows,
              r.nonFinite, r.maskedWrong);

  // Paged == contiguous: the same cache as one page per sequence (a spec
  // whose page size is the longest length), same split count.
  if (contiguous && c.seqQ == 1 && !s.causal && s.softcap == 0) {
    int maxLen = *std::max_element(c.lens.begin(), c.lens.end());
    KernelSpec contiguous = s;
    contiguous.pageSize = std::max(maxLen, 1);
    Case cc = c;
    cc.spec = contiguous;
    Paged one = makePaging(c.lens, contiguous.pageSize, hkv, d, c.nhd,
                           /*shuffle=*/false, rng);
    Outputs same = runDecode(ctx, contiguous, cc, one, q, kSeq, vSeq);
    test::RowComparison cmp = test::compareRows(
        [&](int64_t i) { return test::fromHalfBits(bf16, got.o[size_t(i)]); },
        halfsToDoubles(bf16, same.o));
    bool same_ok = cmp.ok(1e-3);
    std::printf("%s   paged == contiguous (page %lld): rel L2 %.2e, %lld "
                "non-finite\n",
                same_ok ? "PASS" : "FAIL", (long long)contiguous.pageSize,
                cmp.relL2, (long long)cmp.nonFinite);
    ok &= same_ok;
  }
  return ok;
}

/// The kernels of the random configurations (bundled by --write-specs):
/// seven page sizes, odd ones included, each with three variants (plain,
/// q_len 4 with causal, soft-cap), head ratios, head dims and dtypes
/// rotating, and warps along the keys on some D128 kernels.
std::vector<KernelSpec> randomSpecPool() {
  const std::pair<int, int> heads[] = {{32, 8}, {8, 1}, {16, 2}, {12, 4}};
  std::vector<KernelSpec> pool;
  int i = 0;
  for (int page : {1, 7, 16, 37, 64, 256, 1000})
    for (int variant = 0; variant < 3; ++variant, ++i) {
      auto [hq, hkv] = heads[i % 4];
      int d = i % 3 == 1 ? 64 : 128;
      KernelSpec s = decodeSpec(hq, hkv, d, i % 2 ? "fp16" : "bf16", page,
                                variant == 1 ? 4 : 1);
      s.causal = variant == 1;
      s.softcap = variant == 2 ? 30.0 : 0.0;
      if (d == 128 && i % 4 == 0)
        s.tuning = {.blockN = 128, .stages = 2, .warps = i % 8 ? 4 : 2};
      pool.push_back(s);
    }
  return pool;
}

/// One random configuration over a kernel of the pool; `name` holds its
/// description (the case's name points into it).
Case randomCase(const std::vector<KernelSpec> &pool, std::mt19937_64 &rng,
                std::string &name) {
  auto pick = [&](int64_t n) { return int64_t(rng() % uint64_t(n)); };
  Case c{nullptr, pool[size_t(pick(int64_t(pool.size())))], {}};
  const int edges[] = {0, 1, 2, 7, 13, 16, 31, 37, 64, 127, 1000, 4097};
  const int batch = 1 + int(pick(5));
  for (int b = 0; b < batch; ++b)
    c.lens.push_back(pick(2) ? edges[pick(std::size(edges))]
                             : 1 + int(pick(6000)));
  c.seqQ = c.spec.maxQLen > 1 ? 1 + int(pick(c.spec.maxQLen)) : 1;
  const int64_t splitChoice = pick(4);
  c.splits = splitChoice == 0 ? 0 : splitChoice == 1 ? 1 : 2 + int(pick(39));
  c.combineKernel =
      c.splits >= 2 && c.splits <= kDecodeMergeMaxSplits && pick(2) == 0;
  c.nhd = pick(2) == 0;
  c.oBhsd = pick(2) == 0 || (c.seqQ > 1 && c.splits == 1);
  c.launches = pick(3) == 0 ? 2 : 1;
  name = std::to_string(c.spec.heads) + "/" + std::to_string(c.spec.kvHeads) +
         " D" + std::to_string(c.spec.headDim) + " " + c.spec.dtype + " page " +
         std::to_string(c.spec.pageSize) + (c.spec.causal ? " causal" : "") +
         (c.spec.softcap != 0 ? " softcap" : "") +
         (c.spec.tuning.warps > 1
              ? " " + std::to_string(c.spec.tuning.warps) + " key warps"
              : "") +
         ", q_len " + std::to_string(c.seqQ) + ", splits " +
         (c.splits ? std::to_string(c.splits) : std::string("auto")) +
         (c.combineKernel ? " (combine)" : "") + (c.nhd ? "" : ", HND") +
         (c.oBhsd ? ", O BHSD" : "") + (c.launches > 1 ? ", 2 launches" : "") +
         ", lengths {";
  for (size_t b = 0; b < c.lens.size(); ++b)
    name += (b ? ", " : "") + std::to_string(c.lens[b]);
  name += "}";
  c.name = name.c_str();
  return c;
}

KernelSpec appendSpec(int hkv, int d, const char *dtype, int page) {
  KernelSpec s;
  s.op = "kv_append";
  s.heads = s.kvHeads = hkv;
  s.headDim = d;
  s.dtype = dtype;
  s.pageSize = page;
  s.arch = "sm_90a";
  return s;
}

KernelSpec mergeSpec(int heads, int d, const char *dtype) {
  KernelSpec s;
  s.op = "lse_merge";
  s.heads = s.kvHeads = heads;
  s.headDim = d;
  s.dtype = dtype;
  s.hasLse = true;
  s.arch = "sm_90a";
  return s;
}

struct AppendCase {
  const char *name;
  KernelSpec decode;
  std::vector<int> lens;
  bool nhd;
};

std::vector<AppendCase> appendCases() {
  return {{"kv_append GQA 32/8 D128 bf16 page 16 NHD, {1, 300, 37}",
           decodeSpec(32, 8, 128, "bf16", 16),
           {1, 300, 37},
           true},
          {"kv_append MQA 8/1 D64 fp16 page 1 HND, {77, 5}",
           decodeSpec(8, 1, 64, "fp16", 1),
           {77, 5},
           false}};
}

/// KV append on the GPU: every token of every sequence (in shuffled order,
/// with padding tokens of slot -1 whose rows are NaN) is appended into a
/// NaN-poisoned paged cache; the cache must then equal the expected image
/// exactly, and decode over it must match the float64 reference over the
/// contiguous K/V.
bool runAppendCase(Context &ctx, const AppendCase &c, std::mt19937_64 &rng) {
  const DriverApi *api = &ctx.driver();
  const KernelSpec &ds = c.decode;
  bool bf16 = ds.dtype == "bf16";
  int batch = int(c.lens.size()), hq = ds.heads, hkv = ds.kvHeads;
  int d = ds.headDim;
  std::normal_distribution<float> normal(0.f, 1.f);
  auto bits = [&](float x) { return test::toHalfBits(bf16, x); };
  std::vector<std::vector<uint16_t>> kSeq(batch), vSeq(batch);
  for (int b = 0; b < batch; ++b) {
    kSeq[b].resize(size_t(hkv) * c.lens[b] * d);
    vSeq[b].resize(kSeq[b].size());
    for (auto &x : kSeq[b])
      x = bits(normal(rng));
    for (auto &x : vSeq[b])
      x = bits(normal(rng));
  }
  Paged paging = makePaging(c.lens, ds.pageSize, hkv, d, c.nhd, true, rng);
  // Tokens: (b, j) pairs plus padding, shuffled; rows [tokens, Hkv, D].
  std::vector<std::pair<int, int>> order;
  for (int b = 0; b < batch; ++b)
    for (int j = 0; j < c.lens[b]; ++j)
      order.push_back({b, j});
  for (int i = 0; i < 3; ++i)
    order.push_back({-1, -1});
  std::shuffle(order.begin(), order.end(), rng);
  size_t tokens = order.size();
  std::vector<uint16_t> kRows(tokens * hkv * d, 0x7FC0),
      vRows(tokens * hkv * d, 0x7FC0);
  std::vector<int64_t> slots(tokens, -1);
  for (size_t t = 0; t < tokens; ++t) {
    auto [b, j] = order[t];
    if (b < 0)
      continue;
    slots[t] =
        int64_t(paging.table[size_t(b) * paging.maxBlocks + j / paging.page]) *
            paging.page +
        j % paging.page;
    for (int h = 0; h < hkv; ++h)
      for (int x = 0; x < d; ++x) {
        kRows[(t * hkv + h) * d + x] =
            kSeq[b][(size_t(h) * c.lens[b] + j) * d + x];
        vRows[(t * hkv + h) * d + x] =
            vSeq[b][(size_t(h) * c.lens[b] + j) * d + x];
      }
  }
  auto [expK, expV] = scatterCache(ds, c.lens, paging, kSeq, vSeq);
  size_t cacheElems = expK.size();
  DeviceBuffer dk(api, cacheElems * 2), dv(api, cacheElems * 2),
      dkr(api, kRows.size() * 2), dvr(api, vRows.size() * 2),
      dslots(api, tokens * 8);
  std::vector<uint16_t> poison(cacheElems, 0x7FC0); // NaN in bf16 and fp16
  CHECK_CU(api->cuMemcpyHtoD(dk.ptr, poison.data(), cacheElems * 2));
  CHECK_CU(api->cuMemcpyHtoD(dv.ptr, poison.data(), cacheElems * 2));
  CHECK_CU(api->cuMemcpyHtoD(dkr.ptr, kRows.data(), kRows.size() * 2));
  CHECK_CU(api->cuMemcpyHtoD(dvr.ptr, vRows.data(), vRows.size() * 2));
  CHECK_CU(api->cuMemcpyHtoD(dslots.ptr, slots.data(), tokens * 8));
  KVAppendArgs a;
  int64_t T = int64_t(tokens);
  a.key = {dkr.get(), {T, hkv, d, 1}, {int64_t(hkv) * d, d, 1, 1}};
  a.value = {dvr.get(), {T, hkv, d, 1}, {int64_t(hkv) * d, d, 1, 1}};
  a.slotMapping = static_cast<const int64_t *>(dslots.get());
  a.kCache = {dk.get(), {paging.pages, hkv, paging.page, d}, paging.strides};
  a.vCache = {dv.get(), {paging.pages, hkv, paging.page, d}, paging.strides};
  const Kernel *append =
      &kernelFor(ctx, appendSpec(hkv, d, ds.dtype.c_str(), ds.pageSize));
  Status st = ctx.launchKVAppend(*append, a, nullptr);
  if (!st.isOk()) {
    std::fprintf(stderr, "launchKVAppend: %s\n", st.message().c_str());
    std::exit(1);
  }
  CHECK_CU(api->cuCtxSynchronize());
  std::vector<uint16_t> kc(cacheElems), vc(cacheElems);
  CHECK_CU(api->cuMemcpyDtoH(kc.data(), dk.ptr, cacheElems * 2));
  CHECK_CU(api->cuMemcpyDtoH(vc.data(), dv.ptr, cacheElems * 2));
  size_t wrong = 0;
  for (size_t i = 0; i < cacheElems; ++i)
    wrong += (kc[i] != expK[i]) + (vc[i] != expV[i]);
  bool ok = wrong == 0;
  std::printf("%s %-52s cache elements wrong: %zu of %zu\n",
              ok ? "PASS" : "FAIL", c.name, wrong, 2 * cacheElems);

  // Decode over the appended cache vs float64 over the contiguous K/V.
  Case dc{c.name, ds, c.lens};
  dc.nhd = c.nhd;
  std::vector<uint16_t> q(size_t(batch) * hq * d);
  for (auto &x : q)
    x = bits(normal(rng));
  Outputs got = runDecodeOnCache(ctx, ds, dc, paging, q, kc, vc);
  auto qs = test::attentionStrides(hq, 1, d, true);
  std::vector<double> refO(q.size()), refLse(got.lse.size());
  auto toDouble = [&](uint16_t x) {
    return double(test::fromHalfBits(bf16, x));
  };
  for (int b = 0; b < batch; ++b) {
    templates::ReferenceProblem p;
    p.headsQ = hq;
    p.headsKV = hkv;
    p.seqQ = 1;
    p.seqKV = c.lens[b];
    p.headDim = d;
    p.scale = ds.effectiveScale();
    auto dense = templates::ReferenceStrides::dense(hkv, c.lens[b], d);
    templates::referenceAttention(
        p, q.data() + b * qs[0], {qs[0], qs[1], qs[2]}, kSeq[b].data(), dense,
        vSeq[b].data(), dense, toDouble, refO.data() + size_t(b) * hq * d,
        refLse.data() + size_t(b) * hq);
  }
  test::AttentionComparison r = test::compareAttention(
      bf16, got.o, qs, got.lse, refO, refLse, batch, hq, 1, d);
  bool decodeOk = r.ok(1e-2, 1e-3);
  std::printf("%s   append then decode == float64 over contiguous K/V: rel L2 "
              "%.2e  LSE err %.2e  non-finite %d\n",
              decodeOk ? "PASS" : "FAIL", r.relL2, r.lseErr, r.nonFinite);
  return ok && decodeOk;
}

/// Cascade on the GPU: each sequence's keys split into a prefix and a
/// suffix (one suffix empty: LSE -inf), each attended by decode with LSE,
/// the two merged by lse_merge; the result must equal attention over the
/// whole sequence (float64), with no NaN.
bool runMergeCase(Context &ctx, std::mt19937_64 &rng) {
  const DriverApi *api = &ctx.driver();
  const int hq = 32, hkv = 8, d = 128, prefix = 200;
  const std::vector<int> suffix = {57, 0, 1000};
  const int batch = int(suffix.size());
  const bool bf16 = true;
  KernelSpec ds = decodeSpec(hq, hkv, d, "bf16", 16);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto bits = [&](float x) { return test::toHalfBits(bf16, x); };
  std::vector<uint16_t> q(size_t(batch) * hq * d);
  for (auto &x : q)
    x = bits(normal(rng));
  std::vector<std::vector<uint16_t>> kAll(batch), vAll(batch), kP(batch),
      vP(batch), kS(batch), vS(batch);
  std::vector<int> full(batch), pre(batch, prefix);
  for (int b = 0; b < batch; ++b) {
    full[b] = prefix + suffix[b];
    kAll[b].resize(size_t(hkv) * full[b] * d);
    vAll[b].resize(kAll[b].size());
    for (auto &x : kAll[b])
      x = bits(normal(rng));
    for (auto &x : vAll[b])
      x = bits(normal(rng));
    for (auto *part : {&kP, &vP, &kS, &vS})
      (*part)[b].clear();
    for (int h = 0; h < hkv; ++h) {
      auto row = [&](const std::vector<uint16_t> &src, int j) {
        return src.begin() + (size_t(h) * full[b] + j) * d;
      };
      kP[b].insert(kP[b].end(), row(kAll[b], 0), row(kAll[b], prefix));
      vP[b].insert(vP[b].end(), row(vAll[b], 0), row(vAll[b], prefix));
      kS[b].insert(kS[b].end(), row(kAll[b], prefix), row(kAll[b], full[b]));
      vS[b].insert(vS[b].end(), row(vAll[b], prefix), row(vAll[b], full[b]));
    }
  }
  Case cp{"prefix", ds, pre}, cs{"suffix", ds, suffix};
  Outputs a = runDecode(
      ctx, ds, cp, makePaging(pre, 16, hkv, d, true, true, rng), q, kP, vP);
  Outputs bb = runDecode(
      ctx, ds, cs, makePaging(suffix, 16, hkv, d, true, true, rng), q, kS, vS);
  // Merge on the device: O [B, 1, H, D] (BSHD), LSE [B, H, 1].
  size_t nO = q.size(), nL = size_t(batch) * hq;
  DeviceBuffer doa(api, nO * 2), dob(api, nO * 2), dla(api, nL * 4),
      dlb(api, nL * 4), dout(api, nO * 2), dlse(api, nL * 4);
  CHECK_CU(api->cuMemcpyHtoD(doa.ptr, a.o.data(), nO * 2));
  CHECK_CU(api->cuMemcpyHtoD(dob.ptr, bb.o.data(), nO * 2));
  CHECK_CU(api->cuMemcpyHtoD(dla.ptr, a.lse.data(), nL * 4));
  CHECK_CU(api->cuMemcpyHtoD(dlb.ptr, bb.lse.data(), nL * 4));
  CHECK_CU(api->cuMemsetD8(dout.ptr, 0xFF, nO * 2));
  CHECK_CU(api->cuMemsetD8(dlse.ptr, 0xFF, nL * 4));
  auto os = test::attentionStrides(hq, 1, d, true);
  std::array<int64_t, 4> ls{hq, 1, 1, 1};
  MergeArgs m;
  m.oA = {doa.get(), {batch, hq, 1, d}, os};
  m.oB = {dob.get(), {batch, hq, 1, d}, os};
  m.o = {dout.get(), {batch, hq, 1, d}, os};
  m.lseA = {dla.get(), {batch, hq, 1, 1}, ls};
  m.lseB = {dlb.get(), {batch, hq, 1, 1}, ls};
  m.lse = {dlse.get(), {batch, hq, 1, 1}, ls};
  const Kernel *merge = &kernelFor(ctx, mergeSpec(hq, d, "bf16"));
  Status st = ctx.launchMerge(*merge, m, nullptr);
  if (!st.isOk()) {
    std::fprintf(stderr, "launchMerge: %s\n", st.message().c_str());
    std::exit(1);
  }
  CHECK_CU(api->cuCtxSynchronize());
  Outputs got{std::vector<uint16_t>(nO), std::vector<float>(nL)};
  CHECK_CU(api->cuMemcpyDtoH(got.o.data(), dout.ptr, nO * 2));
  CHECK_CU(api->cuMemcpyDtoH(got.lse.data(), dlse.ptr, nL * 4));
  std::vector<double> refO(nO), refLse(nL);
  auto toDouble = [&](uint16_t x) {
    return double(test::fromHalfBits(bf16, x));
  };
  for (int b = 0; b < batch; ++b) {
    templates::ReferenceProblem p;
    p.headsQ = hq;
    p.headsKV = hkv;
    p.seqQ = 1;
    p.seqKV = full[b];
    p.headDim = d;
    p.scale = ds.effectiveScale();
    auto dense = templates::ReferenceStrides::dense(hkv, full[b], d);
    templates::referenceAttention(
        p, q.data() + b * os[0], {os[0], os[1], os[2]}, kAll[b].data(), dense,
        vAll[b].data(), dense, toDouble, refO.data() + size_t(b) * hq * d,
        refLse.data() + size_t(b) * hq);
  }
  test::AttentionComparison r = test::compareAttention(
      bf16, got.o, os, got.lse, refO, refLse, batch, hq, 1, d);
  bool ok = r.ok(1e-2, 1e-3);
  std::printf("%s %-52s rel L2 %.2e  LSE err %.2e  non-finite %d\n",
              ok ? "PASS" : "FAIL",
              "lse_merge: prefix 200 + suffixes {57, 0, 1000} == whole",
              r.relL2, r.lseErr, r.nonFinite);
  return ok;
}

/// The split kernel's compiled knobs the sweep varies (tuning.block_n,
/// tuning.stages, tuning.warps: warps along the keys; part of the spec and
/// so of the cache key). 0: the compiler's default.
struct Knobs {
  int64_t blockN = 0, stages = 0, warps = 0;
};

/// A decode variant of the sweep: the compiled knobs and the split count
/// policy (a launch argument).
struct Variant {
  int64_t blockN = 0, stages = 0, warps = 0; // Knobs
  // Auto: the runtime's choice (decodeProgramsPerSm per SM); Fill: every
  // resident slot (the alternative policy, for comparison).
  // Fixed: `fixed` splits (`--splits a,b,...`).
  enum Splits { Auto, Fill, Double, Half, Fixed } splits = Auto;
  int64_t fixed = 0;
  bool combineKernel = false; // DecodeArgs::combineKernel
};

const char *splitsName(Variant::Splits s) {
  switch (s) {
  case Variant::Auto:
    return "auto";
  case Variant::Fill:
    return "fill";
  case Variant::Double:
    return "2xauto";
  case Variant::Half:
    return "auto/2";
  case Variant::Fixed:
    return "fixed";
  }
  return "?";
}

/// The compiled variants the sweep times; the first is the default. The
/// last five have several warps along the keys: 4 x 32 keys is cuDNN's
/// B16 shape (one 4-warp block per sequence and KV head).
std::vector<Knobs> sweepKnobs() {
  return {{0, 0},     {16, 1},     {32, 1},     {16, 2},    {16, 4},
          {32, 2},    {32, 3},     {32, 4},     {64, 2},    {64, 2, 2},
          {64, 3, 2}, {128, 2, 4}, {128, 3, 4}, {128, 2, 8}};
}

std::vector<Variant> sweepVariants() {
  std::vector<Variant> vs;
  for (Knobs k : sweepKnobs())
    for (auto sp :
         {Variant::Auto, Variant::Fill, Variant::Double, Variant::Half})
      vs.push_back({k.blockN, k.stages, k.warps, sp});
  return vs;
}

KernelSpec benchSpec(int page, Knobs k = {}) {
  KernelSpec spec = decodeSpec(32, 8, 128, "bf16", page);
  spec.hasLse = false;
  spec.tuning.blockN = k.blockN;
  spec.tuning.stages = k.stages;
  spec.tuning.warps = k.warps;
  return spec;
}

int64_t splitsOf(const Context &ctx, const Kernel &kernel, const Variant &v,
                 int batch, int len) {
  const KernelMetadata &meta = kernel.metadata();
  const int64_t blockN = meta.blockN;
  int64_t autoSplits = chooseDecodeSplits(
      batch, kernel.spec().kvHeads, len, ctx.smCount(),
      kernel.decodeResidentPerSm(),
      decodeProgramsPerSm(meta.blockN, meta.kvStages), blockN);
  switch (v.splits) {
  case Variant::Auto:
    return autoSplits;
  case Variant::Fill:
    return chooseDecodeSplits(batch, kernel.spec().kvHeads, len, ctx.smCount(),
                              kernel.decodeResidentPerSm(), /*maxPerSm=*/32,
                              blockN);
  case Variant::Double:
    return std::min<int64_t>(2 * autoSplits, 512);
  case Variant::Half:
    return std::max<int64_t>(autoSplits / 2, 1);
  case Variant::Fixed:
    return v.fixed;
  }
  return autoSplits;
}

/// One bench row's buffers: a contiguous [B, L, Hkv, D] cache seen as
/// pages in order, filled with random values (a 16 MiB random block
/// repeated), so that variants can be cross-checked on the row itself.
struct BenchProblem {
  const DriverApi *api;
  BenchRow row;
  int hq = 32, hkv = 8, d = 128;
  int64_t blocks, pages;
  size_t cacheElems, nq;
  DeviceBuffer dk, dv, dq, dout, dtable, dlens;
  BenchProblem(const DriverApi *api, BenchRow row, std::mt19937_64 &rng)
      : api(api), row(row), blocks(row.len / row.page),
        pages(int64_t(row.batch) * blocks),
        cacheElems(size_t(pages) * row.page * 8 * 128),
        nq(size_t(row.batch) * 32 * 128), dk(api, cacheElems * 2),
        dv(api, cacheElems * 2), dq(api, nq * 2), dout(api, nq * 2),
        dtable(api, pages * 4), dlens(api, row.batch * 4) {
    std::normal_distribution<float> normal(0.f, 1.f);
    // Each copy starts the block at another offset: no two pages alike.
    const size_t chunk = size_t(8) << 20;
    std::vector<uint16_t> block(chunk + 64);
    for (auto &x : block)
      x = test::toHalfBits(true, normal(rng));
    size_t shift = 0;
    for (CUdeviceptr base : {dk.ptr, dv.ptr})
      for (size_t at = 0; at < cacheElems; at += chunk) {
        size_t n = std::min(chunk, cacheElems - at);
        CHECK_CU(api->cuMemcpyHtoD(base + at * 2, block.data() + shift, n * 2));
        shift = (shift + 13) % 64;
      }
    std::vector<uint16_t> q(nq);
    for (auto &x : q)
      x = test::toHalfBits(true, normal(rng));
    CHECK_CU(api->cuMemcpyHtoD(dq.ptr, q.data(), nq * 2));
    std::vector<int32_t> table(static_cast<size_t>(pages));
    std::vector<int32_t> lens(row.batch, row.len);
    std::iota(table.begin(), table.end(), 0);
    CHECK_CU(api->cuMemcpyHtoD(dtable.ptr, table.data(), table.size() * 4));
    CHECK_CU(api->cuMemcpyHtoD(dlens.ptr, lens.data(), lens.size() * 4));
  }
  DecodeArgs args() const {
    DecodeArgs a;
    auto qs = test::attentionStrides(hq, 1, d, true);
    a.q = {dq.get(), {row.batch, hq, 1, d}, qs};
    std::array<int64_t, 4> cs{int64_t(row.page) * hkv * d, d, int64_t(hkv) * d,
                              1};
    a.kCache = {dk.get(), {pages, hkv, row.page, d}, cs};
    a.vCache = {dv.get(), {pages, hkv, row.page, d}, cs};
    a.blockTable = static_cast<const int32_t *>(dtable.get());
    a.maxBlocks = blocks;
    a.kvLens = static_cast<const int32_t *>(dlens.get());
    a.maxKvLen = row.len;
    a.o = {dout.get(), {row.batch, hq, 1, d}, qs};
    return a;
  }
  double kvBytes() const {
    return 2.0 * row.batch * double(row.len) * hkv * d * 2;
  }
};

/// Median milliseconds of one decode (split + combine) over 20 timed runs
/// after 3 warm-ups, CUDA events around each.
double timeDecode(Context &ctx, const Kernel &kernel, const DecodeArgs &args) {
  const DriverApi *api = &ctx.driver();
  CUevent start, stop;
  CHECK_CU(api->cuEventCreate(&start, 0));
  CHECK_CU(api->cuEventCreate(&stop, 0));
  std::vector<float> ms;
  for (int i = 0; i < 23; ++i) {
    CHECK_CU(api->cuEventRecord(start, nullptr));
    Status st = ctx.launchDecode(kernel, args, nullptr);
    if (!st.isOk()) {
      std::fprintf(stderr, "launchDecode: %s\n", st.message().c_str());
      std::exit(1);
    }
    CHECK_CU(api->cuEventRecord(stop, nullptr));
    CHECK_CU(api->cuEventSynchronize(stop));
    float t = 0;
    CHECK_CU(api->cuEventElapsedTime(&t, start, stop));
    if (i >= 3)
      ms.push_back(t);
  }
  api->cuEventDestroy(start);
  api->cuEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// Runs the variant once into the problem's output (poisoned first) and
/// returns it.
std::vector<uint16_t> runOnce(Context &ctx, const Kernel &kernel,
                              BenchProblem &p, DecodeArgs args) {
  const DriverApi *api = &ctx.driver();
  auto bytes = ctx.decodeWorkspaceSize(kernel, args);
  if (!bytes.isOk()) {
    std::fprintf(stderr, "workspace: %s\n", bytes.status().message().c_str());
    std::exit(1);
  }
  DeviceBuffer ws(api, *bytes);
  args.workspace = ws.get();
  args.workspaceBytes = *bytes;
  CHECK_CU(api->cuMemsetD8(p.dout.ptr, 0xFF, p.nq * 2));
  Status st = ctx.launchDecode(kernel, args, nullptr);
  if (!st.isOk()) {
    std::fprintf(stderr, "launchDecode: %s\n", st.message().c_str());
    std::exit(1);
  }
  CHECK_CU(api->cuCtxSynchronize());
  std::vector<uint16_t> out(p.nq);
  CHECK_CU(api->cuMemcpyDtoH(out.data(), p.dout.ptr, p.nq * 2));
  return out;
}

/// `--bench`: the default kernel on each bench row. `--bench --sweep`: every
/// variant of sweepVariants() side by side on each row, each first checked
/// (against float64 on the correctness case, then against the default's
/// output on the row itself), then timed; the best per row is marked.
/// `--ab-merge`: the default kernel (and each `--splits` count) with the
/// splits merged by the last split program and by the combine kernel,
/// alternating three times each.
void bench(Context &ctx, bool sweep, int onlyRow,
           const std::vector<int64_t> &fixedSplits, bool abMerge,
           std::mt19937_64 &rng) {
  const DriverApi *api = &ctx.driver();
  if (!api->cuEventCreate || !api->cuEventElapsedTime) {
    std::fprintf(stderr, "the driver has no event API\n");
    std::exit(1);
  }
  std::vector<Variant> variants =
      sweep ? sweepVariants() : std::vector<Variant>{Variant{}};
  // --splits: each count on the default kernel, or with --sweep on every
  // compiled variant.
  for (int64_t n : fixedSplits) {
    if (!sweep) {
      variants.push_back({0, 0, 0, Variant::Fixed, n});
      continue;
    }
    for (Knobs k : sweepKnobs())
      variants.push_back({k.blockN, k.stages, k.warps, Variant::Fixed, n});
  }
  if (abMerge && !sweep) {
    // Each split policy with the splits merged by the last split program
    // and by the combine kernel, alternating three times.
    std::vector<Variant> pairs;
    for (const Variant &v : variants)
      for (int i = 0; i < 3; ++i) {
        Variant combine = v;
        combine.combineKernel = true;
        pairs.push_back(v);
        pairs.push_back(combine);
      }
    variants = pairs;
  }
  if (sweep) {
    // Correctness of every compiled variant before any timing.
    int bad = 0;
    for (Knobs k : sweepKnobs())
      for (int page : {16, 256}) {
        Case c{"sweep variant, GQA 32/8 D128, {1, 1000, 4097}",
               benchSpec(page, k),
               {1, 1000, 4097}};
        c.spec.hasLse = true;
        std::printf("variant block_n %lld stages %lld warps %lld page %d: ",
                    (long long)k.blockN, (long long)k.stages,
                    (long long)k.warps, page);
        bad += !runCase(ctx, c, rng);
        c.splits = 13;
        bad += !runCase(ctx, c, rng);
      }
    if (bad)
      std::printf("WARNING: %d sweep variant checks failed; those kernels "
                  "are still timed but must not become the default\n",
                  bad);
  }
  std::vector<BenchRow> rows = benchRows();
  if (onlyRow >= 0)
    rows = {rows.at(size_t(onlyRow) % rows.size())};
  for (BenchRow row : rows) {
    BenchProblem p(api, row, rng);
    std::vector<double> reference; // the first variant's output
    double bestTbs = 0;
    std::string best;
    for (const Variant &v : variants) {
      if (v.splits == Variant::Fixed && (v.fixed < 1 || v.fixed > 65535)) {
        std::printf("bench decode: --splits %lld is out of 1..65535\n",
                    (long long)v.fixed);
        continue;
      }
      const Kernel *kernel =
          &kernelFor(ctx, benchSpec(row.page, {v.blockN, v.stages, v.warps}));
      DecodeArgs args = p.args();
      args.numSplits = splitsOf(ctx, *kernel, v, row.batch, row.len);
      args.combineKernel = v.combineKernel;
      std::vector<double> out =
          halfsToDoubles(true, runOnce(ctx, *kernel, p, args));
      if (reference.empty())
        reference = out; // non-finite values still fail below
      test::RowComparison cmp = test::compareRows(
          [&](int64_t i) { return out[size_t(i)]; }, reference);
      double rel = cmp.relL2;
      long long nonFinite = cmp.nonFinite;
      bool ok = cmp.ok(1e-2);
      auto bytes = ctx.decodeWorkspaceSize(*kernel, args);
      DeviceBuffer ws(api, bytes.isOk() ? *bytes : 256);
      args.workspace = ws.get();
      args.workspaceBytes = bytes.isOk() ? *bytes : 0;
      char name[112];
      std::string bn = v.blockN ? std::to_string(v.blockN) : "dflt";
      std::snprintf(name, sizeof name,
                    "block_n %-4s stages %lld warps %lld splits %-6s%s",
                    bn.c_str(), (long long)(v.stages ? v.stages : 3),
                    (long long)(v.warps ? v.warps : 1), splitsName(v.splits),
                    v.combineKernel ? " combine-kernel" : "");
      if (!ok) {
        std::printf("bench decode B=%-3d L=%-6d page %-3d %s: WRONG (rel L2 "
                    "%.2e vs the default, %lld non-finite), not timed\n",
                    row.batch, row.len, row.page, name, rel, nonFinite);
        continue;
      }
      double med = timeDecode(ctx, *kernel, args);
      double tbs = p.kvBytes() / (med * 1e-3) / 1e12;
      if (tbs > bestTbs) {
        bestTbs = tbs;
        best = name;
      }
      std::printf("bench decode B=%-3d L=%-6d page %-3d %s (%3lld splits, "
                  "%2d/SM): %.3f ms, %.2f TB/s of K+V\n",
                  row.batch, row.len, row.page, name, (long long)args.numSplits,
                  kernel->decodeResidentPerSm(), med, tbs);
    }
    if (sweep)
      std::printf("best   decode B=%-3d L=%-6d page %-3d: %s, %.2f TB/s\n",
                  row.batch, row.len, row.page, best.c_str(), bestTbs);
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string bundle, writeSpecs;
  bool doBench = false, sweep = false, abMerge = false;
  int onlyRow = -1;    // --row i: bench row i only (for a profiler)
  int randomCount = 0; // --random N: N random configurations
  std::vector<int64_t> fixedSplits;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bundle" && i + 1 < argc)
      bundle = argv[++i];
    else if (a == "--write-specs" && i + 1 < argc)
      writeSpecs = argv[++i];
    else if (a == "--bench")
      doBench = true;
    else if (a == "--sweep")
      sweep = true;
    else if (a == "--ab-merge")
      abMerge = true;
    else if (a == "--row" && i + 1 < argc)
      onlyRow = std::atoi(argv[++i]);
    else if (a == "--random" && i + 1 < argc)
      randomCount = std::atoi(argv[++i]);
    else if (a == "--splits" && i + 1 < argc) {
      // --splits a,b,...: also time each of these split counts.
      std::string list = argv[++i];
      for (size_t at = 0; at < list.size();) {
        size_t end = list.find(',', at);
        fixedSplits.push_back(std::atoll(list.substr(at, end - at).c_str()));
        at = end == std::string::npos ? list.size() : end + 1;
      }
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (!writeSpecs.empty()) {
    std::vector<KernelSpec> specs;
    auto add = [&](const KernelSpec &s) {
      if (std::find(specs.begin(), specs.end(), s) == specs.end())
        specs.push_back(s);
    };
    for (const Case &c : correctnessCases()) {
      add(c.spec);
      if (c.seqQ == 1 && !c.spec.causal && c.spec.softcap == 0) {
        KernelSpec contiguous = c.spec;
        contiguous.pageSize =
            std::max(*std::max_element(c.lens.begin(), c.lens.end()), 1);
        add(contiguous);
      }
    }
    for (const AppendCase &c : appendCases()) {
      add(c.decode);
      add(appendSpec(c.decode.kvHeads, c.decode.headDim, c.decode.dtype.c_str(),
                     c.decode.pageSize));
    }
    add(mergeSpec(32, 128, "bf16"));
    for (const KernelSpec &s : randomSpecPool())
      add(s);
    for (BenchRow row : benchRows())
      for (Knobs k : sweepKnobs()) {
        add(benchSpec(row.page, k));
        KernelSpec checked = benchSpec(row.page, k);
        checked.hasLse = true; // the sweep's correctness case
        add(checked);
        checked.pageSize = 4097; // and its paged == contiguous check
        add(checked);
      }
    std::ofstream(writeSpecs) << writeSpecFile(specs);
    return 0;
  }

  std::unique_ptr<Context> ctx = attnc::test::openBundleContext(bundle);
  uint64_t seed = std::chrono::steady_clock::now().time_since_epoch().count();
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    seed = std::strtoull(s, nullptr, 10);
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  if (doBench) {
    bench(*ctx, sweep, onlyRow, fixedSplits, abMerge, rng);
    return 0;
  }
  int passed = 0, failed = 0;
  if (randomCount > 0) {
    const std::vector<KernelSpec> pool = randomSpecPool();
    for (int i = 0; i < randomCount; ++i) {
      std::string name;
      Case c = randomCase(pool, rng, name);
      (runCase(*ctx, c, rng, /*contiguous=*/false) ? passed : failed)++;
    }
    std::printf("%d passed, %d failed (seed %llu; replay: ATTNC_TEST_SEED=%llu "
                "--random %d)\n",
                passed, failed, (unsigned long long)seed,
                (unsigned long long)seed, randomCount);
    return failed ? 1 : 0;
  }
  for (const Case &c : correctnessCases())
    (runCase(*ctx, c, rng) ? passed : failed)++;
  for (const AppendCase &c : appendCases())
    (runAppendCase(*ctx, c, rng) ? passed : failed)++;
  (runMergeCase(*ctx, rng) ? passed : failed)++;
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
