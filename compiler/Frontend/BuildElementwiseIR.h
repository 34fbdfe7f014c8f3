//===- BuildElementwiseIR.h - attn IR of the named row kernels -*- C++ -*-===//
#ifndef ATTNC_COMPILER_FRONTEND_BUILDELEMENTWISEIR_H
#define ATTNC_COMPILER_FRONTEND_BUILDELEMENTWISEIR_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <string>

namespace attnc {

/// A named fused elementwise kernel, for any number of rows.
struct ElementwiseConfig {
  std::string op = "silu_mul"; // "silu_mul" | "gelu_mul" | "add_rmsnorm"
  int64_t hidden = 4096;       // d: the output row length (x is [rows, 2d] for
                               // the gated ops)
  std::string dtype = "bf16";  // "bf16" | "fp16"
  double eps = 1e-6;           // add_rmsnorm
  // rope: query [rows, heads * head_size], key [rows, kv_heads * head_size],
  // cos/sin cache [max_position, rotary_dim] (0: head_size), positions i64
  // or i32; NeoX (halves) or GPT-J (interleaved) pairs.
  int64_t heads = 32;
  int64_t kvHeads = 8;
  int64_t headSize = 128;
  int64_t rotaryDim = 0;
  bool isNeox = true;
  int64_t positionBits = 64;
};

/// The ops are those of attnc::isElementwiseOp (runtime Spec.h).
/// `func.func @<op>(...)` holding the named attn op, its arguments and
/// results named (attn.param) as in the runtime's launch ABI: silu_mul /
/// gelu_mul (x) -> (out); add_rmsnorm (x, residual, weight) -> (out,
/// residual_out); rope (positions, query, key, cos_sin_cache) -> (query,
/// key), rotated in place by its kernel. Null (after a diagnostic) when it does
/// not verify.
mlir::OwningOpRef<mlir::ModuleOp>
buildElementwiseModule(mlir::MLIRContext &ctx, const ElementwiseConfig &config);

} // namespace attnc

#endif
