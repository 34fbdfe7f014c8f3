//===- RooflineTest.cpp - FLOP and byte counts against hand counts --------===//
#include "compiler/Analysis/Roofline.h"

#include <catch2/catch.hpp>

using namespace attnc;

static AttentionProblem tiny(int64_t sq, int64_t skv) {
  AttentionProblem p;
  p.batch = 1;
  p.heads = p.kvHeads = 1;
  p.headDim = 1;
  p.seqQ = sq;
  p.seqKV = skv;
  return p;
}

TEST_CASE("visible pairs follow the masks", "[roofline]") {
  AttentionProblem p = tiny(4, 4);
  CHECK(visiblePairs(p) == 16);
  p.causal = true; // rows see 1, 2, 3, 4 keys
  CHECK(visiblePairs(p) == 10);
  p.causal = false;
  p.windowLeft = 1;
  p.windowRight = 0; // rows see 1, 2, 2, 2 keys
  CHECK(visiblePairs(p) == 7);
  p.windowRight = 1; // rows see 2, 3, 3, 2 keys
  CHECK(visiblePairs(p) == 10);
}

TEST_CASE("causal is bottom-right aligned when lengths differ", "[roofline]") {
  AttentionProblem p = tiny(2, 5);
  p.causal = true; // row 0 sees keys 0..3, row 1 sees 0..4
  CHECK(visiblePairs(p) == 9);
  p = tiny(5, 2);
  p.causal = true; // rows 0..2 see nothing, row 3 sees 1 key, row 4 sees 2
  CHECK(visiblePairs(p) == 3);
}

TEST_CASE("flops and bytes of one Llama-3.1-8B layer", "[roofline]") {
  AttentionProblem p; // 32/8 heads, D 128, seq 8192, bf16, with LSE
  CHECK(attentionFlops(tiny(2, 2)) == 16.0);
  // Q and O: 8192·32·128·2 bytes each; K and V: 8192·8·128·2; LSE 8192·32·4.
  CHECK(fusedBytes(p) == 2 * 67108864.0 + 2 * 16777216.0 + 1048576.0);
  // Standard attention adds four trips of the 32·8192·8192 bf16 matrix.
  CHECK(unfusedBytes(p) == 2 * 67108864.0 + 2 * 16777216.0 + 4 * 4294967296.0);
  p.causal = true;
  CHECK(attentionFlops(p) == 4.0 * 32 * 128 * (8192.0 * 8193.0 / 2));
}

TEST_CASE("the floor is the slower of compute and memory", "[roofline]") {
  Device d{"test", 1e12, 1e9};
  CHECK(floorSeconds(2e12, 1e9, d) == 2.0);
  CHECK(floorSeconds(1e12, 3e9, d) == 3.0);
}
