//===- DifferentialGpuTest.cpp - random attention configurations vs float64
//===//
//
// Many random prefill configurations, each checked against the float64
// reference on fresh random inputs with NaN-poisoned outputs: a kernel from
// a fixed pool of specs (every head dim, GQA/MQA ratios, no mask, causal,
// causal with a left window, a two-sided window, soft-cap; bf16 and fp16;
// sm_90a and sm_80 kernels), then random batch, query and key lengths
// (1, primes, tile edges, seq_q != seq_kv, so fully masked rows too), BSHD
// or BHSD layouts with padded rows, and large logits now and then. The seed
// is printed first; the same seed replays the same configurations.
//
// `--sanitize` runs one small configuration per prefill kernel family
// instead (each head dim and arch at its default schedule, and D128's
// other sm_90a schedules), for compute-sanitizer (scripts/gpu-run.sh).
//
// Usage: attnc-gpu-differential --bundle DIR [--seed N] [--count N]
//                               [--max-seq N] [--sanitize]
//        attnc-gpu-differential --write-specs FILE   (the specs to bundle)
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Context.h"
#include "attnc/runtime/Driver.h"
#include "attnc/runtime/Spec.h"
#include "templates/ReferenceAttention.h"
#include "tests/common/AttentionCheck.h"
#include "tests/gpu/GpuHarness.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace attnc;
using attnc::test::DeviceBuffer;

namespace {

/// The pool: head dims x masks per arch, GQA ratio and dtype rotating.
std::vector<KernelSpec> specPool() {
  std::vector<KernelSpec> pool;
  const std::array<std::pair<int, int>, 4> heads = {
      {{4, 4}, {8, 2}, {6, 1}, {12, 4}}};
  int i = 0;
  for (const char *arch : {"sm_90a", "sm_80"})
    for (int d : {64, 96, 128, 192, 256})
      for (int mask = 0; mask < 5; ++mask, ++i) {
        KernelSpec s;
        s.heads = heads[i % 4].first;
        s.kvHeads = heads[i % 4].second;
        s.headDim = d;
        s.dtype = i % 3 == 0 ? "fp16" : "bf16";
        s.arch = arch;
        s.hasLse = true;
        switch (mask) {
        case 1:
          s.causal = true;
          break;
        case 2: // causal with a left window: the local attention of Mistral
          s.causal = true;
          s.windowLeft = 53;
          s.windowRight = 0;
          break;
        case 3:
          s.windowLeft = 100;
          s.windowRight = 37;
          break;
        case 4:
          s.softcap = 30.0;
          s.causal = i % 2 == 0;
          break;
        }
        pool.push_back(s);
      }
  return pool;
}

/// One small problem per prefill kernel family, for compute-sanitizer.
std::vector<KernelSpec> sanitizeSpecs() {
  std::vector<KernelSpec> specs;
  for (const char *arch : {"sm_90a", "sm_80"})
    for (int d : {64, 96, 128, 192, 256}) {
      KernelSpec s;
      s.heads = 4;
      s.kvHeads = 2;
      s.headDim = d;
      s.arch = arch;
      s.hasLse = true;
      specs.push_back(s);
      s.causal = true;
      specs.push_back(s);
    }
  for (const char *sync : {"barrier", "mbarrier", "producer", "pingpong"}) {
    KernelSpec s;
    s.heads = 4;
    s.kvHeads = 2;
    s.headDim = 128;
    s.arch = "sm_90a";
    s.hasLse = true;
    s.tuning = {128, 128, 2, 0};
    s.tuning.kvSync = sync;
    specs.push_back(s);
  }
  for (const char *grid : {"tiles", "persistent"}) {
    KernelSpec s;
    s.heads = 4;
    s.kvHeads = 2;
    s.headDim = 128;
    s.arch = "sm_90a";
    s.hasLse = true;
    s.tuning.grid = grid;
    specs.push_back(s);
  }
  return specs;
}

struct Config {
  KernelSpec spec;
  int batch = 1, seqQ = 1, seqKV = 1;
  bool bshd = false;
  int pad = 0; // elements added to each row (the seq stride)
  float qScale = 1.f;
};

std::string describe(const Config &c) {
  char text[256];
  std::snprintf(
      text, sizeof(text),
      "%s %s D%lld H%lld/%lld%s%s%s B%d Sq%d Skv%d %s pad%d%s",
      c.spec.arch.c_str(), c.spec.dtype.c_str(), (long long)c.spec.headDim,
      (long long)c.spec.heads, (long long)c.spec.kvHeads,
      c.spec.causal ? " causal" : "",
      c.spec.windowLeft >= 0 || c.spec.windowRight >= 0 ? " window" : "",
      c.spec.softcap > 0 ? " softcap" : "", c.batch, c.seqQ, c.seqKV,
      c.bshd ? "BSHD" : "BHSD", c.pad, c.qScale > 1 ? " large-logits" : "");
  return text;
}

int randomLength(std::mt19937_64 &rng, int maxSeq) {
  static const int special[] = {1,   2,   3,   5,   7,   11,  13,  16,
                                17,  31,  61,  63,  64,  65,  97,  127,
                                128, 129, 131, 191, 193, 255, 257, 383};
  if (rng() % 10 < 3) {
    int n = special[rng() % (sizeof(special) / sizeof(*special))];
    if (n <= maxSeq)
      return n;
  }
  return 1 + int(rng() % uint64_t(maxSeq));
}

/// Element strides of [B, H, S, D] with `pad` extra elements per row.
std::array<int64_t, 4> strides(int64_t h, int64_t s, int64_t d, bool bshd,
                               int64_t pad) {
  if (bshd)
    return {s * (h * d + pad), d, h * d + pad, 1};
  return {h * s * (d + pad), s * (d + pad), d + pad, 1};
}

/// Runs one configuration; prints a line; returns whether it passed.
bool runConfig(Context &ctx, const Config &c, std::mt19937_64 &rng) {
  const DriverApi *api = &ctx.driver();
  const Kernel &kernel = test::kernelFor(ctx, c.spec);
  const KernelSpec &s = c.spec;
  const bool bf16 = s.dtype == "bf16";
  const int hq = int(s.heads), hkv = int(s.kvHeads), d = int(s.headDim);
  auto qs = strides(hq, c.seqQ, d, c.bshd, c.pad);
  auto kvs = strides(hkv, c.seqKV, d, c.bshd, c.pad);
  const size_t nq = size_t(c.batch) * qs[0], nkv = size_t(c.batch) * kvs[0];
  std::vector<uint16_t> q(nq), k(nkv), v(nkv), o(nq);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto &x : q)
    x = test::toHalfBits(bf16, normal(rng) * c.qScale);
  for (auto &x : k)
    x = test::toHalfBits(bf16, normal(rng));
  for (auto &x : v)
    x = test::toHalfBits(bf16, normal(rng));
  std::vector<float> lse(size_t(c.batch) * hq * c.seqQ);

