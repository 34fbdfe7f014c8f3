//===- attnc-bench.cpp - a fused kernel beside standard attention ---------===//
//
//   attnc-bench [--bundle DIR] [--heads 32 --kv-heads 8 --head-dim 128
//               --dtype bf16 --causal --batch 1 --seq-len 4096 --arch sm_90a]
//               [--block-m M --block-n N --warps W --stages S] [--baseline
//               unfused]
//               [--reps 20]
//
// Loads attnc's fused attention for the spec from the cache (or a bundle),
// times it with CUDA events (median after warm-up), and with `--baseline
// unfused` runs the FlashAttention paper's standard attention beside it:
// S = QKᵀ written to HBM, softmax read and written back, O = P·V (three NVRTC
// kernels, S and P in the input dtype). It prints the HBM bytes each moves
// and the time, and checks that both give the same O.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Context.h"
#include "attnc/runtime/Driver.h"
#include "attnc/runtime/Spec.h"
#include "templates/HostHalf.h"
#include "templates/Templates.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace attnc;

namespace {

[[noreturn]] void die(const std::string &msg) {
  std::fprintf(stderr, "attnc-bench: error: %s\n", msg.c_str());
  std::exit(1);
}

#define CHECK_CU(expr)                                                         \
  do {                                                                         \
    CUresult r_ = (expr);                                                      \
    if (r_ != CUDA_SUCCESS)                                                    \
      die(std::string(#expr) + " failed with CUDA error " +                    \
          std::to_string(int(r_)));                                            \
  } while (0)

struct Options {
  std::string bundle, baseline;
  KernelSpec spec;
  int64_t batch = 1, seqLen = 4096;
  int reps = 20;
};

Options parse(int argc, char **argv) {
  Options o;
  o.spec.heads = 32;
  o.spec.kvHeads = 8;
  o.spec.headDim = 128;
  o.spec.hasLse = false;
  CLI::App app("Time attnc's fused attention for a spec, from the cache or a "
               "bundle, beside standard attention",
               "attnc-bench");
  app.add_option("--bundle", o.bundle, "Cache directory to load from");
  app.add_option("--baseline", o.baseline,
                 "unfused: also time the three-kernel standard attention")
      ->check(CLI::IsMember({"unfused"}));
  auto positive = [&](const char *name, int64_t &value) {
    app.add_option(name, value)->check(CLI::PositiveNumber);
  };
  positive("--heads", o.spec.heads);
  positive("--kv-heads", o.spec.kvHeads);
  positive("--head-dim", o.spec.headDim);
  app.add_option("--dtype", o.spec.dtype, "bf16 | fp16");
  app.add_option("--arch", o.spec.arch, "sm_80 | sm_90a");
  app.add_flag("--causal", o.spec.causal);
  positive("--batch", o.batch);
  positive("--seq-len", o.seqLen);
  app.add_option("--reps", o.reps, "Timed runs (median)")
      ->check(CLI::PositiveNumber);
  positive("--block-m", o.spec.tuning.blockM);
  positive("--block-n", o.spec.tuning.blockN);
  positive("--warps", o.spec.tuning.warps);
  positive("--stages", o.spec.tuning.stages);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    std::exit(app.exit(e) == 0 ? 0 : 1); // the help, or the error
  }
  if (Status s = validateSpec(o.spec); !s.isOk())
    die(s.message());
  return o;
}

/// Median of `reps` timed runs of `launch` after 3 warm-ups, in ms.
template <typename F>
double timeMs(const DriverApi &api, int reps, F &&launch) {
  if (!api.cuEventCreate)
    die("the CUDA driver has no event API");
  CUevent start, stop;
  CHECK_CU(api.cuEventCreate(&start, 0));
  CHECK_CU(api.cuEventCreate(&stop, 0));
  std::vector<float> ms;
  for (int i = 0; i < reps + 3; ++i) {
    CHECK_CU(api.cuEventRecord(start, nullptr));
    launch();
    CHECK_CU(api.cuEventRecord(stop, nullptr));
    CHECK_CU(api.cuEventSynchronize(stop));
    float t = 0;
    CHECK_CU(api.cuEventElapsedTime(&t, start, stop));
    if (i >= 3)
      ms.push_back(t);
  }
  api.cuEventDestroy(start);
  api.cuEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  Options o = parse(argc, argv);
  const KernelSpec &spec = o.spec;
  ContextOptions copts;
  copts.cacheDir = o.bundle;
  auto ctx = Context::create(copts);
  if (!ctx.isOk())
    die(ctx.status().message());
  const DriverApi &api = (*ctx)->driver();
  CHECK_CU(api.cuCtxSetCurrent((*ctx)->cuContext()));
  auto kernel = (*ctx)->getKernel(spec);
  if (!kernel.isOk())
    die(kernel.status().message());

  int64_t b = o.batch, hq = spec.heads, hkv = spec.kvHeads, d = spec.headDim;
  int64_t s = o.seqLen;
  size_t nq = size_t(b) * hq * s * d, nkv = size_t(b) * hkv * s * d;
  bool bf16 = spec.dtype == "bf16";
  std::vector<uint16_t> host(std::max(nq, nkv));
  std::mt19937_64 rng(std::random_device{}());
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto &x : host)
    x = bf16 ? templates::floatToBf16Bits(normal(rng))
             : templates::floatToHalfBits(normal(rng));
  CUdeviceptr q, k, v, o1, o2;
  CHECK_CU(api.cuMemAlloc(&q, nq * 2));
  CHECK_CU(api.cuMemAlloc(&k, nkv * 2));
  CHECK_CU(api.cuMemAlloc(&v, nkv * 2));
  CHECK_CU(api.cuMemAlloc(&o1, nq * 2));
  CHECK_CU(api.cuMemAlloc(&o2, nq * 2));
  CHECK_CU(api.cuMemcpyHtoD(q, host.data(), nq * 2));
  CHECK_CU(api.cuMemcpyHtoD(k, host.data(), nkv * 2));
  CHECK_CU(api.cuMemcpyHtoD(v, host.data(), nkv * 2));
  CHECK_CU(api.cuMemsetD8(o1, 0xFF, nq * 2)); // NaN until written

