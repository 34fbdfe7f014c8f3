//===- DecodeTest.cpp - decode's launch contract, without a GPU -----------===//
#include "attnc/runtime/Decode.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <set>

using namespace attnc;

namespace {

KernelSpec decodeSpec() {
  KernelSpec s;
  s.op = "decode";
  s.heads = 32;
  s.kvHeads = 8;
  s.headDim = 128;
  s.hasLse = true;
  s.pageSize = 16;
  s.maxQLen = 1;
  return s;
}

// Fake, suitably aligned addresses: validation never dereferences them.
void *addr(uintptr_t a) { return reinterpret_cast<void *>(a); }

DecodeArgs goodArgs(int batch = 4, int seqQ = 1) {
  DecodeArgs a;
  a.q = {addr(0x10000),
         {batch, 32, seqQ, 128},
         {int64_t(seqQ) * 32 * 128, 128, 32 * 128, 1}};
  if (seqQ > 1)
    a.q.stride = {int64_t(32) * seqQ * 128, int64_t(seqQ) * 128, 128, 1};
  // NHD pages: [pages, page, Hkv, D] seen as [pages, Hkv, page, D].
  a.kCache = {
      addr(0x20000), {100, 8, 16, 128}, {16 * 8 * 128, 128, 8 * 128, 1}};
  a.vCache = {
      addr(0x30000), {100, 8, 16, 128}, {16 * 8 * 128, 128, 8 * 128, 1}};
  a.blockTable = static_cast<const int32_t *>(addr(0x40000));
  a.maxBlocks = 25;
  a.kvLens = static_cast<const int32_t *>(addr(0x50000));
  a.maxKvLen = 400;
  a.o = a.q;
  a.o.data = addr(0x60000);
  a.lse = {addr(0x70000), {batch, 32, seqQ, 1}, {32 * seqQ, seqQ, 1, 1}};
  a.workspace = addr(0x80000);
  return a;
}

std::string error(const DecodeArgs &a, const KernelSpec &s = decodeSpec()) {
  Status st = validateDecodeArgs(s, a);
  REQUIRE_FALSE(st.isOk());
  CHECK(st.code() == ErrorCode::InvalidArgument);
  return st.message();
}

} // namespace

TEST_CASE("decode specs: validation, canonical form and JSON", "[decode]") {
  KernelSpec s = decodeSpec();
  CHECK(validateSpec(s).isOk());
  CHECK(s.canonical().find(";page_size=16;max_q_len=1") != std::string::npos);
  KernelSpec other = s;
  other.pageSize = 64;
  CHECK(cacheKey("b", s.canonical()) != cacheKey("b", other.canonical()));
  // Attention specs keep their canonical strings (and cache keys).
  KernelSpec att;
  att.heads = att.kvHeads = 8;
  att.headDim = 64;
  CHECK(att.canonical().find("page_size") == std::string::npos);

  auto round = specFromJson(specToJson(s));
  REQUIRE(round.isOk());
  CHECK(*round == s);
  s.pageSize = 0;
  CHECK(validateSpec(s).message() ==
        "invalid kernel spec: decode needs page_size 1 to 1048576 (got 0)");
  s.pageSize = 16;
  s.maxQLen = 17;
  CHECK(validateSpec(s).message() ==
        "invalid kernel spec: decode needs max_q_len in 1..16 (got 17)");
  s.maxQLen = 16;
  s.kvHeads = 1; // 32 heads x 16 rows
  CHECK(validateSpec(s).message() ==
        "invalid kernel spec: decode packs heads / kv_heads x max_q_len "
        "query rows into one program, at most 64 (got 32 x 16)");
  att.pageSize = 16; // a paged cache is a varlen attention's
  CHECK(validateSpec(att).message() ==
        "invalid kernel spec: page_size on attention_fwd (a paged KV cache) "
        "needs varlen=true: paged prefill takes packed queries");
  att.varlen = true;
  CHECK(validateSpec(att).isOk());
  att.maxQLen = 4;
  CHECK(validateSpec(att).message() ==
        "invalid kernel spec: max_q_len is a decode field; attention_fwd "
        "takes 0");
}

