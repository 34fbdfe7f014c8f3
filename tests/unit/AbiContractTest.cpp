//===- AbiContractTest.cpp - the compiler/runtime contract itself ---------===//
//
// attnc/abi is what the compiler and the runtime must agree on; these tests
// check the contract on its own, without either side: parameter tables
// (unique names, pointers first, the documented order), the grid rules,
// the tensor-map constants, workspace layouts (aligned, in order, not
// overlapping) and the magic divisors (exact for every numerator the
// kernels divide).
//
//===----------------------------------------------------------------------===//
#include "attnc/abi/GridRules.h"
#include "attnc/abi/LaunchParams.h"
#include "attnc/abi/MagicDivisor.h"
#include "attnc/abi/RowTensors.h"
#include "attnc/abi/TensorMaps.h"
#include "attnc/abi/Workspace.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace attnc;
using abi::ParamDesc;
using abi::ParamType;

namespace {

template <size_t N> std::string namesOf(const std::array<ParamDesc, N> &table) {
  std::string out;
  for (const ParamDesc &p : table)
    out += (out.empty() ? "" : " ") + std::string(p.name);
  return out;
}

bool isIdentifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

// Names unique and identifiers, the pointers first and every other entry
// an i64 (the fixed-list contracts pass sizes, strides and modes as i64).
template <size_t N>
void checkFixedTable(const std::array<ParamDesc, N> &table) {
  INFO(namesOf(table));
  std::set<std::string_view> names;
  for (const ParamDesc &p : table) {
    CHECK(isIdentifier(p.name));
    CHECK(names.insert(p.name).second);
  }
  const size_t pointers = abi::leadingPointers(table);
  CHECK(pointers > 0);
  for (size_t i = pointers; i < N; ++i) {
    INFO(table[i].name);
    CHECK(table[i].type == ParamType::I64);
  }
  for (size_t i = 0; i < N; ++i)
    CHECK(abi::indexOf(table, table[i].name) == i);
  CHECK(abi::indexOf(table, "no_such_param") == N);
}

} // namespace

TEST_CASE("parameter tables: unique names, pointers first", "[abi]") {
  checkFixedTable(abi::kAttentionFwdParams);
  checkFixedTable(abi::kDecodeSplitParams);
  checkFixedTable(abi::kDecodeCombineParams);
  checkFixedTable(abi::kKVAppendParams);
  checkFixedTable(abi::kLseMergeParams);
  checkFixedTable(abi::kAttentionBwdParams);
}

// The orders below are the documented ABI (docs/architecture.md, the
// headers' comments): a change to a table must change this test too, on
// purpose, and bump the grid rule's version.
TEST_CASE("parameter tables follow the documented order", "[abi]") {
  CHECK(namesOf(abi::kAttentionFwdParams) ==
        "q k v o lse batch seq_q seq_kv q_stride_b q_stride_h q_stride_s "
        "k_stride_b k_stride_h k_stride_s v_stride_b v_stride_h v_stride_s "
        "o_stride_b o_stride_h o_stride_s lse_stride_b lse_stride_h");
  CHECK(abi::leadingPointers(abi::kAttentionFwdParams) == 5);
  CHECK(abi::kAttentionFwdParams[4].type == ParamType::F32Ptr); // lse
  CHECK(namesOf(abi::kAttentionBwdParams) ==
        "q k v o dout lse dq dk dv dq_accum delta batch seq_q seq_kv "
        "q_stride_b q_stride_h q_stride_s k_stride_b k_stride_h k_stride_s "
        "v_stride_b v_stride_h v_stride_s o_stride_b o_stride_h o_stride_s "
        "dout_stride_b dout_stride_h dout_stride_s dq_stride_b dq_stride_h "
        "dq_stride_s dk_stride_b dk_stride_h dk_stride_s dv_stride_b "
        "dv_stride_h dv_stride_s lse_stride_b lse_stride_h");
  CHECK(abi::leadingPointers(abi::kAttentionBwdParams) == 11);
  CHECK(namesOf(abi::kDecodeSplitParams) ==
        "q k_cache v_cache block_table kv_lens o_part lse_part o lse "
        "merge_counts batch seq_q num_splits max_blocks num_pages q_stride_b "
        "q_stride_h q_stride_s k_stride_p k_stride_h k_stride_s v_stride_p "
        "v_stride_h v_stride_s o_stride_b o_stride_h o_stride_s lse_stride_b "
        "lse_stride_h write_o merge_ticket");
  CHECK(abi::leadingPointers(abi::kDecodeSplitParams) == 10);
  CHECK(namesOf(abi::kDecodeCombineParams) ==
        "o_part lse_part o lse batch seq_q num_splits o_stride_b o_stride_h "
        "o_stride_s lse_stride_b lse_stride_h");
  CHECK(abi::leadingPointers(abi::kDecodeCombineParams) == 4);
  CHECK(namesOf(abi::kKVAppendParams) ==
        "key value slot_mapping key_cache value_cache rows num_pages "
        "k_stride_t k_stride_h v_stride_t v_stride_h kc_stride_p kc_stride_h "
        "kc_stride_s vc_stride_p vc_stride_h vc_stride_s");
  CHECK(abi::leadingPointers(abi::kKVAppendParams) == 5);
  CHECK(abi::kKVAppendParams[2].type == ParamType::I64Ptr);
  CHECK(namesOf(abi::kLseMergeParams) ==
        "o_a lse_a o_b lse_b o lse batch seq_q oa_stride_b oa_stride_h "
        "oa_stride_s lsea_stride_b lsea_stride_h ob_stride_b ob_stride_h "
        "ob_stride_s lseb_stride_b lseb_stride_h o_stride_b o_stride_h "
        "o_stride_s lse_stride_b lse_stride_h");
  CHECK(abi::leadingPointers(abi::kLseMergeParams) == 6);
}

