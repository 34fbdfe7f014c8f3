//===- RowLaunchTest.cpp - row-kernel specs, validation and packing -------===//
#include "attnc/runtime/RowLaunch.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace attnc;

namespace {

KernelSpec rmsSpec() {
  KernelSpec s;
  s.op = "add_rmsnorm";
  s.hidden = 4096;
  return s;
}

// Fake, 16-byte aligned addresses 1 MiB apart (never dereferenced).
const char *arena = reinterpret_cast<const char *>(uintptr_t(1) << 32);
const char *at(size_t mib) { return arena + (mib << 20); }

RowArgs rmsArgs(int64_t rows) {
  RowArgs a;
  a.rows = rows;
  a.count = 5;
  for (size_t i = 0; i < 5; ++i)
    a.tensors[i] = {at(i), rows, 4096, 4096};
  a.tensors[2] = {at(2), 1, 4096, 4096}; // weight
  return a;
}

} // namespace

TEST_CASE("row specs: validation, canonical form and JSON", "[rows]") {
  KernelSpec s = rmsSpec();
  CHECK(validateSpec(s).isOk());
  std::string canonical = s.canonical();
  CHECK(canonical.find("op=add_rmsnorm") != std::string::npos);
  CHECK(canonical.find(";hidden=4096;eps=1e-06") != std::string::npos);
  // The row knobs reach the key.
  KernelSpec other = s;
  other.hidden = 2048;
  CHECK(other.canonical() != canonical);
  other = s;
  other.eps = 1e-5;
  CHECK(other.canonical() != canonical);
  other = s;
  other.tuning.blockN = 64;
  CHECK(other.canonical() != canonical);
  // eps is not a knob of silu_mul.
  KernelSpec a = s, b = s;
  a.op = b.op = "silu_mul";
  b.eps = 1e-3;
  CHECK(a.canonical() == b.canonical());
  // Attention keys are unchanged by the row fields.
  KernelSpec att;
  att.heads = att.kvHeads = 8;
  att.headDim = 64;
  CHECK(att.canonical().find("hidden") == std::string::npos);

  s.hidden = 100;
  CHECK(validateSpec(s).message() ==
        "invalid kernel spec: hidden must be a positive multiple of 8 "
        "(16-byte rows) up to 65536, got 100");
  s = rmsSpec();
  s.eps = 0;
  CHECK(validateSpec(s).message() ==
        "invalid kernel spec: eps must be finite and > 0 (got 0)");
  s = rmsSpec();
  s.tuning.blockN = 48;
  CHECK_FALSE(validateSpec(s).isOk());

  auto parsed = parseSpecFile(
      R"({"specs": [{"op": "silu_mul", "dtype": "bf16", "hidden": 14336}]})");
  REQUIRE(parsed.isOk());
  CHECK((*parsed)[0].hidden == 14336);
  CHECK((*parsed)[0].op == "silu_mul");
  auto back = parseSpecFile(writeSpecFile(*parsed));
  REQUIRE(back.isOk());
  CHECK((*back)[0] == (*parsed)[0]);
  auto missing =
      parseSpecFile(R"({"specs": [{"op": "silu_mul", "dtype": "bf16"}]})");
  CHECK_FALSE(missing.isOk());
}