TEST_CASE("decode arguments are checked with clear messages", "[decode]") {
  KernelSpec s = decodeSpec();
  CHECK(validateDecodeArgs(s, goodArgs()).isOk());
  CHECK(validateDecodeArgs(s, goodArgs(2, 1)).isOk());

  DecodeArgs a = goodArgs();
  a.q.shape[2] = 2;
  CHECK(error(a) == "invalid decode arguments: seq_q (q.shape[2]) is 2; the "
                    "kernel takes 1 to max_q_len = 1");
  KernelSpec s4 = s;
  s4.maxQLen = 4;
  a = goodArgs(2, 3);
  CHECK(validateDecodeArgs(s4, a).isOk());
  a.q.stride = {3 * 32 * 128, 128, 32 * 128, 1}; // BSHD with 3 rows
  CHECK(error(a, s4).find("the rows of a head must be contiguous rows of "
                          "one matrix") != std::string::npos);
  a = goodArgs();
  a.kCache.shape[2] = 32;
  CHECK(error(a) == "invalid decode arguments: k_cache.shape[2] is 32 but the "
                    "spec's page_size is 16");
  a = goodArgs();
  a.vCache.stride[1] = 100; // 200 bytes
  CHECK(error(a) == "invalid decode arguments: v_cache.stride[1] = 100 "
                    "elements is not a multiple of 16 bytes");
  a = goodArgs();
  a.blockTable = nullptr;
  CHECK(error(a) == "invalid decode arguments: block_table: data pointer is "
                    "null or not 4-byte aligned");
  a = goodArgs();
  a.maxBlocks = (int64_t(1) << 30) / 16 + 1;
  CHECK(error(a) == "invalid decode arguments: max_blocks 67108865 x "
                    "page_size 16: sequences longer than 2^30 are not "
                    "supported");
  a = goodArgs();
  a.maxKvLen = 25 * 16 + 1;
  CHECK(error(a) == "invalid decode arguments: max_kv_len 401 must be in "
                    "0..max_blocks * page_size = 400");
  a = goodArgs();
  a.lse.data = nullptr;
  CHECK(error(a) == "invalid decode arguments: lse: data pointer is null but "
                    "the kernel writes LSE");
  a = goodArgs();
  a.workspace = addr(0x80010);
  CHECK(error(a) == "invalid decode arguments: workspace: data pointer is not "
                    "256-byte aligned");
  KernelSpec att = s;
  att.op = "attention_fwd";
  CHECK(error(goodArgs(), att) == "invalid decode arguments: the kernel's op "
                                  "is \"attention_fwd\", not \"decode\"");
}

TEST_CASE("programs per SM keep ~128 key rows in flight", "[decode]") {
  auto perSm = [&](int64_t blockN, int64_t stages) {
    return decodeProgramsPerSm(blockN, stages);
  };
  CHECK(perSm(16, 3) == kDecodeProgramsPerSm); // 16 keys x 2 in flight: 4
  CHECK(perSm(32, 3) == 2);                    // 64 rows in flight each
  CHECK(perSm(16, 4) == 3);                    // 48: 2.67, rounded
  CHECK(perSm(32, 2) == 4);                    // 32
  CHECK(perSm(16, 1) == 4); // one tile, copied where it is used: at most 4
  CHECK(perSm(64, 2) == 2);
  CHECK(perSm(32, 4) == 2);  // 96: 1.33, at least 2
  CHECK(perSm(64, 3) == 1);  // 128 rows in flight in one program
  CHECK(perSm(128, 2) == 1); // 4 warps along the keys, 32 keys each
  CHECK(perSm(128, 3) == 1);
}