TEST_CASE("the decode kernels share the partials' parameters", "[abi]") {
  // The split kernel writes what the combine reads, in the same types.
  for (std::string_view name :
       {"o_part", "lse_part", "o", "lse", "batch", "seq_q", "num_splits",
        "o_stride_b", "o_stride_h", "o_stride_s", "lse_stride_b",
        "lse_stride_h"}) {
    INFO(name);
    size_t s = abi::indexOf(abi::kDecodeSplitParams, name);
    size_t c = abi::indexOf(abi::kDecodeCombineParams, name);
    REQUIRE(s < abi::kDecodeSplitParams.size());
    REQUIRE(c < abi::kDecodeCombineParams.size());
    CHECK(abi::kDecodeSplitParams[s].type == abi::kDecodeCombineParams[c].type);
  }
  CHECK(abi::kDecodeSplitParams[abi::indexOf(abi::kDecodeSplitParams,
                                             "block_table")]
            .type == ParamType::I32Ptr);
  CHECK(abi::kDecodeSplitParams[abi::indexOf(abi::kDecodeSplitParams,
                                             "merge_counts")]
            .type == ParamType::I64Ptr);
}

TEST_CASE("optional attention parameters: known types, in appended order",
          "[abi]") {
  std::set<std::string_view> names;
  for (const ParamDesc &p : abi::kAttentionFwdParams)
    names.insert(p.name);
  for (const ParamDesc &p : abi::kAttentionOptionalParams) {
    INFO(p.name);
    CHECK(isIdentifier(p.name));
    CHECK(names.insert(p.name).second); // clashes with no contract name
  }
  // The order the wgmma mapping appends them: Q, K, V maps, O's map, the
  // stream-K schedule, the workspace last.
  std::vector<std::string_view> appended;
  for (const char *n : abi::kAttentionTensorMapParams)
    appended.push_back(n);
  appended.push_back(abi::kAttentionOutputTensorMapParam);
  for (const char *n : abi::kAttentionStreamKParams)
    appended.push_back(n);
  appended.push_back(abi::kAttentionWorkspaceParam);
  size_t last = 0;
  for (std::string_view n : appended) {
    INFO(n);
    size_t at = abi::indexOf(abi::kAttentionOptionalParams, n);
    REQUIRE(at < abi::kAttentionOptionalParams.size());
    CHECK(at >= last);
    last = at;
    const ParamType t = abi::kAttentionOptionalParams[at].type;
    if (n.find("_tmap") != std::string_view::npos)
      CHECK(t == ParamType::TensorMap);
    else if (n.substr(0, 3) == "sk_")
      CHECK(t == ParamType::I32);
    else
      CHECK(abi::isPointer(t));
  }
  CHECK(last == abi::kAttentionOptionalParams.size() - 1); // workspace last
}