TEST_CASE("row arguments: each error names the tensor", "[rows]") {
  KernelSpec s = rmsSpec();
  CHECK(validateRowArgs(s, rmsArgs(7)).isOk());
  CHECK(validateRowArgs(s, rmsArgs(0)).isOk());

  RowArgs a = rmsArgs(7);
  a.tensors[1].data = nullptr;
  CHECK(validateRowArgs(s, a).message() ==
        "invalid add_rmsnorm arguments: tensor 'residual' is a null pointer");
  a = rmsArgs(7);
  a.tensors[3].data = at(3) + 2;
  CHECK(validateRowArgs(s, a).message().find("tensor 'out' at ") !=
        std::string::npos);
  CHECK(validateRowArgs(s, a).message().find("is not 16-byte aligned") !=
        std::string::npos);
  a = rmsArgs(7);
  a.tensors[2].cols = 4095;
  CHECK(validateRowArgs(s, a).message() ==
        "invalid add_rmsnorm arguments: tensor 'weight' has 4095 columns, "
        "expected 4096");
  a = rmsArgs(7);
  a.tensors[4].rows = 6;
  CHECK(validateRowArgs(s, a).message() ==
        "invalid add_rmsnorm arguments: tensor 'residual_out' has 6 rows, "
        "expected 7");
  a = rmsArgs(7);
  a.tensors[0].stride = 4100;
  CHECK(validateRowArgs(s, a).message() ==
        "invalid add_rmsnorm arguments: tensor 'x' has row stride 4100 "
        "elements, not a multiple of 16 bytes");
  a = rmsArgs(7);
  a.tensors[0].stride = 4088;
  CHECK(validateRowArgs(s, a).message().find("less than its 4096 columns") !=
        std::string::npos);
  a = rmsArgs(7);
  a.count = 2;
  CHECK(validateRowArgs(s, a).message() ==
        "invalid add_rmsnorm arguments: expected 5 tensors, got 2");
}

TEST_CASE("row arguments: overflowing offsets and aliasing outputs are "
          "rejected",
          "[rows]") {
  KernelSpec s = rmsSpec();
  // In place: out over x, residual_out over residual (vLLM's form).
  RowArgs a = rmsArgs(7);
  a.tensors[3] = a.tensors[0];
  a.tensors[4] = a.tensors[1];
  CHECK(validateRowArgs(s, a).isOk());
  // Rows 2^31 x stride 2^40 (once launched).
  a = rmsArgs(int64_t(1) << 31);
  a.tensors[0].stride = int64_t(1) << 40;
  CHECK_THAT(validateRowArgs(s, a).message(),
             Catch::Contains("tensor 'x' at ") &&
                 Catch::Contains("reach past 2^63 bytes"));
  // A stride whose bytes overflow (signed overflow before the check, found
  // by the c-abi fuzz target under UBSan).
  a = rmsArgs(7);
  a.tensors[0].stride = int64_t(4970291812980507112);
  CHECK(validateRowArgs(s, a).message() ==
        "invalid add_rmsnorm arguments: tensor 'x' has row stride "
        "4970291812980507112 elements, past 2^63 bytes");
  a = rmsArgs(7);
  a.tensors[1].data = reinterpret_cast<const void *>(~uintptr_t(0) - 4095);
  CHECK_THAT(validateRowArgs(s, a).message(),
             Catch::Contains("tensor 'residual' at ") &&
                 Catch::Contains("end of the address space"));
  // An output over another input, over part of one, over the weight, over
  // the other output.
  a = rmsArgs(7);
  a.tensors[3] = {at(0), 7, 4096, 8192};
  CHECK(validateRowArgs(s, a).message() ==
        "invalid add_rmsnorm arguments: tensor 'out' overlaps tensor 'x': a "
        "written tensor may share memory only with an input of its shape it "
        "replaces in place");
  a = rmsArgs(7);
  a.tensors[3].data = at(0) + 4096 * 2 * 3;
  CHECK_THAT(validateRowArgs(s, a).message(),
             Catch::Contains("tensor 'out' overlaps tensor 'x'"));
  a = rmsArgs(7);
  a.tensors[4].data = at(2);
  CHECK_THAT(validateRowArgs(s, a).message(),
             Catch::Contains("tensor 'residual_out' overlaps tensor 'weight'"));
  a = rmsArgs(7);
  a.tensors[4] = a.tensors[3];
  CHECK_THAT(validateRowArgs(s, a).message(),
             Catch::Contains("tensor 'out' overlaps tensor 'residual_out'"));
  // silu_mul's out over its x [rows, 2d]: not the same shape.
  KernelSpec silu = s;
  silu.op = "silu_mul";
  RowArgs m;
  m.rows = 5;
  m.count = 2;
  m.tensors[0] = {at(0), 5, 8192, 8192};
  m.tensors[1] = {at(0), 5, 4096, 8192};
  CHECK_THAT(validateRowArgs(silu, m).message(),
             Catch::Contains("tensor 'out' overlaps tensor 'x'"));
  m.tensors[1] = {at(1), 5, 4096, 4096};
  CHECK(validateRowArgs(silu, m).isOk());
}

