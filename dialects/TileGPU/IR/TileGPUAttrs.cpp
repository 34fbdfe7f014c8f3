//===- TileGPUAttrs.cpp - layouts and schedules of tgpu -------------------===//
//
// The fragment math of each register layout (which thread holds which
// element), the shared-memory offsets, and the verifiers that keep a layout
// and the tile shape it is put on consistent.
//
//===----------------------------------------------------------------------===//
#include "dialects/TileGPU/IR/TileGPUDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace attnc::tgpu;

#include "dialects/TileGPU/IR/TileGPUAttrInterfaces.cpp.inc"
#include "dialects/TileGPU/IR/TileGPUEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/TileGPU/IR/TileGPUAttrs.cpp.inc"

void TgpuDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/TileGPU/IR/TileGPUAttrs.cpp.inc"
      >();
}

Attribute attnc::tgpu::layoutOf(Value tile) {
  auto type = dyn_cast<RankedTensorType>(tile.getType());
  return type ? type.getEncoding() : Attribute();
}

RankedTensorType attnc::tgpu::withLayout(RankedTensorType type,
                                         Attribute layout) {
  return RankedTensorType::get(type.getShape(), type.getElementType(), layout);
}

int64_t attnc::tgpu::rowsPerWarp(Attribute acc) {
  if (auto mma = dyn_cast<MmaLayoutAttr>(acc))
    return mma.getRowsPerWarp();
  return 16; // #tgpu.wgmma
}

int64_t attnc::tgpu::tileRows(Attribute acc) {
  if (auto mma = dyn_cast<MmaLayoutAttr>(acc))
    return mma.getWarps() * mma.getRowsPerWarp();
  return 64 * cast<WgmmaLayoutAttr>(acc).getWarpgroups();
}

static bool isAccumulatorLayout(Attribute a) {
  return isa_and_nonnull<MmaLayoutAttr, WgmmaLayoutAttr>(a);
}

//===----------------------------------------------------------------------===//
// The m16n8 C layout both accumulator layouts share
//===----------------------------------------------------------------------===//

namespace {
/// Lane 4g + t of warp w.
struct LaneIds {
  int64_t warp, g, t;
  explicit LaneIds(int64_t thread)
      : warp(thread / 32), g(thread % 32 / 4), t(thread % 4) {}
};
} // namespace

/// Register `reg` of `thread` in an accumulator of `cols` columns whose
/// warps hold `rows` rows each: [m16 tile][n8 tile][row half][column].
static SmallVector<int64_t, 2>
accumulatorCoordinate(int64_t rows, int64_t cols, int64_t thread, int64_t reg) {
  LaneIds id(thread);
  int64_t n8 = cols / 8;
  int64_t col = reg % 2, half = reg / 2 % 2, nt = reg / 4 % n8,
          mt = reg / (4 * n8);
  return {id.warp * rows + 16 * mt + id.g + 8 * half, 8 * nt + 2 * id.t + col};
}

static LogicalResult
verifyAccumulatorShape(ArrayRef<int64_t> shape, int64_t rows,
                       function_ref<InFlightDiagnostic()> emitError,
                       StringRef what) {
  if (shape.size() != 2)
    return emitError() << what << " needs a 2-d tile, not rank "
                       << shape.size();
  if (shape[0] != rows)
    return emitError() << what << " spreads " << rows
                       << " rows over its threads, but the tile has "
                       << shape[0];
  if (shape[1] % 8 != 0)
    return emitError() << what
                       << " needs a multiple of 8 columns (n8 tiles), not "
                       << shape[1];
  return success();
}

//===----------------------------------------------------------------------===//
// #tgpu.mma
//===----------------------------------------------------------------------===//

LogicalResult
MmaLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t warps, int64_t rowsPerWarp) {
  if (warps < 1)
    return emitError() << "#tgpu.mma needs at least one warp, not " << warps;
  if (rowsPerWarp != 16 && rowsPerWarp != 32)
    return emitError() << "#tgpu.mma holds 16 or 32 rows per warp, not "
                       << rowsPerWarp;
  return success();
}

int64_t MmaLayoutAttr::getThreads() const { return 32 * getWarps(); }

int64_t MmaLayoutAttr::getRegisters(ArrayRef<int64_t> shape) const {
  return getRowsPerWarp() / 16 * (shape[1] / 8) * 4;
}

SmallVector<int64_t, 2> MmaLayoutAttr::getCoordinate(ArrayRef<int64_t> shape,
                                                     int64_t thread,
                                                     int64_t reg) const {
  return accumulatorCoordinate(getRowsPerWarp(), shape[1], thread, reg);
}

LogicalResult MmaLayoutAttr::verifyEncoding(
    ArrayRef<int64_t> shape, Type,
    function_ref<InFlightDiagnostic()> emitError) const {
  return verifyAccumulatorShape(shape, getWarps() * getRowsPerWarp(), emitError,
                                "#tgpu.mma");
}