TEST_CASE("row kernels' tensors: unique names, apart from rows and strides",
          "[abi]") {
  auto check = [](const auto &names, size_t inputs) {
    std::set<std::string_view> seen;
    CHECK(inputs <= names.size());
    for (std::string_view n : names) {
      INFO(n);
      CHECK(isIdentifier(n));
      CHECK(seen.insert(n).second);
      CHECK(n != abi::kRowsParam);
      // A stride parameter's name must not be a tensor's.
      CHECK((n.size() < abi::kRowStrideSuffix.size() ||
             n.substr(n.size() - abi::kRowStrideSuffix.size()) !=
                 abi::kRowStrideSuffix));
    }
  };
  check(abi::kGatedActTensors, abi::kGatedActInputs);
  check(abi::kAddRmsNormTensors, abi::kAddRmsNormInputs);
  check(abi::kRopeTensors, abi::kRopeTensors.size());
  CHECK(std::string_view(abi::kAddRmsNormTensors[2]) == "weight");
}

TEST_CASE("grid rules: distinct, versioned names", "[abi]") {
  std::vector<std::string_view> rules = {
      abi::kGridRuleAttentionFwd, abi::kGridRuleAttentionFwdPersistent,
      abi::kGridRuleDecodeSplit,  abi::kGridRuleDecodeCombine,
      abi::kGridRuleKVAppend,     abi::kGridRuleLseMerge,
      abi::kGridRuleRowwise,      abi::kGridRuleAttentionBwdPreprocess,
      abi::kGridRuleAttentionBwd, abi::kGridRuleAttentionBwdConvert};
  std::set<std::string_view> unique(rules.begin(), rules.end());
  CHECK(unique.size() == rules.size());
  for (std::string_view r : rules) {
    INFO(r);
    CHECK(r.find("_v") != std::string_view::npos);
  }
  CHECK(abi::isAttentionFwdGridRule(abi::kGridRuleAttentionFwd));
  CHECK(abi::isAttentionFwdGridRule(abi::kGridRuleAttentionFwdPersistent));
  CHECK_FALSE(abi::isAttentionFwdGridRule(abi::kGridRuleDecodeSplit));
  CHECK(abi::ceilDiv(0, 16) == 0);
  CHECK(abi::ceilDiv(1, 16) == 1);
  CHECK(abi::ceilDiv(16, 16) == 1);
  CHECK(abi::ceilDiv(17, 16) == 2);
  // The combine's block spreads the splits over whole warps.
  CHECK(abi::kDecodeCombineThreads % 32 == 0);
  std::set<int64_t> modes = {abi::kDecodeWriteCombine,
                             abi::kDecodeWriteOneSplit,
                             abi::kDecodeWriteLastSplit};
  CHECK(modes.size() == 3);
}

TEST_CASE("tensor maps: one swizzled row per box row", "[abi]") {
  CHECK(abi::kTensorMapSwizzle == abi::TensorMapSwizzle::B128);
  CHECK(abi::kTensorMapBoxCols * abi::kTensorMapElementBytes ==
        abi::kTensorMapSwizzleBytes);
  CHECK(abi::kTensorMapBoxCols == 64);
  CHECK(abi::kTensorMapSwizzleAtomBytes == 1024);
  CHECK(abi::kAttentionOutputTensorMapBoxRows <= abi::kTensorMapMaxBoxRows);
  CHECK(abi::kTensorMapBytes % abi::kTensorMapParamAlign == 0);
  CHECK(abi::kTensorMapSwizzleBytes % abi::kTensorMapAlignBytes == 0);
}

namespace {

// Regions in order, each starting aligned, none overlapping the next, all
// inside the total; the total aligned too.
void checkRegions(const std::vector<abi::WorkspaceRegion> &regions,
                  int64_t total) {
  int64_t end = 0;
  for (const abi::WorkspaceRegion &r : regions) {
    CHECK(r.offset % abi::kWorkspaceAlign == 0);
    CHECK(r.bytes >= 0);
    CHECK(r.offset >= end);
    end = r.end();
  }
  CHECK(end <= total);
}

} // namespace

TEST_CASE("decode workspace: aligned, in order, not overlapping", "[abi]") {
  for (int64_t splits : {1, 2, 7, 64, 256})
    for (int64_t batch : {1, 3, 64})
      for (auto [hq, hkv] :
           {std::pair<int64_t, int64_t>{1, 1}, {32, 8}, {28, 4}, {128, 1}})
        for (int64_t seqQ : {1, 3, 16})
          for (int64_t d : {64, 80, 128, 256}) {
            INFO("splits " << splits << " batch " << batch << " hq " << hq
                           << " seq_q " << seqQ << " d " << d);
            abi::DecodeWorkspaceLayout w =
                abi::decodeWorkspaceLayout(splits, batch, hq, hkv, seqQ, d);
            const int64_t rows = splits * batch * hq * seqQ;
            CHECK(w.oPart.offset == 0);
            CHECK(w.oPart.bytes == rows * d * 4);
            CHECK(w.lsePart.bytes == rows * 4);
            CHECK(w.mergeCounts.bytes == batch * hkv * 8);
            checkRegions({w.oPart, w.lsePart, w.mergeCounts}, w.total);
            CHECK(w.total % abi::kWorkspaceAlign == 0);
            // No more padding than one alignment per region.
            CHECK(w.total < w.oPart.bytes + w.lsePart.bytes +
                                w.mergeCounts.bytes + 3 * abi::kWorkspaceAlign);
          }
  static_assert(abi::decodeWorkspaceLayout(2, 1, 1, 1, 1, 64).total ==
                512 + 256 + 256);
}

