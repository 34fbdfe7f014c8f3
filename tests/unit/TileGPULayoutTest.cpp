//===- TileGPULayoutTest.cpp - the fragment math of the tgpu layouts ------===//
//
// Which thread holds which element of a tile, for every register layout,
// checked against the fragment tables of the PTX ISA (mma.m16n8k16 and
// wgmma.m64nNk16) and for coverage: every element of a distributed tile is
// held (exactly once for accumulators and operands, by the four lanes of a
// quad for row statistics). And where a shared-memory tile's elements lie.
//
//===----------------------------------------------------------------------===//
#include "dialects/TileGPU/IR/TileGPUDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>

using namespace mlir;
using namespace attnc::tgpu;

namespace {

struct Ctx {
  MLIRContext ctx;
  Ctx() { ctx.loadDialect<TgpuDialect>(); }
};

/// How many (thread, register) pairs hold each element of a `shape` tile.
std::map<std::pair<int64_t, int64_t>, int> holders(DistributedLayoutAttr layout,
                                                   std::vector<int64_t> shape) {
  std::map<std::pair<int64_t, int64_t>, int> count;
  for (int64_t t = 0; t < layout.getThreads(); ++t)
    for (int64_t r = 0; r < layout.getRegisters(shape); ++r) {
      SmallVector<int64_t, 2> c = layout.getCoordinate(shape, t, r);
      ++count[{c[0], c.size() > 1 ? c[1] : 0}];
    }
  return count;
}

/// Every element of the tile held exactly `times` times, nothing outside.
void checkCovers(DistributedLayoutAttr layout, std::vector<int64_t> shape,
                 int times) {
  auto count = holders(layout, shape);
  int64_t cols = shape.size() > 1 ? shape[1] : 1;
  REQUIRE(int64_t(count.size()) == shape[0] * cols);
  for (auto [rc, n] : count) {
    CHECK(rc.first >= 0);
    CHECK(rc.first < shape[0]);
    CHECK(rc.second >= 0);
    CHECK(rc.second < cols);
    CHECK(n == times);
  }
}

} // namespace

TEST_CASE("mma accumulator: the m16n8 C fragment per warp", "[tgpu]") {
  Ctx c;
  auto mma = MmaLayoutAttr::get(&c.ctx, /*warps=*/4, /*rowsPerWarp=*/16);
  CHECK(mma.getThreads() == 128);
  CHECK(mma.getRegisters({64, 64}) == 32); // 8 n8 tiles x 4
  checkCovers(mma, {64, 64}, 1);
  // PTX ISA, mma.m16n8k16 C/D: c0,c1 at (groupID, 2 threadID_in_group + i),
  // c2,c3 at (groupID + 8, ...). Lane 5: g = 1, t = 1.
  using V = SmallVector<int64_t, 2>;
  CHECK(mma.getCoordinate({64, 64}, 5, 0) == V{1, 2});
  CHECK(mma.getCoordinate({64, 64}, 5, 1) == V{1, 3});
  CHECK(mma.getCoordinate({64, 64}, 5, 2) == V{9, 2});
  CHECK(mma.getCoordinate({64, 64}, 5, 3) == V{9, 3});
  CHECK(mma.getCoordinate({64, 64}, 5, 4) == V{1, 10}); // next n8 tile
  // Warp 2 holds rows 32..47.
  CHECK(mma.getCoordinate({64, 64}, 64 + 31, 0) == V{32 + 7, 6});
  // Two m16 tiles per warp: the second starts 16 rows down.
  auto mma32 = MmaLayoutAttr::get(&c.ctx, 2, 32);
  checkCovers(mma32, {64, 32}, 1);
  CHECK(mma32.getCoordinate({64, 32}, 0, 16) == V{16, 0});
  CHECK(mma32.getCoordinate({64, 32}, 32, 16) == V{48, 0});
}

