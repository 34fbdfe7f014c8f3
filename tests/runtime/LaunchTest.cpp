//===- LaunchTest.cpp - Launch validation, packing and geometry -----------===//

#include "TestSupport.h"

#include "attnc/runtime/Driver.h"
#include "attnc/runtime/Launch.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

using namespace attnc;
using namespace attnc::test;

namespace {

const std::string kPrefix = "invalid attention arguments: ";

std::string validationError(const KernelSpec &spec,
                            std::function<void(AttentionArgs &)> mutate) {
  AttentionArgs args = contiguousArgs(spec, 2, 100, 300);
  mutate(args);
  Status status = validateAttentionArgs(spec, args);
  REQUIRE_FALSE(status.isOk());
  CHECK(status.code() == ErrorCode::InvalidArgument);
  REQUIRE(status.message().rfind(kPrefix, 0) == 0);
  return status.message().substr(kPrefix.size());
}

const void *ptr(uintptr_t address) {
  return reinterpret_cast<const void *>(address);
}

} // namespace

TEST_CASE("valid arguments pass validation", "[launch]") {
  KernelSpec spec = sampleSpec();
  CHECK(validateAttentionArgs(spec, contiguousArgs(spec, 2, 100, 300)).isOk());
  spec.hasLse = true;
  CHECK(validateAttentionArgs(spec, contiguousArgs(spec, 1, 1, 1)).isOk());

  // A [B, S, H, D] tensor seen through strides (the usual PyTorch layout).
  AttentionArgs args = contiguousArgs(spec, 2, 100, 300);
  args.q.stride = {100 * 8 * 64, 64, 8 * 64, 1};
  CHECK(validateAttentionArgs(spec, args).isOk());
  // Broadcast over batch with a zero stride.
  args.k.stride[0] = 0;
  CHECK(validateAttentionArgs(spec, args).isOk());
  // LSE strides need no 16-byte alignment (f32 rows of odd length).
  args.lse.shape = {2, 8, 100, 1};
  args.lse.stride = {8 * 101, 101, 1, 1};
  CHECK(validateAttentionArgs(spec, args).isOk());
}

TEST_CASE("each invalid argument gets a precise message", "[launch]") {
  KernelSpec spec = sampleSpec();
  CHECK(validationError(spec, [](AttentionArgs &a) { a.k.data = nullptr; }) ==
        "k: data pointer is null");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.q.shape[0] = 0; }) ==
        "batch must be >= 1 (q.shape[0] is 0)");
  CHECK(validationError(spec, [](AttentionArgs &a) {
          a.q.shape[2] = 0;
          a.o.shape[2] = 0;
        }) == "seq_q must be >= 1 (q.shape[2] is 0)");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.k.shape[2] = 0; }) ==
        "seq_kv must be >= 1 (k.shape[2] is 0)");
  CHECK(validationError(spec,
                        [](AttentionArgs &a) {
                          a.k.shape[2] = a.v.shape[2] = (int64_t(1) << 30) + 1;
                        }) ==
        "seq_q 100 / seq_kv 1073741825: sequences longer than 2^30 are "
        "not supported");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.q.shape[1] = 4; }) ==
        "q.shape[1] (heads) is 4 but the kernel's spec heads is 8");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.q.shape[3] = 128; }) ==
        "q.shape[3] (head dim) is 128 but the kernel's spec head_dim is 64");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.k.shape[0] = 3; }) ==
        "k.shape[0] (batch) is 3 but q's batch is 2");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.v.shape[1] = 8; }) ==
        "v.shape[1] (heads) is 8 but the kernel's spec kv_heads is 2");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.v.shape[2] = 299; }) ==
        "v.shape[2] (seq) is 299 but k's seq_kv is 300");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.o.shape[2] = 99; }) ==
        "o.shape[2] (seq) is 99 but q's seq_q is 100");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.q.stride[3] = 2; }) ==
        "q.stride[3] (head dim) must be 1, got 2");
  CHECK(validationError(spec, [](AttentionArgs &a) {
          a.v.data = ptr(0x300008);
        }) == "v: data pointer 0x300008 is not 16-byte aligned");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.o.stride[2] = 68; }) ==
        "o.stride[2] (seq) = 68 elements is not a multiple of 16 bytes");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.k.stride[1] = -64; }) ==
        "k.stride[1] is negative (-64)");
  CHECK(validationError(spec, [](AttentionArgs &a) {
          a.q.stride[1] = int64_t(1) << 60; // 7 heads * 2^60 * 2 bytes
        }) == "q: shape and strides address beyond 2^63 bytes");
  CHECK(validationError(spec,
                        [](AttentionArgs &a) { a.lse.data = ptr(0x500000); }) ==
        "lse: data pointer must be null because the kernel was built "
        "with has_lse=false");

  spec.hasLse = true;
  CHECK(validationError(spec, [](AttentionArgs &a) { a.lse.data = nullptr; }) ==
        "lse: data pointer is null but the kernel writes LSE (has_lse=true)");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.lse.shape[2] = 7; }) ==
        "lse.shape[2] (seq) is 7 but q's seq_q is 100");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.lse.shape[3] = 64; }) ==
        "lse is [B, H, S]: shape[3] and stride[3] must be 1 (got 64 and 1)");
  CHECK(validationError(spec, [](AttentionArgs &a) { a.lse.stride[2] = 2; }) ==
        "lse.stride[2] (seq) must be 1, got 2");
  CHECK(validationError(spec, [](AttentionArgs &a) {
          a.lse.data = ptr(0x500004);
        }) == "lse: data pointer 0x500004 is not 16-byte aligned");
}

TEST_CASE("outputs that alias inputs, overlap themselves or wrap are "
          "rejected",
          "[launch]") {
  KernelSpec spec = sampleSpec();
  CHECK_THAT(
      validationError(spec, [](AttentionArgs &a) { a.o.data = a.q.data; }),
      Catch::StartsWith("o [0x100000, 0x132000) overlaps q [0x100000, "
                        "0x132000): outputs may not alias inputs"));
  CHECK_THAT(
      validationError(spec, [](AttentionArgs &a) { a.o.data = ptr(0x210000); }),
      Catch::Contains("overlaps k"));
  CHECK_THAT(
      validationError(spec, [](AttentionArgs &a) { a.o.data = a.v.data; }),
      Catch::Contains("overlaps v"));
  CHECK(validationError(spec, [](AttentionArgs &a) { a.o.stride[1] = 0; }) ==
        "o.stride[1] (heads) = 0 makes elements of the output share memory "
        "(strides must not overlap)");
  // Rows of 64 elements 32 apart.
  CHECK(validationError(spec, [](AttentionArgs &a) { a.o.stride[2] = 32; }) ==
        "o.stride[2] (seq) = 32 makes elements of the output share memory "
        "(strides must not overlap)");
  CHECK_THAT(
      validationError(
          spec, [](AttentionArgs &a) { a.q.data = ptr(~uintptr_t(0) - 4095); }),
      Catch::Contains("wraps past the end of the address space"));

  spec.hasLse = true;
  CHECK(validationError(spec, [](AttentionArgs &a) { a.lse.stride[1] = 0; }) ==
        "lse.stride[1] (heads) = 0 makes elements of the output share memory "
        "(strides must not overlap)");
  CHECK_THAT(
      validationError(spec,
                      [](AttentionArgs &a) { a.lse.data = ptr(0x400100); }),
      Catch::Contains("lse [0x400100, ") && Catch::Contains("overlaps o"));
  CHECK_THAT(
      validationError(spec, [](AttentionArgs &a) { a.lse.data = a.k.data; }),
      Catch::Contains("overlaps k"));
  // Outputs in one buffer, side by side, are fine.
  AttentionArgs args = contiguousArgs(spec, 2, 100, 300);
  args.lse.data = ptr(0x400000 + 2 * 8 * 100 * 64 * 2);
  CHECK(validateAttentionArgs(spec, args).isOk());
}