  DeviceBuffer dq(api, nq * 2), dk(api, nkv * 2), dv(api, nkv * 2),
      dout(api, nq * 2), dlse(api, lse.size() * 4);
  CHECK_CU(api->cuMemcpyHtoD(dq.ptr, q.data(), nq * 2));
  CHECK_CU(api->cuMemcpyHtoD(dk.ptr, k.data(), nkv * 2));
  CHECK_CU(api->cuMemcpyHtoD(dv.ptr, v.data(), nkv * 2));
  // Poison: 0xFF bytes are NaN in bf16, fp16 and f32 (the padding too, so
  // that a kernel writing it is seen below).
  CHECK_CU(api->cuMemsetD8(dout.ptr, 0xFF, nq * 2));
  CHECK_CU(api->cuMemsetD8(dlse.ptr, 0xFF, lse.size() * 4));

  AttentionArgs args;
  args.q = {dq.get(), {c.batch, hq, c.seqQ, d}, qs};
  args.k = {dk.get(), {c.batch, hkv, c.seqKV, d}, kvs};
  args.v = {dv.get(), {c.batch, hkv, c.seqKV, d}, kvs};
  args.o = {dout.get(), {c.batch, hq, c.seqQ, d}, qs};
  args.lse = {dlse.get(),
              {c.batch, hq, c.seqQ, 1},
              {int64_t(hq) * c.seqQ, c.seqQ, 1, 1}};
  // A persistent kernel's stream-K tail takes a zeroed workspace.
  auto wsBytes = ctx.workspaceSize(kernel, args);
  if (!wsBytes.isOk()) {
    std::printf("FAIL %s: workspaceSize: %s\n", describe(c).c_str(),
                wsBytes.status().message().c_str());
    return false;
  }
  DeviceBuffer dws(api, *wsBytes);
  if (*wsBytes) {
    CHECK_CU(api->cuMemsetD8(dws.ptr, 0, *wsBytes));
    args.workspace = dws.get();
    args.workspaceBytes = *wsBytes;
  }
  Status st = ctx.launch(kernel, args, nullptr);
  if (!st.isOk()) {
    std::printf("FAIL %s: launch: %s\n", describe(c).c_str(),
                st.message().c_str());
    return false;
  }
  CHECK_CU(api->cuCtxSynchronize());
  CHECK_CU(api->cuMemcpyDtoH(o.data(), dout.ptr, nq * 2));
  CHECK_CU(api->cuMemcpyDtoH(lse.data(), dlse.ptr, lse.size() * 4));

