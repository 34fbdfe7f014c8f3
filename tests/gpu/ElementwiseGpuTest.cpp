//===- ElementwiseGpuTest.cpp - attnc's row kernels on a real GPU ---------===//
//
// Loads silu_mul, gelu_mul and add_rmsnorm kernels from a bundle with the
// runtime alone, runs them on fresh random inputs with NaN-poisoned outputs
// and compares with float64: long and short rows (one and several rows per
// program), row lengths that do not fill every thread's vectors, padded
// row strides, in-place add_rmsnorm. `--bench` times the PEERS.md shapes
// with CUDA events and prints TB/s of minimal traffic. `--bench --sweep`
// times the schedule knobs of those shapes side by side (threads per row,
// rows per program, blocks per SM), each variant checked against float64
// first, on fresh random inputs, so that the best default can be picked.
//
// Usage: attnc-gpu-elementwise --bundle DIR [--bench [--sweep]]
//        attnc-gpu-elementwise --write-specs FILE   (the specs to bundle)
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Context.h"
#include "attnc/runtime/Driver.h"
#include "attnc/runtime/RowLaunch.h"
#include "attnc/runtime/Spec.h"
#include "tests/common/AttentionCheck.h"
#include "tests/common/RowReference.h"
#include "tests/gpu/GpuHarness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace attnc;
using attnc::test::DeviceBuffer;
using attnc::test::kernelFor;

