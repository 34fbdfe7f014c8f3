//===- TileOps.td - operations of the tile dialect ---------*- tablegen -*-===//
#ifndef ATTNC_TILE_OPS
#define ATTNC_TILE_OPS

include "dialects/Tile/IR/TileDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/OpBase.td"
include "dialects/Attn/IR/AttnAttrs.td"

def Tile_ProgramIdOp : Tile_Op<"program_id", [Pure]> {
  let summary = "This program's index along one grid dimension";
  let description = [{
    ```mlir
    %m_tile = tile.program_id 0
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "$dim attr-dict";
}

def Tile_LoadOp : Tile_Op<"load", [MemoryEffects<[MemRead]>,
                                   AttrSizedOperandSegments]> {
  let summary = "Loads rows [row, row + R) of one (batch, head) matrix";
  let description = [{
    Reads a `R x D` tile from a `[batch, heads, seq, D]` view, or a `R` tile
    from a `[batch, heads, seq]` view. Rows at or past `length` (default: the
    view's sequence length) read as zero, so any length works without
    padding.

    With `pages`, the view is a paged cache `[pages, heads, page_size, D]`
    and `batch` picks a row of the `[batch, max_blocks]` i32 block table:
    row `r` is row `r mod page_size` of page `table[batch, r / page_size]`.
    A paged load needs `length` (the sequence's own length).
    ```mlir
    %k = tile.load %kv[%b, %h, %k0] : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>> -> tensor<64x128xbf16>
    %k = tile.load %cache[%b, %h, %k0] length %len pages %table : memref<?x?xi32>
        : memref<?x8x16x128xbf16, strided<[?, ?, ?, 1]>> -> tensor<64x128xbf16>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "source", [MemRead]>:$source,
                       Index:$batch, Index:$head, Index:$row,
                       Optional<Index>:$length,
                       Arg<Optional<AnyMemRef>, "block table", [MemRead]>:$block_table);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $source `[` $batch `,` $head `,` $row `]` (`length` $length^)?
    (`pages` $block_table^ `:` type($block_table))?
    attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "mlir::Type":$result, "mlir::Value":$source,
                   "mlir::Value":$batch, "mlir::Value":$head,
                   "mlir::Value":$row), [{
      build($_builder, $_state, result, source, batch, head, row,
            mlir::Value(), mlir::Value());
    }]>
  ];
  let extraClassDeclaration = [{
    bool isPaged() { return static_cast<bool>(getBlockTable()); }
  }];
}

