//===- ElementwiseGpuTest.cpp - attnc's row kernels on a real GPU ---------===//
//
// Loads silu_mul, gelu_mul and add_rmsnorm kernels from a bundle with the
// runtime alone, runs them on fresh random inputs with NaN-poisoned outputs
// and compares with float64: long and short rows (one and several rows per
// program), row lengths that do not fill every thread's vectors, padded
// row strides, in-place add_rmsnorm. `--bench` times the PEERS.md shapes
// with CUDA events and prints TB/s of minimal traffic.
//
// Usage: attnc-gpu-elementwise --bundle DIR [--bench]
//        attnc-gpu-elementwise --write-specs FILE   (the specs to bundle)
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Context.h"
#include "attnc/runtime/Driver.h"
#include "attnc/runtime/RowLaunch.h"
#include "attnc/runtime/Spec.h"
#include "tests/common/AttentionCheck.h"
#include "tests/common/RowReference.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace attnc;

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

std::vector<Case> correctnessCases() {
  return {
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
      {"add_rmsnorm 8192 x 4096", rowSpec("add_rmsnorm", "bf16", 4096), 8192}};
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
    CHECK_CU(api->cuMemAlloc(&ptr, std::max<size_t>(bytes, 16)));
  }
  ~DeviceBuffer() { api->cuMemFree(ptr); }
  void *get() const { return reinterpret_cast<void *>(ptr); }
};

const Kernel &kernelFor(Context &ctx, const KernelSpec &spec) {
  auto kernel = ctx.getKernel(spec);
  if (!kernel.isOk()) {
    std::fprintf(stderr, "getKernel: %s\n", kernel.status().message().c_str());
    std::exit(1);
  }
  return **kernel;
}

void launch(Context &ctx, const Kernel &k, const RowArgs &args) {
  Status st = ctx.launch(k, args, nullptr);
  if (!st.isOk()) {
    std::fprintf(stderr, "launch: %s\n", st.message().c_str());
    std::exit(1);
  }
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

/// Median milliseconds of one launch.
double timeCase(Context &ctx, const Case &c, int reps) {
  const DriverApi *api = &ctx.driver();
  const Kernel &kernel = kernelFor(ctx, c.spec);
  const int64_t d = c.spec.hidden, rows = c.rows;
  RowArgs args;
  args.rows = rows;
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  for (const RowTensorRole &role : rowTensorRoles(c.spec)) {
    int64_t n = role.vector ? role.cols : rows * role.cols;
    bufs.push_back(std::make_unique<DeviceBuffer>(api, n * 2));
    CHECK_CU(api->cuMemsetD8(bufs.back()->ptr, 0x3c, n * 2)); // finite
    args.tensors[args.count++] = {bufs.back()->get(), role.vector ? 1 : rows,
                                  role.cols, role.cols};
  }
  (void)d;
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

} // namespace

int main(int argc, char **argv) {
  std::string bundle, writeSpecs;
  bool bench = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bundle" && i + 1 < argc)
      bundle = argv[++i];
    else if (a == "--write-specs" && i + 1 < argc)
      writeSpecs = argv[++i];
    else if (a == "--bench")
      bench = true;
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

  if (bench) {
    for (const Case &c : benchCases()) {
      double ms = timeCase(**ctx, c, 20);
      RowTraffic t = rowTraffic(c.spec, c.rows);
      std::printf("bench %-26s %.4f ms  %.2f TB/s of minimal traffic  "
                  "(%.3f GB fused, %.3f GB unfused)\n",
                  c.name, ms, double(t.fused) / (ms * 1e-3) / 1e12,
                  double(t.fused) / 1e9, double(t.unfused) / 1e9);
    }
    return 0;
  }

  uint64_t seed = std::chrono::steady_clock::now().time_since_epoch().count();
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    seed = std::strtoull(s, nullptr, 10);
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  int passed = 0, failed = 0;
  for (const Case &c : correctnessCases()) {
    test::RowComparison r = runCase(**ctx, c, rng);
    bool ok = r.ok(1e-2);
    std::printf("%s %-56s rel L2 %.2e  non-finite %lld\n", ok ? "PASS" : "FAIL",
                c.name, r.relL2, (long long)r.nonFinite);
    (ok ? passed : failed)++;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
