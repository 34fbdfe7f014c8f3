//===- AttnElementwiseOps.td - elementwise and row ops of attn -*- tablegen -*-===//
//
// The elementwise half of the graph level: a generic `map` with a scalar
// region, row reductions and last-dimension slices, and the named fused
// kernels of a transformer layer built from them (residual add + RMSNorm,
// SiluAndMul). Operands are `[rows, d]` tensors (`rows` may be dynamic, `d`
// static); `[d]` (a weight) and `[rows, 1]` (a per-row value) broadcast.
// `attnc-fuse-elementwise` turns a function made of these ops into one
// kernel.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_ATTN_ELEMENTWISE_OPS
#define ATTNC_ATTN_ELEMENTWISE_OPS

include "dialects/Attn/IR/AttnEnums.td"

def Attn_MapOp : Attn_Op<"map", [Pure, IsolatedFromAbove]> {
  let summary = "Applies a scalar region to every element, with broadcasting";
  let description = [{
    The region takes one scalar per operand (its element type) and yields the
    result's element. Operands are `[rows, d]`, `[rows, 1]` (broadcast along
    the row) or `[d]` (broadcast over the rows); the result is `[rows, d]`.
    Only pure `arith` and `math` ops may appear in the region.
    ```mlir
    %y = attn.map %x, %w : tensor<?x4096xbf16>, tensor<4096xbf16> -> tensor<?x4096xf32> {
    ^bb0(%a: bf16, %b: bf16):
      %af = arith.extf %a : bf16 to f32
      %bf = arith.extf %b : bf16 to f32
      %p = arith.mulf %af, %bf : f32
      attn.yield %p : f32
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Attn_ReduceOp : Attn_Op<"reduce", [Pure]> {
  let summary = "Reduces each row to one f32: sum, max or mean of squares";
  let description = [{
    `[rows, d]` (any float type; accumulated in f32) to `[rows, 1]` f32, so
    that the result broadcasts back along the row in an `attn.map`.
    ```mlir
    %ms = attn.reduce mean_sq %h : tensor<?x4096xf32> -> tensor<?x1xf32>
    ```
  }];
  let arguments = (ins Attn_ReduceKind:$kind, AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_SliceOp : Attn_Op<"slice", [Pure]> {
  let summary = "Columns [offset, offset + size) of each row";
  let description = [{
    Slices the last dimension, e.g. `x[..., :d]` and `x[..., d:]`. The offset
    must be a multiple of 8 elements so that rows stay 16-byte aligned.
    ```mlir
    %up = attn.slice %x {offset = 14336 : i64, size = 14336 : i64}
        : tensor<?x28672xbf16> -> tensor<?x14336xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$offset, I64Attr:$size);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_SiluMulOp : Attn_Op<"silu_mul", [Pure]> {
  let summary = "SiluAndMul: silu(x[..., :d]) · x[..., d:]";
  let description = [{
    vLLM's `silu_and_mul` of a gated MLP: `x` is `[rows, 2d]`, the result
    `[rows, d]`, computed in f32 and rounded once.
    ```mlir
    %y = attn.silu_mul %x : tensor<?x28672xbf16> -> tensor<?x14336xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_GeluMulOp : Attn_Op<"gelu_mul", [Pure]> {
  let summary = "GeluAndMul (tanh approximation): gelu(x[..., :d]) · x[..., d:]";
  let description = [{
    ```mlir
    %y = attn.gelu_mul %x : tensor<?x28672xbf16> -> tensor<?x14336xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_AddRMSNormOp : Attn_Op<"add_rmsnorm", [Pure]> {
  let summary = "Residual add + RMSNorm (vLLM's fused_add_rms_norm)";
  let description = [{
    `h = x + residual` (rounded to the element type: the new residual), then
    `y = h / sqrt(mean(h²) + epsilon) · weight`. Returns `y` and `h`.
    ```mlir
    %y, %h = attn.add_rmsnorm %x, %res, %w {epsilon = 1.0e-06 : f32}
        : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<4096xbf16>
        -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$residual,
                       AnyRankedTensor:$weight, F32Attr:$epsilon);
  let results = (outs AnyRankedTensor:$output, AnyRankedTensor:$new_residual);
  let assemblyFormat = [{
    $input `,` $residual `,` $weight attr-dict `:` type($input) `,`
    type($residual) `,` type($weight) `->` type($output) `,` type($new_residual)
  }];
  let hasVerifier = 1;
}

def Attn_RopeOp : Attn_Op<"rope", [Pure]> {
  let summary = "Rotary position embedding of query and key (vLLM's rotary_embedding)";
  let description = [{
    Rotates the first `rotary_dim` columns of every head of `query`
    `[tokens, heads * head_size]` and `key` `[tokens, kv_heads * head_size]`
    by the angles of each token's position: `cos_sin_cache` is
    `[max_position, rotary_dim]`, cos in the first half of a row and sin in
    the second. NeoX style (`is_neox`, the default) pairs column `i` with
    `i + rotary_dim / 2`; GPT-J style pairs `2i` with `2i + 1`. With
    `r = rotary_dim / 2`, pair `(a, b)` and angle `i` become
    `(a cos - b sin, b cos + a sin)` in f32, rounded once. Columns past
    `rotary_dim` pass through. Results: the rotated query and key. The row
    kernel writes them in place (only the rotated columns are stored).
    ```mlir
    %q2, %k2 = attn.rope %pos, %q, %k, %cache {head_size = 128 : i64, rotary_dim = 128 : i64, is_neox = true}
        : tensor<?xi64>, tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x128xbf16>
        -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$positions, AnyRankedTensor:$query,
                       AnyRankedTensor:$key, AnyRankedTensor:$cos_sin_cache,
                       I64Attr:$head_size, I64Attr:$rotary_dim,
                       DefaultValuedAttr<BoolAttr, "true">:$is_neox);
  let results = (outs AnyRankedTensor:$query_out, AnyRankedTensor:$key_out);
  let assemblyFormat = [{
    $positions `,` $query `,` $key `,` $cos_sin_cache attr-dict `:`
    type($positions) `,` type($query) `,` type($key) `,` type($cos_sin_cache)
    `->` type($query_out) `,` type($key_out)
  }];
  let hasVerifier = 1;
}

#endif // ATTNC_ATTN_ELEMENTWISE_OPS
