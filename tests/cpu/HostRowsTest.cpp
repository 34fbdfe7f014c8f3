//===- HostRowsTest.cpp - the fused row kernels, run on the CPU -----------===//
//
// attn row ops -> attnc-fuse-elementwise -> host pipeline -> JIT, checked
// against float64 on fresh random inputs: silu_mul, gelu_mul, add_rmsnorm
// (also in place) from the named-op builder, and a generic chain from
// .mlir text (slice, map, reduce) — the same tile IR the GPU mapping reads.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/BuildElementwiseIR.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Target/Host/HostJIT.h"
#include "tests/common/AttentionCheck.h"
#include "tests/common/RowReference.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>

using namespace attnc;

namespace {

uint64_t seed() {
  if (const char *s = std::getenv("ATTNC_TEST_SEED"))
    return std::strtoull(s, nullptr, 10);
  return std::chrono::steady_clock::now().time_since_epoch().count();
}

/// Fuses and JIT-compiles `module` (attn level); the kernel is `entry`.
std::unique_ptr<HostKernel>
compileRows(mlir::MLIRContext &ctx, mlir::OwningOpRef<mlir::ModuleOp> module,
            const std::string &entry) {
  REQUIRE(module);
  mlir::PassManager pm(&ctx);
  buildRowTilePipeline(pm, RowOptions{});
  REQUIRE(mlir::succeeded(pm.run(*module)));
  auto kernel = HostKernel::compile(*module, entry);
  if (!kernel) {
    FAIL(llvm::toString(kernel.takeError()));
  }
  return std::move(*kernel);
}

struct Ctx {
  mlir::DialectRegistry registry;
  std::unique_ptr<mlir::MLIRContext> ctx;
  Ctx() {
    registerAllDialects(registry);
    ctx = std::make_unique<mlir::MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
  }
};

std::vector<uint16_t> randomHalf(std::mt19937_64 &rng, size_t n, bool bf16,
                                 float scale) {
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<uint16_t> v(n);
  for (auto &x : v)
    x = test::toHalfBits(bf16, normal(rng) * scale);
  return v;
}

} // namespace

TEST_CASE("silu_mul and gelu_mul on the host match float64", "[cpu][rows]") {
  std::mt19937_64 rng(seed());
  struct Case {
    const char *op, *dtype;
    int64_t d, rows, pad;
  };
  for (Case c : {Case{"silu_mul", "bf16", 256, 37, 0},
                 Case{"silu_mul", "fp16", 88, 5, 8},
                 Case{"gelu_mul", "bf16", 128, 9, 16}}) {
    INFO(c.op << " " << c.dtype << " d=" << c.d << " rows=" << c.rows);
    Ctx ctx;
    ElementwiseConfig cfg;
    cfg.op = c.op;
    cfg.dtype = c.dtype;
    cfg.hidden = c.d;
    auto kernel =
        compileRows(*ctx.ctx, buildElementwiseModule(*ctx.ctx, cfg), c.op);
    const bool bf16 = std::string(c.dtype) == "bf16";
    const int64_t xs = 2 * c.d + c.pad, os = c.d + c.pad;
    std::vector<uint16_t> x = randomHalf(rng, c.rows * xs, bf16, 2.f);
    std::vector<uint16_t> out(c.rows * os, 0xFFFF); // NaN poison
    std::vector<uint64_t> w;
    HostKernel::pointerWords(w, x.data());
    HostKernel::pointerWords(w, out.data());
    w.insert(w.end(), {uint64_t(c.rows), uint64_t(xs), uint64_t(os)});
    kernel->runWords(w);
    auto val = [&](uint16_t v) { return double(test::fromHalfBits(bf16, v)); };
    std::vector<double> ref;
    test::referenceGated(
        std::string(c.op) == "gelu_mul", c.rows, c.d,
        [&](int64_t i) { return val(x[i]); }, xs, ref);
    test::RowComparison r = test::compareRows(
        [&](int64_t i) { return val(out[(i / c.d) * os + i % c.d]); }, ref);
    CHECK(r.nonFinite == 0);
    CHECK(r.relL2 < 6e-3);
    CHECK(r.relL2 > 0); // rounded to 16 bits: exactly zero would be suspect
  }
}