namespace {

struct Case {
  const char *name;
  KernelSpec spec;
  int64_t rows;
  int64_t pad = 0; // extra elements per row of every [rows, *] tensor
  bool inPlace = false;
};

KernelSpec rowSpec(const char *op, const char *dtype, int64_t d) {
  KernelSpec s;
  s.op = op;
  s.dtype = dtype;
  s.hidden = d;
  s.arch = "sm_90a";
  return s;
}

KernelSpec ropeSpec(bool neox, int64_t heads, int64_t kvHeads, int64_t hs,
                    int64_t rot, int64_t positionBits, const char *dtype) {
  KernelSpec s;
  s.op = "rope";
  s.dtype = dtype;
  s.heads = heads;
  s.kvHeads = kvHeads;
  s.headDim = hs;
  s.rotaryDim = rot;
  s.isNeox = neox;
  s.positionBits = positionBits;
  s.arch = "sm_90a";
  return s;
}

std::vector<Case> correctnessCases() {
  return {
      {"rope neox bf16 32/8 heads x 128 tokens=77",
       ropeSpec(true, 32, 8, 128, 128, 64, "bf16"), 77},
      {"rope gptj bf16 16/16 heads x 64 tokens=33, padded (qkv view)",
       ropeSpec(false, 16, 16, 64, 64, 64, "bf16"), 33, 2 * 16 * 64},
      {"rope neox fp16 8/2 heads x 128, rotary 64, i32 pos",
       ropeSpec(true, 8, 2, 128, 64, 32, "fp16"), 130},
      {"rope gptj bf16 4/4 heads x 96, rotary 48, i32 pos",
       ropeSpec(false, 4, 4, 96, 48, 32, "bf16"), 19, 16},
      {"silu_mul bf16 d=14336 rows=37", rowSpec("silu_mul", "bf16", 14336), 37},
      {"silu_mul fp16 d=1000 rows=129 (partial vectors)",
       rowSpec("silu_mul", "fp16", 1000), 129},
      {"silu_mul bf16 d=128 rows=1001 (32 rows/program)",
       rowSpec("silu_mul", "bf16", 128), 1001},
      {"silu_mul bf16 d=4096 rows=64, padded stride",
       rowSpec("silu_mul", "bf16", 4096), 64, 24},
      {"gelu_mul bf16 d=4096 rows=33", rowSpec("gelu_mul", "bf16", 4096), 33},
      {"add_rmsnorm bf16 d=4096 rows=129", rowSpec("add_rmsnorm", "bf16", 4096),
       129},
      {"add_rmsnorm bf16 d=5120 rows=31 (5 vectors/thread)",
       rowSpec("add_rmsnorm", "bf16", 5120), 31},
      {"add_rmsnorm fp16 d=128 rows=301 (several rows/program)",
       rowSpec("add_rmsnorm", "fp16", 128), 301},
      {"add_rmsnorm bf16 d=8192 rows=17, padded stride",
       rowSpec("add_rmsnorm", "bf16", 8192), 17, 64},
      {"add_rmsnorm bf16 d=4096 rows=65, in place",
       rowSpec("add_rmsnorm", "bf16", 4096), 65, 0, true},
  };
}

std::vector<Case> benchCases() {
  return {
      {"silu_mul 8192 x 2*14336", rowSpec("silu_mul", "bf16", 14336), 8192},
      {"add_rmsnorm 8192 x 4096", rowSpec("add_rmsnorm", "bf16", 4096), 8192},
      {"rope 4096 tok 32/8 x 128", ropeSpec(true, 32, 8, 128, 128, 64, "bf16"),
       4096}};
}

KernelSpec tuned(KernelSpec s, int64_t threadsPerRow, int64_t rowsPerProgram,
                 int64_t minBlocksPerSm) {
  s.tuning.blockN = threadsPerRow;
  s.tuning.blockM = rowsPerProgram;
  s.tuning.minBlocksPerSm = minBlocksPerSm;
  return s;
}

/// The knob variants of the bench shapes that `--sweep` times: the default
/// (all 0) first, then threads per row x rows per program, uncapped and
/// (few vectors per thread) with a register cap of 64 (blocks per SM =
/// 1024 / threads per block).
std::vector<Case> sweepCases() {
  std::vector<Case> out;
  for (const Case &c : benchCases()) {
    out.push_back(c);
    if (c.spec.op == "rope") { // threads per token split half a rotary part
      const int64_t half = effectiveRotaryDim(c.spec) / 16;
      for (int64_t t : {4, 8, 16}) // fewer threads hold > 32 vectors: spills
        for (int64_t perBlock : {128, 256})
          if (t <= half && half % t == 0) {
            Case v = c;
            v.spec = tuned(c.spec, t, perBlock / t, 0);
            out.push_back(v);
          }
      continue;
    }
    const int64_t chunks = c.spec.hidden / 8;
    for (int64_t t : {64, 128, 256, 512, 1024}) {
      if (t > chunks || chunks / t > 16)
        continue; // idle threads, or more than 16 vectors per input
      for (int64_t r : {1, 2, 4}) {
        if (t * r > 1024)
          continue;
        // Uncapped, and capped to 64 registers (half the SM's threads)
        // where a thread holds at most 2 vectors per input: with more, the
        // cap spilled in every case (ptxas, sm_90a).
        for (int64_t occ : {int64_t(0), 1024 / (t * r)}) {
          if (occ != 0 && (occ == 1 || chunks > 2 * t))
            continue;
          Case v = c;
          v.spec = tuned(c.spec, t, r, occ);
          out.push_back(v);
        }
      }
    }
  }
  return out;
}

std::string knobs(const KernelSpec &s) {
  if (s.tuning.blockN == 0 && s.tuning.blockM == 0 &&
      s.tuning.minBlocksPerSm == 0)
    return "default";
  return "threads/row " + std::to_string(s.tuning.blockN) + ", rows/program " +
         std::to_string(s.tuning.blockM) + ", min blocks/SM " +
         std::to_string(s.tuning.minBlocksPerSm);
}

void launch(Context &ctx, const Kernel &k, const RowArgs &args) {
  Status st = ctx.launch(k, args, nullptr);
  if (!st.isOk()) {
    std::fprintf(stderr, "launch: %s\n", st.message().c_str());
    std::exit(1);
  }
}

constexpr int64_t kMaxPosition = 4096;

/// A cos/sin table of `rot` columns: angle p * 10000^(-2i / rot).
std::vector<uint16_t> ropeCache(bool bf16, int64_t rot) {
  std::vector<uint16_t> cache(kMaxPosition * rot);
  for (int64_t p = 0; p < kMaxPosition; ++p)
    for (int64_t i = 0; i < rot / 2; ++i) {
      double a = double(p) * std::pow(10000.0, -2.0 * double(i) / double(rot));
      cache[p * rot + i] = test::toHalfBits(bf16, float(std::cos(a)));
      cache[p * rot + rot / 2 + i] = test::toHalfBits(bf16, float(std::sin(a)));
    }
  return cache;
}

/// RoPE in place on random query/key rows (`pad` extra elements per row, as
/// views into a fused qkv tensor), random positions; every element
/// compared, pass-through columns and padding must be untouched.
test::RowComparison runRope(Context &ctx, const Case &c, std::mt19937_64 &rng) {
  const DriverApi *api = &ctx.driver();
  const Kernel &kernel = kernelFor(ctx, c.spec);
  const KernelSpec &s = c.spec;
  const bool bf16 = s.dtype == "bf16";
  const int64_t rows = c.rows, hs = s.headDim, rot = effectiveRotaryDim(s);
  const int64_t qw = s.heads * hs, kw = s.kvHeads * hs;
  const int64_t qs = qw + c.pad, ks = kw + c.pad;
  std::normal_distribution<float> normal(0.f, 1.f);
  auto fill = [&](size_t n) {
    std::vector<uint16_t> v(n);
    for (auto &x : v)
      x = test::toHalfBits(bf16, normal(rng));
    return v;
  };
  std::vector<uint16_t> q = fill(rows * qs), k = fill(rows * ks);
  std::vector<uint16_t> cache = ropeCache(bf16, rot);
  std::uniform_int_distribution<int64_t> pick(0, kMaxPosition - 1);
  std::vector<int64_t> pos(rows);
  std::vector<int32_t> pos32(rows);
  for (int64_t t = 0; t < rows; ++t)
    pos32[t] = int32_t(pos[t] = pick(rng));
  auto upload = [&](const void *data, size_t bytes) {
    auto buf = std::make_unique<DeviceBuffer>(api, bytes);
    CHECK_CU(api->cuMemcpyHtoD(buf->ptr, data, bytes));
    return buf;
  };
  auto dq = upload(q.data(), q.size() * 2), dk = upload(k.data(), k.size() * 2);
  auto dc = upload(cache.data(), cache.size() * 2);
  auto dp = s.positionBits == 64 ? upload(pos.data(), pos.size() * 8)
                                 : upload(pos32.data(), pos32.size() * 4);
  RowArgs args;
  args.rows = rows;
  args.count = 4;
  args.tensors[0] = {dp->get(), rows, 1, 1};
  args.tensors[1] = {dq->get(), rows, qw, qs};
  args.tensors[2] = {dk->get(), rows, kw, ks};
  args.tensors[3] = {dc->get(), kMaxPosition, rot, rot};
  launch(ctx, kernel, args);
  CHECK_CU(api->cuCtxSynchronize());
  auto val = [&](uint16_t x) { return double(test::fromHalfBits(bf16, x)); };
  test::RowComparison worst;
  for (bool isQ : {true, false}) {
    const std::vector<uint16_t> &in = isQ ? q : k;
    const int64_t width = isQ ? qw : kw, stride = isQ ? qs : ks;
    std::vector<uint16_t> got(in.size());
    CHECK_CU(
        api->cuMemcpyDtoH(got.data(), (isQ ? dq : dk)->ptr, got.size() * 2));
    std::vector<double> ref;
    test::referenceRope(
        s.isNeox, rows, width, hs, rot, pos,
        [&](int64_t i) { return val(in[(i / width) * stride + i % width]); },
        [&](int64_t p, int64_t j) { return val(cache[p * rot + j]); }, ref);
    test::RowComparison r = test::compareRows(
        [&](int64_t i) { return val(got[(i / width) * stride + i % width]); },
        ref);
    worst.relL2 = std::max(worst.relL2, r.relL2);
    worst.nonFinite += r.nonFinite;
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t j = 0; j < stride; ++j)
        if ((j >= width || j % hs >= rot) &&
            got[t * stride + j] != in[t * stride + j])
          ++worst.nonFinite; // a pass-through element was written
  }
  return worst;
}

