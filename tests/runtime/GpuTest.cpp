//===- GpuTest.cpp - The runtime on a real GPU ----------------------------===//
//
// Loads PTX built by nvcc from fixture_attention.cu (an attention kernel
// that follows the attention_fwd_v1 contract), launches it through
// Context::launch, checks the numbers against a float64 reference, captures
// the launch into a CUDA graph and replays it. Exits 77 ("skipped: no CUDA
// device") where there is no driver or device.
//
//===----------------------------------------------------------------------===//

#define CATCH_CONFIG_RUNNER
#include "TestSupport.h"

#include "attnc/runtime/Context.h"
#include "attnc/runtime/Driver.h"
#include "attnc/runtime/NvJitLink.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

using namespace attnc;
using namespace attnc::test;

namespace {

const char *const kFixturePtx =
#include "FixturePtx.inc"
    ;

// Shapes baked into the fixture kernel.
constexpr int64_t kHeads = 4, kKvHeads = 2, kHeadDim = 64;

KernelSpec fixtureSpec() {
  KernelSpec spec;
  spec.dtype = "bf16";
  spec.heads = kHeads;
  spec.kvHeads = kKvHeads;
  spec.headDim = kHeadDim;
  spec.hasLse = true;
  spec.arch = "sm_80";
  return spec;
}

struct FixtureCompiler : KernelCompiler {
  int calls = 0;
  Result<CompiledKernel> compile(const KernelSpec &spec) override {
    ++calls;
    CompiledKernel kernel;
    kernel.ptx = kFixturePtx;
    kernel.meta.entry = "attnc_fixture_attention";
    kernel.meta.arch = spec.arch;
    kernel.meta.block = {64, 1, 1};
    kernel.meta.gridRule = abi::kGridRuleAttentionFwd;
    kernel.meta.blockM = 64;
    kernel.meta.dynamicSmem = 64 * 1024; // above 48 KiB: needs the opt-in
    kernel.meta.params = attentionFwdV1Params();
    return kernel;
  }
};

#define CU_CHECK(call)                                                         \
  do {                                                                         \
    CUresult cuResult_ = (call);                                               \
    INFO(#call);                                                               \
    REQUIRE(cuResult_ == CUDA_SUCCESS);                                        \
  } while (0)

uint16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

float fromBf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Host tensors in a given layout, mirrored on the device.
struct Tensor {
  std::vector<uint16_t> host; // bf16 (or f32 words for LSE, see lseHost)
  std::vector<float> lseHost;
  CUdeviceptr device = 0;
  TensorArg arg;
  size_t bytes = 0;
};

// Logical [B, H, S, D]; `bshd` stores it as [B, S, H, D].
TensorArg makeArg(CUdeviceptr ptr, int64_t b, int64_t h, int64_t s, int64_t d,
                  bool bshd) {
  TensorArg arg;
  arg.data = reinterpret_cast<const void *>(ptr);
  arg.shape = {b, h, s, d};
  arg.stride = bshd ? std::array<int64_t, 4>{s * h * d, d, h * d, 1}
                    : std::array<int64_t, 4>{h * s * d, s * d, d, 1};
  return arg;
}

double at(const std::vector<uint16_t> &data, const TensorArg &t, int64_t b,
          int64_t h, int64_t s, int64_t d) {
  return fromBf16(data[b * t.stride[0] + h * t.stride[1] + s * t.stride[2] +
                       d * t.stride[3]]);
}

struct Problem {
  const DriverApi &cu;
  int64_t batch = 2, seqQ = 100, seqKv = 77;
  std::vector<uint16_t> q, k, v;
  CUdeviceptr dq = 0, dk = 0, dv = 0, do_ = 0, dlse = 0;
  AttentionArgs args;
  std::mt19937 rng{1234};

  explicit Problem(const DriverApi &driver) : cu(driver) {
    size_t qElems = batch * kHeads * seqQ * kHeadDim;
    size_t kvElems = batch * kKvHeads * seqKv * kHeadDim;
    q.resize(qElems);
    k.resize(kvElems);
    v.resize(kvElems);
    CU_CHECK(cu.cuMemAlloc(&dq, qElems * 2));
    CU_CHECK(cu.cuMemAlloc(&dk, kvElems * 2));
    CU_CHECK(cu.cuMemAlloc(&dv, kvElems * 2));
    CU_CHECK(cu.cuMemAlloc(&do_, qElems * 2));
    CU_CHECK(cu.cuMemAlloc(&dlse, batch * kHeads * seqQ * 4));
    // q and o as [B, S, H, D] (the usual framework layout), k and v as
    // [B, H, S, D]: the strides must carry both.
    args.q = makeArg(dq, batch, kHeads, seqQ, kHeadDim, true);
    args.k = makeArg(dk, batch, kKvHeads, seqKv, kHeadDim, false);
    args.v = makeArg(dv, batch, kKvHeads, seqKv, kHeadDim, false);
    args.o = makeArg(do_, batch, kHeads, seqQ, kHeadDim, true);
    args.lse.data = reinterpret_cast<const void *>(dlse);
    args.lse.shape = {batch, kHeads, seqQ, 1};
    args.lse.stride = {kHeads * seqQ, seqQ, 1, 1};
    randomize();
  }
  ~Problem() {
    for (CUdeviceptr p : {dq, dk, dv, do_, dlse})
      if (p)
        cu.cuMemFree(p);
  }

  void fill(std::vector<uint16_t> &data, float amplitude) {
    std::normal_distribution<float> dist(0.0f, amplitude);
    for (uint16_t &x : data)
      x = toBf16(dist(rng));
  }

  // Fresh inputs (large logits: amplitude 2 gives scores of several units).
  void randomize() {
    fill(q, 2.0f);
    fill(k, 2.0f);
    fill(v, 1.0f);
    CU_CHECK(cu.cuMemcpyHtoD(dq, q.data(), q.size() * 2));
    CU_CHECK(cu.cuMemcpyHtoD(dk, k.data(), k.size() * 2));
    CU_CHECK(cu.cuMemcpyHtoD(dv, v.data(), v.size() * 2));
  }

  // Outputs poisoned with NaN so a kernel that writes nothing fails.
  void poison() {
    CU_CHECK(cu.cuMemsetD8(do_, 0xff, q.size() * 2));
    CU_CHECK(cu.cuMemsetD8(dlse, 0xff, batch * kHeads * seqQ * 4));
  }

  // Relative L2 error of O and max abs error of LSE vs a float64 reference.
  void check() {
    std::vector<uint16_t> o(q.size());
    std::vector<float> lse(batch * kHeads * seqQ);
    CU_CHECK(cu.cuMemcpyDtoH(o.data(), do_, o.size() * 2));
    CU_CHECK(cu.cuMemcpyDtoH(lse.data(), dlse, lse.size() * 4));
    double errSq = 0, refSq = 0, lseErr = 0;
    const double scale = 1.0 / std::sqrt(double(kHeadDim));
    std::vector<double> scores(seqKv), out(kHeadDim);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < kHeads; ++h)
        for (int64_t i = 0; i < seqQ; ++i) {
          int64_t kvh = h / (kHeads / kKvHeads);
          double m = -INFINITY;
          for (int64_t j = 0; j < seqKv; ++j) {
            double s = 0;
            for (int64_t d = 0; d < kHeadDim; ++d)
              s += at(q, args.q, b, h, i, d) * at(k, args.k, b, kvh, j, d);
            scores[j] = s * scale;
            m = std::max(m, scores[j]);
          }
          double l = 0;
          std::fill(out.begin(), out.end(), 0.0);
          for (int64_t j = 0; j < seqKv; ++j) {
            double p = std::exp(scores[j] - m);
            l += p;
            for (int64_t d = 0; d < kHeadDim; ++d)
              out[d] += p * at(v, args.v, b, kvh, j, d);
          }
          for (int64_t d = 0; d < kHeadDim; ++d) {
            double ref = out[d] / l;
            double got = at(o, args.o, b, h, i, d);
            errSq += (got - ref) * (got - ref);
            refSq += ref * ref;
          }
          double lseRef = m + std::log(l);
          lseErr = std::max(
              lseErr, std::abs(lse[(b * kHeads + h) * seqQ + i] - lseRef));
        }
    double relL2 = std::sqrt(errSq / refSq);
    std::printf("  O relative L2 error %.2e, LSE max abs error %.2e\n", relL2,
                lseErr);
    CHECK(relL2 < 1e-2); // bf16 output rounding dominates (~3e-3)
    CHECK(lseErr < 1e-3);
  }
};

struct Gpu {
  TempDir dir;
  std::unique_ptr<Context> context;
  std::shared_ptr<FixtureCompiler> compiler =
      std::make_shared<FixtureCompiler>();
  CUstream stream = nullptr;

