//===- NvrtcTest.cpp - NVRTC wrapper and template host API ----------------===//
//
// Needs libnvrtc (CUDA 13) but no GPU.
//
//===----------------------------------------------------------------------===//

#include "templates/Nvrtc.h"
#include "templates/Templates.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace attnc::templates;
using Catch::Matchers::Contains;

namespace {
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

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// Restores an environment variable on scope exit.
struct ScopedEnv {
  std::string name;
  bool had;
  std::string old;
  ScopedEnv(const char *n, const char *value) : name(n) {
    const char *current = std::getenv(n);
    had = current != nullptr;
    if (had)
      old = current;
    if (value)
      ::setenv(n, value, 1);
    else
      ::unsetenv(n);
  }
  ~ScopedEnv() {
    if (had)
      ::setenv(name.c_str(), old.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};
} // namespace

TEST_CASE("NVRTC loads and reports its version", "[nvrtc]") {
  auto [major, minor] = nvrtc().version();
  INFO("loaded " << nvrtc().libraryPath() << " version " << major << "."
                 << minor);
  CHECK(major >= 12);
}

TEST_CASE("a missing libnvrtc gives a clear message", "[nvrtc]") {
  std::string error;
  auto missing = Nvrtc::loadFrom({"/nonexistent/attnc/libnvrtc.so.13"}, &error);
  CHECK(missing == nullptr);
  CHECK_THAT(error, Contains("cannot load NVRTC"));
  CHECK_THAT(error, Contains("/nonexistent/attnc/libnvrtc.so.13"));
  CHECK_THAT(error, Contains("ATTNC_NVRTC_LIBRARY"));

  // A library that is not NVRTC is rejected by symbol, not crashed on.
  error.clear();
  CHECK(Nvrtc::loadFrom({"libm.so.6"}, &error) == nullptr);
  CHECK_THAT(error, Contains("not NVRTC"));

  // ATTNC_NVRTC_LIBRARY overrides the search list and is honoured strictly.
  ScopedEnv env("ATTNC_NVRTC_LIBRARY", "/nonexistent/attnc/override.so");
  REQUIRE(Nvrtc::defaultLibraryCandidates() ==
          std::vector<std::string>{"/nonexistent/attnc/override.so"});
  error.clear();
  CHECK(Nvrtc::load(&error) == nullptr);
  CHECK_THAT(error, Contains("/nonexistent/attnc/override.so"));
}

TEST_CASE("the default search includes the toolkit's lib64", "[nvrtc]") {
  ScopedEnv env("ATTNC_NVRTC_LIBRARY", nullptr);
  ScopedEnv home("ATTNC_CUDA_HOME", "/opt/some-cuda");
  auto candidates = Nvrtc::defaultLibraryCandidates();
  REQUIRE(candidates.size() == 4);
  CHECK(candidates[0] == "libnvrtc.so.13");
  CHECK(candidates[1] == "libnvrtc.so");
  CHECK(candidates[2] == "/opt/some-cuda/lib64/libnvrtc.so.13");
  CHECK(candidates[3] == "/opt/some-cuda/lib64/libnvrtc.so");
}

TEST_CASE("a syntax error returns the NVRTC log", "[nvrtc]") {
  NvrtcCompileOptions options;
  options.programName = "broken.cu";
  NvrtcCompileResult r = nvrtc().compile(
      "extern \"C\" __global__ void broken(float *x) { x[0] = ; }\n", options);
  CHECK_FALSE(r.ok);
  CHECK(r.ptx.empty());
  CHECK_THAT(r.error, Contains("nvrtcCompileProgram"));
  CHECK_THAT(r.error, Contains("NVRTC_ERROR_COMPILATION"));
  CHECK_THAT(r.log, Contains("broken.cu"));
  CHECK_THAT(r.log, Contains("error"));
  CHECK_THAT(r.message(), Contains("expected an expression"));
}

TEST_CASE("an unknown target is refused before NVRTC runs", "[nvrtc]") {
  NvrtcCompileOptions options;
  for (const char *arch : {"gfx90a", "sm_", "sm_9", "sm_90x", "sm_90ab"}) {
    options.arch = arch;
    NvrtcCompileResult r = nvrtc().compile("__global__ void f() {}", options);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, Contains("unsupported NVRTC target"));
  }
}

TEST_CASE("defines, headers, name expressions and targets", "[nvrtc]") {
  const char *source = R"(
#include "answer.h"
#if ANSWER != 42
#error "ANSWER is not 42"
#endif
template <typename T, int N> __global__ void fill(T *out) {
  out[threadIdx.x % N] = T(ANSWER + FROM_HEADER);
}
)";
  NvrtcCompileOptions options;
  options.headers.push_back({"answer.h", "#define FROM_HEADER 1\n"});
  options.defines.emplace_back("ANSWER", "42");
  options.nameExpressions = {"fill<float, 4>", "fill<int, 8>"};
  for (const char *arch : {"sm_80", "sm_90", "sm_90a", "compute_80"}) {
    options.arch = arch;
    NvrtcCompileResult r = nvrtc().compile(source, options);
    INFO(r.message());
    REQUIRE(r.ok);
    const std::string target =
        std::string(".target ") +
        (std::string(arch).rfind("sm_", 0) == 0 ? arch : "sm_80");
    CHECK_THAT(r.ptx, Contains(target));
    REQUIRE(r.loweredNames.size() == 2);
    for (const auto &[expr, lowered] : r.loweredNames) {
      CHECK(lowered.rfind("_Z", 0) == 0);
      CHECK_THAT(r.ptx, Contains(".entry " + lowered));
    }
    CHECK(r.loweredNames[0].second != r.loweredNames[1].second);
  }