/// Worst relative L2 error over the case's outputs.
test::RowComparison runCase(Context &ctx, const Case &c, std::mt19937_64 &rng) {
  const DriverApi *api = &ctx.driver();
  const Kernel &kernel = kernelFor(ctx, c.spec);
  const bool bf16 = c.spec.dtype == "bf16";
  const int64_t d = c.spec.hidden, rows = c.rows;
  std::normal_distribution<float> normal(0.f, 1.f);
  auto bits = [&](float x) { return test::toHalfBits(bf16, x); };
  auto val = [&](uint16_t x) { return double(test::fromHalfBits(bf16, x)); };
  auto fill = [&](std::vector<uint16_t> &v, float scale) {
    for (auto &x : v)
      x = bits(normal(rng) * scale);
  };
  auto upload = [&](const std::vector<uint16_t> &v) {
    auto buf = std::make_unique<DeviceBuffer>(api, v.size() * 2);
    CHECK_CU(api->cuMemcpyHtoD(buf->ptr, v.data(), v.size() * 2));
    return buf;
  };
  auto poisoned = [&](size_t n) {
    auto buf = std::make_unique<DeviceBuffer>(api, n * 2);
    CHECK_CU(api->cuMemsetD8(buf->ptr, 0xFF, n * 2)); // NaN in bf16/fp16
    return buf;
  };
  auto download = [&](const DeviceBuffer &b, size_t n) {
    std::vector<uint16_t> v(n);
    CHECK_CU(api->cuMemcpyDtoH(v.data(), b.ptr, n * 2));
    return v;
  };
  RowArgs args;
  args.rows = rows;
  test::RowComparison worst;
  auto keepWorst = [&](test::RowComparison r) {
    worst.relL2 = std::max(worst.relL2, r.relL2);
    worst.nonFinite += r.nonFinite;
  };

  if (c.spec.op == "rope")
    return runRope(ctx, c, rng);
  if (c.spec.op != "add_rmsnorm") {
    const int64_t xs = 2 * d + c.pad, os = d + c.pad;
    std::vector<uint16_t> x(rows * xs);
    fill(x, 2.f);
    auto dx = upload(x);
    auto dout = poisoned(rows * os);
    args.count = 2;
    args.tensors[0] = {dx->get(), rows, 2 * d, xs};
    args.tensors[1] = {dout->get(), rows, d, os};
    launch(ctx, kernel, args);
    CHECK_CU(api->cuCtxSynchronize());
    std::vector<uint16_t> out = download(*dout, rows * os);
    std::vector<double> ref;
    test::referenceGated(
        c.spec.op == "gelu_mul", rows, d, [&](int64_t i) { return val(x[i]); },
        xs, ref);
    keepWorst(test::compareRows(
        [&](int64_t i) { return val(out[(i / d) * os + i % d]); }, ref));
    return worst;
  }

  const int64_t s = d + c.pad;
  std::vector<uint16_t> x(rows * s), res(rows * s), w(d);
  fill(x, 1.f);
  fill(res, 3.f);
  fill(w, 1.f);
  auto dx = upload(x), dres = upload(res), dw = upload(w);
  std::unique_ptr<DeviceBuffer> dout, dhout;
  void *outPtr = dx->get(), *hPtr = dres->get();
  if (!c.inPlace) {
    dout = poisoned(rows * s);
    dhout = poisoned(rows * s);
    outPtr = dout->get();
    hPtr = dhout->get();
  }
  args.count = 5;
  args.tensors[0] = {dx->get(), rows, d, s};
  args.tensors[1] = {dres->get(), rows, d, s};
  args.tensors[2] = {dw->get(), 1, d, d};
  args.tensors[3] = {outPtr, rows, d, s};
  args.tensors[4] = {hPtr, rows, d, s};
  launch(ctx, kernel, args);
  CHECK_CU(api->cuCtxSynchronize());
  std::vector<uint16_t> y = download(c.inPlace ? *dx : *dout, rows * s);
  std::vector<uint16_t> h = download(c.inPlace ? *dres : *dhout, rows * s);
  std::vector<double> refY, refH;
  test::referenceAddRMSNorm(
      rows, d, [&](int64_t i) { return val(x[(i / d) * s + i % d]); },
      [&](int64_t i) { return val(res[(i / d) * s + i % d]); },
      [&](int64_t j) { return val(w[j]); }, c.spec.eps,
      [&](double v) { return val(bits(float(v))); }, refY, refH);
  keepWorst(test::compareRows(
      [&](int64_t i) { return val(y[(i / d) * s + i % d]); }, refY));
  keepWorst(test::compareRows(
      [&](int64_t i) { return val(h[(i / d) * s + i % d]); }, refH));
  return worst;
}

