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
// Usage: attnc-gpu-decode --bundle DIR [--bench]
//        attnc-gpu-decode --write-specs FILE   (the specs to bundle)
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Context.h"
#include "attnc/runtime/Decode.h"
#include "attnc/runtime/Driver.h"
#include "attnc/runtime/Spec.h"
#include "templates/ReferenceAttention.h"
#include "tests/common/AttentionCheck.h"

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

namespace {

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
  c = {"empty sequence in the batch, softcap 30, 1 split",
       decodeSpec(32, 8, 128, "bf16", 16),
       {0, 513}};
  c.splits = 1;
  c.spec.softcap = 30.0;
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

#define CHECK_CU(expr)                                                         \
  do {                                                                         \
    CUresult r_ = (expr);                                                      \
    if (r_ != CUDA_SUCCESS) {                                                  \
      std::fprintf(stderr, "%s failed: %d\n", #expr, int(r_));                 \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

struct DeviceBuffer {
  const DriverApi *api;
  CUdeviceptr ptr = 0;
  DeviceBuffer(const DriverApi *api, size_t bytes) : api(api) {
    CHECK_CU(api->cuMemAlloc(&ptr, std::max<size_t>(bytes, 256)));
  }
  ~DeviceBuffer() { api->cuMemFree(ptr); }
  void *get() const { return reinterpret_cast<void *>(ptr); }
};

const Kernel *kernelFor(Context &ctx, const KernelSpec &spec) {
  auto kernel = ctx.getKernel(spec);
  if (!kernel.isOk()) {
    std::fprintf(stderr, "getKernel: %s\n", kernel.status().message().c_str());
    std::exit(1);
  }
  return *kernel;
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

/// Runs decode with the cache given as logical per-sequence K/V
/// ([B][Hkv][len][D] values) scattered into `paging`.
Outputs runDecode(Context &ctx, const KernelSpec &spec, const Case &c,
                  const Paged &paging, const std::vector<uint16_t> &q,
                  const std::vector<std::vector<uint16_t>> &kSeq,
                  const std::vector<std::vector<uint16_t>> &vSeq) {
  const DriverApi *api = &ctx.driver();
  const Kernel *kernel = kernelFor(ctx, spec);
  int batch = int(c.lens.size()), hq = spec.heads, hkv = spec.kvHeads;
  int d = spec.headDim, sq = c.seqQ;
  size_t cacheElems = size_t(paging.pages) * paging.page * hkv * d;
  std::vector<uint16_t> kc(cacheElems, 0x7FC0), vc(cacheElems, 0x7FC0);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < hkv; ++h)
      for (int j = 0; j < c.lens[b]; ++j) {
        int64_t pg =
            paging.table[size_t(b) * paging.maxBlocks + j / paging.page];
        int64_t at = pg * paging.strides[0] + h * paging.strides[1] +
                     (j % paging.page) * paging.strides[2];
        for (int x = 0; x < d; ++x) {
          kc[at + x] = kSeq[b][(size_t(h) * c.lens[b] + j) * d + x];
          vc[at + x] = vSeq[b][(size_t(h) * c.lens[b] + j) * d + x];
        }
      }
  auto qs = test::attentionStrides(hq, sq, d, /*bshd=*/sq == 1);
  auto os = test::attentionStrides(hq, sq, d, /*bshd=*/true);
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
  auto bytes = ctx.decodeWorkspaceSize(*kernel, args);
  if (!bytes.isOk()) {
    std::fprintf(stderr, "workspace: %s\n", bytes.status().message().c_str());
    std::exit(1);
  }
  DeviceBuffer ws(api, *bytes);
  CHECK_CU(api->cuMemsetD8(ws.ptr, 0xFF, std::max<size_t>(*bytes, 256)));
  args.workspace = ws.get();
  args.workspaceBytes = *bytes;
  Status st = ctx.launchDecode(*kernel, args, nullptr);
  if (!st.isOk()) {
    std::fprintf(stderr, "launchDecode: %s\n", st.message().c_str());
    std::exit(1);
  }
  CHECK_CU(api->cuCtxSynchronize());
  Outputs out{std::vector<uint16_t>(q.size()),
              std::vector<float>(size_t(batch) * hq * sq)};
  CHECK_CU(api->cuMemcpyDtoH(out.o.data(), dout.ptr, q.size() * 2));
  CHECK_CU(api->cuMemcpyDtoH(out.lse.data(), dlse.ptr, out.lse.size() * 4));
  return out;
}

bool runCase(Context &ctx, const Case &c, std::mt19937_64 &rng) {
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
  auto os = test::attentionStrides(hq, sq, d, /*bshd=*/true);
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
  if (c.seqQ == 1 && !s.causal && s.softcap == 0) {
    int maxLen = *std::max_element(c.lens.begin(), c.lens.end());
    KernelSpec contiguous = s;
    contiguous.pageSize = std::max(maxLen, 1);
    Case cc = c;
    cc.spec = contiguous;
    Paged one = makePaging(c.lens, contiguous.pageSize, hkv, d, c.nhd,
                           /*shuffle=*/false, rng);
    Outputs same = runDecode(ctx, contiguous, cc, one, q, kSeq, vSeq);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < got.o.size(); ++i) {
      double x = test::fromHalfBits(bf16, got.o[i]);
      double y = test::fromHalfBits(bf16, same.o[i]);
      diff += (x - y) * (x - y);
      norm += y * y;
    }
    double rel = std::sqrt(diff / std::max(norm, 1e-300));
    bool same_ok = rel <= 1e-3;
    std::printf("%s   paged == contiguous (page %lld): rel L2 %.2e\n",
                same_ok ? "PASS" : "FAIL", (long long)contiguous.pageSize, rel);
    ok &= same_ok;
  }
  return ok;
}

void bench(Context &ctx) {
  const DriverApi *api = &ctx.driver();
  if (!api->cuEventCreate || !api->cuEventElapsedTime) {
    std::fprintf(stderr, "the driver has no event API\n");
    std::exit(1);
  }
  const int hq = 32, hkv = 8, d = 128;
  for (BenchRow row : benchRows()) {
    KernelSpec spec = decodeSpec(hq, hkv, d, "bf16", row.page);
    spec.hasLse = false;
    const Kernel *kernel = kernelFor(ctx, spec);
    // A contiguous [B, L, Hkv, D] cache, pages in order.
    int64_t blocks = row.len / row.page;
    int64_t pages = int64_t(row.batch) * blocks;
    size_t cacheElems = size_t(pages) * row.page * hkv * d;
    DeviceBuffer dk(api, cacheElems * 2), dv(api, cacheElems * 2);
    CHECK_CU(api->cuMemsetD8(dk.ptr, 0x3C, cacheElems * 2)); // ~0.01
    CHECK_CU(api->cuMemsetD8(dv.ptr, 0x3C, cacheElems * 2));
    std::vector<int32_t> table(static_cast<size_t>(pages));
    std::vector<int32_t> lens(row.batch, row.len);
    std::iota(table.begin(), table.end(), 0);
    size_t nq = size_t(row.batch) * hq * d;
    DeviceBuffer dq(api, nq * 2), dout(api, nq * 2), dtable(api, pages * 4),
        dlens(api, row.batch * 4);
    CHECK_CU(api->cuMemsetD8(dq.ptr, 0x3C, nq * 2));
    CHECK_CU(api->cuMemcpyHtoD(dtable.ptr, table.data(), table.size() * 4));
    CHECK_CU(api->cuMemcpyHtoD(dlens.ptr, lens.data(), lens.size() * 4));
    DecodeArgs args;
    auto qs = test::attentionStrides(hq, 1, d, true);
    args.q = {dq.get(), {row.batch, hq, 1, d}, qs};
    std::array<int64_t, 4> cs{int64_t(row.page) * hkv * d, d, int64_t(hkv) * d,
                              1};
    args.kCache = {dk.get(), {pages, hkv, row.page, d}, cs};
    args.vCache = {dv.get(), {pages, hkv, row.page, d}, cs};
    args.blockTable = static_cast<const int32_t *>(dtable.get());
    args.maxBlocks = blocks;
    args.kvLens = static_cast<const int32_t *>(dlens.get());
    args.maxKvLen = row.len;
    args.o = {dout.get(), {row.batch, hq, 1, d}, qs};
    auto bytes = ctx.decodeWorkspaceSize(*kernel, args);
    if (!bytes.isOk()) {
      std::fprintf(stderr, "workspace: %s\n", bytes.status().message().c_str());
      std::exit(1);
    }
    DeviceBuffer ws(api, *bytes);
    args.workspace = ws.get();
    args.workspaceBytes = *bytes;
    CUevent start, stop;
    CHECK_CU(api->cuEventCreate(&start, 0));
    CHECK_CU(api->cuEventCreate(&stop, 0));
    std::vector<float> ms;
    for (int i = 0; i < 23; ++i) {
      CHECK_CU(api->cuEventRecord(start, nullptr));
      Status st = ctx.launchDecode(*kernel, args, nullptr);
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
    double med = ms[ms.size() / 2];
    double kvBytes = 2.0 * row.batch * double(row.len) * hkv * d * 2;
    std::printf(
        "bench decode B=%-3d L=%-6d page %-3d splits %-3lld: %.3f ms, "
        "%.2f TB/s of K+V\n",
        row.batch, row.len, row.page,
        (long long)chooseDecodeSplits(row.batch, hkv, row.len, ctx.smCount()),
        med, kvBytes / (med * 1e-3) / 1e12);
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string bundle, writeSpecs;
  bool doBench = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bundle" && i + 1 < argc)
      bundle = argv[++i];
    else if (a == "--write-specs" && i + 1 < argc)
      writeSpecs = argv[++i];
    else if (a == "--bench")
      doBench = true;
    else {
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
    for (BenchRow row : benchRows()) {
      KernelSpec s = decodeSpec(32, 8, 128, "bf16", row.page);
      s.hasLse = false;
      add(s);
    }
    std::ofstream(writeSpecs) << writeSpecFile(specs);
    return 0;
  }

  Result<const DriverApi *> driver = loadDriver();
  int devices = 0;
  if (!driver.isOk() || (*driver)->cuInit(0) != CUDA_SUCCESS ||
      (*driver)->cuDeviceGetCount(&devices) != CUDA_SUCCESS || devices == 0) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
  ContextOptions options;
  options.cacheDir = bundle;
  auto ctx = Context::create(options);
  if (!ctx.isOk()) {
    std::fprintf(stderr, "context: %s\n", ctx.status().message().c_str());
    return 1;
  }
  CHECK_CU((*ctx)->driver().cuCtxSetCurrent((*ctx)->cuContext()));
  if (doBench) {
    bench(**ctx);
    return 0;
  }
  uint64_t seed = std::chrono::steady_clock::now().time_since_epoch().count();
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    seed = std::strtoull(s, nullptr, 10);
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  int passed = 0, failed = 0;
  for (const Case &c : correctnessCases())
    (runCase(**ctx, c, rng) ? passed : failed)++;
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