TEST_CASE("add_rmsnorm on the host matches float64, also in place",
          "[cpu][rows]") {
  std::mt19937_64 rng(seed());
  for (bool inPlace : {false, true}) {
    INFO("in place " << inPlace);
    Ctx ctx;
    ElementwiseConfig cfg;
    cfg.op = "add_rmsnorm";
    cfg.hidden = 200;
    cfg.eps = 1e-5;
    auto kernel = compileRows(*ctx.ctx, buildElementwiseModule(*ctx.ctx, cfg),
                              "add_rmsnorm");
    const int64_t d = 200, rows = 13;
    std::vector<uint16_t> x = randomHalf(rng, rows * d, true, 1.f);
    std::vector<uint16_t> res = randomHalf(rng, rows * d, true, 3.f);
    std::vector<uint16_t> wt = randomHalf(rng, d, true, 1.f);
    const std::vector<uint16_t> x0 = x, res0 = res;
    std::vector<uint16_t> y(rows * d, 0xFFFF), h(rows * d, 0xFFFF);
    uint16_t *yp = inPlace ? x.data() : y.data();
    uint16_t *hp = inPlace ? res.data() : h.data();
    std::vector<uint64_t> w;
    for (const void *p :
         {(const void *)x.data(), (const void *)res.data(),
          (const void *)wt.data(), (const void *)yp, (const void *)hp})
      HostKernel::pointerWords(w, p);
    w.insert(w.end(), {uint64_t(rows), uint64_t(d), uint64_t(d), uint64_t(d),
                       uint64_t(d)});
    kernel->runWords(w);
    auto val = [&](uint16_t v) { return double(test::fromHalfBits(true, v)); };
    std::vector<double> refY, refH;
    test::referenceAddRMSNorm(
        rows, d, [&](int64_t i) { return val(x0[i]); },
        [&](int64_t i) { return val(res0[i]); },
        [&](int64_t j) { return val(wt[j]); }, 1e-5,
        [&](double v) { return val(test::toHalfBits(true, float(v))); }, refY,
        refH);
    auto ry = test::compareRows([&](int64_t i) { return val(yp[i]); }, refY);
    auto rh = test::compareRows([&](int64_t i) { return val(hp[i]); }, refH);
    CHECK(ry.nonFinite == 0);
    CHECK(rh.nonFinite == 0);
    CHECK(ry.relL2 < 6e-3);
    CHECK(rh.relL2 < 6e-3);
  }
}

TEST_CASE("a generic chain from .mlir (softmax of a slice times a weight)",
          "[cpu][rows]") {
  // y = exp(x[:, 64:] - rowmax) / rowsum(...) * w, in f32 output: three maps,
  // two reductions and a slice fused into one kernel.
  const char *ir = R"mlir(
func.func @chain(%x: tensor<?x128xf32>, %w: tensor<64xf32>) -> tensor<?x64xf32> {
  %hi = attn.slice %x {offset = 64 : i64, size = 64 : i64} : tensor<?x128xf32> -> tensor<?x64xf32>
  %m = attn.reduce max %hi : tensor<?x64xf32> -> tensor<?x1xf32>
  %e = attn.map %hi, %m : tensor<?x64xf32>, tensor<?x1xf32> -> tensor<?x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %v = math.exp %d : f32
    attn.yield %v : f32
  }
  %s = attn.reduce sum %e : tensor<?x64xf32> -> tensor<?x1xf32>
  %y = attn.map %e, %s, %w : tensor<?x64xf32>, tensor<?x1xf32>, tensor<64xf32> -> tensor<?x64xf32> {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %q = arith.divf %a, %b : f32
    %r = arith.mulf %q, %c : f32
    attn.yield %r : f32
  }
  return %y : tensor<?x64xf32>
}
)mlir";
  Ctx ctx;
  auto kernel = compileRows(
      *ctx.ctx, mlir::parseSourceString<mlir::ModuleOp>(ir, ctx.ctx.get()),
      "chain");
  std::mt19937_64 rng(seed());
  std::normal_distribution<float> normal(0.f, 3.f);
  const int64_t rows = 11;
  std::vector<float> x(rows * 128), wt(64), y(rows * 64, NAN);
  for (auto &v : x)
    v = normal(rng);
  for (auto &v : wt)
    v = normal(rng);
  std::vector<uint64_t> w;
  for (const void *p : {(const void *)x.data(), (const void *)wt.data(),
                        (const void *)y.data()})
    HostKernel::pointerWords(w, p);
  w.insert(w.end(), {uint64_t(rows), uint64_t(128), uint64_t(64)});
  kernel->runWords(w);
  std::vector<double> ref(rows * 64);
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < 64; ++j)
      m = std::max(m, double(x[r * 128 + 64 + j]));
    for (int j = 0; j < 64; ++j)
      s += std::exp(double(x[r * 128 + 64 + j]) - m);
    for (int j = 0; j < 64; ++j)
      ref[r * 64 + j] = std::exp(double(x[r * 128 + 64 + j]) - m) / s * wt[j];
  }
  auto c = test::compareRows([&](int64_t i) { return double(y[i]); }, ref);
  CHECK(c.nonFinite == 0);
  CHECK(c.relL2 < 1e-5);
}