  // The padding of O's rows must still hold the poison.
  int padWritten = 0;
  if (c.pad > 0)
    for (size_t i = 0; i < nq; ++i) {
      size_t inRow = i % size_t(qs[2]); // within one seq position's row
      if (inRow >= size_t(c.bshd ? int64_t(hq) * d : d))
        padWritten += o[i] != 0xFFFF;
    }

  templates::ReferenceProblem p;
  p.batch = c.batch;
  p.headsQ = hq;
  p.headsKV = hkv;
  p.seqQ = c.seqQ;
  p.seqKV = c.seqKV;
  p.headDim = d;
  p.scale = s.effectiveScale();
  p.softcap = s.softcap;
  p.causal = s.causal;
  p.windowLeft = int(s.windowLeft);
  p.windowRight = int(s.windowRight);
  std::vector<double> refO(size_t(c.batch) * hq * c.seqQ * d),
      refLse(lse.size());
  auto toDouble = [&](uint16_t x) {
    return double(test::fromHalfBits(bf16, x));
  };
  templates::referenceAttention(
      p, q.data(), {qs[0], qs[1], qs[2]}, k.data(), {kvs[0], kvs[1], kvs[2]},
      v.data(), {kvs[0], kvs[1], kvs[2]}, toDouble, refO.data(), refLse.data());
  test::AttentionComparison r = test::compareAttention(
      bf16, o, qs, lse, refO, refLse, c.batch, hq, c.seqQ, d);
  const bool ok = r.ok(1e-2, 1e-3) && padWritten == 0;
  std::printf("%s %-70s [%s] rel L2 %.2e  LSE err %.2e  masked rows %d  "
              "non-finite %d  masked wrong %d  padding written %d\n",
              ok ? "PASS" : "FAIL", describe(c).c_str(),
              kernel.metadata().mapping.c_str(), r.relL2, r.lseErr,
              r.maskedRows, r.nonFinite, r.maskedWrong, padWritten);
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  std::string bundle, writeSpecs;
  uint64_t seed = std::chrono::steady_clock::now().time_since_epoch().count();
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    seed = std::strtoull(s, nullptr, 10);
  int count = 300, maxSeq = 384;
  bool sanitize = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bundle" && i + 1 < argc)
      bundle = argv[++i];
    else if (a == "--write-specs" && i + 1 < argc)
      writeSpecs = argv[++i];
    else if (a == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--count" && i + 1 < argc)
      count = std::atoi(argv[++i]);
    else if (a == "--max-seq" && i + 1 < argc)
      maxSeq = std::max(1, std::atoi(argv[++i]));
    else if (a == "--sanitize")
      sanitize = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (!writeSpecs.empty()) {
    std::vector<KernelSpec> specs = specPool();
    for (const KernelSpec &s : sanitizeSpecs())
      specs.push_back(s);
    std::ofstream(writeSpecs) << writeSpecFile(specs);
    return 0;
  }

  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::unique_ptr<Context> ctx = attnc::test::openBundleContext(bundle);

  std::printf("seed %llu (replay: --seed %llu --count %d --max-seq %d)\n",
              (unsigned long long)seed, (unsigned long long)seed, count,
              maxSeq);
  std::mt19937_64 rng(seed);
  std::vector<Config> configs;
  if (sanitize) {
    for (const KernelSpec &s : sanitizeSpecs()) {
      Config c;
      c.spec = s;
      c.seqQ = 130;
      c.seqKV = 197;
      configs.push_back(c);
    }
  } else {
    const std::vector<KernelSpec> pool = specPool();
    for (int i = 0; i < count; ++i) {
      Config c;
      c.spec = pool[rng() % pool.size()];
      c.batch = 1 + int(rng() % 3);
      c.seqQ = randomLength(rng, maxSeq);
      c.seqKV = rng() % 4 == 0 ? c.seqQ : randomLength(rng, maxSeq);
      c.bshd = rng() % 2;
      c.pad = std::array<int, 4>{0, 0, 8, 64}[rng() % 4];
      c.qScale = rng() % 10 == 0 ? 8.f : 1.f;
      configs.push_back(c);
    }
  }
  int passed = 0, failed = 0;
  for (const Config &c : configs)
    (runConfig(*ctx, c, rng) ? passed : failed)++;
  std::printf("%d passed, %d failed (seed %llu)\n", passed, failed,
              (unsigned long long)seed);
  return failed ? 1 : 0;
}