TEST_CASE("fp16 uses two-byte elements for alignment", "[launch]") {
  KernelSpec spec = sampleSpec();
  spec.dtype = "fp16";
  // 8 elements * 2 bytes = 16: aligned.
  AttentionArgs args = contiguousArgs(spec, 1, 4, 4);
  args.q.stride[2] = 72;
  CHECK(validateAttentionArgs(spec, args).isOk());
  args.q.stride[2] = 68;
  CHECK_FALSE(validateAttentionArgs(spec, args).isOk());
}

TEST_CASE("parameters are packed by name in metadata order", "[launch]") {
  KernelSpec spec = sampleSpec();
  spec.hasLse = true;
  AttentionArgs args = contiguousArgs(spec, 2, 100, 300);

  Result<std::vector<ParamSlot>> plan =
      planAttentionParams(attentionFwdV1Params());
  REQUIRE(plan.isOk());
  PackedParams packed;
  REQUIRE(packAttentionParams(*plan, spec, args, packed).isOk());
  REQUIRE(packed.count == 22);
  const uint64_t expected[22] = {0x100000,
                                 0x200000,
                                 0x300000,
                                 0x400000,
                                 0x500000, // q k v o lse
                                 2,
                                 100,
                                 300, // batch seq_q seq_kv
                                 8 * 100 * 64,
                                 100 * 64,
                                 64, // q strides
                                 2 * 300 * 64,
                                 300 * 64,
                                 64, // k strides
                                 2 * 300 * 64,
                                 300 * 64,
                                 64, // v strides
                                 8 * 100 * 64,
                                 100 * 64,
                                 64, // o strides
                                 8 * 100,
                                 100}; // lse strides
  for (size_t i = 0; i < 22; ++i) {
    INFO("parameter " << i);
    CHECK(packed.pointers[i] == &packed.storage[i]);
    CHECK(packed.storage[i] == expected[i]);
  }

  // Another list: reordered, narrower integers, f32 extras.
  std::vector<KernelParam> custom = {{"scale", ParamKind::F32},
                                     {"seq_kv", ParamKind::I32},
                                     {"o", ParamKind::Ptr},
                                     {"softcap", ParamKind::F32}};
  spec.softcap = 30.0;
  plan = planAttentionParams(custom);
  REQUIRE(plan.isOk());
  REQUIRE(packAttentionParams(*plan, spec, args, packed).isOk());
  REQUIRE(packed.count == 4);
  float scale, softcap;
  int32_t seqKv;
  std::memcpy(&scale, packed.pointers[0], 4);
  std::memcpy(&seqKv, packed.pointers[1], 4);
  std::memcpy(&softcap, packed.pointers[3], 4);
  CHECK(scale == 0.125f);
  CHECK(seqKv == 300);
  CHECK(packed.storage[2] == 0x400000);
  CHECK(softcap == 30.0f);

  // An i32 that does not fit is an error at launch, not a silent wrap.
  args.k.shape[2] = args.v.shape[2] = int64_t(1) << 33;
  Status overflow = packAttentionParams(*plan, spec, args, packed);
  CHECK(overflow.message() == "kernel parameter 'seq_kv' is i32 but its "
                              "value 8589934592 does not fit in 32 bits");
}

TEST_CASE("a kernel without LSE still gets its LSE slots", "[launch]") {
  KernelSpec spec = sampleSpec();
  AttentionArgs args = contiguousArgs(spec, 1, 16, 16);
  args.lse.stride = {123, 456, 1, 1}; // ignored: no LSE tensor
  Result<std::vector<ParamSlot>> plan =
      planAttentionParams(attentionFwdV1Params());
  PackedParams packed;
  REQUIRE(packAttentionParams(*plan, spec, args, packed).isOk());
  CHECK(packed.storage[4] == 0);
  CHECK(packed.storage[20] == 0);
  CHECK(packed.storage[21] == 0);
}

TEST_CASE("unknown or mistyped parameters are rejected at load", "[launch]") {
  Result<std::vector<ParamSlot>> unknown =
      planAttentionParams({{"q", ParamKind::Ptr}, {"alibi", ParamKind::Ptr}});
  REQUIRE_FALSE(unknown.isOk());
  CHECK(unknown.status().message() == "kernel parameter 'alibi' is not "
                                      "provided by the attention launch ABI");
  Result<std::vector<ParamSlot>> mistyped =
      planAttentionParams({{"batch", ParamKind::Ptr}});
  REQUIRE_FALSE(mistyped.isOk());
  CHECK(mistyped.status().message() ==
        "kernel parameter 'batch' has kind ptr; expected i64 or i32");
  std::vector<KernelParam> tooMany(kMaxKernelParams + 1, {"q", ParamKind::Ptr});
  CHECK_FALSE(planAttentionParams(tooMany).isOk());
}

TEST_CASE("grid rule attention_fwd_v1", "[launch]") {
  KernelSpec spec = sampleSpec();
  KernelMetadata meta;
  meta.gridRule = "attention_fwd_v1";
  meta.blockM = 64;
  meta.block = {128, 1, 1};
  meta.dynamicSmem = 99000;

  Result<LaunchGeometry> g =
      attentionGeometry(meta, contiguousArgs(spec, 3, 129, 10), 132);
  REQUIRE(g.isOk());
  CHECK(g->grid == std::array<uint32_t, 3>{3, 8, 3}); // ceil(129/64)
  CHECK(g->block == std::array<uint32_t, 3>{128, 1, 1});
  CHECK(g->dynamicSmem == 99000);
  CHECK(
      attentionGeometry(meta, contiguousArgs(spec, 1, 128, 1), 132)->grid[0] ==
      2);
  CHECK(attentionGeometry(meta, contiguousArgs(spec, 1, 1, 1), 132)->grid[0] ==
        1);
  // The SM count is the persistent rule's only.
  for (int sms : {0, 1, 2})
    CHECK(
        attentionGeometry(meta, contiguousArgs(spec, 3, 129, 10), sms)->grid ==
        std::array<uint32_t, 3>{3, 8, 3});

  Result<LaunchGeometry> tooManyBatches =
      attentionGeometry(meta, contiguousArgs(spec, 70000, 1, 1), 132);
  REQUIRE_FALSE(tooManyBatches.isOk());
  CHECK(tooManyBatches.status().message() ==
        "batch 70000 exceeds CUDA's grid z limit of 65535");

  meta.gridRule = "decode_v9";
  CHECK(attentionGeometry(meta, contiguousArgs(spec, 1, 1, 1), 132)
            .status()
            .message() == "unknown grid rule 'decode_v9'");
}