  // Dense BHSD tensors.
  auto dense = [&](CUdeviceptr p, int64_t h) {
    return TensorArg{
        reinterpret_cast<void *>(p), {b, h, s, d}, {h * s * d, s * d, d, 1}};
  };
  AttentionArgs args{
      dense(q, hq), dense(k, hkv), dense(v, hkv), dense(o1, hq), {}};
  // A persistent kernel's stream-K workspace, as attnc.attention passes it
  // (zeroed once; launches leave it so).
  auto wsBytes = (*ctx)->workspaceSize(**kernel, args);
  if (!wsBytes.isOk())
    die(wsBytes.status().message());
  CUdeviceptr ws = 0;
  if (*wsBytes) {
    CHECK_CU(api.cuMemAlloc(&ws, *wsBytes));
    CHECK_CU(api.cuMemsetD8(ws, 0, *wsBytes));
    args.workspace = reinterpret_cast<void *>(ws);
    args.workspaceBytes = *wsBytes;
  }
  auto fused = [&] {
    Status st = (*ctx)->launch(**kernel, args, nullptr);
    if (!st.isOk())
      die(st.message());
  };
  double fusedMs = timeMs(api, o.reps, fused);
  double flops = 4.0 * b * hq * double(s) * s * d * (spec.causal ? 0.5 : 1.0);
  templates::AttentionShape shape{b, hq, hkv, s, s, d};
  auto traffic = templates::standardAttentionTraffic(shape, 2, 2);
  std::printf("attention %s, B=%lld Hq=%lld Hkv=%lld S=%lld D=%lld%s\n",
              spec.dtype.c_str(), (long long)b, (long long)hq, (long long)hkv,
              (long long)s, (long long)d, spec.causal ? ", causal" : "");
  std::printf("  fused (attnc %s): %9.3f ms  %7.1f TFLOP/s  HBM %8.3f GB "
              "(minimum)\n",
              (*kernel)->metadata().entry.c_str(), fusedMs,
              flops / fusedMs / 1e9, traffic.fused / 1e9);
  if (o.baseline.empty())
    return 0;

