//===- CacheOpsTest.cpp - KV append / LSE merge contracts, no GPU ---------===//
#include "attnc/runtime/CacheOps.h"
#include "attnc/runtime/Decode.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace attnc;

namespace {

void *addr(uintptr_t a) { return reinterpret_cast<void *>(a); }

KernelSpec appendSpec() {
  KernelSpec s;
  s.op = "kv_append";
  s.heads = s.kvHeads = 8;
  s.headDim = 128;
  s.pageSize = 16;
  return s;
}

KVAppendArgs appendArgs(int tokens = 5) {
  KVAppendArgs a;
  a.key = {addr(0x10000), {tokens, 8, 128, 1}, {8 * 128, 128, 1, 1}};
  a.value = {addr(0x20000), {tokens, 8, 128, 1}, {8 * 128 + 64, 128, 1, 1}};
  a.slotMapping = static_cast<const int64_t *>(addr(0x30000));
  // NHD pages seen as [pages, Hkv, page, D].
  a.kCache = {addr(0x40000), {10, 8, 16, 128}, {16 * 8 * 128, 128, 8 * 128, 1}};
  a.vCache = a.kCache;
  a.vCache.data = addr(0x50000);
  return a;
}

KernelSpec mergeSpec(bool lse = true) {
  KernelSpec s;
  s.op = "lse_merge";
  s.heads = s.kvHeads = 32;
  s.headDim = 128;
  s.hasLse = lse;
  return s;
}

MergeArgs mergeArgs(int batch = 3, int seq = 20) {
  MergeArgs a;
  TensorArg o{addr(0x10000),
              {batch, 32, seq, 128},
              {int64_t(seq) * 32 * 128, 128, 32 * 128, 1}};
  TensorArg l{addr(0x20000), {batch, 32, seq, 1}, {32 * seq, seq, 1, 1}};
  a.oA = a.oB = a.o = o;
  a.oB.data = addr(0x30000);
  a.o.data = addr(0x40000);
  a.lseA = a.lseB = a.lse = l;
  a.lseB.data = addr(0x50000);
  a.lse.data = addr(0x60000);
  return a;
}

int64_t word(const PackedParams &p, size_t i) {
  int64_t v;
  std::memcpy(&v, p.pointers[i], sizeof v);
  return v;
}

} // namespace

TEST_CASE("kv_append and lse_merge specs validate and key their fields",
          "[decode]") {
  CHECK(validateSpec(appendSpec()).isOk());
  KernelSpec s = appendSpec();
  s.pageSize = 0;
  CHECK_THAT(validateSpec(s).message(),
             Catch::Contains("kv_append needs page_size 1 to 1048576"));
  s = appendSpec();
  s.headDim = 12;
  CHECK_THAT(validateSpec(s).message(), Catch::Contains("multiple of 8"));
  KernelSpec other = appendSpec();
  other.pageSize = 32;
  CHECK(other.canonical() != appendSpec().canonical());
  CHECK(validateSpec(mergeSpec()).isOk());
  // Round trip through JSON keeps the page size.
  auto back = specFromJson(specToJson(appendSpec()));
  REQUIRE(back.isOk());
  CHECK(*back == appendSpec());
}

TEST_CASE("kv_append arguments: errors name the argument", "[decode]") {
  KernelSpec s = appendSpec();
  CHECK(validateKVAppendArgs(s, appendArgs()).isOk());
  KVAppendArgs a = appendArgs();
  a.slotMapping = nullptr;
  CHECK_THAT(validateKVAppendArgs(s, a).message(),
             Catch::Contains("slot_mapping: data pointer is null"));
  a = appendArgs();
  a.value.shape[0] = 4;
  CHECK_THAT(validateKVAppendArgs(s, a).message(),
             Catch::Contains("value.shape[0] is 4 but key's tokens is 5"));
  a = appendArgs();
  a.kCache.shape[2] = 32;
  CHECK_THAT(validateKVAppendArgs(s, a).message(),
             Catch::Contains("k_cache.shape[2] is 32 but the spec's "
                             "page_size is 16"));
  a = appendArgs();
  a.key.stride[0] = 8 * 128 + 4; // 8 bytes: rows not 16-byte aligned
  CHECK_THAT(validateKVAppendArgs(s, a).message(),
             Catch::Contains("key.stride[0]"));
  a = appendArgs();
  a.vCache.shape[0] = 9;
  CHECK_THAT(validateKVAppendArgs(s, a).message(),
             Catch::Contains("v_cache has 9 pages, k_cache 10"));

  KernelMetadata meta;
  meta.block = {128, 1, 1};
  meta.blockM = 8;
  PackedParams p;
  LaunchGeometry g;
  REQUIRE(planKVAppendLaunch(s, meta, appendArgs(5), p, g).isOk());
  CHECK(p.count == kvAppendV1Params().size());
  CHECK(word(p, 5) == 40);           // rows = 5 tokens x 8 heads
  CHECK(word(p, 6) == 10);           // pages
  CHECK(word(p, 9) == 8 * 128 + 64); // v_stride_t
  CHECK(word(p, 13) == 8 * 128);     // kc_stride_s (NHD)
  CHECK(g.grid[0] == 5);             // ceil(40 / 8)
  CHECK(g.block[0] == 128);
}