TEST_CASE("grid rule attention_fwd_persistent_v1", "[launch]") {
  KernelSpec spec = sampleSpec(); // 8 heads
  KernelMetadata meta;
  meta.gridRule = abi::kGridRuleAttentionFwdPersistent;
  meta.blockM = 128;
  meta.block = {384, 1, 1};
  meta.dynamicSmem = 197000;
  using Grid = std::array<uint32_t, 3>;
  auto grid = [&](int64_t batch, int64_t seqQ, int smCount) {
    Result<LaunchGeometry> g =
        attentionGeometry(meta, contiguousArgs(spec, batch, seqQ, 64), smCount);
    REQUIRE(g.isOk());
    CHECK(g->block == Grid{384, 1, 1}); // block and shared memory as tiles'
    CHECK(g->dynamicSmem == 197000);
    return g->grid;
  };
  // Fewer items than SMs: one block per item, (2 tiles x 8 heads x 1).
  CHECK(grid(1, 256, 132) == Grid{16, 1, 1});
  CHECK(grid(1, 129, 132) == Grid{16, 1, 1}); // ceil(129 / 128) tiles
  CHECK(grid(1, 1, 132) == Grid{8, 1, 1});
  // As many: one each; more: one block per SM, each looping.
  CHECK(grid(1, 256, 16) == Grid{16, 1, 1});
  CHECK(grid(4, 4096, 132) == Grid{132, 1, 1}); // 32 x 8 x 4 = 1024 items
  CHECK(grid(1, 256, 15) == Grid{15, 1, 1});
  CHECK(grid(1, 256, 1) == Grid{1, 1, 1});
  // An unknown SM count: one block per item (correct, tiles' block count).
  CHECK(grid(4, 4096, 0) == Grid{1024, 1, 1});
  CHECK(grid(4, 4096, -1) == Grid{1024, 1, 1});

  // CUDA's grid y/z limits do not apply: heads and batch are in the items.
  CHECK(grid(70000, 1, 132) == Grid{132, 1, 1});
  AttentionArgs manyHeads = contiguousArgs(spec, 1, 1, 1);
  manyHeads.q.shape[1] = 100000;
  CHECK(attentionGeometry(meta, manyHeads, 132)->grid == Grid{132, 1, 1});
  // The items must fit 31 bits (blockIdx.x's range), counted without
  // overflow.
  meta.blockM = 1;
  AttentionArgs edge = contiguousArgs(spec, 1, 1, 1);
  edge.q.shape = {1, 1, INT32_MAX, 64};
  CHECK(attentionGeometry(meta, edge, 0)->grid == Grid{INT32_MAX, 1, 1});
  CHECK(attentionGeometry(meta, edge, 132)->grid == Grid{132, 1, 1});
  edge.q.shape = {2, 1, INT32_MAX, 64};
  Result<LaunchGeometry> tooMany = attentionGeometry(meta, edge, 132);
  REQUIRE_FALSE(tooMany.isOk());
  CHECK(tooMany.status().code() == ErrorCode::InvalidArgument);
  CHECK(tooMany.status().message() ==
        "grid rule attention_fwd_persistent_v1: 2147483647 query tiles x 1 "
        "heads x 2 batch = more work items than 2^31-1");
  edge.q.shape = {INT64_C(1) << 40, INT64_C(1) << 40, INT64_C(1) << 40, 64};
  CHECK_FALSE(attentionGeometry(meta, edge, 132).isOk());

  meta.blockM = 0;
  CHECK(attentionGeometry(meta, contiguousArgs(spec, 1, 1, 1), 132)
            .status()
            .message() ==
        "grid rule attention_fwd_persistent_v1 needs block_m >= 1");
  CHECK(abi::isAttentionFwdGridRule(abi::kGridRuleAttentionFwdPersistent));
  CHECK(abi::isAttentionFwdGridRule("attention_fwd_v1"));
  CHECK_FALSE(abi::isAttentionFwdGridRule("decode_split_v4"));
}

namespace {
// What the runtime asked cuTensorMapEncodeTiled (a stand-in that records).
struct EncodeCall {
  CUtensorMapDataType type;
  cuuint32_t rank;
  void *address;
  cuuint64_t dims[4], strides[3];
  cuuint32_t box[4];
  CUtensorMapSwizzle swizzle;
  CUtensorMapFloatOOBfill oob;
  CUtensorMap *out;
};
std::vector<EncodeCall> encodeCalls;
CUresult recordEncode(CUtensorMap *map, CUtensorMapDataType type,
                      cuuint32_t rank, void *address, const cuuint64_t *dims,
                      const cuuint64_t *strides, const cuuint32_t *box,
                      const cuuint32_t *, CUtensorMapInterleave,
                      CUtensorMapSwizzle swizzle, CUtensorMapL2promotion,
                      CUtensorMapFloatOOBfill oob) {
  EncodeCall c{type, rank, address, {}, {}, {}, swizzle, oob, map};
  for (int i = 0; i < 4; ++i) {
    c.dims[i] = dims[i];
    c.box[i] = box[i];
    if (i < 3)
      c.strides[i] = strides[i];
  }
  encodeCalls.push_back(c);
  std::memset(map, 0x5a, sizeof(CUtensorMap));
  return CUDA_SUCCESS;
}
} // namespace