/// Median milliseconds of one launch, on fresh random inputs (uniform in
/// [-2, 2), a few per row repeated with a random phase: fast to make and
/// never all equal) larger than L2.
double timeCase(Context &ctx, const Case &c, int reps, uint64_t seed = 1) {
  const DriverApi *api = &ctx.driver();
  const Kernel &kernel = kernelFor(ctx, c.spec);
  const bool bf16 = c.spec.dtype == "bf16";
  const int64_t rows = c.rows;
  RowArgs args;
  args.rows = rows;
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uni(-2.f, 2.f);
  std::vector<uint16_t> pool(4099);
  for (auto &x : pool)
    x = test::toHalfBits(bf16, uni(rng));
  for (const RowTensorRole &role : rowTensorRoles(c.spec)) {
    if (role.perRowBytes > 0 || role.anyRows) { // rope: positions, cache
      std::vector<uint16_t> host;
      int64_t tableRows = role.anyRows ? kMaxPosition : rows;
      if (role.anyRows) {
        host = ropeCache(bf16, role.cols);
      } else {
        std::uniform_int_distribution<int64_t> pick(0, kMaxPosition - 1);
        host.resize(rows * role.perRowBytes / 2);
        for (int64_t t = 0; t < rows; ++t) {
          int64_t p = pick(rng);
          std::memcpy(host.data() + t * role.perRowBytes / 2, &p,
                      role.perRowBytes); // little-endian: i32 or i64
        }
      }
      bufs.push_back(std::make_unique<DeviceBuffer>(api, host.size() * 2));
      CHECK_CU(
          api->cuMemcpyHtoD(bufs.back()->ptr, host.data(), host.size() * 2));
      args.tensors[args.count++] = {bufs.back()->get(), tableRows, role.cols,
                                    role.cols};
      continue;
    }
    int64_t n = role.vector ? role.cols : rows * role.cols;
    bufs.push_back(std::make_unique<DeviceBuffer>(api, n * 2));
    if (role.output) {
      CHECK_CU(api->cuMemsetD8(bufs.back()->ptr, 0xFF, n * 2));
    } else {
      std::vector<uint16_t> host(n);
      size_t phase = rng() % pool.size();
      for (int64_t i = 0; i < n; ++i)
        host[i] = pool[(phase + size_t(i) * 7) % pool.size()];
      CHECK_CU(api->cuMemcpyHtoD(bufs.back()->ptr, host.data(), n * 2));
    }
    args.tensors[args.count++] = {bufs.back()->get(), role.vector ? 1 : rows,
                                  role.cols, role.cols};
  }
  CUevent start, stop;
  CHECK_CU(api->cuEventCreate(&start, 0));
  CHECK_CU(api->cuEventCreate(&stop, 0));
  std::vector<float> ms;
  for (int i = 0; i < reps + 3; ++i) {
    CHECK_CU(api->cuEventRecord(start, nullptr));
    launch(ctx, kernel, args);
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

/// `--bench --sweep`: every knob variant of each bench shape, checked on a
/// smaller random problem (same kernel) and then timed on the bench shape,
/// side by side with the default; the fastest correct one is marked.
int runSweep(Context &ctx, std::mt19937_64 &rng) {
  const DriverApi *api = &ctx.driver();
  int bad = 0;
  std::string shape;
  double defaultMs = 0, bestMs = 0;
  std::string best;
  auto flush = [&] {
    if (!shape.empty())
      std::printf("sweep %s: best %s (%.3fx the default)\n", shape.c_str(),
                  best.c_str(), defaultMs / bestMs);
  };
  for (const Case &c : sweepCases()) {
    if (c.name != shape) {
      flush();
      shape = c.name;
      defaultMs = bestMs = 0;
      best.clear();
    }
    Case check = c;
    check.rows = 67; // partial programs at every rows-per-program
    test::RowComparison r = runCase(ctx, check, rng);
    const Kernel &k = kernelFor(ctx, c.spec);
    int regs = 0;
    api->cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k.function());
    if (!r.ok(1e-2)) {
      std::printf("sweep %-26s %-58s FAIL rel L2 %.2e non-finite %lld\n",
                  c.name, knobs(c.spec).c_str(), r.relL2,
                  (long long)r.nonFinite);
      ++bad;
      continue;
    }
    double ms = timeCase(ctx, c, 30, rng());
    RowTraffic t = rowTraffic(c.spec, c.rows);
    if (defaultMs == 0)
      defaultMs = ms;
    if (bestMs == 0 || ms < bestMs) {
      bestMs = ms;
      best = knobs(c.spec);
    }
    std::printf("sweep %-26s %-58s %3d regs  %.4f ms  %.2f TB/s  %.3fx\n",
                c.name, knobs(c.spec).c_str(), regs, ms,
                double(t.fused) / (ms * 1e-3) / 1e12, defaultMs / ms);
  }
  flush();
  return bad ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string bundle, writeSpecs;
  bool bench = false, sweep = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bundle" && i + 1 < argc)
      bundle = argv[++i];
    else if (a == "--write-specs" && i + 1 < argc)
      writeSpecs = argv[++i];
    else if (a == "--bench")
      bench = true;
    else if (a == "--sweep")
      sweep = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (!writeSpecs.empty()) {
    std::vector<KernelSpec> specs;
    for (const Case &c : correctnessCases())
      specs.push_back(c.spec);
    for (const Case &c : sweepCases())
      specs.push_back(c.spec);
    std::ofstream(writeSpecs) << writeSpecFile(specs);
    return 0;
  }
  std::unique_ptr<Context> ctx = attnc::test::openBundleContext(bundle);

  uint64_t seed = std::chrono::steady_clock::now().time_since_epoch().count();
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    seed = std::strtoull(s, nullptr, 10);
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);

  if (bench && sweep)
    return runSweep(*ctx, rng);
  if (bench) {
    for (const Case &c : benchCases()) {
      double ms = timeCase(*ctx, c, 20);
      RowTraffic t = rowTraffic(c.spec, c.rows);
      std::printf("bench %-26s %.4f ms  %.2f TB/s of minimal traffic  "
                  "(%.3f GB fused, %.3f GB unfused)\n",
                  c.name, ms, double(t.fused) / (ms * 1e-3) / 1e12,
                  double(t.fused) / 1e9, double(t.unfused) / 1e9);
    }
    return 0;
  }

  int passed = 0, failed = 0;
  for (const Case &c : correctnessCases()) {
    test::RowComparison r = runCase(*ctx, c, rng);
    bool ok = r.ok(1e-2);
    std::printf("%s %-56s rel L2 %.2e  non-finite %lld\n", ok ? "PASS" : "FAIL",
                c.name, r.relL2, (long long)r.nonFinite);
    (ok ? passed : failed)++;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