TEST_CASE("wgmma accumulator: m64nN per warpgroup", "[tgpu]") {
  Ctx c;
  auto wg = WgmmaLayoutAttr::get(&c.ctx, /*warpgroups=*/2);
  CHECK(wg.getThreads() == 256);
  CHECK(wg.getRegisters({128, 128}) == 64); // N / 2 per thread
  checkCovers(wg, {128, 128}, 1);
  // PTX ISA, wgmma D fragment of m64nN: d[i] at row 16 (warp % 4) + g +
  // 8 ((i / 2) % 2), column 8 (i / 4) + 2t + i % 2.
  using V = SmallVector<int64_t, 2>;
  for (int64_t thread : {0, 37, 101, 127, 128 + 70})
    for (int64_t i = 0; i < 64; ++i) {
      int64_t warp = thread / 32, g = thread % 32 / 4, t = thread % 4;
      V want = {16 * warp + g + 8 * (i / 2 % 2), 8 * (i / 4) + 2 * t + i % 2};
      CHECK(wg.getCoordinate({128, 128}, thread, i) == want);
    }
  checkCovers(WgmmaLayoutAttr::get(&c.ctx, 3), {192, 64}, 1);
}

TEST_CASE("dot operand: the register A fragment of m16n8k16", "[tgpu]") {
  Ctx c;
  auto wg = WgmmaLayoutAttr::get(&c.ctx, 2);
  auto a = DotOperandLayoutAttr::get(&c.ctx, wg);
  CHECK(a.getThreads() == 256);
  CHECK(a.getRegisters({128, 64}) == 32); // 4 k16 chunks x 8
  checkCovers(a, {128, 64}, 1);
  // PTX ISA, A of m16n8k16 (16-bit): a0,a1 (g, 2t + i), a2,a3 (g + 8, ..),
  // a4,a5 (g, 2t + 8 + i), a6,a7 (g + 8, 2t + 8 + i). Lane 6: g 1, t 2.
  using V = SmallVector<int64_t, 2>;
  const V want[8] = {{1, 4},  {1, 5},  {9, 4},  {9, 5},
                     {1, 12}, {1, 13}, {9, 12}, {9, 13}};
  for (int64_t r = 0; r < 8; ++r)
    CHECK(a.getCoordinate({128, 64}, 6, r) == want[r]);
  // The conversion from the accumulator moves nothing: register pair p of
  // k16 chunk k is the accumulator's register pair of n8 tile 2k + p / 2
  // (row half p % 2), in the same thread.
  for (int64_t thread : {0, 6, 77, 255})
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t p = 0; p < 4; ++p)
        for (int64_t e = 0; e < 2; ++e) {
          int64_t accReg = (2 * k + p / 2) * 4 + (p % 2) * 2 + e;
          CHECK(a.getCoordinate({128, 64}, thread, 8 * k + 2 * p + e) ==
                wg.getCoordinate({128, 64}, thread, accReg));
        }
}

TEST_CASE("row statistics: each row in the four lanes of a quad", "[tgpu]") {
  Ctx c;
  for (Attribute parent : {Attribute(WgmmaLayoutAttr::get(&c.ctx, 2)),
                           Attribute(MmaLayoutAttr::get(&c.ctx, 4, 32))}) {
    auto stats = RowStatsLayoutAttr::get(&c.ctx, parent);
    int64_t rows = tileRows(parent);
    checkCovers(stats, {rows}, 4);
    // A thread's statistic of row r is where its accumulator holds row r.
    auto acc = cast<DistributedLayoutAttr>(parent);
    for (int64_t thread : {0, 13, 127})
      for (int64_t r = 0; r < stats.getRegisters({rows}); ++r) {
        int64_t half = r % 2, mt = r / 2;
        CHECK(stats.getCoordinate({rows}, thread, r)[0] ==
              acc.getCoordinate({rows, 8}, thread, mt * 4 + half * 2)[0]);
      }
  }
}