  options.defines.clear(); // now the #error fires
  options.arch = "sm_80";
  NvrtcCompileResult r = nvrtc().compile(source, options);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.log, Contains("ANSWER is not 42"));
}

TEST_CASE("a wrong include path is reported", "[nvrtc]") {
  TemplateConfig config;
  config.kind = TemplateKind::ReferenceAttention;
  config.headDim = 64;
  config.arch = "sm_80";
  config.cudaIncludePath = "/nonexistent/cuda/include";
  NvrtcCompileResult r = compileTemplate(nvrtc(), config);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.log, Contains("cuda_bf16.h"));
}

TEST_CASE("bad template configs are refused", "[nvrtc]") {
  TemplateConfig config;
  config.headDim = 257;
  CHECK_THAT(compileTemplate(nvrtc(), config).error, Contains("1..256"));
  config.headDim = 0;
  CHECK_THAT(compileTemplate(nvrtc(), config).error, Contains("1..256"));
  config.headDim = 64;
  config.scoresF32 = true;
  CHECK_THAT(compileTemplate(nvrtc(), config).error, Contains("scoresF32"));
}

TEST_CASE("embedded sources are the files, verbatim", "[templates]") {
  const std::string dir = ATTNC_TEMPLATES_SOURCE_DIR;
  CHECK(templateSource(TemplateKind::ReferenceAttention) ==
        readFile(dir + "/cuda/reference_attention.cu"));
  CHECK(templateSource(TemplateKind::StandardAttention) ==
        readFile(dir + "/cuda/standard_attention.cu"));
  auto headers = templateHeaders();
  REQUIRE(headers.size() == 2);
  CHECK(headers[0].name == "attnc/TemplateParams.h");
  CHECK(headers[0].text == readFile(dir + "/TemplateParams.h"));
  CHECK(headers[1].name == "attnc/common.cuh");
  CHECK(headers[1].text == readFile(dir + "/cuda/common.cuh"));
}

