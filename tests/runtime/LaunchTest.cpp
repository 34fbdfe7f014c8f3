//===- LaunchTest.cpp - Launch validation, packing and geometry -----------===//

#include "TestSupport.h"

#include "attnc/runtime/Driver.h"
#include "attnc/runtime/Launch.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <functional>

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
  std::vector<KernelParam> tooMany(65, {"q", ParamKind::Ptr});
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
  meta.gridRule = kGridRuleAttentionFwdPersistentV1;
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
  CHECK(isAttentionFwdGridRule(kGridRuleAttentionFwdPersistentV1));
  CHECK(isAttentionFwdGridRule("attention_fwd_v1"));
  CHECK_FALSE(isAttentionFwdGridRule("decode_split_v3"));
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
}

TEST_CASE("a TMA epilogue's kernel gets O's tensor map after Q, K and V's",
          "[launch]") {
  KernelSpec spec = sampleSpec(); // bf16, 8 / 2 heads, D 64
  std::vector<KernelParam> params = attentionFwdV1Params();
  for (const char *name : kAttentionTensorMapParams)
    params.push_back({name, ParamKind::TensorMap, 128});
  params.push_back({kAttentionOutputTensorMapParam, ParamKind::TensorMap,
                    kAttentionOutputTensorMapBoxRows});
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
  Result<std::vector<ParamSlot>> mistyped =
      planAttentionParams({{kAttentionOutputTensorMapParam, ParamKind::Ptr}});
  REQUIRE_FALSE(mistyped.isOk());
  CHECK(mistyped.status().message() ==
        "kernel parameter 'o_tmap' has kind ptr; expected tensormap");
}