TEST_CASE("decode splits fill the GPU and the plan packs the contract",
          "[decode]") {
  // One long sequence: many splits; a big batch: few; short: one. The
  // target is kDecodeProgramsPerSm (4) programs per SM: 528 on 132 SMs,
  // and a program count that deals evenly over the SMs: 66 splits x 8 KV
  // heads = 4 per SM, each 125 tiles (57 splits gave some SMs 3 and some
  // 4 programs of 144 tiles).
  CHECK(chooseDecodeSplits(1, 8, 131072, 132, 6, kDecodeProgramsPerSm, 16) ==
        66);
  CHECK(chooseDecodeSplits(1, 8, 131072, 132, 6, 4, 32) == 66);
  CHECK(chooseDecodeSplits(32, 8, 8192, 132, 6, kDecodeProgramsPerSm, 16) ==
        2); // 512 programs
  CHECK(chooseDecodeSplits(8, 8, 8192, 132, 6, kDecodeProgramsPerSm, 16) == 8);
  CHECK(chooseDecodeSplits(64, 8, 4096, 132, 6, kDecodeProgramsPerSm, 16) == 1);
  CHECK(chooseDecodeSplits(64, 8, 16384, 132, 6, kDecodeProgramsPerSm, 16) ==
        1);
  CHECK(chooseDecodeSplits(16, 8, 32768, 132, 6, kDecodeProgramsPerSm, 16) ==
        4);
  CHECK(chooseDecodeSplits(1, 8, 100, 132, 6, kDecodeProgramsPerSm, 16) == 1);
  CHECK(chooseDecodeSplits(1, 1, 1 << 20, 132, 6, kDecodeProgramsPerSm, 16) ==
        256); // the cap
  CHECK(chooseDecodeSplits(4, 8, 0, 0, 6, kDecodeProgramsPerSm, 16) == 1);
  // Two programs per SM (the 32-key, 3-stage kernel): 264 slots. B1: 33
  // splits (264 programs of 124 tiles); B16: 2 (256 programs).
  CHECK(chooseDecodeSplits(1, 8, 131072, 132, 4, 2, 32) == 33);
  CHECK(chooseDecodeSplits(16, 8, 32768, 132, 4, 2, 32) == 2);

  KernelSpec s = decodeSpec();
  DecodeArgs a = goodArgs();
  a.numSplits = 5;
  size_t bytes = decodeWorkspaceBytes(s, 4, 1, 5);
  // o_part, lse_part (both 256-aligned here), then the [B, Hkv] counters.
  CHECK(bytes == 5u * 4 * 32 * 128 * 4 + 5 * 4 * 32 * 4 + 256);
  KernelMetadata meta;
  meta.block = {32, 1, 1};
  meta.blockN = 16;
  meta.kvStages = 3;
  DecodeLaunchPlan plan;
  a.workspaceBytes = bytes - 1;
  CHECK(planDecodeLaunch(s, meta, a, 132, plan).message() ==
        "invalid decode arguments: workspace has " + std::to_string(bytes - 1) +
            " bytes; 5 splits need " + std::to_string(bytes));
  a.workspaceBytes = bytes;
  REQUIRE(planDecodeLaunch(s, meta, a, 132, plan, 6, 0xABCD1234u).isOk());
  CHECK(plan.split.count == decodeSplitV1Params().size());
  CHECK(plan.combine.count == decodeCombineV1Params().size());
  auto ptrAt = [](const PackedParams &p, size_t i) {
    void *v;
    std::memcpy(&v, p.pointers[i], sizeof(v));
    return v;
  };
  auto intAt = [](const PackedParams &p, size_t i) {
    int64_t v;
    std::memcpy(&v, p.pointers[i], sizeof(v));
    return v;
  };
  // The split kernel's parameters by their contract names.
  auto at = [](const char *name) {
    auto params = decodeSplitV1Params();
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].name == name)
        return i;
    FAIL("no decode_split parameter " << name);
    return size_t(0);
  };
  CHECK(ptrAt(plan.split, at("q")) == a.q.data);
  CHECK(ptrAt(plan.split, at("o_part")) == a.workspace);
  CHECK(ptrAt(plan.combine, 0) == a.workspace); // o_part
  CHECK(ptrAt(plan.split, at("lse_part")) == ptrAt(plan.combine, 1));
  CHECK(ptrAt(plan.split, at("o")) == a.o.data);
  CHECK(ptrAt(plan.split, at("lse")) == a.lse.data);
  CHECK(intAt(plan.split, at("num_splits")) == 5);
  CHECK(intAt(plan.split, at("num_pages")) == 100);
  CHECK(intAt(plan.split, at("k_stride_h")) == 128);
  CHECK(intAt(plan.split, at("o_stride_s")) == a.o.stride[2]);
  CHECK(intAt(plan.split, at("lse_stride_h")) == a.lse.stride[1]);
  CHECK(ptrAt(plan.split, at("merge_counts")) ==
        static_cast<char *>(a.workspace) + 5 * 4 * 32 * 128 * 4 +
            5 * 4 * 32 * 4);
  CHECK(intAt(plan.split, at("merge_ticket")) == 0xABCD1234);
  // Five splits: the last program of each group merges them (write_o = 2).
  CHECK(intAt(plan.split, at("write_o")) == abi::kDecodeWriteLastSplit);
  CHECK_FALSE(plan.runCombine());
  // Unless the caller asks for the combine kernel, or there are more
  // splits than one program merges.
  a.combineKernel = true;
  REQUIRE(planDecodeLaunch(s, meta, a, 132, plan).isOk());
  CHECK(intAt(plan.split, at("write_o")) == abi::kDecodeWriteCombine);
  CHECK(plan.runCombine());
  a.combineKernel = false;
  a.numSplits = kDecodeMergeMaxSplits + 1;
  a.workspaceBytes = decodeWorkspaceBytes(s, 4, 1, a.numSplits);
  REQUIRE(planDecodeLaunch(s, meta, a, 132, plan).isOk());
  CHECK(intAt(plan.split, at("write_o")) == abi::kDecodeWriteCombine);
  CHECK(plan.runCombine());
  a.numSplits = 5;
  a.workspaceBytes = bytes;
  a.combineKernel = true;
  REQUIRE(planDecodeLaunch(s, meta, a, 132, plan).isOk());
  a.combineKernel = false;
  CHECK(intAt(plan.combine, 6) == 5);
  CHECK(plan.splitGeometry.grid == std::array<uint32_t, 3>{5, 8, 4});
  CHECK(plan.combineGeometry.grid == std::array<uint32_t, 3>{1, 32, 4});

  // One split writes O itself, when o and lse hold each group's rows as
  // one matrix (always with one query row; [B, H, Sq, D] with more).
  a.numSplits = 1;
  REQUIRE(planDecodeLaunch(s, meta, a, 132, plan).isOk());
  CHECK(intAt(plan.split, at("write_o")) == 1);
  CHECK_FALSE(plan.runCombine());
  s.maxQLen = 4;
  DecodeArgs rows = goodArgs(4, 3); // q, o [B, H, Sq, D]; lse [B, H, Sq]
  rows.numSplits = 1;
  rows.workspaceBytes = decodeWorkspaceBytes(s, 4, 3, 1);
  REQUIRE(validateDecodeArgs(s, rows).isOk());
  REQUIRE(planDecodeLaunch(s, meta, rows, 132, plan).isOk());
  CHECK(intAt(plan.split, at("write_o")) == 1);
  CHECK_FALSE(plan.runCombine());
  rows.o.stride = {3 * 32 * 128, 128, 32 * 128, 1}; // [B, Sq, H, D]
  REQUIRE(planDecodeLaunch(s, meta, rows, 132, plan).isOk());
  CHECK(intAt(plan.split, at("write_o")) == 0);
  CHECK(plan.runCombine());
  rows.o.stride = {3 * 32 * 128, 3 * 128, 128, 1};
  rows.lse.stride = {32 * 4, 4, 1}; // rows of a head not one matrix
  REQUIRE(planDecodeLaunch(s, meta, rows, 132, plan).isOk());
  CHECK(plan.runCombine());
  rows.numSplits = 2;
  rows.lse.stride = {32 * 3, 3, 1};
  rows.workspaceBytes = decodeWorkspaceBytes(s, 4, 3, 2);
  REQUIRE(planDecodeLaunch(s, meta, rows, 132, plan).isOk());
  CHECK(intAt(plan.split, at("write_o")) == abi::kDecodeWriteLastSplit);
  CHECK_FALSE(plan.runCombine());
  rows.o.stride = {3 * 32 * 128, 128, 32 * 128, 1}; // [B, Sq, H, D]
  REQUIRE(planDecodeLaunch(s, meta, rows, 132, plan).isOk());
  CHECK(intAt(plan.split, at("write_o")) == abi::kDecodeWriteCombine);
  CHECK(plan.runCombine());
  // Tickets: never 0, and not repeated within a long run.
  std::set<uint32_t> tickets;
  for (int i = 0; i < 100000; ++i)
    tickets.insert(nextDecodeMergeTicket());
  CHECK(tickets.size() == 100000);
  CHECK(tickets.count(0) == 0);
  CHECK(decodeSplitV1Params()[3].name == "block_table");
}
