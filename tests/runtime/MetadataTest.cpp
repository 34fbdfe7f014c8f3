//===- MetadataTest.cpp - meta.json schema --------------------------------===//

#include "attnc/runtime/Metadata.h"
#include "attnc/runtime/Decode.h"
#include "attnc/runtime/Launch.h"

#include <catch2/catch.hpp>

using namespace attnc;

namespace {
KernelMetadata sampleMeta() {
  KernelMetadata meta;
  meta.entry = "attnc_attention_fwd";
  meta.arch = "sm_90a";
  meta.block = {256, 1, 1};
  meta.gridRule = "attention_fwd_v1";
  meta.blockM = 128;
  meta.dynamicSmem = 98304;
  meta.params = {{"q", ParamKind::Ptr},
                 {"batch", ParamKind::I64},
                 {"n", ParamKind::I32},
                 {"scale", ParamKind::F32}};
  meta.spec = "op=attention_fwd;dtype=bf16";
  meta.buildId = "0.1.0-abc";
  meta.files = {{"kernel.ptx", 1234, std::string(32, 'a')}};
  return meta;
}

std::string metaError(const std::string &text) {
  Result<KernelMetadata> result = parseMetadata(text);
  INFO(text);
  REQUIRE_FALSE(result.isOk());
  CHECK(result.status().code() == ErrorCode::ParseError);
  return result.status().message();
}
} // namespace

TEST_CASE("meta.json has the documented schema", "[metadata]") {
  // The exact file, as the compiler's metadata writer and tools can rely on.
  CHECK(writeMetadata(sampleMeta()) == R"({
  "meta_version": 3,
  "entry": "attnc_attention_fwd",
  "arch": "sm_90a",
  "block": [
    256,
    1,
    1
  ],
  "grid_rule": "attention_fwd_v1",
  "block_m": 128,
  "dynamic_smem": 98304,
  "params": [
    {
      "name": "q",
      "kind": "ptr"
    },
    {
      "name": "batch",
      "kind": "i64"
    },
    {
      "name": "n",
      "kind": "i32"
    },
    {
      "name": "scale",
      "kind": "f32"
    }
  ],
  "spec": "op=attention_fwd;dtype=bf16",
  "build_id": "0.1.0-abc",
  "files": {
    "kernel.ptx": {
      "size": 1234,
      "xxh3_128": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    }
  }
}
)");
}

TEST_CASE("metadata round-trips", "[metadata]") {
  KernelMetadata meta = sampleMeta();
  Result<KernelMetadata> back = parseMetadata(writeMetadata(meta));
  REQUIRE(back.isOk());
  CHECK(*back == meta);

  meta.params = attentionFwdV1Params();
  meta.files.clear();
  back = parseMetadata(writeMetadata(meta));
  REQUIRE(back.isOk());
  CHECK(*back == meta);
  CHECK(back->params.size() == 22);

  // A TMA kernel's tensor maps keep their kind and box rows.
  meta.params.push_back({"k_tmap", ParamKind::TensorMap, 176});
  back = parseMetadata(writeMetadata(meta));
  REQUIRE(back.isOk());
  CHECK(*back == meta);
  CHECK(back->params.back().boxRows == 176);
  CHECK(paramKindSize(ParamKind::TensorMap) == 128);
  // A TMA epilogue's O map after it, with its own box rows.
  meta.params.push_back({abi::kAttentionOutputTensorMapParam,
                         ParamKind::TensorMap,
                         abi::kAttentionOutputTensorMapBoxRows});
  back = parseMetadata(writeMetadata(meta));
  REQUIRE(back.isOk());
  CHECK(*back == meta);
  CHECK(back->params.back().name == "o_tmap");
  CHECK(back->params.back().boxRows == 64);
  meta.params.pop_back();
  // box_rows belongs to a tensormap, and a tensormap needs it.
  meta.params.back().boxRows = 0;
  CHECK(parseMetadata(writeMetadata(meta))
            .status()
            .message()
            .find("a tensormap needs box_rows 1 to 256") != std::string::npos);
  meta.params.back() = {"k", ParamKind::Ptr, 64};
  CHECK_FALSE(parseMetadata(writeMetadata(meta)).isOk());

  // A persistent kernel: the same contract under its own grid rule.
  meta = sampleMeta();
  meta.params = attentionFwdV1Params();
  meta.gridRule = abi::kGridRuleAttentionFwdPersistent;
  CHECK(validateMetadata(meta).isOk());
  back = parseMetadata(writeMetadata(meta));
  REQUIRE(back.isOk());
  CHECK(back->gridRule == "attention_fwd_persistent_v1");
  CHECK(*back == meta);

  // The K/V tile and ring depth: optional, written when recorded.
  meta.blockN = 128;
  meta.kvStages = 2;
  back = parseMetadata(writeMetadata(meta));
  REQUIRE(back.isOk());
  CHECK(back->blockN == 128);
  CHECK(back->kvStages == 2);
  CHECK(*back == meta);
  CHECK(writeMetadata(sampleMeta()).find("block_n") == std::string::npos);

  // Captured tensors: their dtypes and ranks, written when there are some;
  // their parameters must fit them.
  meta = sampleMeta();
  meta.params = attentionFwdV1Params();
  meta.captures = {{"f32", 1}, {"i8", 2}};
  for (const char *name : {"capture0", "capture0_size0", "capture0_stride0",
                           "capture1", "capture1_size0", "capture1_size1",
                           "capture1_stride0", "capture1_stride1"})
    meta.params.push_back({name, std::string(name).size() <= 8
                                     ? ParamKind::Ptr
                                     : ParamKind::I64});
  back = parseMetadata(writeMetadata(meta));
  REQUIRE(back.isOk());
  CHECK(*back == meta);
  CHECK(writeMetadata(sampleMeta()).find("captures") == std::string::npos);
  auto rejects = [&](KernelMetadata m, const char *why) {
    Status status = validateMetadata(m);
    CHECK_FALSE(status.isOk());
    CHECK(status.message().find(why) != std::string::npos);
  };
  KernelMetadata m = meta;
  m.captures[1].dtype = "f64";
  rejects(m, "captures: dtype \"f64\" and rank 2");
  m = meta;
  m.captures[0].rank = 5;
  rejects(m, "captures: dtype \"f32\" and rank 5");
  m = meta;
  m.captures.pop_back(); // capture1's parameters name a capture not listed
  rejects(m, "parameter \"capture1\" does not fit the captures listed");
  m = meta;
  m.params.push_back({"capture0_size1", ParamKind::I64}); // rank 1
  rejects(m, "parameter \"capture0_size1\" does not fit");
  m = meta;
  m.params[22].kind = ParamKind::I64; // capture0's data
  rejects(m, "parameter \"capture0\" does not fit");
  m = meta;
  m.params.pop_back(); // capture1_stride1 missing
  rejects(m, "captures: 2 captured tensors need 8 parameters (data, sizes, "
             "strides); the kernel lists 7");
}

