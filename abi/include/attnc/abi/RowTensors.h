//===- RowTensors.h - the tensors of the named row kernels ------*- C++ -*-===//
//
// Part of the compiler/runtime contract (attnc/abi): the row kernels of the
// named elementwise ops (grid rule kGridRuleRowwise) take one pointer per
// tensor, named as below, in this order (inputs, then outputs); the
// runtime's RowArgs list them in the same order. The compiler names the
// kernel's arguments with these (`attn.param`), and the kernel's metadata
// lists them, with the rows and strides (LaunchParams.h, kRowsParam).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_ABI_ROWTENSORS_H
#define ATTNC_ABI_ROWTENSORS_H

#include <array>
#include <cstddef>

namespace attnc::abi {

/// silu_mul and gelu_mul: x [rows, 2d] (gate, then up), out [rows, d].
inline constexpr std::array<const char *, 2> kGatedActTensors = {"x", "out"};
inline constexpr size_t kGatedActInputs = 1;

/// add_rmsnorm: x, residual [rows, d], weight [d]; out, residual_out
/// [rows, d] (residual_out = x + residual, out its normalised scaling).
inline constexpr std::array<const char *, 5> kAddRmsNormTensors = {
    "x", "residual", "weight", "out", "residual_out"};
inline constexpr size_t kAddRmsNormInputs = 3;

/// rope: positions [rows] (i64 or i32), query [rows, heads · head_dim],
/// key [rows, kv_heads · head_dim], cos_sin_cache [max_position,
/// rotary_dim]; query and key are rotated in place (no outputs of their
/// own).
inline constexpr std::array<const char *, 4> kRopeTensors = {
    "positions", "query", "key", "cos_sin_cache"};

} // namespace attnc::abi

#endif // ATTNC_ABI_ROWTENSORS_H