TEST_CASE("kv_append and lse_merge arguments: offsets and addresses must "
          "fit",
          "[decode]") {
  KernelSpec s = appendSpec();
  KVAppendArgs a = appendArgs();
  a.kCache.stride[0] = int64_t(1) << 61; // 9 pages x 2^61 x 2 bytes
  CHECK_THAT(validateKVAppendArgs(s, a).message(),
             Catch::Contains("k_cache: ") &&
                 Catch::Contains("address beyond 2^63 elements"));
  a = appendArgs();
  a.vCache.data = addr(~uintptr_t(0) - 4095);
  CHECK_THAT(validateKVAppendArgs(s, a).message(),
             Catch::Contains("v_cache: its last byte lies past"));
  a = appendArgs();
  a.key.stride[0] = int64_t(1) << 62; // its bytes overflow
  CHECK_THAT(validateKVAppendArgs(s, a).message(),
             Catch::Contains("key.stride[0]") &&
                 Catch::Contains("past 2^63 bytes"));
  CHECK(validateKVAppendArgs(s, appendArgs(0)).isOk()); // no tokens

  KernelSpec m = mergeSpec();
  MergeArgs b = mergeArgs();
  b.o.data = addr(~uintptr_t(0) - 4095);
  CHECK_THAT(validateMergeArgs(m, b).message(),
             Catch::Contains("o: its last byte lies past"));
}

TEST_CASE("lse_merge arguments: shapes, LSE presence, plan", "[decode]") {
  KernelSpec s = mergeSpec();
  CHECK(validateMergeArgs(s, mergeArgs()).isOk());
  MergeArgs a = mergeArgs();
  a.oB.shape[2] = 19;
  CHECK_THAT(validateMergeArgs(s, a).message(),
             Catch::Contains("o_b.shape[2] is 19 but o_a's is 20"));
  a = mergeArgs();
  a.lse.data = nullptr;
  CHECK_THAT(validateMergeArgs(s, a).message(),
             Catch::Contains("lse: data pointer is null but the kernel "
                             "writes LSE"));
  CHECK_THAT(validateMergeArgs(mergeSpec(false), mergeArgs()).message(),
             Catch::Contains("has_lse=false"));
  a = mergeArgs();
  a.lseA.data = nullptr;
  CHECK_THAT(validateMergeArgs(s, a).message(),
             Catch::Contains("lse_a: data pointer is null"));
  KernelMetadata meta;
  meta.block = {32, 1, 1};
  meta.blockM = 16;
  PackedParams p;
  LaunchGeometry g;
  REQUIRE(planMergeLaunch(s, meta, mergeArgs(3, 20), p, g).isOk());
  CHECK(p.count == lseMergeV1Params().size());
  CHECK(word(p, 6) == 3);  // batch
  CHECK(word(p, 7) == 20); // seq_q
  CHECK(g.grid[0] == 2);
  CHECK(g.grid[1] == 32);
  CHECK(g.grid[2] == 3);
}

TEST_CASE("decode splits fill the resident slots of the loaded kernel",
          "[decode]") {
  // 32 threads at 168 registers and ~10 KiB of shared memory: registers
  // allow 12 per SM; 2 warps at 255 registers: 4.
  CHECK(decodeResidentPerSm(165, 32, 10240) == 12);
  CHECK(decodeResidentPerSm(255, 64, 20480) == 4);
  CHECK(decodeResidentPerSm(64, 32, 100 * 1024) == 2); // shared memory bound
  CHECK(decodeResidentPerSm(0, 32, 0) == 0);           // unknown
  // Filling 12 slots per SM on 132 SMs (no cap): B = 1 over 8 KV heads
  // takes 196 splits (1568 programs, 12 per SM, 42 tiles each), twice the
  // 6-slot guess (99: 792 programs, 6 per SM, 83 tiles each).
  CHECK(chooseDecodeSplits(1, 8, 131072, 132, 12, /*maxPerSm=*/32, 16) == 196);
  CHECK(chooseDecodeSplits(1, 8, 131072, 132, 6, 32, 16) == 99);
  // By default the target is kDecodeProgramsPerSm per SM, fewer when fewer
  // fit.
  CHECK(chooseDecodeSplits(1, 8, 131072, 132, 12, kDecodeProgramsPerSm, 16) ==
        66);
  CHECK(chooseDecodeSplits(1, 8, 131072, 132, 6, kDecodeProgramsPerSm, 16) ==
        66); // 6 capped
  CHECK(chooseDecodeSplits(1, 8, 131072, 132, 2, kDecodeProgramsPerSm, 16) ==
        33);
  // Unknown (0) falls back to 6.
  CHECK(chooseDecodeSplits(16, 8, 32768, 132, 0, kDecodeProgramsPerSm, 16) ==
        chooseDecodeSplits(16, 8, 32768, 132, 6, kDecodeProgramsPerSm, 16));
}