TEST_CASE("a decode split kernel's metadata carries its K/V tile and ring",
          "[metadata]") {
  KernelMetadata meta = sampleMeta();
  meta.gridRule = abi::kGridRuleDecodeSplit;
  meta.params = decodeSplitV1Params();
  CHECK(validateMetadata(meta).message() ==
        "invalid kernel metadata: grid rule decode_split_v4 needs block_n and "
        "kv_stages >= 1 (the split count is chosen from them)");
  meta.blockN = 16;
  CHECK_FALSE(validateMetadata(meta).isOk());
  meta.kvStages = 3;
  CHECK(validateMetadata(meta).isOk());
  Result<KernelMetadata> back = parseMetadata(writeMetadata(meta));
  REQUIRE(back.isOk());
  CHECK(*back == meta);
  meta.blockN = -1;
  CHECK_FALSE(validateMetadata(meta).isOk());
}

TEST_CASE("the attention_fwd_v1 parameter list is the contract", "[metadata]") {
  std::vector<std::string> names;
  for (const KernelParam &param : attentionFwdV1Params()) {
    names.push_back(param.name);
    CHECK(paramKindSize(param.kind) == 8);
  }
  CHECK(names ==
        std::vector<std::string>{"q",           "k",          "v",
                                 "o",           "lse",        "batch",
                                 "seq_q",       "seq_kv",     "q_stride_b",
                                 "q_stride_h",  "q_stride_s", "k_stride_b",
                                 "k_stride_h",  "k_stride_s", "v_stride_b",
                                 "v_stride_h",  "v_stride_s", "o_stride_b",
                                 "o_stride_h",  "o_stride_s", "lse_stride_b",
                                 "lse_stride_h"});
}

TEST_CASE("damaged metadata is rejected with a reason", "[metadata]") {
  auto edit = [](const std::string &from, const std::string &to) {
    std::string text = writeMetadata(sampleMeta());
    size_t pos = text.find(from);
    REQUIRE(pos != std::string::npos);
    return text.replace(pos, from.size(), to);
  };
  CHECK(metaError("garbage").rfind("meta: JSON parse error at line 1", 0) == 0);
  CHECK(metaError(writeMetadata(sampleMeta()).substr(0, 100))
            .rfind("meta: JSON parse error", 0) == 0);
  // An entry of the schema before block_n and kv_stages.
  CHECK(metaError(edit("\"meta_version\": 3", "\"meta_version\": 2")) ==
        "meta.meta_version: unsupported version 2 (expected 3)");
  CHECK(metaError(edit("\"block_m\"", "\"blockm\"")) ==
        "meta: missing required key \"block_m\"");
  CHECK(metaError(edit("\"spec\":", "\"extra\": 1, \"spec\":")) ==
        "meta: unknown key \"extra\"");
  CHECK(metaError(edit("\"kind\": \"i32\"", "\"kind\": \"u8\"")) ==
        "meta.params[2].kind: unknown parameter kind \"u8\" (expected ptr, "
        "i64, i32, f32 or tensormap)");
  const std::string block = "\"block\": [\n    256,\n    1,\n    1\n  ]";
  CHECK(metaError(edit(block, "\"block\": [256, 1]")) ==
        "meta.block: expected an array of 3 integers");
  CHECK(metaError(edit(block, "\"block\": [256, 8, 1]")) ==
        "meta: invalid kernel metadata: block has 2048 threads; CUDA allows "
        "at most 1024");
  CHECK(metaError(edit("\"name\": \"n\"", "\"name\": \"q\"")) ==
        "meta: invalid kernel metadata: parameter \"q\" appears twice");
  CHECK(metaError(edit("\"attnc_attention_fwd\"", "\"\"")) ==
        "meta: invalid kernel metadata: entry \"\" is not a kernel symbol "
        "name");
  CHECK(metaError(edit(std::string(32, 'a'), "xyz")) ==
        "meta: invalid kernel metadata: checksum of \"kernel.ptx\" is not 32 "
        "lowercase hex digits");
  CHECK(metaError(edit("\"size\": 1234", "\"size\": -4")) ==
        "meta.files.kernel.ptx.size is negative");
  CHECK(metaError(edit("\"kernel.ptx\"", "\"../x\"")) ==
        "meta: invalid kernel metadata: file name \"../x\" is not valid");
}
