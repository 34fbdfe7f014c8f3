//===- TemplatesGpuTest.cpp - GPU numerics of the NVRTC templates ---------===//
//
// Label `gpu`. Compiles the templates with NVRTC for the local device, runs
// them through the CUDA driver API (dlopen'd libcuda, no link dependency) and
// compares with the float64 CPU reference on fresh random inputs. Outputs
// are poisoned (all bits set = NaN) before each launch. Exits 77 (skipped)
// when there is no CUDA driver or device.
//
// The tiny driver table below exists only for this test; the runtime owns the
// real one.
//
//===----------------------------------------------------------------------===//

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "TestSeed.h"
#include "templates/HostHalf.h"
#include "templates/ReferenceAttention.h"
#include "templates/Templates.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

using namespace attnc::templates;

namespace {

//===----------------------------------------------------------------------===//
// Minimal driver API table.
//===----------------------------------------------------------------------===//

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctxOpaque *;
using CUmodule = struct CUmodOpaque *;
using CUfunction = struct CUfuncOpaque *;
using CUstream = struct CUstreamOpaque *;

struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*deviceGetCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*ctxSynchronize)();
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                               void **);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*memsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, CUstream, void **,
                           void **);
  CUresult (*getErrorString)(CUresult, const char **);

  CUcontext context = nullptr;
  int ccMajor = 0, ccMinor = 0;

  /// Null (with `why`) when there is no usable driver or device.
  static Driver *open(std::string &why) {
    void *lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      why = "no CUDA driver (libcuda.so.1)";
      return nullptr;
    }
    auto *d = new Driver();
    bool ok = true;
    auto bind = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          ::dlsym(lib, name));
      ok = ok && fn != nullptr;
    };
    bind(d->init, "cuInit");
    bind(d->deviceGetCount, "cuDeviceGetCount");
    bind(d->deviceGet, "cuDeviceGet");
    bind(d->deviceGetAttribute, "cuDeviceGetAttribute");
    bind(d->primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(d->ctxSetCurrent, "cuCtxSetCurrent");
    bind(d->ctxSynchronize, "cuCtxSynchronize");
    bind(d->moduleLoadDataEx, "cuModuleLoadDataEx");
    bind(d->moduleGetFunction, "cuModuleGetFunction");
    bind(d->memAlloc, "cuMemAlloc_v2");
    bind(d->memFree, "cuMemFree_v2");
    bind(d->memcpyHtoD, "cuMemcpyHtoD_v2");
    bind(d->memcpyDtoH, "cuMemcpyDtoH_v2");
    bind(d->memsetD8, "cuMemsetD8_v2");
    bind(d->launchKernel, "cuLaunchKernel");
    bind(d->getErrorString, "cuGetErrorString");
    int count = 0;
    CUdevice dev = 0;
    if (!ok) {
      why = "libcuda.so.1 lacks a driver API symbol";
    } else if (d->init(0) != 0 || d->deviceGetCount(&count) != 0 ||
               count == 0) {
      why = "no CUDA device";
    } else if (d->deviceGet(&dev, 0) != 0 ||
               d->deviceGetAttribute(&d->ccMajor, 75, dev) != 0 ||
               d->deviceGetAttribute(&d->ccMinor, 76, dev) != 0 ||
               d->primaryCtxRetain(&d->context, dev) != 0 ||
               d->ctxSetCurrent(d->context) != 0) {
      why = "cannot create a context on device 0";
    } else {
      return d;
    }
    delete d;
    return nullptr;
  }

  void check(CUresult rc, const char *what) const {
    if (rc == 0)
      return;
    const char *msg = nullptr;
    getErrorString(rc, &msg);
    FAIL(what << " failed: " << (msg ? msg : "?") << " (" << rc << ")");
  }
};

Driver *gDriver = nullptr;

struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    gDriver->check(gDriver->memAlloc(&ptr, n ? n : 1), "cuMemAlloc");
  }
  ~DeviceBuffer() { gDriver->memFree(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  void *get() const { return reinterpret_cast<void *>(ptr); }
  template <typename T> void upload(const std::vector<T> &h) {
    REQUIRE(h.size() * sizeof(T) == bytes);
    gDriver->check(gDriver->memcpyHtoD(ptr, h.data(), bytes), "cuMemcpyHtoD");
  }
  template <typename T> std::vector<T> download() const {
    std::vector<T> h(bytes / sizeof(T));
    gDriver->check(gDriver->memcpyDtoH(h.data(), ptr, bytes), "cuMemcpyDtoH");
    return h;
  }
  void poison() {
    gDriver->check(gDriver->memsetD8(ptr, 0xff, bytes), "cuMemsetD8");
  }
};

struct Module {
  CUmodule module = nullptr;
  std::map<std::string, CUfunction> functions;
};

std::string targetArch() {
  std::string arch = "sm_" + std::to_string(gDriver->ccMajor) +
                     std::to_string(gDriver->ccMinor);
  if (gDriver->ccMajor == 9 && gDriver->ccMinor == 0)
    arch += "a";
  return arch;
}

const Nvrtc &nvrtc() {
  static std::unique_ptr<Nvrtc> instance = [] {
    std::string error;
    auto loaded = Nvrtc::load(&error);
    if (!loaded)
      FAIL(error);
    return loaded;
  }();
  return *instance;
}

const Module &loadTemplate(TemplateKind kind, DType dtype, int headDim,
                           bool scoresF32) {
  static std::map<std::string, Module> cache;
  const std::string key = std::string(templateKindName(kind)) +
                          dtypeName(dtype) + std::to_string(headDim) +
                          (scoresF32 ? "f32" : "");
  if (auto it = cache.find(key); it != cache.end())
    return it->second;
  TemplateConfig config;
  config.kind = kind;
  config.dtype = dtype;
  config.headDim = headDim;
  config.arch = targetArch();
  config.scoresF32 = scoresF32;
  NvrtcCompileResult compiled = compileTemplate(nvrtc(), config);
  INFO(compiled.message());
  REQUIRE(compiled.ok);
  Module m;
  char errorLog[8192] = {0};
  int options[] = {5 /*CU_JIT_ERROR_LOG_BUFFER*/,
                   6 /*CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES*/};
  void *values[] = {errorLog, reinterpret_cast<void *>(sizeof(errorLog))};
  CUresult rc = gDriver->moduleLoadDataEx(&m.module, compiled.ptx.c_str(), 2,
                                          options, values);
  INFO("JIT log: " << errorLog);
  gDriver->check(rc, "cuModuleLoadDataEx");
  for (const std::string &entry : templateEntryNames(kind)) {
    CUfunction f = nullptr;
    gDriver->check(gDriver->moduleGetFunction(&f, m.module, entry.c_str()),
                   "cuModuleGetFunction");
    m.functions[entry] = f;
  }
  return cache[key] = std::move(m);
}

template <typename Params>
void launch(const Module &m, const std::string &entry, const LaunchDims &d,
            Params &params) {
  void *args[] = {&params};
  gDriver->check(
      gDriver->launchKernel(m.functions.at(entry), d.grid[0], d.grid[1],
                            d.grid[2], d.block[0], d.block[1], d.block[2],
                            d.dynamicSharedBytes, nullptr, args, nullptr),
      "cuLaunchKernel");
}

//===----------------------------------------------------------------------===//
// Problems.
//===----------------------------------------------------------------------===//

struct Case {
  const char *name;
  int batch, headsQ, headsKV, seqQ, seqKV;
  bool causal = false;
  int windowLeft = -1, windowRight = -1;
  float softcap = 0.0f;
  float inputRange = 1.0f; ///< q, k ~ U(-r, r); large r = large logits
  bool strided = false;    ///< physical [B, S, H, D + 8] instead of dense
};

const std::vector<Case> &cases() {
  static const std::vector<Case> all = {
      {"plain", 2, 4, 4, 197, 197},
      {"causal Sq<Skv gqa", 1, 8, 2, 100, 300, true},
      {"causal Sq>Skv masked rows", 1, 2, 1, 300, 100, true},
      {"window+softcap strided", 2, 4, 2, 150, 170, false, 37, 5, 2.0f, 2.0f,
       true},
      {"window causal mqa", 1, 4, 1, 64, 256, true, 20, -1},
      {"decode gqa", 2, 8, 1, 1, 1000},
      {"large logits softcap", 1, 2, 2, 96, 128, false, -1, -1, 30.0f, 8.0f},
      {"large logits causal", 1, 2, 1, 80, 80, true, -1, -1, 0.0f, 8.0f},
  };
  return all;
}

bool largeLogits(const Case &c) { return c.inputRange > 4.0f; }

/// Physical strides of a [B, H, S, D] tensor.
ReferenceStrides layout(const Case &c, int heads, int seq, int headDim) {
  if (!c.strided)
    return ReferenceStrides::dense(heads, seq, headDim);
  const int64_t row = headDim + 8;
  return {int64_t(seq) * heads * row, row, int64_t(heads) * row};
}

size_t elements(const ReferenceStrides &s, int batch) {
  return size_t(s.b) * batch;
}

struct Inputs {
  ReferenceStrides qs, ks, vs, os;
  std::vector<uint16_t> q, k, v;
  std::vector<double> refO, refLse;
  std::vector<bool> rowEmpty;
};

Inputs makeInputs(const Case &c, DType dtype, int headDim,
                  std::mt19937_64 &rng) {
  Inputs in;
  in.qs = layout(c, c.headsQ, c.seqQ, headDim);
  in.ks = layout(c, c.headsKV, c.seqKV, headDim);
  in.vs = in.ks;
  in.os = in.qs;
  auto fill = [&](std::vector<uint16_t> &t, const ReferenceStrides &s,
                  int heads, int seq, float range) {
    t.assign(elements(s, c.batch), 0xffff); // padding = NaN: must not be read
    std::uniform_real_distribution<float> dist(-range, range);
    for (int b = 0; b < c.batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < seq; ++i)
          for (int d = 0; d < headDim; ++d) {
            float x;
            do
              x = dist(rng);
            while (x == 0.0f);
            t[b * s.b + h * s.h + i * s.s + d] =
                dtype == DType::BF16 ? floatToBf16Bits(x) : floatToHalfBits(x);
          }
  };
  fill(in.q, in.qs, c.headsQ, c.seqQ, c.inputRange);
  fill(in.k, in.ks, c.headsKV, c.seqKV, c.inputRange);
  fill(in.v, in.vs, c.headsKV, c.seqKV, 1.0f);

  ReferenceProblem p;
  p.batch = c.batch;
  p.headsQ = c.headsQ;
  p.headsKV = c.headsKV;
  p.seqQ = c.seqQ;
  p.seqKV = c.seqKV;
  p.headDim = headDim;
  p.scale = 1.0 / std::sqrt(double(headDim));
  p.scale = float(p.scale); // the kernels get the fp32 scale
  p.softcap = c.softcap;
  p.causal = c.causal;
  p.windowLeft = c.windowLeft;
  p.windowRight = c.windowRight;
  const size_t rows = size_t(c.batch) * c.headsQ * c.seqQ;
  in.refO.resize(rows * headDim);
  in.refLse.resize(rows);
  if (dtype == DType::BF16)
    referenceAttention(p, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                       in.vs, Bf16BitsToDouble{}, in.refO.data(),
                       in.refLse.data());
  else
    referenceAttention(p, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                       in.vs, HalfBitsToDouble{}, in.refO.data(),
                       in.refLse.data());
  in.rowEmpty.resize(rows);
  for (size_t r = 0; r < rows; ++r)
    in.rowEmpty[r] = std::isinf(in.refLse[r]);
  return in;
}

/// Limits: relative L2 error of O (input dtype) and of the fp32 O, and the
/// largest |dLSE| / (1 + |LSE|). Seen on an H200 (max over all cases):
/// O 1.7e-3 (bf16) / 2.1e-4 (fp16) from output rounding; fp32 paths O f32
/// 1.6e-6 and LSE 1.8e-6 (large logits); 16-bit S/P: O 3.1e-3, LSE 5.2e-4.
struct Tolerance {
  double o, oF32, lse;
};

/// Checks O (input dtype, physical layout), O f32 and LSE (dense).
void compare(const Case &c, DType dtype, int headDim, const Inputs &in,
             const std::vector<uint16_t> &o, const std::vector<float> &oF32,
             const std::vector<float> &lse, const Tolerance &tol,
             const std::string &label) {
  double num = 0, den = 0, num32 = 0, maxLse = 0;
  long nans = 0, maskedBad = 0, padTouched = 0;
  std::vector<bool> written(o.size(), false);
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < c.headsQ; ++h)
      for (int i = 0; i < c.seqQ; ++i) {
        const size_t row = (size_t(b) * c.headsQ + h) * c.seqQ + i;
        for (int d = 0; d < headDim; ++d) {
          const size_t at = b * in.os.b + h * in.os.h + i * in.os.s + d;
          written[at] = true;
          const double got = dtype == DType::BF16 ? bf16BitsToFloat(o[at])
                                                  : halfBitsToFloat(o[at]);
          const double got32 = oF32[row * headDim + d];
          const double want = in.refO[row * headDim + d];
          nans += std::isnan(got) + std::isnan(got32);
          num += (got - want) * (got - want);
          num32 += (got32 - want) * (got32 - want);
          den += want * want;
          if (in.rowEmpty[row] && (got != 0.0 || got32 != 0.0))
            ++maskedBad;
        }
        if (std::isnan(lse[row]))
          ++nans;
        if (in.rowEmpty[row]) {
          if (!(std::isinf(lse[row]) && lse[row] < 0))
            ++maskedBad;
        } else {
          maxLse = std::max(maxLse, std::abs(lse[row] - in.refLse[row]) /
                                        (1.0 + std::abs(in.refLse[row])));
        }
      }
  for (size_t at = 0; at < o.size(); ++at)
    if (!written[at] && o[at] != 0xffff)
      ++padTouched;
  const double errO = std::sqrt(num / den), errO32 = std::sqrt(num32 / den);
  std::printf("%-5s D=%-3d %-26s %-18s relL2(O) %.2e  relL2(Of32) %.2e  "
              "LSE %.2e\n",
              dtypeName(dtype), headDim, c.name, label.c_str(), errO, errO32,
              maxLse);
  std::fflush(stdout);
  INFO(dtypeName(dtype) << " D=" << headDim << " " << c.name << " " << label);
  CHECK(nans == 0);
  CHECK(maskedBad == 0);
  CHECK(padTouched == 0);
  CHECK(errO <= tol.o);
  CHECK(errO32 <= tol.oF32);
  CHECK(maxLse <= tol.lse);
}