  Gpu() {
    ContextOptions options;
    options.cacheDir = dir.path();
    options.buildId = "gpu-test";
    Result<std::unique_ptr<Context>> created = Context::create(options);
    INFO(created.status().message());
    REQUIRE(created.isOk());
    context = std::move(created).value();
    context->setCompiler(compiler);
    // Allocations and copies need the context current on this thread.
    CU_CHECK(cu().cuCtxPushCurrent(context->cuContext()));
    CU_CHECK(cu().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  }
  ~Gpu() {
    cu().cuStreamDestroy(stream);
    CUcontext popped;
    cu().cuCtxPopCurrent(&popped);
  }
  const DriverApi &cu() const { return context->driver(); }
};

} // namespace

TEST_CASE("PTX from nvcc loads, launches and computes attention", "[gpu]") {
  Gpu gpu;
  auto t0 = std::chrono::steady_clock::now();
  Result<const Kernel *> kernel = gpu.context->getKernel(fixtureSpec());
  auto t1 = std::chrono::steady_clock::now();
  INFO(kernel.status().message());
  REQUIRE(kernel.isOk());
  std::printf("device sm_%d, driver %d, kernel %s from %s\n",
              gpu.context->computeCapability(), gpu.cu().driverVersion,
              (*kernel)->key().c_str(),
              (*kernel)->loadedFromCubin() ? "cubin" : "PTX (driver JIT)");
  {
    Problem problem(gpu.cu());
    problem.poison();
    Status launched = gpu.context->launch(**kernel, problem.args, gpu.stream);
    INFO(launched.message());
    REQUIRE(launched.isOk());
    CU_CHECK(gpu.cu().cuStreamSynchronize(gpu.stream));
    problem.check();

    // Validation still guards the real path.
    AttentionArgs bad = problem.args;
    bad.k.shape[1] = 3;
    CHECK(gpu.context->launch(**kernel, bad, gpu.stream).code() ==
          ErrorCode::InvalidArgument);
  }

  // A second context (another process, in effect) loads it from disk.
  ContextOptions options;
  options.cacheDir = gpu.dir.path();
  options.buildId = "gpu-test";
  auto second = Context::create(options);
  REQUIRE(second.isOk());
  auto t2 = std::chrono::steady_clock::now();
  Result<const Kernel *> cached = (*second)->getKernel(fixtureSpec());
  auto t3 = std::chrono::steady_clock::now();
  REQUIRE(cached.isOk());
  std::printf("sm_80 PTX getKernel: miss (compile + publish + driver JIT) "
              "%.2f ms; disk hit (verify + driver JIT) %.2f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t3 - t2).count());
  CHECK_FALSE((*cached)->compiledHere());
  CHECK(gpu.compiler->calls == 1);
  Problem problem(gpu.cu());
  problem.poison();
  REQUIRE((*second)->launch(**cached, problem.args, gpu.stream).isOk());
  CU_CHECK(gpu.cu().cuStreamSynchronize(gpu.stream));
  problem.check();
}

TEST_CASE("an sm_90a kernel runs from its cached nvJitLink cubin", "[gpu]") {
  Gpu gpu;
  if (gpu.context->computeCapability() != 90 || !CubinLinker::load().isOk()) {
    WARN("needs an sm_90 device and nvJitLink; not run");
    return;
  }
  KernelSpec spec = fixtureSpec();
  spec.arch = "sm_90a"; // the sm_80 PTX JIT-links for sm_90a too
  auto t0 = std::chrono::steady_clock::now();
  Result<const Kernel *> kernel = gpu.context->getKernel(spec);
  auto t1 = std::chrono::steady_clock::now();
  INFO(kernel.status().message());
  REQUIRE(kernel.isOk());
  CHECK((*kernel)->loadedFromCubin());
  CHECK(exists(gpu.dir.path() + "/" + (*kernel)->key() + "/kernel.cubin"));
  Problem problem(gpu.cu());
  problem.poison();
  REQUIRE(gpu.context->launch(**kernel, problem.args, gpu.stream).isOk());
  CU_CHECK(gpu.cu().cuStreamSynchronize(gpu.stream));
  problem.check();

  ContextOptions options;
  options.cacheDir = gpu.dir.path();
  options.buildId = "gpu-test";
  auto second = Context::create(options);
  REQUIRE(second.isOk());
  auto t2 = std::chrono::steady_clock::now();
  Result<const Kernel *> cached = (*second)->getKernel(spec);
  auto t3 = std::chrono::steady_clock::now();
  REQUIRE(cached.isOk());
  CHECK((*cached)->loadedFromCubin());
  auto ms = [](auto a, auto b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  std::printf("sm_90a getKernel: miss (compile + nvJitLink + publish + "
              "cubin load) %.2f ms; disk hit (verify + cubin load) %.2f ms\n",
              ms(t0, t1), ms(t2, t3));
}

TEST_CASE("a launch captured into a CUDA graph replays", "[gpu]") {
  Gpu gpu;
  const DriverApi &cu = gpu.cu();
  REQUIRE(cu.cuStreamBeginCapture);
  const Kernel *kernel = *gpu.context->getKernel(fixtureSpec());
  Problem problem(cu);

  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CU_CHECK(cu.cuStreamBeginCapture(gpu.stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  // Capture fails if launch allocates or synchronises.
  Status captured = gpu.context->launch(*kernel, problem.args, gpu.stream);
  CUresult ended = cu.cuStreamEndCapture(gpu.stream, &graph);
  INFO(captured.message());
  REQUIRE(captured.isOk());
  REQUIRE(ended == CUDA_SUCCESS);
  CU_CHECK(cu.cuGraphInstantiate(&exec, graph, 0));

  for (int replay = 0; replay < 2; ++replay) {
    // New inputs in the same buffers: the replay must compute them.
    problem.randomize();
    problem.poison();
    CU_CHECK(cu.cuGraphLaunch(exec, gpu.stream));
    CU_CHECK(cu.cuStreamSynchronize(gpu.stream));
    problem.check();
  }
  cu.cuGraphExecDestroy(exec);
  cu.cuGraphDestroy(graph);
}

TEST_CASE("bad PTX fails with the driver's JIT log", "[gpu]") {
  Gpu gpu;
  Result<CUmodule> module = gpu.context->loadPtx(
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry broken()\n{\n\tthis_is_not_an_instruction;\n}\n");
  REQUIRE_FALSE(module.isOk());
  std::printf("bad PTX error: %s\n", module.status().message().c_str());
  CHECK(module.status().code() == ErrorCode::DriverError);
  CHECK_THAT(module.status().message(),
             Catch::Contains("CUDA_ERROR_INVALID_PTX") &&
                 Catch::Contains("JIT log:\n"));
}

TEST_CASE("an nvJitLink cubin loads faster than a PTX JIT", "[gpu]") {
  Gpu gpu;
  Result<const CubinLinker *> linker = CubinLinker::load();
  if (!linker.isOk()) {
    WARN("nvJitLink not found; cubin path not measured: "
         << linker.status().message());
    return;
  }
  int cc = gpu.context->computeCapability();
  std::string arch = "sm_" + std::to_string(cc);
  auto t0 = std::chrono::steady_clock::now();
  Result<std::string> cubin = (*linker)->link(kFixturePtx, arch);
  auto t1 = std::chrono::steady_clock::now();
  INFO(cubin.status().message());
  REQUIRE(cubin.isOk());
  Result<CUmodule> fromCubin = gpu.context->loadCubin(*cubin);
  auto t2 = std::chrono::steady_clock::now();
  REQUIRE(fromCubin.isOk());
  Result<CUmodule> fromPtx = gpu.context->loadPtx(kFixturePtx);
  auto t3 = std::chrono::steady_clock::now();
  REQUIRE(fromPtx.isOk());
  auto ms = [](auto a, auto b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  std::printf("nvJitLink %s link %.2f ms; cubin load %.2f ms; PTX load "
              "(driver JIT, may hit the driver's own cache) %.2f ms\n",
              arch.c_str(), ms(t0, t1), ms(t1, t2), ms(t2, t3));
  CUfunction function = nullptr;
  CU_CHECK(gpu.cu().cuModuleGetFunction(&function, *fromCubin,
                                        "attnc_fixture_attention"));
  gpu.context->unloadModule(*fromCubin);
  gpu.context->unloadModule(*fromPtx);
}

int main(int argc, char **argv) {
  // No driver or no device: skipped, never passed (ctest SKIP_RETURN_CODE).
  Result<const DriverApi *> driver = loadDriver();
  int devices = 0;
  if (!driver.isOk() || (*driver)->cuDeviceGetCount(&devices) != CUDA_SUCCESS ||
      devices == 0) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
