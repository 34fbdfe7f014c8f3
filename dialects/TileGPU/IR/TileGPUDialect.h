//===- TileGPUDialect.h - the GPU-level tile dialect -----------*- C++ -*-===//
#ifndef ATTNC_DIALECTS_TILEGPU_IR_TILEGPUDIALECT_H
#define ATTNC_DIALECTS_TILEGPU_IR_TILEGPUDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TensorEncoding.h"
#include "llvm/ADT/SmallVector.h"

#include "dialects/TileGPU/IR/TileGPUDialect.h.inc"
#include "dialects/TileGPU/IR/TileGPUEnums.h.inc"

#include "dialects/TileGPU/IR/TileGPUAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/TileGPU/IR/TileGPUAttrs.h.inc"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#define GET_OP_CLASSES
#include "dialects/TileGPU/IR/TileGPUOps.h.inc"

namespace attnc::tgpu {

/// The kernel attribute that holds a kernel's schedule
/// (#tgpu.wgmma_schedule).
inline constexpr const char *kScheduleAttrName = "tgpu.schedule";

/// The layout a tile value carries (its tensor type's encoding), or null.
mlir::Attribute layoutOf(mlir::Value tile);
/// `type` with `layout` as its encoding.
mlir::RankedTensorType withLayout(mlir::RankedTensorType type,
                                  mlir::Attribute layout);

/// Rows of a tile in an accumulator layout (#tgpu.mma, #tgpu.wgmma) per
/// warp, and the rows of the whole tile: what its dot operand and row
/// statistics layouts follow.
int64_t rowsPerWarp(mlir::Attribute accumulatorLayout);
int64_t tileRows(mlir::Attribute accumulatorLayout);

} // namespace attnc::tgpu

#endif