TEST_CASE("entry names and launch geometry", "[templates]") {
  CHECK(templateEntryNames(TemplateKind::ReferenceAttention) ==
        std::vector<std::string>{"attnc_reference_attention"});
  CHECK(templateEntryNames(TemplateKind::StandardAttention) ==
        std::vector<std::string>{"attnc_std_scores", "attnc_std_softmax",
                                 "attnc_std_pv"});

  ReferenceAttentionParams r{};
  r.batch = 3;
  r.headsQ = 8;
  r.seqQ = 13;
  LaunchDims d = referenceAttentionLaunch(r);
  CHECK(d.grid[0] == 4); // ceil(13 / 4)
  CHECK(d.grid[1] == 8);
  CHECK(d.grid[2] == 3);
  CHECK(d.block[0] == 128);
  CHECK(d.block[1] == 1);
  CHECK(d.dynamicSharedBytes == 0);

  StandardAttentionParams s{};
  s.batch = 2;
  s.headsQ = 5;
  s.seqQ = 65;
  s.seqKV = 129;
  d = standardScoresLaunch(s);
  CHECK((d.grid[0] == 3 && d.grid[1] == 2 && d.grid[2] == 10));
  CHECK(d.block[0] == 256);
  d = standardSoftmaxLaunch(s);
  CHECK((d.grid[0] == 65 && d.grid[1] == 5 && d.grid[2] == 2));
  d = standardPvLaunch(s);
  CHECK((d.grid[0] == 3 && d.grid[1] == 5 && d.grid[2] == 2));
}

TEST_CASE("parameter validation", "[templates]") {
  int dummy = 0;
  ReferenceAttentionParams r{};
  r.q = r.k = r.v = &dummy;
  r.o = &dummy;
  r.batch = 1;
  r.headsQ = 6;
  r.headsKV = 2;
  r.seqQ = r.seqKV = 8;
  r.headDim = 64;
  r.windowLeft = r.windowRight = -1;
  CHECK(validate(r, 64).empty());
  CHECK_THAT(validate(r, 128), Contains("ATTNC_HEAD_DIM"));
  r.headsKV = 4;
  CHECK_THAT(validate(r, 64), Contains("multiple"));
  r.headsKV = 2;
  r.o = nullptr;
  CHECK_THAT(validate(r, 64), Contains("non-null"));

  StandardAttentionParams s{};
  s.q = s.k = s.v = &dummy;
  s.o = &dummy;
  s.batch = s.headsQ = s.headsKV = 1;
  s.seqQ = s.seqKV = 4;
  s.headDim = 32;
  s.windowLeft = s.windowRight = -1;
  CHECK_THAT(validate(s, 32), Contains("s and p"));
  s.s = s.p = &dummy;
  CHECK(validate(s, 32).empty());
  s.batch = 300;
  s.headsQ = 300;
  s.headsKV = 300;
  CHECK_THAT(validate(s, 32), Contains("batch * headsQ"));
}

TEST_CASE("standard attention HBM traffic", "[templates]") {
  // B=1, Hq=2, Hkv=1, Sq=3, Skv=5, D=4, bf16 inputs, fp32 scores.
  AttentionShape shape{1, 2, 1, 3, 5, 4};
  StandardAttentionTraffic t = standardAttentionTraffic(shape, 2, 4);
  const uint64_t q = 2 * 2 * 3 * 4, k = 2 * 1 * 5 * 4, v = k, o = q;
  const uint64_t sp = 4 * 2 * 3 * 5;
  CHECK(t.scores == q + k + sp); // Q, K read; S written
  CHECK(t.softmax == 2 * sp);    // S read; P written
  CHECK(t.pv == sp + v + o);     // P read, V read, O written
  CHECK(t.total == t.scores + t.softmax + t.pv);
  CHECK(t.fused == q + k + v + o);
  StandardAttentionTraffic withLse =
      standardAttentionTraffic(shape, 2, 4, true);
  CHECK(withLse.softmax == 2 * sp + 4 * 2 * 3);
  CHECK(withLse.fused == q + k + v + o + 4 * 2 * 3);
}