TEST_CASE("stream-K workspace: flags, then one slot per block and warpgroup",
          "[abi]") {
  for (int64_t blocks : {1, 2, 63, 64, 65, 132, 1000})
    for (int64_t blockM : {64, 128, 192})
      for (int64_t d : {64, 128, 256}) {
        INFO("blocks " << blocks << " block_m " << blockM << " d " << d);
        abi::StreamKWorkspaceLayout w =
            abi::streamKWorkspaceLayout(blocks, blockM, d);
        const int64_t slots = blocks * (blockM / 64);
        CHECK(abi::streamKWorkspaceLayout(blocks, blockM, d).flags.bytes ==
              slots * abi::kStreamKFlagBytes);
        CHECK(w.slotBytes == (d / 8 + 1) * 128 * 16);
        CHECK(w.slots.bytes == slots * w.slotBytes);
        checkRegions({w.flags, w.slots}, w.total);
        CHECK(w.total == w.slots.end());
        // Every thread's 16-byte chunk store is aligned.
        CHECK(w.slotBytes % abi::kStreamKThreadBytes == 0);
        CHECK(w.slots.offset < w.flags.bytes + abi::kWorkspaceAlign);
      }
  CHECK(abi::streamKWarpgroups(0) == 1);
  CHECK(abi::streamKWarpgroups(128) == 2);
}

namespace {

std::vector<uint32_t> divisorsUnderTest() {
  std::vector<uint32_t> ds;
  for (uint32_t d = 1; d <= 300; ++d) // dense, 1 included
    ds.push_back(d);
  for (int s = 9; s < 32; ++s) // powers of two and their neighbours
    for (int64_t delta : {-1, 0, 1})
      ds.push_back(uint32_t((int64_t(1) << s) + delta));
  for (uint32_t p : {65521u, 1000003u, 16777213u, 2147483629u,
                     2147483647u,  // 2^31 - 1
                     4294967291u}) // the largest 32-bit prime
    ds.push_back(p);
  for (uint32_t big : {2147483648u, 2147483649u, 3000000000u, 4294967295u})
    ds.push_back(big);
  std::mt19937 rng(20261207);
  for (int i = 0; i < 200; ++i)
    ds.push_back(rng() | 1u);
  return ds;
}

} // namespace

TEST_CASE("magic divisors divide exactly below 2^31", "[abi]") {
  static_assert(abi::magicDivide(100, 7, abi::magicDivisor(7)) == 14);
  static_assert(abi::magicDivisor(1) == abi::MagicDivisor{});
  std::mt19937 rng(31);
  const uint32_t limit = uint32_t(abi::kMagicNumeratorLimit);
  for (uint32_t d : divisorsUnderTest()) {
    const abi::MagicDivisor m = abi::magicDivisor(d);
    INFO("d " << d << " mul " << m.mul << " shr " << m.shr);
    REQUIRE(m.shr < 32);
    auto check = [&](uint32_t x) {
      if (x >= limit)
        return;
      if (abi::magicDivide(x, d, m) != x / d) {
        INFO("x " << x);
        FAIL("magicDivide(x, d) != x / d");
      }
    };
    for (uint32_t x = 0; x < (1u << 14); ++x) // a dense sweep from 0
      check(x);
    for (uint32_t x = limit - (1u << 12); x < limit; ++x) // and below 2^31
      check(x);
    // Around every multiple of d the sweeps do not reach (the largest
    // errors of a round-up multiplier sit just below a multiple).
    const uint64_t multiples = (uint64_t(limit) - 1) / d;
    for (uint64_t k = 1; k <= multiples; k += 1 + multiples / 512)
      for (int64_t delta : {-1, 0, 1})
        check(uint32_t(int64_t(k * d) + delta));
    for (int i = 0; i < 2000; ++i)
      check(rng() % limit);
  }
}