template <typename Params>
void fillCommon(Params &p, const Case &c, int headDim, const Inputs &in,
                const DeviceBuffer &q, const DeviceBuffer &k,
                const DeviceBuffer &v, DeviceBuffer &o, DeviceBuffer &oF32,
                DeviceBuffer &lse) {
  p.q = q.get();
  p.k = k.get();
  p.v = v.get();
  p.o = o.get();
  p.oF32 = static_cast<float *>(oF32.get());
  p.lse = static_cast<float *>(lse.get());
  p.qStrideB = in.qs.b, p.qStrideH = in.qs.h, p.qStrideS = in.qs.s;
  p.kStrideB = in.ks.b, p.kStrideH = in.ks.h, p.kStrideS = in.ks.s;
  p.vStrideB = in.vs.b, p.vStrideH = in.vs.h, p.vStrideS = in.vs.s;
  p.oStrideB = in.os.b, p.oStrideH = in.os.h, p.oStrideS = in.os.s;
  p.batch = c.batch;
  p.headsQ = c.headsQ;
  p.headsKV = c.headsKV;
  p.seqQ = c.seqQ;
  p.seqKV = c.seqKV;
  p.headDim = headDim;
  p.scale = float(1.0 / std::sqrt(double(headDim)));
  p.softcap = c.softcap;
  p.causal = c.causal;
  p.windowLeft = c.windowLeft;
  p.windowRight = c.windowRight;
  p.reserved = 0;
}