TEST_CASE("rows of one stride interleave without overlapping", "[rows]") {
  KernelSpec s;
  s.op = "rope";
  s.heads = 2;
  s.kvHeads = 1;
  s.headDim = 64;
  // A fused qkv tensor [rows, (2 + 1 + 1) * 64]: q, then k, then v per row.
  RowArgs a;
  a.rows = 9;
  a.count = 4;
  a.tensors[0] = {at(0), 9, 1, 1};
  a.tensors[1] = {at(1), 9, 128, 256};
  a.tensors[2] = {at(1) + 128 * 2, 9, 64, 256};
  a.tensors[3] = {at(2), 100, 64, 64};
  CHECK(validateRowArgs(s, a).isOk());
  // k one column too far left: it takes q's last 8 elements of each row.
  RowArgs b = a;
  b.tensors[2].data = at(1) + 120 * 2;
  CHECK_THAT(validateRowArgs(s, b).message(),
             Catch::Contains("tensor 'query' overlaps tensor 'key'"));
  // k a whole row further on meets q's next row.
  b = a;
  b.tensors[2].data = at(1) + 256 * 2;
  CHECK_THAT(validateRowArgs(s, b).message(),
             Catch::Contains("tensor 'query' overlaps tensor 'key'"));
  // k after q's last row: apart.
  b = a;
  b.tensors[2].data = at(1) + 256 * 2 * 9;
  CHECK(validateRowArgs(s, b).isOk());
  // Positions inside the rotated query.
  b = a;
  b.tensors[0].data = at(1) + 16;
  CHECK_THAT(validateRowArgs(s, b).message(),
             Catch::Contains("tensor 'query' overlaps tensor 'positions'"));
}

TEST_CASE("row parameters are packed by name", "[rows]") {
  KernelSpec s = rmsSpec();
  std::vector<KernelParam> params = {{"x", ParamKind::Ptr},
                                     {"residual", ParamKind::Ptr},
                                     {"weight", ParamKind::Ptr},
                                     {"out", ParamKind::Ptr},
                                     {"residual_out", ParamKind::Ptr},
                                     {"rows", ParamKind::I64},
                                     {"x_stride", ParamKind::I64},
                                     {"residual_stride", ParamKind::I64},
                                     {"out_stride", ParamKind::I32},
                                     {"residual_out_stride", ParamKind::I64}};
  auto plan = planRowParams(s, params);
  REQUIRE(plan.isOk());
  RowArgs a = rmsArgs(9);
  a.tensors[3].stride = 8192;
  PackedParams packed;
  REQUIRE(packRowParams(*plan, a, packed).isOk());
  CHECK(packed.count == params.size());
  const void *p = nullptr;
  std::memcpy(&p, packed.pointers[2], sizeof(p));
  CHECK(p == a.tensors[2].data);
  int64_t rows = 0;
  std::memcpy(&rows, packed.pointers[5], sizeof(rows));
  CHECK(rows == 9);
  int32_t outStride = 0;
  std::memcpy(&outStride, packed.pointers[8], sizeof(outStride));
  CHECK(outStride == 8192);

  params.push_back({"weight_stride", ParamKind::I64}); // weights have none
  CHECK(planRowParams(s, params).status().message() ==
        "kernel parameter 'weight_stride' is unknown to op add_rmsnorm");

  KernelMetadata meta;
  meta.blockM = 4;
  meta.block = {128, 1, 1};
  auto g = rowGeometry(meta, rmsArgs(9));
  REQUIRE(g.isOk());
  CHECK(g->grid[0] == 3);
  CHECK(g->block[0] == 128);
}

TEST_CASE("SiluAndMul moves 0.70 GB fused against 1.17 GB unfused", "[rows]") {
  KernelSpec s;
  s.op = "silu_mul";
  s.hidden = 14336;
  RowTraffic t = rowTraffic(s, 8192);
  CHECK(t.fused == 704643072);    // 0.70 GB
  CHECK(t.unfused == 1174405120); // 1.17 GB
}

