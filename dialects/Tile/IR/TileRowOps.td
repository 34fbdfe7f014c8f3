//===- TileRowOps.td - row ops of the tile dialect ---------*- tablegen -*-===//
//
// The kernel level of the fused elementwise kernels: a kernel body written
// for one row (`tile.program_id 0` is the row; the launch rule
// `rowwise_v1` says how a GPU mapping packs `block_m` rows into a thread
// block), whose values are 1-D tiles of the row's `d` columns. Elementwise
// arith/math ops on those tiles, `tensor.splat` of scalars, and:
#ifndef ATTNC_TILE_ROW_OPS
#define ATTNC_TILE_ROW_OPS

include "dialects/Attn/IR/AttnEnums.td"

def Tile_LoadRowOp : Tile_Op<"load_row", [MemoryEffects<[MemRead]>]> {
  let summary = "Loads D contiguous elements of one row";
  let description = [{
    Reads columns `[col, col + D)` at the row given by the leading indices of
    a view whose innermost dimension is contiguous. The last index is the
    first column; it and D are multiples of 8 (16-byte vectors).
    With `repeat = 2` only D/2 columns are read, each used twice: as two
    copies of the half (`[c, c]`), or element by element when
    `interleaved` (`[c0, c0, c1, c1, ...]`): RoPE's cos/sin per pair.
    ```mlir
    %x = tile.load_row %view[%row, %c0] : memref<?x28672xbf16, strided<[?, 1]>> -> tensor<14336xbf16>
    %w = tile.load_row %weight[%c0] : memref<4096xbf16> -> tensor<4096xbf16>
    %c = tile.load_row %cache[%pos, %c0] {repeat = 2 : i64, interleaved} : memref<?x128xbf16, strided<[?, 1]>> -> tensor<128xbf16>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "source", [MemRead]>:$source,
                       Variadic<Index>:$indices,
                       DefaultValuedAttr<I64Attr, "1">:$repeat,
                       UnitAttr:$interleaved);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $source `[` $indices `]` attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_StoreRowOp : Tile_Op<"store_row", [MemoryEffects<[MemWrite]>]> {
  let summary = "Stores a 1-D tile as D contiguous elements of one row";
  let description = [{
    ```mlir
    tile.store_row %y, %out[%row, %c0] : tensor<4096xbf16>, memref<?x4096xbf16, strided<[?, 1]>>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$value,
                       Arg<AnyMemRef, "destination", [MemWrite]>:$dest,
                       Variadic<Index>:$indices);
  let assemblyFormat = [{
    $value `,` $dest `[` $indices `]` attr-dict `:` type($value) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def Tile_ReduceRowOp : Tile_Op<"reduce_row", [Pure]> {
  let summary = "Reduces a 1-D f32 tile to a scalar: sum, max or mean of squares";
  let description = [{
    On a GPU the row is spread over threads: each reduces its own elements,
    then warp shuffles and (past one warp) shared memory combine them.
    ```mlir
    %ms = tile.reduce_row mean_sq %h : tensor<4096xf32> -> f32
    ```
  }];
  let arguments = (ins Attn_ReduceKind:$kind, AnyStaticShapeTensor:$input);
  let results = (outs F32:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_RotatePairsOp : Tile_Op<"rotate_pairs", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RoPE's partner of each element, negated in the first of a pair";
  let description = [{
    Pairs split the tile in halves (`[-x[D/2:], x[:D/2]]`, NeoX style) or
    are neighbours when `interleaved` (`[-x1, x0, -x3, x2, ...]`, GPT-J), so
    that a rotation is `x * cos + rotate_pairs(x) * sin`.
    ```mlir
    %p = tile.rotate_pairs %x : tensor<128xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, UnitAttr:$interleaved);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

#endif // ATTNC_TILE_ROW_OPS