TEST_CASE("TMA kernels get tensor maps of Q, K and V by value", "[launch]") {
  KernelSpec spec = sampleSpec(); // bf16, 8 / 2 heads, D 64
  AttentionArgs args = contiguousArgs(spec, 3, 100, 300);
  std::vector<KernelParam> params = attentionFwdV1Params();
  params.push_back({"q_tmap", ParamKind::TensorMap, 128});
  params.push_back({"k_tmap", ParamKind::TensorMap, 176});
  params.push_back({"v_tmap", ParamKind::TensorMap, 176});
  Result<std::vector<ParamSlot>> plan = planAttentionParams(params);
  REQUIRE(plan.isOk());
  PackedParams packed;

  // No driver (or one without the entry point): a clear error.
  Status none = packAttentionParams(*plan, spec, args, packed, nullptr);
  CHECK(none.message().find("cuTensorMapEncodeTiled (CUDA 12 or newer)") !=
        std::string::npos);

  DriverApi driver;
  driver.cuTensorMapEncodeTiled = &recordEncode;
  encodeCalls.clear();
  REQUIRE(packAttentionParams(*plan, spec, args, packed, &driver).isOk());
  REQUIRE(encodeCalls.size() == 3);
  const uintptr_t bases[3] = {0x100000, 0x200000, 0x300000};
  const int64_t heads[3] = {8, 2, 2}, seqs[3] = {100, 300, 300};
  const cuuint32_t rows[3] = {128, 176, 176};
  for (int t = 0; t < 3; ++t) {
    INFO("tensor map " << t);
    const EncodeCall &c = encodeCalls[t];
    // By value: the parameter points at the map the driver wrote, 64-byte
    // aligned, in the packed storage (no allocation).
    CHECK(packed.pointers[22 + t] == static_cast<void *>(c.out));
    CHECK(reinterpret_cast<uintptr_t>(c.out) % 64 == 0);
    CHECK(c.type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    CHECK(c.rank == 4);
    CHECK(reinterpret_cast<uintptr_t>(c.address) == bases[t]);
    // (D, S, H, B), strides in bytes of S, H, B.
    CHECK(c.dims[0] == 64);
    CHECK(c.dims[1] == cuuint64_t(seqs[t]));
    CHECK(c.dims[2] == cuuint64_t(heads[t]));
    CHECK(c.dims[3] == 3);
    CHECK(c.strides[0] == 64 * 2);
    CHECK(c.strides[1] == cuuint64_t(seqs[t] * 64 * 2));
    CHECK(c.strides[2] == cuuint64_t(heads[t] * seqs[t] * 64 * 2));
    CHECK(c.box[0] == 64);
    CHECK(c.box[1] == rows[t]);
    CHECK(c.box[2] == 1);
    CHECK(c.box[3] == 1);
    CHECK(c.swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
    CHECK(c.oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE); // zeros past S
  }
  // The other parameters are packed as before.
  CHECK(packed.storage[0] == 0x100000);
  CHECK(packed.storage[7] == 300);

  // fp16; a dimension of extent 1 takes any stride (never stepped): it is
  // passed packed; a stride TMA cannot step is refused with its dimension.
  spec.dtype = "fp16";
  args = contiguousArgs(spec, 1, 100, 300);
  args.q.stride[0] = 3;
  encodeCalls.clear();
  REQUIRE(packAttentionParams(*plan, spec, args, packed, &driver).isOk());
  CHECK(encodeCalls[0].type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  CHECK(encodeCalls[0].strides[2] == cuuint64_t(8 * 100 * 64 * 2));
  args.k.stride[1] = 300 * 64 + 4; // 8 bytes past a 16-byte multiple
  Status odd = packAttentionParams(*plan, spec, args, packed, &driver);
  CHECK(odd.message() ==
        "tensor map k_tmap: TMA needs every stride a positive multiple of 16 "
        "bytes below 2^40; dim 1 has 38408 bytes");
  args = contiguousArgs(spec, 1, 100, 300);
  args.v.data = reinterpret_cast<const void *>(0x300008);
  Status misaligned = packAttentionParams(*plan, spec, args, packed, &driver);
  CHECK(misaligned.message() ==
        "tensor map v_tmap: TMA needs the base address 16-byte aligned");

  // Empty K and V (no keys: the kernel runs no KV tile) have no address to
  // encode: their maps are zeros, and only Q's is encoded.
  args = contiguousArgs(spec, 1, 100, 0);
  args.k.data = args.v.data = nullptr;
  encodeCalls.clear();
  REQUIRE(packAttentionParams(*plan, spec, args, packed, &driver).isOk());
  REQUIRE(encodeCalls.size() == 1);
  CHECK(encodeCalls[0].dims[1] == 100);
  for (int t : {1, 2}) {
    const auto *bytes =
        static_cast<const unsigned char *>(packed.pointers[22 + t]);
    CHECK(std::all_of(bytes, bytes + sizeof(CUtensorMap),
                      [](unsigned char x) { return x == 0; }));
  }
}

TEST_CASE("a TMA epilogue's kernel gets O's tensor map after Q, K and V's",
          "[launch]") {
  KernelSpec spec = sampleSpec(); // bf16, 8 / 2 heads, D 64
  std::vector<KernelParam> params = attentionFwdV1Params();
  for (const char *name : abi::kAttentionTensorMapParams)
    params.push_back({name, ParamKind::TensorMap, 128});
  params.push_back({abi::kAttentionOutputTensorMapParam, ParamKind::TensorMap,
                    abi::kAttentionOutputTensorMapBoxRows});
  Result<std::vector<ParamSlot>> plan = planAttentionParams(params);
  REQUIRE(plan.isOk());
  REQUIRE(plan->size() == 26);
  CHECK(plan->back().source == ParamSource::OTensorMap);
  CHECK(plan->back().kind == ParamKind::TensorMap);
  CHECK(plan->back().name == "o_tmap");
  CHECK(plan->back().boxRows == 64);

  // O in the [B, S, H, D] layout (another view than Q's): its own strides.
  AttentionArgs args = contiguousArgs(spec, 3, 100, 300);
  args.o.stride = {100 * 8 * 64, 64, 8 * 64, 1};
  DriverApi driver;
  driver.cuTensorMapEncodeTiled = &recordEncode;
  encodeCalls.clear();
  PackedParams packed;
  REQUIRE(packAttentionParams(*plan, spec, args, packed, &driver).isOk());
  REQUIRE(encodeCalls.size() == 4);
  const EncodeCall &o = encodeCalls[3];
  CHECK(packed.pointers[25] == static_cast<void *>(o.out));
  CHECK(reinterpret_cast<uintptr_t>(o.out) % 64 == 0);
  // A map of its own, from O's pointer.
  CHECK(o.out != encodeCalls[0].out);
  CHECK(reinterpret_cast<uintptr_t>(o.address) == 0x400000);
  CHECK(o.type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  CHECK(o.rank == 4);
  CHECK(o.dims[0] == 64);
  CHECK(o.dims[1] == 100); // seq_q
  CHECK(o.dims[2] == 8);   // query heads
  CHECK(o.dims[3] == 3);
  CHECK(o.strides[0] == 8 * 64 * 2);
  CHECK(o.strides[1] == 64 * 2);
  CHECK(o.strides[2] == 100 * 8 * 64 * 2);
  // Boxes of one consumer warpgroup's 64 rows, in the 128-byte swizzle.
  CHECK(o.box[0] == 64);
  CHECK(o.box[1] == 64);
  CHECK(o.box[2] == 1);
  CHECK(o.box[3] == 1);
  CHECK(o.swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
  // Q's map is Q's still.
  CHECK(reinterpret_cast<uintptr_t>(encodeCalls[0].address) == 0x100000);
  CHECK(encodeCalls[0].box[1] == 128);
  // The pointer parameter o is packed as before.
  CHECK(packed.storage[3] == 0x400000);

  // fp16; O's view checked as the others are, under its own name.
  spec.dtype = "fp16";
  args = contiguousArgs(spec, 1, 100, 300);
  encodeCalls.clear();
  REQUIRE(packAttentionParams(*plan, spec, args, packed, &driver).isOk());
  CHECK(encodeCalls[3].type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  args.o.stride[2] = 64 + 4; // rows 136 bytes apart
  CHECK(packAttentionParams(*plan, spec, args, packed, &driver).message() ==
        "tensor map o_tmap: TMA needs every stride a positive multiple of 16 "
        "bytes below 2^40; dim 2 has 136 bytes");
  args = contiguousArgs(spec, 1, 100, 300);
  args.o.data = ptr(0x400008);
  CHECK(packAttentionParams(*plan, spec, args, packed, &driver).message() ==
        "tensor map o_tmap: TMA needs the base address 16-byte aligned");
  // No driver entry point: the same clear error as for Q, K and V.
  CHECK(packAttentionParams(*plan, spec, contiguousArgs(spec, 1, 100, 300),
                            packed, nullptr)
            .message()
            .find("cuTensorMapEncodeTiled (CUDA 12 or newer)") !=
        std::string::npos);

  // The name takes a tensor map only.
  Result<std::vector<ParamSlot>> mistyped = planAttentionParams(
      {{abi::kAttentionOutputTensorMapParam, ParamKind::Ptr}});
  REQUIRE_FALSE(mistyped.isOk());
  CHECK(mistyped.status().message() ==
        "kernel parameter 'o_tmap' has kind ptr; expected tensormap");
}

// The divisors themselves are tested with the contract
// (tests/unit/AbiContractTest.cpp); the schedule passes them on.
TEST_CASE("the schedule carries the KV tiles' magic divisor",
          "[launch][stream-k]") {
  for (int64_t tiles : {int64_t(1), int64_t(2), int64_t(3), int64_t(32),
                        int64_t(33), int64_t(1000), int64_t(1) << 30}) {
    INFO("tiles " << tiles);
    StreamKSchedule sk = streamKSchedule(1000, 132, tiles, true);
    abi::MagicDivisor m = abi::magicDivisor(uint32_t(tiles));
    CHECK(sk.tiles == tiles);
    CHECK(uint32_t(sk.tilesMul) == m.mul);
    CHECK(sk.tilesShr == m.shr);
    for (uint32_t x : {0u, 1u, uint32_t(tiles) - 1, uint32_t(tiles),
                       uint32_t(tiles) + 1, 0x7FFFFFFFu})
      CHECK(abi::magicDivide(x, uint32_t(sk.tiles),
                             {uint32_t(sk.tilesMul), uint32_t(sk.tilesShr)}) ==
            x / uint32_t(tiles));
  }
}

namespace {

/// One piece of a block's work as the wgmma mapping computes it from the
/// schedule (TileToWGMMA.cpp, emitPersistent and emitStreamKFixup).
struct Piece {
  int64_t item, lo, hi;
  bool starts() const { return lo == 0; }
};

/// The kernel's side of the schedule, written again here as the model the
/// test checks: block c's pieces, and for a piece that starts an item but
/// does not end it, the last block whose partial it merges.
std::vector<Piece> piecesOf(const StreamKSchedule &sk, int64_t blocks,
                            int64_t c) {
  auto divide = [&](int64_t x) {
    return int64_t(abi::magicDivide(
        uint32_t(x), uint32_t(sk.tiles),
        {uint32_t(int32_t(sk.tilesMul)), uint32_t(sk.tilesShr)}));
  };
  int64_t whole = sk.rounds + (c < sk.roundRem ? 1 : 0);
  int64_t s = c * sk.units + std::min(c, sk.unitsRem);
  int64_t e = s + sk.units + (c < sk.unitsRem ? 1 : 0);
  int64_t first = divide(s);
  int64_t pieces = s < e ? divide(e - 1) - first + 1 : 0;
  std::vector<Piece> out;
  for (int64_t k = 0; k < whole + pieces; ++k) {
    if (k < whole) {
      out.push_back({c + blocks * k, 0, sk.tiles});
      continue;
    }
    int64_t j = first + (k - whole), jFirst = j * sk.tiles;
    out.push_back({sk.rounds * blocks + j, std::max(s, jFirst) - jFirst,
                   std::min(e, jFirst + sk.tiles) - jFirst});
  }
  return out;
}

int64_t lastBlockOf(const StreamKSchedule &sk, int64_t tailItem) {
  int64_t u = tailItem * sk.tiles + sk.tiles - 1;
  int64_t big = sk.unitsRem * (sk.units + 1);
  return u < big ? u / (sk.units + 1)
                 : sk.unitsRem + (u - big) / std::max<int64_t>(sk.units, 1);
}

} // namespace

TEST_CASE("the stream-K schedule covers every KV tile of every item once",
          "[launch][stream-k]") {
  for (int64_t items : {1, 7, 131, 132, 133, 200, 2048, 4096})
    for (int64_t blocks : {1, 3, 64, 132})
      for (int64_t tiles : {1, 2, 3, 8, 32, 129})
        for (bool tail : {false, true}) {
          if (blocks > items)
            continue;
          StreamKSchedule sk = streamKSchedule(items, blocks, tiles, tail);
          INFO("items " << items << " blocks " << blocks << " tiles " << tiles
                        << " tail " << tail);
          std::vector<std::vector<int>> seen(items, std::vector<int>(tiles, 0));
          std::vector<int> starts(items, 0);
          for (int64_t c = 0; c < blocks; ++c) {
            std::vector<Piece> mine = piecesOf(sk, blocks, c);
            int notStarting = 0;
            for (size_t i = 0; i < mine.size(); ++i) {
              const Piece &p = mine[i];
              REQUIRE(p.item >= 0);
              REQUIRE(p.item < items);
              REQUIRE(p.lo < p.hi);
              REQUIRE(p.hi <= tiles);
              for (int64_t t = p.lo; t < p.hi; ++t)
                ++seen[p.item][t];
              starts[p.item] += p.starts();
              if (!p.starts()) {
                // The block's slot: only its first tail piece may need it.
                ++notStarting;
                CHECK(i == size_t(sk.rounds));
              }
              if (p.starts() && p.hi < tiles) {
                // It waits only for later blocks, which hold the rest.
                int64_t last = lastBlockOf(sk, p.item - sk.rounds * blocks);
                REQUIRE(last > c);
                REQUIRE(last < blocks);
                int64_t covered = p.hi;
                for (int64_t other = c + 1; other <= last; ++other)
                  for (const Piece &q : piecesOf(sk, blocks, other))
                    if (q.item == p.item) {
                      CHECK(q.lo == covered);
                      CHECK_FALSE(q.starts());
                      covered = q.hi;
                    }
                CHECK(covered == tiles);
              }
            }
            CHECK(notStarting <= 1);
          }
          for (int64_t w = 0; w < items; ++w) {
            CHECK(starts[w] == 1);
            for (int64_t t = 0; t < tiles; ++t)
              REQUIRE(seen[w][t] == 1);
          }
          if (!tail)
            CHECK(sk.units == 0);
          // With the tail, the blocks' work differs by at most one tile.
          if (tail && items % blocks) {
            int64_t most = 0, least = INT64_MAX;
            for (int64_t c = 0; c < blocks; ++c) {
              int64_t work = 0;
              for (const Piece &p : piecesOf(sk, blocks, c))
                work += p.hi - p.lo;
              most = std::max(most, work);
              least = std::min(least, work);
            }
            CHECK(most - least <= 1);
          }
        }
}

TEST_CASE("a launch without a workspace has no stream-K tail",
          "[launch][stream-k]") {
  StreamKSchedule sk = streamKSchedule(2048, 132, 32, /*tail=*/false);
  CHECK(sk.rounds == 15);
  CHECK(sk.roundRem == 2048 - 15 * 132);
  CHECK(sk.units == 0);
  CHECK(sk.unitsRem == 0);
  StreamKSchedule with = streamKSchedule(2048, 132, 32, /*tail=*/true);
  CHECK(with.roundRem == 0);
  CHECK(with.units == (68 * 32) / 132);
  CHECK(with.unitsRem == (68 * 32) % 132);
  // A tail past 2^31 units falls back to whole items.
  StreamKSchedule huge =
      streamKSchedule(int64_t(131) + 132, 132, int64_t(1) << 24, true);
  CHECK(huge.units == 0);
  CHECK(huge.roundRem == 131);
  CHECK(abi::streamKWorkspaceLayout(132, 128, 128).total ==
        1280 + 132 * 2 * 17 * 128 * 16);
}

namespace {
/// A varlen launch: packed [total, H, D] tensors as [1, H, total, D] views
/// (token stride H·D, head stride D), the LSE [Hq, total_q] as [1, Hq,
/// total_q], 3 sequences of at most 70 / 90 rows.
AttentionArgs varlenArgs(const KernelSpec &spec, int64_t totalQ,
                         int64_t totalK) {
  AttentionArgs args = contiguousArgs(spec, 1, totalQ, totalK);
  for (TensorArg *t : {&args.q, &args.k, &args.v, &args.o})
    t->stride = {0, spec.headDim, t->shape[1] * spec.headDim, 1};
  if (spec.hasLse)
    args.lse.stride = {0, totalQ, 1, 1};
  args.cuSeqlensQ = reinterpret_cast<const int32_t *>(0x7000000);
  args.cuSeqlensK = reinterpret_cast<const int32_t *>(0x7001000);
  args.varlenBatch = 3;
  args.maxSeqlenQ = 70;
  args.maxSeqlenK = 90;
  return args;
}
} // namespace

TEST_CASE("varlen launches: validation, packing and the grid", "[launch]") {
  KernelSpec spec = sampleSpec();
  spec.hasLse = true;
  spec.varlen = true;
  CHECK(validateAttentionArgs(spec, varlenArgs(spec, 150, 200)).isOk());
  // Every sequence empty: no rows, null pointers allowed.
  {
    AttentionArgs empty = varlenArgs(spec, 0, 0);
    for (TensorArg *t : {&empty.q, &empty.k, &empty.v, &empty.o, &empty.lse})
      t->data = nullptr;
    empty.maxSeqlenQ = empty.maxSeqlenK = 0;
    CHECK(validateAttentionArgs(spec, empty).isOk());
  }
  auto error = [&](std::function<void(AttentionArgs &)> mutate,
                   const KernelSpec &s) {
    AttentionArgs args = varlenArgs(s, 150, 200);
    mutate(args);
    Status status = validateAttentionArgs(s, args);
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == ErrorCode::InvalidArgument);
    return status.message().substr(kPrefix.size());
  };
  CHECK(error([](AttentionArgs &a) { a.cuSeqlensQ = nullptr; }, spec) ==
        "cu_seqlens_q: data pointer is null but the kernel reads B + 1 i32 "
        "sequence starts (spec varlen=true)");
  CHECK(error(
            [](AttentionArgs &a) {
              a.cuSeqlensK = reinterpret_cast<const int32_t *>(0x7001002);
            },
            spec)
            .find("cu_seqlens_k: data pointer") == 0);
  CHECK(error([](AttentionArgs &a) { a.maxSeqlenQ = 151; }, spec) ==
        "max_seqlen_q is 151; it must be 0 to the total rows 150 (no "
        "sequence is longer than the packed tensor)");
  CHECK(error([](AttentionArgs &a) { a.maxSeqlenQ = 0; }, spec) ==
        "max_seqlen_q is 0 but q has 150 rows: pass the longest sequence's "
        "length");
  CHECK(error([](AttentionArgs &a) { a.varlenBatch = -1; }, spec) ==
        "varlen batch (sequences) must be 0 to 65535 (grid z), got -1");
  CHECK(error([](AttentionArgs &a) { a.q.shape[0] = 2; }, spec) ==
        "q.shape[0] must be 1 for a varlen kernel (packed [total, H, D] "
        "tensors as [1, H, total, D] views), got 2");
  CHECK(error([](AttentionArgs &a) { a.lse.shape[2] = 149; }, spec) ==
        "lse.shape[2] (seq) is 149 but q's seq_q is 150");
  CHECK(error([](AttentionArgs &a) { a.q.stride[2] = 8 * 64 + 4; }, spec)
            .find("q.stride[2] (seq)") == 0);
  KernelSpec dense = spec;
  dense.varlen = false;
  CHECK(error([](AttentionArgs &) {}, dense) ==
        "cu_seqlens_q/k, block_table and kv_lens must be null and "
        "varlen_batch, max_seqlen_q/k, max_blocks 0 because the kernel was "
        "built without varlen (spec varlen=false)");

  // Packing: batch is B and seq_q/seq_kv the longest lengths; the
  // cu_seqlens go by name.
  AttentionArgs args = varlenArgs(spec, 150, 200);
  std::vector<KernelParam> params = attentionFwdV1Params();
  params.push_back({"cu_seqlens_q", ParamKind::Ptr});
  params.push_back({"cu_seqlens_k", ParamKind::Ptr});
  Result<std::vector<ParamSlot>> plan = planAttentionParams(params);
  REQUIRE(plan.isOk());
  PackedParams packed;
  REQUIRE(packAttentionParams(*plan, spec, args, packed).isOk());
  REQUIRE(packed.count == 24);
  CHECK(packed.storage[5] == 3);    // batch: the sequences
  CHECK(packed.storage[6] == 70);   // seq_q: the longest query length
  CHECK(packed.storage[7] == 90);   // seq_kv: the longest key length
  CHECK(packed.storage[10] == 512); // q_stride_s: the token stride
  CHECK(packed.storage[21] == 150); // lse_stride_h: total_q
  CHECK(packed.storage[22] == 0x7000000);
  CHECK(packed.storage[23] == 0x7001000);

  // The grid: (ceil(max_seqlen_q / block_m), heads, B); persistent,
  // min(SMs, items) blocks over as many items.
  KernelMetadata meta;
  meta.gridRule = "attention_fwd_v1";
  meta.blockM = 64;
  meta.block = {128, 1, 1};
  Result<LaunchGeometry> g = attentionGeometry(meta, args, 132);
  REQUIRE(g.isOk());
  CHECK(g->grid == std::array<uint32_t, 3>{2, 8, 3});
  meta.gridRule = "attention_fwd_persistent_v1";
  g = attentionGeometry(meta, args, 132);
  REQUIRE(g.isOk());
  CHECK(g->grid == std::array<uint32_t, 3>{2 * 8 * 3, 1, 1});
  g = attentionGeometry(meta, args, 20);
  REQUIRE(g.isOk());
  CHECK(g->grid == std::array<uint32_t, 3>{20, 1, 1});
}

TEST_CASE("paged varlen launches: validation and packing", "[launch]") {
  KernelSpec spec = sampleSpec();
  spec.hasLse = true;
  spec.varlen = true;
  spec.pageSize = 16;
  // Packed queries; K/V a cache of 40 NHD pages [40, 16, Hkv, D] seen as
  // [40, Hkv, 16, D]; 3 sequences with block tables of 8 columns.
  auto pagedArgs = [&] {
    AttentionArgs args = varlenArgs(spec, 150, 200);
    const int64_t hkv = spec.kvHeads, d = spec.headDim;
    for (TensorArg *t : {&args.k, &args.v}) {
      t->shape = {40, hkv, 16, d};
      t->stride = {16 * hkv * d, d, hkv * d, 1};
    }
    args.v.data =
        static_cast<const char *>(args.k.data) + 40 * 16 * hkv * d * 2;
    args.cuSeqlensK = nullptr;
    args.blockTable = reinterpret_cast<const int32_t *>(0x7002000);
    args.maxBlocks = 8;
    args.kvLens = reinterpret_cast<const int32_t *>(0x7003000);
    args.maxSeqlenK = 128;
    return args;
  };
  REQUIRE(validateAttentionArgs(spec, pagedArgs()).isOk());
  auto error = [&](std::function<void(AttentionArgs &)> mutate,
                   const KernelSpec &s) {
    AttentionArgs args = pagedArgs();
    mutate(args);
    Status status = validateAttentionArgs(s, args);
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == ErrorCode::InvalidArgument);
    return status.message().substr(kPrefix.size());
  };
  CHECK(error([](AttentionArgs &a) { a.kvLens = nullptr; }, spec) ==
        "kv_lens: data pointer is null but the paged kernel reads it");
  CHECK(error(
            [](AttentionArgs &a) {
              a.blockTable = reinterpret_cast<const int32_t *>(0x7002001);
            },
            spec)
            .find("block_table: data pointer") == 0);
  CHECK(error(
            [](AttentionArgs &a) {
              a.cuSeqlensK = reinterpret_cast<const int32_t *>(0x7001000);
            },
            spec)
            .find("cu_seqlens_k must be null for a paged kernel") == 0);
  CHECK(error([](AttentionArgs &a) { a.maxSeqlenK = 129; }, spec) ==
        "max_seqlen_k is 129; it must be 0 to max_blocks x page_size = 128 "
        "(no sequence holds more keys than its block table row)");
  CHECK(error([](AttentionArgs &a) { a.maxBlocks = 0; }, spec)
            .find("max_blocks (the block table's columns) must be 1 to") == 0);
  CHECK(error([](AttentionArgs &a) { a.k.shape[2] = 32; }, spec)
            .find("k_cache.shape[2]") == 0);
  CHECK(error([](AttentionArgs &a) { a.v.shape[0] = 39; }, spec) ==
        "v_cache has 39 pages but k_cache 40; the block table indexes both");
  KernelSpec contiguous = spec;
  contiguous.pageSize = 0;
  CHECK(error([](AttentionArgs &) {}, contiguous)
            .find("block_table and kv_lens must be null") == 0);

  // Packing: k_stride_b is the page stride; after cu_seqlens_q come the
  // block table, kv_lens, max_blocks and the page count.
  AttentionArgs args = pagedArgs();
  std::vector<KernelParam> params = attentionFwdV1Params();
  params.push_back({"cu_seqlens_q", ParamKind::Ptr});
  for (KernelParam &p : contractParams(abi::kAttentionPagedParams))
    params.push_back(std::move(p));
  Result<std::vector<ParamSlot>> plan = planAttentionParams(params);
  REQUIRE(plan.isOk());
  PackedParams packed;
  REQUIRE(packAttentionParams(*plan, spec, args, packed).isOk());
  REQUIRE(packed.count == 27);
  CHECK(packed.storage[7] == 128); // seq_kv: max_seqlen_k
  CHECK(packed.storage[11] == 16 * spec.kvHeads * spec.headDim); // page
  CHECK(packed.storage[13] == spec.kvHeads * spec.headDim);      // row stride
  CHECK(packed.storage[22] == 0x7000000);
  CHECK(packed.storage[23] == 0x7002000);
  CHECK(packed.storage[24] == 0x7003000);
  CHECK(packed.storage[25] == 8);
  CHECK(packed.storage[26] == 40);
}

TEST_CASE("captured tensors: names, validation and packing", "[launch]") {
  // The parameter names round-trip, and only those names parse.
  for (abi::CaptureParam p :
       {abi::CaptureParam{0, abi::CapturePart::Data, 0},
        abi::CaptureParam{7, abi::CapturePart::Size, 3},
        abi::CaptureParam{3, abi::CapturePart::Stride, 0}})
    CHECK(abi::parseCaptureParam(abi::captureParamName(p)) == p);
  CHECK(abi::captureParamName({1, abi::CapturePart::Stride, 2}) ==
        "capture1_stride2");
  for (const char *other :
       {"capture", "capture8", "capture0_size4", "capture0_sizes0",
        "capture0_size0x", "captures", "capture10", "q"})
    CHECK_FALSE(abi::parseCaptureParam(other).has_value());

  KernelSpec spec = sampleSpec();
  spec.hasLse = true;
  const std::vector<CaptureDesc> expected = {{"f32", 1}, {"i32", 2}};
  AttentionArgs args = contiguousArgs(spec, 2, 100, 300);
  CaptureArg captures[2];
  captures[0].data = ptr(0x9000000);
  captures[0].dtype = "f32";
  captures[0].rank = 1;
  captures[0].shape[0] = 8;
  captures[0].stride[0] = 1;
  captures[1].data = ptr(0x9100000);
  captures[1].dtype = "i32";
  captures[1].rank = 2;
  captures[1].shape[0] = 2;
  captures[1].shape[1] = 100;
  captures[1].stride[0] = 1; // transposed: any strides
  captures[1].stride[1] = 2;
  args.captures = captures;
  args.numCaptures = 2;
  CHECK(validateCaptures(expected, spec, args).isOk());

  auto error = [&](std::function<void(AttentionArgs &, CaptureArg *)> mutate) {
    CaptureArg copy[2] = {captures[0], captures[1]};
    AttentionArgs a = args;
    a.captures = copy;
    mutate(a, copy);
    Status status = validateCaptures(expected, spec, a);
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == ErrorCode::InvalidArgument);
    return status.message().substr(kPrefix.size());
  };
  CHECK(error([](AttentionArgs &a, CaptureArg *) { a.numCaptures = 1; }) ==
        "the kernel's mods read 2 captured tensor(s); the launch passes 1");
  CHECK(error([](AttentionArgs &a, CaptureArg *) { a.captures = nullptr; }) ==
        "the kernel's mods read 2 captured tensor(s); the launch passes 0");
  CHECK(error([](AttentionArgs &, CaptureArg *c) { c[1].dtype = "i64"; }) ==
        "capture 1 is i64 of rank 2 but the kernel reads i32 of rank 2");
  CHECK(error([](AttentionArgs &, CaptureArg *c) { c[0].rank = 2; }) ==
        "capture 0 is f32 of rank 2 but the kernel reads f32 of rank 1");
  CHECK(error([](AttentionArgs &, CaptureArg *c) { c[0].data = nullptr; }) ==
        "capture 0: data pointer is null");
  CHECK(
      error([](AttentionArgs &, CaptureArg *c) { c[1].data = ptr(0x9100002); })
          .find("capture 1: data pointer 0x9100002 is not aligned to its "
                "4-byte elements") == 0);
  CHECK(error([](AttentionArgs &, CaptureArg *c) { c[1].shape[1] = 0; }) ==
        "capture 1.shape[1] = 0, .stride[1] = 2: sizes must be >= 1 and "
        "strides >= 0");
  CHECK(error([](AttentionArgs &, CaptureArg *c) {
          c[0].stride[0] = -1;
        }).find("sizes must be >= 1 and strides >= 0") != std::string::npos);
  CHECK(error([](AttentionArgs &, CaptureArg *c) {
          c[0].shape[0] = int64_t(1) << 62;
          c[0].stride[0] = 4;
        }) == "capture 0: shape and strides address beyond 2^63 elements");
  // A capture may not share memory with an output.
  CHECK(error([&](AttentionArgs &a, CaptureArg *c) {
          c[0].data = a.o.data;
        }).find("o [") == 0);
  CHECK(error([&](AttentionArgs &a, CaptureArg *c) {
          c[1].data = a.lse.data;
        }).find("lse [") == 0);
  CHECK(error([&](AttentionArgs &a, CaptureArg *c) {
          a.workspace = const_cast<void *>(c[0].data);
          a.workspaceBytes = 256;
        }).find("workspace [") == 0);
  // A kernel without captures refuses them.
  CHECK_FALSE(validateCaptures({}, spec, args).isOk());

  // Packing: each capture's data, sizes and strides by name, after the
  // contract's parameters.
  std::vector<KernelParam> params = attentionFwdV1Params();
  for (const char *name : {"capture0", "capture0_size0", "capture0_stride0",
                           "capture1", "capture1_size0", "capture1_size1",
                           "capture1_stride0", "capture1_stride1"})
    params.push_back(
        {name, abi::parseCaptureParam(name)->part == abi::CapturePart::Data
                   ? ParamKind::Ptr
                   : ParamKind::I64});
  Result<std::vector<ParamSlot>> plan = planAttentionParams(params);
  REQUIRE(plan.isOk());
  PackedParams packed;
  REQUIRE(packAttentionParams(*plan, spec, args, packed).isOk());
  REQUIRE(packed.count == 30);
  CHECK(packed.storage[22] == 0x9000000);
  CHECK(packed.storage[23] == 8);
  CHECK(packed.storage[24] == 1);
  CHECK(packed.storage[25] == 0x9100000);
  CHECK(packed.storage[26] == 2);
  CHECK(packed.storage[27] == 100);
  CHECK(packed.storage[28] == 1);
  CHECK(packed.storage[29] == 2);
  // A capture's data must be a pointer and its sizes i64.
  params[22].kind = ParamKind::I64;
  Result<std::vector<ParamSlot>> bad = planAttentionParams(params);
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.status().message() ==
        "kernel parameter 'capture0' has kind i64; expected ptr");
}

TEST_CASE("key ranges: validation and packing", "[launch]") {
  KernelSpec spec = sampleSpec();
  spec.hasLse = true;
  AttentionArgs args = contiguousArgs(spec, 2, 100, 300);
  CHECK(validateKVBounds(false, spec, args).isOk());
  auto error = [&](bool takes, const int32_t *bounds) {
    AttentionArgs a = args;
    a.kvBounds = bounds;
    Status status = validateKVBounds(takes, spec, a);
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == ErrorCode::InvalidArgument);
    return status.message().substr(kPrefix.size());
  };
  const auto *bounds = reinterpret_cast<const int32_t *>(0x9000000);
  CHECK(error(false, bounds) ==
        "kv_bounds: data pointer must be null because the kernel takes no "
        "key ranges (its attention has no kv_bounds)");
  CHECK(error(true, nullptr) ==
        "kv_bounds: data pointer is null but the kernel reads each query "
        "row's key range ([batch, seq_q, 2] i32)");
  CHECK(error(true, reinterpret_cast<const int32_t *>(0x9000002))
            .find("is not 4-byte aligned") != std::string::npos);
  // [B, Sq, 2] i32 may not overlap an output.
  CHECK(error(true, static_cast<const int32_t *>(args.o.data)).find("o [") ==
        0);
  CHECK(
      error(true, static_cast<const int32_t *>(args.lse.data)).find("lse [") ==
      0);
  AttentionArgs ok = args;
  ok.kvBounds = bounds;
  CHECK(validateKVBounds(true, spec, ok).isOk());

  // Packed by name after the contract's parameters.
  std::vector<KernelParam> params = attentionFwdV1Params();
  params.push_back({abi::kAttentionKVBoundsParam, ParamKind::Ptr});
  Result<std::vector<ParamSlot>> plan = planAttentionParams(params);
  REQUIRE(plan.isOk());
  CHECK(plan->back().source == ParamSource::KvBounds);
  PackedParams packed;
  REQUIRE(packAttentionParams(*plan, spec, ok, packed).isOk());
  REQUIRE(packed.count == 23);
  CHECK(packed.storage[22] == 0x9000000);
}
