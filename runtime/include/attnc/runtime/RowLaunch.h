//===- RowLaunch.h - Launch ABI of the fused elementwise kernels -*- C++
//-*-===//
//
// Kernels of the ops "silu_mul", "gelu_mul" and "add_rmsnorm" follow the
// grid rule abi::kGridRuleRowwise (attnc/abi): one pointer per tensor
// (inputs, then outputs), abi::kRowsParam, then "<name>_stride"
// (abi::kRowStrideSuffix; elements between rows) of each [rows, d] tensor.
// The tensors' names and order are abi/RowTensors.h's:
// Grid: ceil(rows / meta.block_m) programs of meta.block threads. The tensors,
// in order:
//   silu_mul, gelu_mul: x [rows, 2d], out [rows, d]
//   add_rmsnorm:        x, residual [rows, d], weight [d],
//                       out, residual_out [rows, d]
//   rope:               positions [rows] (i64 or i32, contiguous),
//                       query [rows, heads * head_dim],
//                       key [rows, kv_heads * head_dim],
//                       cos_sin_cache [max_position, rotary_dim] (any
//                       number of rows); query and key are rotated in place
//                       (only their first rotary_dim columns of each head
//                       are written)
// Outputs may alias inputs of the same shape (in-place use): each element
// is read before it is written, by the same thread. Any other sharing of
// memory by a written tensor is rejected (rope's query and key may be
// interleaved views of one fused qkv tensor, sharing no element).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_ROWLAUNCH_H
#define ATTNC_RUNTIME_ROWLAUNCH_H

#include "attnc/abi/GridRules.h"
#include "attnc/abi/LaunchParams.h"
#include "attnc/runtime/Launch.h"

#include <array>
#include <cstdint>
#include <vector>

namespace attnc {

inline constexpr size_t kMaxRowTensors = 8;

// A row-major tensor: [rows, cols] with `stride` elements between rows, or
// a [cols] vector (a weight; rows and stride are ignored).
struct RowTensorArg {
  const void *data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;
};

struct RowArgs {
  int64_t rows = 0; // may be 0: nothing is launched
  std::array<RowTensorArg, kMaxRowTensors> tensors{};
  size_t count = 0;
};

// One tensor of an op's signature.
struct RowTensorRole {
  const char *name;
  bool vector; // [d] rather than [rows, cols]
  bool output;
  int64_t cols;
  // rope's positions: one integer of this many bytes per row, contiguous
  // (no stride parameter; aligned to its size). 0: a tensor of the dtype.
  int64_t perRowBytes = 0;
  // rope's cos/sin cache: its own number of rows (not RowArgs::rows).
  bool anyRows = false;
};

// The tensors `spec.op` takes, in ABI order; empty for other ops.
std::vector<RowTensorRole> rowTensorRoles(const KernelSpec &spec);

// Checks the tensor count, null pointers, shapes against the spec (rows
// and columns), strides (>= cols), 16-byte alignment of base pointers
// and row strides, offsets and addresses that do not overflow, and
// aliasing (above). Each message names the op, the tensor and both values.
Status validateRowArgs(const KernelSpec &spec, const RowArgs &args);

// Where a kernel parameter's value comes from: a tensor's pointer or row
// stride, or the row count.
struct RowParamSlot {
  enum class Source : uint8_t { Pointer, Stride, Rows } source;
  uint8_t tensor = 0;
  ParamKind kind = ParamKind::I64;
};

// Resolved once when a kernel is loaded: every parameter must name a tensor
// of the op (or its stride) or "rows", with a fitting kind.
Result<std::vector<RowParamSlot>>
planRowParams(const KernelSpec &spec, const std::vector<KernelParam> &params);

// Fills `out` (no allocation); fails only when an i32 value does not fit.
Status packRowParams(const std::vector<RowParamSlot> &plan, const RowArgs &args,
                     PackedParams &out);

// grid = (ceil(rows / meta.blockM), 1, 1).
Result<LaunchGeometry> rowGeometry(const KernelMetadata &meta,
                                   const RowArgs &args);

// Bytes a launch must move at least (each input read once, each output
// written once), and what the same op moves as separate unfused kernels.
struct RowTraffic {
  int64_t fused = 0;
  int64_t unfused = 0;
};
RowTraffic rowTraffic(const KernelSpec &spec, int64_t rows);

} // namespace attnc

#endif // ATTNC_RUNTIME_ROWLAUNCH_H