//===----------------------------------------------------------------------===//
// #tgpu.wgmma
//===----------------------------------------------------------------------===//

LogicalResult
WgmmaLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t warpgroups) {
  if (warpgroups < 1 || warpgroups > 3)
    return emitError() << "#tgpu.wgmma spreads a tile over 1 to 3 "
                          "warpgroups, not "
                       << warpgroups;
  return success();
}

int64_t WgmmaLayoutAttr::getThreads() const { return 128 * getWarpgroups(); }

int64_t WgmmaLayoutAttr::getRegisters(ArrayRef<int64_t> shape) const {
  return shape[1] / 2;
}

SmallVector<int64_t, 2> WgmmaLayoutAttr::getCoordinate(ArrayRef<int64_t> shape,
                                                       int64_t thread,
                                                       int64_t reg) const {
  return accumulatorCoordinate(16, shape[1], thread, reg);
}

LogicalResult WgmmaLayoutAttr::verifyEncoding(
    ArrayRef<int64_t> shape, Type,
    function_ref<InFlightDiagnostic()> emitError) const {
  if (failed(verifyAccumulatorShape(shape, 64 * getWarpgroups(), emitError,
                                    "#tgpu.wgmma")))
    return failure();
  if (shape[1] > 256)
    return emitError() << "#tgpu.wgmma: wgmma's N is at most 256, not "
                       << shape[1];
  return success();
}

//===----------------------------------------------------------------------===//
// #tgpu.dot_operand
//===----------------------------------------------------------------------===//

LogicalResult
DotOperandLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                             Attribute parent) {
  if (!isAccumulatorLayout(parent))
    return emitError() << "#tgpu.dot_operand's parent must be #tgpu.mma or "
                          "#tgpu.wgmma, not "
                       << parent;
  return success();
}

int64_t DotOperandLayoutAttr::getThreads() const {
  return cast<DistributedLayoutAttr>(getParent()).getThreads();
}

int64_t DotOperandLayoutAttr::getRegisters(ArrayRef<int64_t> shape) const {
  return rowsPerWarp(getParent()) / 16 * (shape[1] / 16) * 8;
}

SmallVector<int64_t, 2>
DotOperandLayoutAttr::getCoordinate(ArrayRef<int64_t> shape, int64_t thread,
                                    int64_t reg) const {
  LaneIds id(thread);
  int64_t k16 = shape[1] / 16;
  int64_t elem = reg % 2, pair = reg / 2 % 4, kc = reg / 8 % k16,
          mt = reg / (8 * k16);
  return {id.warp * rowsPerWarp(getParent()) + 16 * mt + id.g + 8 * (pair % 2),
          16 * kc + 2 * id.t + 8 * (pair / 2) + elem};
}

LogicalResult DotOperandLayoutAttr::verifyEncoding(
    ArrayRef<int64_t> shape, Type elementType,
    function_ref<InFlightDiagnostic()> emitError) const {
  if (shape.size() != 2)
    return emitError() << "#tgpu.dot_operand needs a 2-d tile, not rank "
                       << shape.size();
  if (shape[0] != tileRows(getParent()))
    return emitError() << "#tgpu.dot_operand: its parent holds "
                       << tileRows(getParent()) << " rows, but the tile has "
                       << shape[0];
  if (shape[1] % 16 != 0)
    return emitError() << "#tgpu.dot_operand needs a multiple of 16 columns "
                          "(k16 steps), not "
                       << shape[1];
  if (elementType.getIntOrFloatBitWidth() != 16)
    return emitError() << "#tgpu.dot_operand holds 16-bit elements, not "
                       << elementType;
  return success();
}

//===----------------------------------------------------------------------===//
// #tgpu.row_stats
//===----------------------------------------------------------------------===//

LogicalResult
RowStatsLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           Attribute parent) {
  if (!isAccumulatorLayout(parent))
    return emitError() << "#tgpu.row_stats's parent must be #tgpu.mma or "
                          "#tgpu.wgmma, not "
                       << parent;
  return success();
}

int64_t RowStatsLayoutAttr::getThreads() const {
  return cast<DistributedLayoutAttr>(getParent()).getThreads();
}

int64_t RowStatsLayoutAttr::getRegisters(ArrayRef<int64_t>) const {
  return rowsPerWarp(getParent()) / 16 * 2;
}

SmallVector<int64_t, 2> RowStatsLayoutAttr::getCoordinate(ArrayRef<int64_t>,
                                                          int64_t thread,
                                                          int64_t reg) const {
  LaneIds id(thread);
  return {id.warp * rowsPerWarp(getParent()) + 16 * (reg / 2) + id.g +
          8 * (reg % 2)};
}