void runAll(DType dtype, int headDim) {
  std::mt19937_64 rng(test::testSeed() + headDim * 2 + int(dtype));
  for (const Case &c : cases()) {
    Inputs in = makeInputs(c, dtype, headDim, rng);
    const size_t rows = size_t(c.batch) * c.headsQ * c.seqQ;
    DeviceBuffer q(in.q.size() * 2), k(in.k.size() * 2), v(in.v.size() * 2);
    q.upload(in.q);
    k.upload(in.k);
    v.upload(in.v);
    DeviceBuffer o(elements(in.os, c.batch) * 2), oF32(rows * headDim * 4),
        lse(rows * 4);

    // 1. The reference kernel: fp32 online softmax, tight fp32 tolerance.
    {
      ReferenceAttentionParams p{};
      fillCommon(p, c, headDim, in, q, k, v, o, oF32, lse);
      REQUIRE(validate(p, headDim).empty());
      o.poison();
      oF32.poison();
      lse.poison();
      launch(
          loadTemplate(TemplateKind::ReferenceAttention, dtype, headDim, false),
          "attnc_reference_attention", referenceAttentionLaunch(p), p);
      gDriver->check(gDriver->ctxSynchronize(), "reference kernel");
      compare(c, dtype, headDim, in, o.download<uint16_t>(),
              oF32.download<float>(), lse.download<float>(), {1e-2, 2e-5, 1e-5},
              "reference");
    }

    // 2. Standard attention; S/P in the input dtype (not with large logits,
    //    whose 8-bit bf16 scores lose percents: inherent to that baseline),
    //    then in fp32 computed in place (P aliases S).
    for (bool f32 : {false, true}) {
      if (!f32 && largeLogits(c))
        continue;
      const size_t spBytes =
          rows * size_t(c.seqKV) * (f32 ? 4 : dtypeBytes(dtype));
      DeviceBuffer s(spBytes);
      std::unique_ptr<DeviceBuffer> pBuf;
      if (!f32)
        pBuf = std::make_unique<DeviceBuffer>(spBytes);
      StandardAttentionParams p{};
      fillCommon(p, c, headDim, in, q, k, v, o, oF32, lse);
      p.s = s.get();
      p.p = f32 ? s.get() : pBuf->get();
      REQUIRE(validate(p, headDim).empty());
      o.poison();
      oF32.poison();
      lse.poison();
      s.poison();
      if (pBuf)
        pBuf->poison();
      const Module &m =
          loadTemplate(TemplateKind::StandardAttention, dtype, headDim, f32);
      launch(m, "attnc_std_scores", standardScoresLaunch(p), p);
      launch(m, "attnc_std_softmax", standardSoftmaxLaunch(p), p);
      launch(m, "attnc_std_pv", standardPvLaunch(p), p);
      gDriver->check(gDriver->ctxSynchronize(), "standard kernels");
      const Tolerance tol =
          f32 ? Tolerance{1e-2, 2e-5, 1e-5} : Tolerance{1e-2, 1e-2, 4e-3};
      compare(c, dtype, headDim, in, o.download<uint16_t>(),
              oF32.download<float>(), lse.download<float>(), tol,
              f32 ? "standard S/P f32" : "standard S/P 16b");
    }
  }
}

} // namespace

TEST_CASE("GPU templates vs float64 reference, bf16", "[gpu][bf16]") {
  for (int headDim : {64, 128, 256})
    runAll(DType::BF16, headDim);
}

TEST_CASE("GPU templates vs float64 reference, fp16", "[gpu][fp16]") {
  for (int headDim : {64, 128, 256})
    runAll(DType::FP16, headDim);
}

int main(int argc, char **argv) {
  std::string why;
  gDriver = Driver::open(why);
  if (!gDriver) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  std::printf("device: compute capability %d.%d, target %s\n", gDriver->ccMajor,
              gDriver->ccMinor, targetArch().c_str());
  test::testSeed();
  return Catch::Session().run(argc, argv);
}
