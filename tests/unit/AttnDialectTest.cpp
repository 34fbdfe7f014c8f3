//===- AttnDialectTest.cpp - building attn IR from a configuration --------===//
#include "compiler/Frontend/BuildAttnIR.h"
#include "compiler/Registration.h"
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace mlir;
using namespace attnc;

namespace {
/// A context that records diagnostics instead of printing them.
struct Recorder {
  MLIRContext ctx;
  std::string messages;
  ScopedDiagnosticHandler handler{&ctx, [this](Diagnostic &d) {
                                    messages += d.str() + "\n";
                                    return success();
                                  }};
  Recorder() {
    DialectRegistry registry;
    registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }
};

attn::AttentionOp onlyAttention(ModuleOp m) {
  attn::AttentionOp found;
  m.walk([&](attn::AttentionOp op) { found = op; });
  return found;
}
} // namespace

TEST_CASE("the default config builds a verified Llama-3.1-8B attention",
          "[attn]") {
  Recorder r;
  AttentionConfig cfg;
  cfg.causal = true;
  auto m = buildAttentionModule(r.ctx, cfg);
  REQUIRE(m);
  auto op = onlyAttention(*m);
  REQUIRE(op);
  CHECK(op.getNumHeads() == 32);
  CHECK(op.getNumKVHeads() == 8);
  CHECK(op.getHeadDim() == 128);
  CHECK(op.getCausal());
  CHECK(op.getLse());
  CHECK(std::abs(op.getEffectiveScale() - 1.0f / std::sqrt(128.0f)) < 1e-7f);
  CHECK(r.messages.empty());
}

TEST_CASE("printed attn IR parses back to the same text", "[attn]") {
  Recorder r;
  AttentionConfig cfg;
  cfg.windowLeft = 256;
  cfg.windowRight = 0;
  cfg.softcap = 30.0f;
  cfg.scale = 0.125f;
  auto m = buildAttentionModule(r.ctx, cfg);
  REQUIRE(m);
  std::string first;
  llvm::raw_string_ostream(first) << *m;
  auto reparsed = parseSourceString<ModuleOp>(first, &r.ctx);
  REQUIRE(reparsed);
  std::string second;
  llvm::raw_string_ostream(second) << *reparsed;
  CHECK(first == second);
  CHECK(first.find("#attn.window<256, 0>") != std::string::npos);
}

TEST_CASE("bad configurations are rejected with a diagnostic", "[attn]") {
  Recorder r;
  AttentionConfig cfg;
  SECTION("unsupported head dim") {
    cfg.headDim = 100;
    CHECK_FALSE(buildAttentionModule(r.ctx, cfg));
    CHECK(r.messages.find("head dim 100 is not supported") !=
          std::string::npos);
  }
  SECTION("heads not a multiple of kv heads") {
    cfg.kvHeads = 6;
    CHECK_FALSE(buildAttentionModule(r.ctx, cfg));
    CHECK(r.messages.find("must be a multiple of key/value heads (6)") !=
          std::string::npos);
  }
  SECTION("causal with a right window") {
    cfg.causal = true;
    cfg.windowLeft = 128;
    cfg.windowRight = 8;
    CHECK_FALSE(buildAttentionModule(r.ctx, cfg));
    CHECK(r.messages.find("use window right = 0") != std::string::npos);
  }
  SECTION("a window unbounded on both sides") {
    cfg.windowLeft = -1;
    cfg.windowRight = -1;
    CHECK_FALSE(buildAttentionModule(r.ctx, cfg));
    CHECK(r.messages.find("masks nothing") != std::string::npos);
  }
  SECTION("an unknown dtype") {
    cfg.dtype = "fp8";
    CHECK_FALSE(buildAttentionModule(r.ctx, cfg));
    CHECK(r.messages.find("expected query element type bf16 or f16") !=
          std::string::npos);
  }
}