def Tile_StoreOp : Tile_Op<"store", [MemoryEffects<[MemWrite]>]> {
  let summary = "Stores a tile's rows [row, row + R) of one (batch, head)";
  let description = [{
    Writes a `R x D` tile into a `[batch, heads, seq, D]` view, or a `R` tile
    into a `[batch, heads, seq]` view (the LSE). Rows at or past the view's
    sequence length are not written.
    ```mlir
    tile.store %o, %out[%b, %h, %q0] : tensor<64x128xbf16>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$value,
                       Arg<AnyMemRef, "destination", [MemWrite]>:$dest,
                       Index:$batch, Index:$head, Index:$row);
  let assemblyFormat = [{
    $value `,` $dest `[` $batch `,` $head `,` $row `]` attr-dict `:` type($value) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def Tile_DotOp : Tile_Op<"dot", [Pure,
    OptionalTypesMatchWith<"the accumulator has the result type", "result", "acc", "$_self">]> {
  let summary = "Tile matrix product with f32 accumulation";
  let description = [{
    `result = acc + a · b`, with `aᵀ` for `a` under `transpose_a` and `bᵀ`
    for `b` under `transpose_b`; inputs in bf16 or f16, accumulation and
    result in f32. `acc` defaults to zero. The backward's products with a
    transposed left operand (`dV += Pᵀ·dO`, `dK += dSᵀ·Q`) use
    `transpose_a`.
    ```mlir
    %s = tile.dot %q, %k {transpose_b} : tensor<64x128xbf16>, tensor<64x128xbf16> -> tensor<64x64xf32>
    %o = tile.dot %p, %v, %acc : tensor<64x64xbf16>, tensor<64x128xbf16> -> tensor<64x128xf32>
    %dv = tile.dot %p, %do, %dv0 {transpose_a} : tensor<64x32xbf16>, tensor<64x128xbf16> -> tensor<32x128xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$lhs, AnyStaticShapeTensor:$rhs,
                       Optional<AnyStaticShapeTensor>:$acc, UnitAttr:$transpose_b,
                       UnitAttr:$transpose_a);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`,` $acc^)? attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_ScoreOp : Tile_Op<"score", [Pure, IsolatedFromAbove,
    AttrSizedOperandSegments, AllTypesMatch<["scores", "result"]>]> {
  let summary = "Scales, soft-caps, modifies and masks a score tile";
  let description = [{
    For the `M x N` tile of raw scores `s` of query rows `q0 + i` and keys
    `k0 + j`: `t = scale · s`, then `t = softcap · tanh(t / softcap)`, then the
    `score` region; masked entries become `-inf`: keys at or past `seq_kv`,
    `causal` and `window` (bottom-right aligned: the diagonal of row `r` is
    key `r + seq_kv - seq_q`), and the `mask` region. The result is in the
    log2 domain (`t · log2(e)`) so the softmax can use exp2.

    `packed`: the rows hold the query rows of several heads, head-major
    (decode's GQA packing): row `q0 + i` is query position
    `(q0 + i) mod seq_q` for the masks.

    `captures`: the memrefs (views of kernel parameters) of the attention's
    captured tensors; both regions take them after their indices and read
    them with `memref.load`.

    `kv_bounds`: a `[B, Sq, 2]` i32 memref of per-row key ranges `[first,
    end)` (non-decreasing along the rows), a further mask: key `j` of row
    `i` is visible only if `first <= j < end`. With it, `inner(%f, %e)`:
    the keys every row of the tile sees by its range (`[first of the last
    row, end of the first row)`), computed once by the tile program, so
    that a mapping tells a tile inside them (no range mask) without loads.
    ```mlir
    %t = tile.score %s, %b, %h, %q0, %k0, %sq, %skv {scale = 0.088 : f32, causal}
        : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$scores, Index:$batch, Index:$head,
                       Index:$q0, Index:$k0, Index:$seq_q, Index:$seq_kv,
                       Variadic<AnyMemRef>:$captures,
                       Optional<AnyMemRef>:$kv_bounds,
                       Optional<Index>:$kv_inner_first,
                       Optional<Index>:$kv_inner_end,
                       F32Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<Attn_WindowAttr>:$window,
                       OptionalAttr<F32Attr>:$softcap,
                       UnitAttr:$packed);
  let results = (outs AnyStaticShapeTensor:$result);
  let regions = (region AnyRegion:$score_mod, AnyRegion:$mask_mod);
  let assemblyFormat = [{
    $scores `,` $batch `,` $head `,` $q0 `,` $k0 `,` $seq_q `,` $seq_kv
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`kv_bounds` `(` $kv_bounds^ `:` type($kv_bounds) `)` `inner` `(`
     $kv_inner_first `,` $kv_inner_end `)`)?
    attr-dict `:` type($scores)
    (`score` $score_mod^)? (`mask` $mask_mod^)?
  }];
  let hasVerifier = 1;
}

def Tile_SoftmaxUpdateOp : Tile_Op<"softmax_update", [Pure,
    AllTypesMatch<["scores", "probs"]>,
    AllTypesMatch<["max", "sum", "new_max", "new_sum", "alpha"]>]> {
  let summary = "One online-softmax step over a score tile (log2 domain)";
  let description = [{
    With `m` the running row max and `l` the running row sum:
    `m' = max(m, rowmax(t))`, `p = exp2(t - m')`, `alpha = exp2(m - m')`,
    `l' = alpha · l + rowsum(p)`. A row whose every score so far is `-inf`
    keeps `m' = -inf`, `p = 0`, `alpha = 1` (never NaN).
    ```mlir
    %p, %m2, %l2, %alpha = tile.softmax_update %t, %m, %l : tensor<64x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$scores, AnyStaticShapeTensor:$max,
                       AnyStaticShapeTensor:$sum);
  let results = (outs AnyStaticShapeTensor:$probs, AnyStaticShapeTensor:$new_max,
                      AnyStaticShapeTensor:$new_sum, AnyStaticShapeTensor:$alpha);
  let assemblyFormat = [{
    $scores `,` $max `,` $sum attr-dict `:` type($scores) `,` type($max)
  }];
  let hasVerifier = 1;
}

def Tile_RescaleOp : Tile_Op<"rescale", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "Multiplies each accumulator row by its softmax correction";
  let description = [{
    ```mlir
    %acc2 = tile.rescale %acc, %alpha : tensor<64x128xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$acc, AnyStaticShapeTensor:$alpha);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$acc `,` $alpha attr-dict `:` type($acc) `,` type($alpha)";
  let hasVerifier = 1;
}

def Tile_FinalizeOp : Tile_Op<"finalize", [Pure,
    AllTypesMatch<["max", "sum", "lse"]>]> {
  let summary = "Divides by the row sums and forms the log-sum-exp";
  let description = [{
    `o = acc / l` converted to the output type, and
    `lse = (m + log2 l) · ln 2` (natural log); rows with `l = 0` (every key
    masked) give `o = 0` and `lse = -inf`. The output is bf16 or f16, or f32
    for a partial result that a split-KV combine reads.

    With `sink` (an attention sink: a logit `σ` in natural-log units, the
    same for every row), the state is first merged with the state of one
    more key of weight `e^σ` and value 0: `m' = max(m, σ·log2 e)`,
    `l' = l·2^(m - m') + 2^(σ·log2 e - m')`, `acc' = acc·2^(m - m')`. A row
    without keys gets `o = 0`, `lse = σ`. Only the state of every key takes
    a sink: a split-KV partial never does.
    ```mlir
    %o, %lse = tile.finalize %acc, %m, %l : tensor<64x128xf32>, tensor<64xf32> -> tensor<64x128xbf16>
    %o2, %lse2 = tile.finalize %acc, %m, %l sink %s : tensor<64x128xf32>, tensor<64xf32> -> tensor<64x128xbf16>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$acc, AnyStaticShapeTensor:$max,
                       AnyStaticShapeTensor:$sum, Optional<F32>:$sink);
  let results = (outs AnyStaticShapeTensor:$output, AnyStaticShapeTensor:$lse);
  let assemblyFormat = [{
    $acc `,` $max `,` $sum (`sink` $sink^)? attr-dict `:` type($acc) `,` type($max) `->` type($output)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "mlir::Value":$acc, "mlir::Value":$max, "mlir::Value":$sum,
                   "mlir::Type":$outputElementType,
                   CArg<"mlir::Value", "{}">:$sink)>
  ];
}

def Tile_LseAccumulateOp : Tile_Op<"lse_accumulate", [Pure,
    AllTypesMatch<["acc", "new_acc"]>,
    AllTypesMatch<["max", "sum", "lse", "new_max", "new_sum"]>]> {
  let summary = "Adds a normalised partial result weighted by its LSE";
  let description = [{
    The split-KV combine (and the cascade merge) as an online softmax over
    partial results: with `t = lse · log2(e)`, `m' = max(m, t)`,
    `a = exp2(m - m')`, `w = exp2(t - m')`: `acc' = a · acc + w · partial`,
    `l' = a · l + w`. `tile.finalize` of the state then gives
    `o = Σ exp(lse_i) o_i / Σ exp(lse_i)` and `lse = log Σ exp(lse_i)`.
    A part with `lse = -inf` (no visible key) weighs 0; if every part has,
    the result is `o = 0`, `lse = -inf` (never NaN). The partial is f32 (a
    split-KV workspace) or bf16/f16 (a finished attention output).
    ```mlir
    %acc2, %m2, %l2 = tile.lse_accumulate %o_i, %lse_i into %acc, %m, %l
        : tensor<16x128xf32>, tensor<16x128xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$partial, AnyStaticShapeTensor:$lse,
                       AnyStaticShapeTensor:$acc, AnyStaticShapeTensor:$max,
                       AnyStaticShapeTensor:$sum);
  let results = (outs AnyStaticShapeTensor:$new_acc,
                      AnyStaticShapeTensor:$new_max,
                      AnyStaticShapeTensor:$new_sum);
  let assemblyFormat = [{
    $partial `,` $lse `into` $acc `,` $max `,` $sum attr-dict `:` type($partial) `,` type($acc) `,` type($max)
  }];
  let hasVerifier = 1;
}

def Tile_ProbsFromLseOp : Tile_Op<"probs_from_lse", [Pure,
    AllTypesMatch<["scores", "probs"]>]> {
  let summary = "Recomputes softmax probabilities from the rows' log-sum-exp";
  let description = [{
    The backward's recomputation of P: for a score tile `t` in the log2
    domain (what `tile.score` yields, masked entries `-inf`) and the rows'
    natural log-sum-exp `lse` from the forward,
    `p = exp2(t - lse · log2(e))` (= `exp(s - lse)`). A row with
    `lse = -inf` (no visible key) gives `p = 0`, never NaN; masked entries
    give 0.
    ```mlir
    %p = tile.probs_from_lse %t, %lse : tensor<64x32xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$scores, AnyStaticShapeTensor:$lse);
  let results = (outs AnyStaticShapeTensor:$probs);
  let assemblyFormat = [{
    $scores `,` $lse attr-dict `:` type($scores) `,` type($lse)
  }];
  let hasVerifier = 1;
}

def Tile_ScoreGradOp : Tile_Op<"score_grad", [Pure,
    AllTypesMatch<["probs", "grad_probs", "result"]>,
    OptionalTypesMatchWith<"the score tile has P's type", "probs", "scores",
                           "$_self">]> {
  let summary = "The gradient of the scores from P, dP and the row deltas";
  let description = [{
    The softmax backward on one tile: `ds = p · (dp - delta)` per row, where
    `delta = rowsum(dO ∘ O)` (`tile.row_dot`). With `softcap` `c` the
    result is the gradient of the score before the cap, `ds · (1 - u²)`
    with `u = tanh(r / c)` read back from the capped score tile `scores`
    (log2 domain, as `tile.score` yields it: `u = t · ln(2) / c`); masked
    entries (`t = -inf`, `p = 0`) give 0. The caller multiplies by the
    softmax scale where it applies the gradient (dQ, dK).
    ```mlir
    %ds = tile.score_grad %p, %dp, %delta : tensor<64x32xf32>, tensor<64xf32>
    %ds = tile.score_grad %p, %dp, %delta scores %t {softcap = 30.0 : f32}
        : tensor<64x32xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$probs,
                       AnyStaticShapeTensor:$grad_probs,
                       AnyStaticShapeTensor:$delta,
                       Optional<AnyStaticShapeTensor>:$scores,
                       OptionalAttr<F32Attr>:$softcap);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $probs `,` $grad_probs `,` $delta (`scores` $scores^)? attr-dict
    `:` type($probs) `,` type($delta)
  }];
  let hasVerifier = 1;
}

def Tile_RowDotOp : Tile_Op<"row_dot", [Pure, AllTypesMatch<["lhs", "rhs"]>]> {
  let summary = "Each row's inner product of two tiles, in f32";
  let description = [{
    `r[i] = Σ_x a[i, x] · b[i, x]`, inputs bf16, f16 or f32 of one type,
    accumulated in f32: the backward's `delta = rowsum(dO ∘ O)`.
    ```mlir
    %delta = tile.row_dot %do, %o : tensor<64x128xbf16> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$lhs, AnyStaticShapeTensor:$rhs);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_StoreAddOp : Tile_Op<"store_add",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Adds an f32 tile into rows [row, row + R) of one (batch, head)";
  let description = [{
    `dest[batch, head, row + i, x] += value[i, x]` for the rows below the
    view's sequence length, where several programs add into the same rows
    (the backward's dQ: every K/V tile's program adds its share). A GPU
    lowering makes each element's update an atomic add (so the order of the
    additions, and the last bits of the sum, vary from run to run); the
    host runs programs one after another and reads, adds and writes. A
    deterministic dQ (programs adding in a fixed order) is not here yet.
    ```mlir
    tile.store_add %dq, %acc[%b, %h, %q0] : tensor<64x128xf32>, memref<?x?x?x128xf32, strided<[?, ?, 128, 1]>>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$value,
                       Arg<AnyMemRef, "destination", [MemRead, MemWrite]>:$dest,
                       Index:$batch, Index:$head, Index:$row);
  let assemblyFormat = [{
    $value `,` $dest `[` $batch `,` $head `,` $row `]` attr-dict `:` type($value) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def Tile_SplitArriveOp : Tile_Op<"split_arrive",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Counts a split program's arrival; true in the last one";
  let description = [{
    Once per program, after the program's stores of its partial result:
    counts the arrival of one of the `count` split programs of group
    `[batch, head]` in a `[batch, heads]` i64 counter, and yields true in
    exactly one program, the last to arrive, whose later loads see every
    other program's stores made before it arrived. That program leaves the
    counter 0.

    A counter holds `ticket << 32 | arrivals`; a word whose high half is not
    this launch's `ticket` (non-zero, low 32 bits used) counts as no
    arrivals, so the counters need no clearing before the first launch: a
    workspace of stale bytes works (a stale word would have to hold the
    launch's ticket exactly).
    ```mlir
    %last = tile.split_arrive %counts[%b, %h] ticket %t of %splits
        : memref<?x8xi64, strided<[8, 1]>>
    ```
  }];
  let arguments = (ins Arg<MemRefRankOf<[I64], [2]>, "the counters",
                           [MemRead, MemWrite]>:$counts,
                       Index:$batch, Index:$head, I64:$ticket, Index:$count);
  let results = (outs I1:$last);
  let assemblyFormat = [{
    $counts `[` $batch `,` $head `]` `ticket` $ticket `of` $count attr-dict `:` type($counts)
  }];
}

def Tile_YieldOp : Tile_Op<"yield", [Pure, Terminator, ReturnLike,
                                     ParentOneOf<["ScoreOp"]>]> {
  let summary = "Yields the value of a tile.score region";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

include "dialects/Tile/IR/TileRowOps.td"

#endif // ATTNC_TILE_OPS