TEST_CASE("shared layouts: padded, swizzled rows, swizzled blocks", "[tgpu]") {
  Ctx c;
  std::vector<int64_t> shape = {64, 128};
  // Padded rows.
  auto padded = SharedLayoutAttr::get(&c.ctx, 0, 8, 0);
  CHECK(padded.getOffset(shape, 3, 5) == 3 * 136 + 5);
  CHECK(padded.getBufferElements(shape) == 64 * 136);
  // Swizzled rows: chunk k of row r at chunk k ^ (r mod 8).
  auto rows = SharedLayoutAttr::get(&c.ctx, 128, 0, 0);
  CHECK(rows.getOffset(shape, 0, 17) == 17);
  CHECK(rows.getOffset(shape, 3, 17) == 3 * 128 + (2 ^ 3) * 8 + 1);
  CHECK(rows.getOffset(shape, 9, 64) == 9 * 128 + (8 ^ 1) * 8);
  // wgmma's K-major blocks of 64 columns, each 128-byte swizzled.
  auto blocks = SharedLayoutAttr::get(&c.ctx, 128, 0, 64);
  CHECK(blocks.getOffset(shape, 5, 3) == 5 * 64 + (0 ^ 5) * 8 + 3);
  CHECK(blocks.getOffset(shape, 5, 64 + 3) == 64 * 64 + 5 * 64 + 5 * 8 + 3);
  // Each layout is a permutation of the buffer's elements, and a group of
  // 8 rows at one 16-byte chunk hits 8 distinct 16-byte bank groups.
  for (SharedLayoutAttr l : {rows, blocks}) {
    std::set<int64_t> seen;
    for (int64_t r = 0; r < shape[0]; ++r)
      for (int64_t col = 0; col < shape[1]; ++col)
        seen.insert(l.getOffset(shape, r, col));
    CHECK(int64_t(seen.size()) == shape[0] * shape[1]);
    CHECK(*seen.rbegin() == shape[0] * shape[1] - 1);
    for (int64_t chunk = 0; chunk < shape[1] / 8; ++chunk) {
      std::set<int64_t> banks;
      for (int64_t r = 0; r < 8; ++r)
        banks.insert(l.getOffset(shape, r, 8 * chunk) / 8 % 8);
      CHECK(banks.size() == 8);
    }
  }
}

TEST_CASE("schedules: combinations no mapping has are rejected", "[tgpu]") {
  Ctx c;
  std::string messages;
  ScopedDiagnosticHandler handler(&c.ctx, [&](Diagnostic &d) {
    messages += d.str() + "\n";
    return success();
  });
  auto emitError = [&] { return mlir::emitError(UnknownLoc::get(&c.ctx)); };
  auto verify = [&](KVSync sync, int64_t stages, Grid grid, bool streamK,
                    Epilogue epilogue) {
    messages.clear();
    return succeeded(WgmmaScheduleAttr::verify(
        emitError, sync, stages, grid, streamK, epilogue, Rescale::threshold));
  };
  CHECK(verify(KVSync::tma, 2, Grid::persistent, true, Epilogue::tma));
  CHECK(messages.empty());
  CHECK(verify(KVSync::mbarrier, 4, Grid::tiles, false, Epilogue::registers));
  CHECK_FALSE(verify(KVSync::pingpong, 2, Grid::persistent, false,
                     Epilogue::registers));
  CHECK_THAT(messages, Catch::Contains("persistent blocks need kv_sync = tma, "
                                       "not pingpong"));
  CHECK_FALSE(verify(KVSync::mbarrier, 2, Grid::tiles, false, Epilogue::tma));
  CHECK_THAT(messages, Catch::Contains("the tma epilogue needs kv_sync = tma"));
  CHECK_FALSE(verify(KVSync::tma, 2, Grid::tiles, true, Epilogue::registers));
  CHECK_THAT(messages, Catch::Contains("stream_k needs persistent blocks"));
  CHECK_FALSE(verify(KVSync::tma, 5, Grid::tiles, false, Epilogue::registers));
  CHECK_THAT(messages, Catch::Contains("kv_stages must be 2 to 4, not 5"));
}