TEST_CASE("rope on the host matches float64, in place (NeoX and GPT-J, "
          "partial rotary, i32/i64 positions)",
          "[cpu][rows][rope]") {
  std::mt19937_64 rng(seed());
  struct Case {
    bool neox;
    int64_t heads, kvHeads, hs, rot, tokens, pad, posBits;
    const char *dtype;
  };
  for (Case c : {Case{true, 4, 2, 64, 64, 7, 0, 64, "bf16"},
                 Case{false, 4, 2, 64, 64, 5, 8, 64, "bf16"},
                 Case{true, 3, 1, 128, 32, 9, 0, 32, "fp16"},
                 Case{false, 2, 2, 96, 48, 6, 16, 32, "bf16"}}) {
    INFO((c.neox ? "neox" : "gptj")
         << " heads " << c.heads << "/" << c.kvHeads << " hs " << c.hs
         << " rot " << c.rot << " tokens " << c.tokens << " pos i" << c.posBits
         << " " << c.dtype);
    Ctx ctx;
    ElementwiseConfig cfg;
    cfg.op = "rope";
    cfg.dtype = c.dtype;
    cfg.heads = c.heads;
    cfg.kvHeads = c.kvHeads;
    cfg.headSize = c.hs;
    cfg.rotaryDim = c.rot;
    cfg.isNeox = c.neox;
    cfg.positionBits = c.posBits;
    auto kernel =
        compileRows(*ctx.ctx, buildElementwiseModule(*ctx.ctx, cfg), "rope");
    const bool bf16 = std::string(c.dtype) == "bf16";
    const int64_t qw = c.heads * c.hs, kw = c.kvHeads * c.hs;
    const int64_t qs = qw + c.pad, ks = kw + c.pad, maxPos = 50;
    std::vector<uint16_t> q = randomHalf(rng, c.tokens * qs, bf16, 1.f);
    std::vector<uint16_t> k = randomHalf(rng, c.tokens * ks, bf16, 1.f);
    // A real cos/sin table: angle p * 10000^(-2i/rot).
    std::vector<uint16_t> cache(maxPos * c.rot);
    for (int64_t p = 0; p < maxPos; ++p)
      for (int64_t i = 0; i < c.rot / 2; ++i) {
        double a = p * std::pow(10000.0, -2.0 * i / c.rot);
        cache[p * c.rot + i] = test::toHalfBits(bf16, float(std::cos(a)));
        cache[p * c.rot + c.rot / 2 + i] =
            test::toHalfBits(bf16, float(std::sin(a)));
      }
    std::uniform_int_distribution<int64_t> pick(0, maxPos - 1);
    std::vector<int64_t> pos(c.tokens);
    std::vector<int32_t> pos32(c.tokens);
    for (int64_t t = 0; t < c.tokens; ++t)
      pos32[t] = int32_t(pos[t] = pick(rng));
    const std::vector<uint16_t> q0 = q, k0 = k;
    std::vector<uint64_t> w;
    HostKernel::pointerWords(w, c.posBits == 64 ? (const void *)pos.data()
                                                : (const void *)pos32.data());
    for (const void *p : {(const void *)q.data(), (const void *)k.data(),
                          (const void *)cache.data()})
      HostKernel::pointerWords(w, p);
    w.insert(w.end(),
             {uint64_t(c.tokens), uint64_t(qs), uint64_t(ks), uint64_t(c.rot)});
    kernel->runWords(w);
    auto val = [&](uint16_t v) { return double(test::fromHalfBits(bf16, v)); };
    auto cacheAt = [&](int64_t p, int64_t j) {
      return val(cache[p * c.rot + j]);
    };
    for (bool isQ : {true, false}) {
      const int64_t width = isQ ? qw : kw, stride = isQ ? qs : ks;
      const std::vector<uint16_t> &in = isQ ? q0 : k0, &got = isQ ? q : k;
      std::vector<double> ref;
      test::referenceRope(
          c.neox, c.tokens, width, c.hs, c.rot, pos,
          [&](int64_t i) { return val(in[(i / width) * stride + i % width]); },
          cacheAt, ref);
      test::RowComparison r = test::compareRows(
          [&](int64_t i) { return val(got[(i / width) * stride + i % width]); },
          ref);
      CHECK(r.nonFinite == 0);
      CHECK(r.relL2 < 6e-3);
      // Pass-through columns and row padding are never written.
      int64_t changed = 0;
      for (int64_t t = 0; t < c.tokens; ++t)
        for (int64_t j = 0; j < stride; ++j)
          if ((j >= width || j % c.hs >= c.rot) &&
              got[t * stride + j] != in[t * stride + j])
            ++changed;
      CHECK(changed == 0);
    }
  }
}