TEST_CASE("rope specs and arguments: knobs in the key, per-row positions, a "
          "cache with its own rows",
          "[rows][rope]") {
  KernelSpec s;
  s.op = "rope";
  s.heads = 32;
  s.kvHeads = 8;
  s.headDim = 128;
  REQUIRE(validateSpec(s).isOk());
  CHECK(effectiveRotaryDim(s) == 128);
  std::string key = s.canonical();
  CHECK(key.find(";rotary_dim=128;is_neox=1;position_bits=64") !=
        std::string::npos);
  for (auto change : {+[](KernelSpec &k) { k.rotaryDim = 64; },
                      +[](KernelSpec &k) { k.isNeox = false; },
                      +[](KernelSpec &k) { k.positionBits = 32; },
                      +[](KernelSpec &k) { k.tuning.minBlocksPerSm = 4; }}) {
    KernelSpec o = s;
    change(o);
    CHECK(o.canonical() != key);
  }
  KernelSpec bad = s;
  bad.rotaryDim = 40; // NeoX halves must be whole 16-byte vectors
  CHECK(validateSpec(bad).message().find("multiple of 16") !=
        std::string::npos);
  bad = s;
  bad.positionBits = 16;
  CHECK(!validateSpec(bad).isOk());

  // JSON round trip; "hidden" is not asked of rope.
  auto parsed = parseSpecFile(
      R"({"specs": [{"op": "rope", "dtype": "bf16", "heads": 32, "kv_heads": 8,
          "head_dim": 128, "rotary_dim": 64, "is_neox": false,
          "position_bits": 32}]})");
  REQUIRE(parsed.isOk());
  CHECK((*parsed)[0].rotaryDim == 64);
  CHECK(!(*parsed)[0].isNeox);
  CHECK((*parsed)[0].positionBits == 32);
  auto again = parseSpecFile(writeSpecFile(*parsed));
  REQUIRE(again.isOk());
  CHECK((*again)[0] == (*parsed)[0]);

  RowArgs a;
  a.rows = 10;
  a.count = 4;
  a.tensors[0] = {at(0) + 8, 10, 1, 1};          // i64 positions, 8-aligned
  a.tensors[1] = {at(1), 10, 4096, 6144};        // q view of a qkv tensor
  a.tensors[2] = {at(1) + 8192, 10, 1024, 6144}; // k, after q in each row
  a.tensors[3] = {at(2), 4096, 128, 128};        // cache: its own rows
  CHECK(validateRowArgs(s, a).isOk());
  RowArgs b = a;
  b.tensors[0].data = at(0) + 4; // not aligned to 8 bytes
  CHECK(validateRowArgs(s, b).message().find("not aligned to its 8-byte") !=
        std::string::npos);
  b = a;
  b.tensors[0].rows = 9;
  CHECK(validateRowArgs(s, b).message().find("expected one per row (10)") !=
        std::string::npos);
  b = a;
  b.tensors[2].cols = 2048;
  CHECK(validateRowArgs(s, b).message().find("tensor 'key' has 2048 columns, "
                                             "expected 1024") !=
        std::string::npos);
  // Kernel parameters: positions has no stride.
  std::vector<KernelParam> params;
  for (const char *n : {"positions", "query", "key", "cos_sin_cache"})
    params.push_back({n, ParamKind::Ptr});
  for (const char *n :
       {"rows", "query_stride", "key_stride", "cos_sin_cache_stride"})
    params.push_back({n, ParamKind::I64});
  auto plan = planRowParams(s, params);
  REQUIRE(plan.isOk());
  params.push_back({"positions_stride", ParamKind::I64});
  CHECK(!planRowParams(s, params).isOk());
  // Traffic: q and k rotated columns both ways, a cache row and a position
  // per token.
  RowTraffic t = rowTraffic(s, 100);
  CHECK(t.fused == 2 * 100 * 40 * 128 * 2 + 100 * 128 * 2 + 100 * 8);
}