LogicalResult RowStatsLayoutAttr::verifyEncoding(
    ArrayRef<int64_t> shape, Type,
    function_ref<InFlightDiagnostic()> emitError) const {
  if (shape.size() != 1)
    return emitError() << "#tgpu.row_stats needs a 1-d tile, not rank "
                       << shape.size();
  if (shape[0] != tileRows(getParent()))
    return emitError() << "#tgpu.row_stats: its parent holds "
                       << tileRows(getParent()) << " rows, but the tile has "
                       << shape[0];
  return success();
}

//===----------------------------------------------------------------------===//
// #tgpu.shared
//===----------------------------------------------------------------------===//

LogicalResult
SharedLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t swizzle, int64_t pad, int64_t colBlock) {
  if (swizzle != 0 && swizzle != 128)
    return emitError() << "#tgpu.shared swizzles 0 or 128 bytes, not "
                       << swizzle;
  if (pad < 0)
    return emitError() << "#tgpu.shared's padding must be >= 0, not " << pad;
  if (swizzle && pad)
    return emitError() << "#tgpu.shared: a swizzled tile has no padding";
  if (colBlock != 0 && colBlock != 64)
    return emitError() << "#tgpu.shared's column blocks are 0 (whole rows) "
                          "or 64 elements, not "
                       << colBlock;
  if (colBlock && !swizzle)
    return emitError() << "#tgpu.shared: column blocks need swizzle = 128";
  return success();
}

LogicalResult SharedLayoutAttr::verifyEncoding(
    ArrayRef<int64_t> shape, Type elementType,
    function_ref<InFlightDiagnostic()> emitError) const {
  if (shape.size() != 2)
    return emitError() << "#tgpu.shared needs a 2-d tile, not rank "
                       << shape.size();
  if (!elementType.isIntOrFloat() || elementType.getIntOrFloatBitWidth() != 16)
    return emitError() << "#tgpu.shared holds 16-bit elements, not "
                       << elementType;
  if (getSwizzle() && shape[1] % 64 != 0)
    return emitError() << "#tgpu.shared: a 128-byte swizzle needs rows of a "
                          "multiple of 64 elements, not "
                       << shape[1];
  return success();
}

int64_t SharedLayoutAttr::getOffset(ArrayRef<int64_t> shape, int64_t row,
                                    int64_t col) const {
  if (!getSwizzle())
    return row * (shape[1] + getPad()) + col;
  // 16-byte chunk k of row r at chunk k ^ (r mod 8).
  auto swizzled = [&](int64_t rowElems, int64_t c) {
    return row * rowElems + ((c / 8) ^ (row % 8)) * 8 + c % 8;
  };
  if (!getColBlock())
    return swizzled(shape[1], col);
  int64_t block = col / getColBlock();
  return block * shape[0] * getColBlock() +
         swizzled(getColBlock(), col % getColBlock());
}

int64_t SharedLayoutAttr::getBufferElements(ArrayRef<int64_t> shape) const {
  return shape[0] * (shape[1] + getPad());
}

//===----------------------------------------------------------------------===//
// #tgpu.wgmma_schedule
//===----------------------------------------------------------------------===//

LogicalResult
WgmmaScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          KVSync kvSync, int64_t kvStages, Grid grid,
                          bool streamK, Epilogue epilogue, Rescale) {
  if (kvStages < 2 || kvStages > 4)
    return emitError() << "#tgpu.wgmma_schedule: kv_stages must be 2 to 4, "
                          "not "
                       << kvStages;
  if (grid == Grid::persistent && kvSync != KVSync::tma)
    return emitError() << "#tgpu.wgmma_schedule: persistent blocks need "
                          "kv_sync = tma, not "
                       << stringifyKVSync(kvSync);
  if (streamK && grid != Grid::persistent)
    return emitError() << "#tgpu.wgmma_schedule: stream_k needs persistent "
                          "blocks";
  if (epilogue == Epilogue::tma && kvSync != KVSync::tma)
    return emitError() << "#tgpu.wgmma_schedule: the tma epilogue needs "
                          "kv_sync = tma, not "
                       << stringifyKVSync(kvSync);
  return success();
}

LogicalResult
MmaScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t rowsPerWarp, bool, int64_t kvStages, Staging,
                        int64_t keyWarps) {
  if (rowsPerWarp != 16 && rowsPerWarp != 32)
    return emitError() << "#tgpu.mma_schedule: rows_per_warp must be 16 or "
                          "32, not "
                       << rowsPerWarp;
  if (kvStages < 2 || kvStages > 4)
    return emitError() << "#tgpu.mma_schedule: kv_stages must be 2 to 4, not "
                       << kvStages;
  if (!llvm::is_contained({1, 2, 4, 8}, keyWarps))
    return emitError() << "#tgpu.mma_schedule: key_warps must be 1, 2, 4 or "
                          "8, not "
                       << keyWarps;
  return success();
}