  // The unfused baseline: S and P in the input dtype, as a 16-bit framework
  // stores them; P overwrites S in place.
  std::string err;
  auto nvrtc = templates::Nvrtc::load(&err);
  if (!nvrtc)
    die(err);
  templates::TemplateConfig cfg;
  cfg.kind = templates::TemplateKind::StandardAttention;
  cfg.dtype = bf16 ? templates::DType::BF16 : templates::DType::FP16;
  cfg.headDim = int(d);
  cfg.arch = spec.arch;
  auto ptx = templates::compileTemplate(*nvrtc, cfg);
  if (!ptx.ok)
    die(ptx.error + "\n" + ptx.log);
  auto module = (*ctx)->loadPtx(ptx.ptx);
  if (!module.isOk())
    die(module.status().message());
  CUfunction fs, fsm, fpv;
  CHECK_CU(api.cuModuleGetFunction(&fs, *module, "attnc_std_scores"));
  CHECK_CU(api.cuModuleGetFunction(&fsm, *module, "attnc_std_softmax"));
  CHECK_CU(api.cuModuleGetFunction(&fpv, *module, "attnc_std_pv"));
  size_t nS = size_t(b) * hq * s * s;
  CUdeviceptr sBuf;
  CHECK_CU(api.cuMemAlloc(&sBuf, nS * 2));
  templates::StandardAttentionParams p{};
  p.q = reinterpret_cast<void *>(q);
  p.k = reinterpret_cast<void *>(k);
  p.v = reinterpret_cast<void *>(v);
  p.s = p.p = reinterpret_cast<void *>(sBuf);
  p.o = reinterpret_cast<void *>(o2);
  p.qStrideB = p.oStrideB = hq * s * d;
  p.qStrideH = p.oStrideH = s * d;
  p.qStrideS = p.oStrideS = d;
  p.kStrideB = p.vStrideB = hkv * s * d;
  p.kStrideH = p.vStrideH = s * d;
  p.kStrideS = p.vStrideS = d;
  p.batch = int(b);
  p.headsQ = int(hq);
  p.headsKV = int(hkv);
  p.seqQ = p.seqKV = int(s);
  p.headDim = int(d);
  p.scale = float(spec.effectiveScale());
  p.causal = spec.causal;
  p.windowLeft = p.windowRight = -1;
  if (std::string bad = templates::validate(p, int(d)); !bad.empty())
    die(bad);
  void *params[] = {&p};
  auto launch = [&](CUfunction f, templates::LaunchDims dims) {
    CHECK_CU(api.cuLaunchKernel(f, dims.grid[0], dims.grid[1], dims.grid[2],
                                dims.block[0], dims.block[1], dims.block[2],
                                dims.dynamicSharedBytes, nullptr, params,
                                nullptr));
  };
  double scoresMs = timeMs(
      api, o.reps, [&] { launch(fs, templates::standardScoresLaunch(p)); });
  double softmaxMs = timeMs(
      api, o.reps, [&] { launch(fsm, templates::standardSoftmaxLaunch(p)); });
  double pvMs = timeMs(api, o.reps, [&] {
    launch(fs, templates::standardScoresLaunch(p));
    launch(fsm, templates::standardSoftmaxLaunch(p));
    launch(fpv, templates::standardPvLaunch(p));
  });
  CHECK_CU(api.cuCtxSynchronize());

  // Both must compute the same O.
  std::vector<uint16_t> a(nq), c(nq);
  CHECK_CU(api.cuMemcpyDtoH(a.data(), o1, nq * 2));
  CHECK_CU(api.cuMemcpyDtoH(c.data(), o2, nq * 2));
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i < nq; ++i) {
    double x = bf16 ? templates::bf16BitsToFloat(a[i])
                    : templates::halfBitsToFloat(a[i]);
    double y = bf16 ? templates::bf16BitsToFloat(c[i])
                    : templates::halfBitsToFloat(c[i]);
    err2 += (x - y) * (x - y);
    ref2 += y * y;
  }
  double rel = std::sqrt(err2 / std::max(ref2, 1e-300));
  std::printf("  unfused (3 kernels): %9.3f ms  %7.1f TFLOP/s  HBM %8.3f GB "
              "(S: %.3f GB written; softmax %.3f GB; P·V %.3f GB)\n",
              pvMs, flops / pvMs / 1e9, traffic.total / 1e9,
              traffic.scores / 1e9, traffic.softmax / 1e9, traffic.pv / 1e9);
  std::printf("    of which S = QKᵀ %.3f ms, softmax %.3f ms (timed alone)\n",
              scoresMs, softmaxMs);
  std::printf("  fused is %.1fx faster and moves %.1fx fewer bytes; O "
              "agrees to rel. L2 %.2e%s\n",
              pvMs / fusedMs, double(traffic.total) / double(traffic.fused),
              rel, std::isfinite(rel) && rel < 2e-2 ? "" : "  <-- MISMATCH");
  return std::isfinite(rel) && rel < 2e-2 ? 0 : 1;
}
