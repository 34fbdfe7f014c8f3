//===- AttnOps.td - operations of the attn dialect ---------*- tablegen -*-===//
#ifndef ATTNC_ATTN_OPS
#define ATTNC_ATTN_OPS

include "dialects/Attn/IR/AttnDialect.td"
include "dialects/Attn/IR/AttnAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------===//
// attn.attention
//===----------------------------------------------------------------------===//

def Attn_AttentionOp : Attn_Op<"attention", [Pure, IsolatedFromAbove,
                                              AttrSizedOperandSegments]> {
  let summary = "Scaled dot-product attention, softmax(mod(Q·Kᵀ)) · V";
  let description = [{
    Computes `O = softmax(mask(score(scale · Q·Kᵀ))) · V` for every batch and
    query head, and optionally the row log-sum-exp `LSE` (natural log), without
    ever materialising the full score matrix once lowered.

    Operands use the logical layout `[B, H, S, D]`. `B` and `S` may be dynamic;
    the head counts and head dim must be static. Grouped-query attention is
    implied by the head counts: query head `h` reads key/value head
    `h / (Hq / Hkv)`, so `Hq` must be a multiple of `Hkv`.

    Attributes, applied in this order to each score `s = q·k`:
    - `scale` (default `1/sqrt(D)`): `s = scale · s`;
    - `softcap` `c`: `s = c · tanh(s / c)`;
    - the `score` region (a FlexAttention `score_mod`):
      `(s: f32, b, h, i, j: index) -> f32`;
    - masking: `causal` (bottom-right aligned: row `i` sees `j <= i + Skv - Sq`),
      `window` (`#attn.window<left, right>`, same alignment), and the `mask`
      region (a FlexAttention `mask_mod`: `(b, h, i, j: index) -> i1`, true
      keeps the score). A row with no visible key yields `O = 0`, `LSE = -inf`.

    Attention sinks (gpt-oss): with `sinks` (`tensor<Hq x f32>`), query head
    `h` has one more logit, `sinks[h]`, in its softmax's denominator and no
    value: `O = Σ_j e^{s_j} V_j / (e^{sinks[h]} + Σ_j e^{s_j})` and
    `LSE = log(e^{sinks[h]} + Σ_j e^{s_j})`, the sink taken as it is (no
    scale, soft-cap or mods). A row with no visible key yields `O = 0`,
    `LSE = sinks[h]`.

    ```mlir
    %o, %lse = attn.attention %q, %k, %v {causal, softcap = 30.0 : f32}
        : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>
        -> tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
    ```

    With sinks:
    ```mlir
    %o = attn.attention %q, %k, %v sinks(%s : tensor<64xf32>) {causal}
        : tensor<?x64x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>
        -> tensor<?x64x?x64xbf16>
    ```

    Variable-length batches (FlashAttention's `flash_attn_varlen_func`): with
    `varlen(%cu_seqlens_q, %cu_seqlens_k)` (`tensor<B+1 x i32>` each, or
    dynamic), Q, K, V and O are packed `[total, heads, head_dim]` ("thd":
    the tokens of every sequence one after another) and sequence `b` owns
    query rows `[cu_seqlens_q[b], cu_seqlens_q[b+1])` and key rows
    `[cu_seqlens_k[b], cu_seqlens_k[b+1])`. Each sequence is attended on its
    own: `causal` and `window` are bottom-right aligned on its own lengths,
    and the regions see `b` as the sequence and `i`, `j` as positions within
    it. The LSE is `[Hq, total_q]` f32. Lengths may be zero.
    ```mlir
    %o, %lse = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<?xi32>, tensor<?xi32>) {causal}
        : tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>
        -> tensor<?x32x128xbf16>, tensor<32x?xf32>
    ```

    Paged prefill (vLLM's single call over a mixed prefill and decode batch;
    `flash_attn_varlen_func` with `block_table` and `seqused_k`): with
    `varlen(%cu_seqlens_q)` and `paged(%block_table, %kv_lens)`, K and V are
    a paged cache `[pages, Hkv, page_size, head_dim]` (any strides: NHD or
    HND pages; the page size static), `block_table` is `[B, max_blocks]`
    i32 page indices and `kv_lens` `[B]` i32 each sequence's key count: key
    `j` of sequence `b` is row `j mod page_size` of page
    `block_table[b, j / page_size]`. The query rows are the sequence's last
    `cu_seqlens_q[b+1] - cu_seqlens_q[b]` positions, as for varlen.
    ```mlir
    %o = attn.attention %q, %kc, %vc varlen(%cuq : tensor<?xi32>)
        paged(%table, %lens : tensor<?x?xi32>, tensor<?xi32>) {causal}
        : tensor<?x32x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
        -> tensor<?x32x128xbf16>
    ```

    Captured tensors (FlexAttention's tensors a mod closes over: ALiBi
    slopes, document ids, bias tables): `captures(%t0, ... : types)` takes
    ranked tensors (rank 1 to 4, element f32, f16, bf16, i32, i64 or i8),
    and both regions take them, in that order, after their index
    arguments; the regions read them with `tensor.extract` (no bounds
    check: an index outside the tensor reads outside it).
    ```mlir
    %o = attn.attention %q, %k, %v captures(%slopes : tensor<?xf32>)
        : ... -> tensor<?x32x?x128xbf16>
    score {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index,
         %sl: tensor<?xf32>):
      %m = tensor.extract %sl[%h] : tensor<?xf32>
      ...
    }
    ```

    Key ranges (a range mask with block sparsity: documents, prefix-LM,
    any mask whose visible keys are one range per row): `kv_bounds(%r :
    tensor<?x?x2xi32>)`, `[B, Sq, 2]` i32: row `i` of batch `b` sees only the
    keys in `[r[b, i, 0], r[b, i, 1])`, and-ed with the op's other masks.
    Both columns must be non-decreasing in `i` (a promise the kernels build
    on): a query tile visits only the KV tiles its rows' ranges reach, and a
    tile inside every row's range (and clear of the other masks) runs
    without per-element masks. Documents are `causal` plus each row's
    document as its range, with no mask region. Not with varlen.

    With a FlexAttention-style mask (a document mask on a 256-token stride):
    ```mlir
    %o = attn.attention %q, %k, %v : ... -> tensor<?x32x?x128xbf16>
    mask {
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %c256 = arith.constant 256 : index
      %di = arith.divui %i, %c256 : index
      %dj = arith.divui %j, %c256 : index
      %same = arith.cmpi eq, %di, %dj : index
      attn.yield %same : i1
    }
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$query,
    AnyRankedTensor:$key,
    AnyRankedTensor:$value,
    Optional<AnyRankedTensor>:$sinks,
    Optional<AnyRankedTensor>:$cu_seqlens_q,
    Optional<AnyRankedTensor>:$cu_seqlens_k,
    Optional<AnyRankedTensor>:$kv_bounds,
    Optional<AnyRankedTensor>:$block_table,
    Optional<AnyRankedTensor>:$kv_lens,
    Variadic<AnyRankedTensor>:$captures,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    OptionalAttr<Attn_WindowAttr>:$window,
    OptionalAttr<F32Attr>:$softcap
  );
  let results = (outs AnyRankedTensor:$output, Optional<AnyRankedTensor>:$lse);
  let regions = (region AnyRegion:$score, AnyRegion:$mask);

  let assemblyFormat = [{
    $query `,` $key `,` $value
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`varlen` `(` $cu_seqlens_q^ (`,` $cu_seqlens_k^)? `:`
       type($cu_seqlens_q) (`,` type($cu_seqlens_k)^)? `)`)?
    (`paged` `(` $block_table^ `,` $kv_lens `:` type($block_table) `,`
       type($kv_lens) `)`)?
    (`kv_bounds` `(` $kv_bounds^ `:` type($kv_bounds) `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)? attr-dict
    `:` type($query) `,` type($key) `,` type($value)
    `->` type($output) (`,` type($lse)^)?
    (`score` $score^)? (`mask` $mask^)?
  }];

  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  let extraClassDeclaration = [{
    /// The scale applied to Q·Kᵀ: the attribute, else 1/sqrt(head dim).
    float getEffectiveScale();
    int64_t getNumHeads();
    int64_t getNumKVHeads();
    int64_t getHeadDim();
    ::mlir::Type getElementType();
    /// The most captured tensors one op takes (each is 1 + 2 x rank kernel
    /// parameters).
    static constexpr unsigned kMaxCaptures = 8;
    bool hasScoreMod() { return !getScore().empty(); }
    bool hasMaskMod() { return !getMask().empty(); }
    bool hasSinks() { return static_cast<bool>(getSinks()); }
    /// Packed variable-length sequences (`varlen`): Q/K/V are
    /// [total, heads, head_dim].
    bool isVarlen() { return static_cast<bool>(getCuSeqlensQ()); }
    /// Varlen queries over a paged KV cache (`paged`): K/V are
    /// [pages, heads, page_size, head_dim].
    bool isPaged() { return static_cast<bool>(getBlockTable()); }
    int64_t getPageSize() {
      return isPaged() ? getKey().getType().getDimSize(2) : 0;
    }
    bool hasKVBounds() { return static_cast<bool>(getKvBounds()); }
  }];
}

//===----------------------------------------------------------------------===//
// attn.attention_bwd
//===----------------------------------------------------------------------===//

def Attn_AttentionBwdOp : Attn_Op<"attention_bwd", [Pure, IsolatedFromAbove]> {
  let summary = "Gradients of attn.attention with respect to Q, K and V";
  let description = [{
    The backward of `attn.attention` with the same attributes: given Q, K, V,
    the forward's output `O`, the output gradient `dO` (O's shape) and the
    forward's row log-sum-exp `LSE` (`[B, Hq, Sq]` f32, natural log), yields
    `dQ` (Q's type) and `dK`, `dV` (K's type). It recomputes the scores and
    probabilities from `LSE` rather than reading a stored softmax:
    `P = exp(s - LSE)` over the visible keys, `dV = Pᵀ·dO`,
    `dP = dO·Vᵀ`, `dS = P ∘ (dP - rowsum(dO ∘ O))` (times the soft-cap's
    derivative `1 - tanh²` of the capped score), `dQ = scale · dS·K`,
    `dK = scale · dSᵀ·Q`. With grouped-query attention `dK` and `dV` of a
    key/value head sum over the query heads of its group. A row with no
    visible key (`LSE = -inf`) has `dQ = 0` and adds nothing to `dK`, `dV`.

    `scale`, `causal` (bottom-right aligned), `window` and `softcap` mean
    what they mean for `attn.attention`. The `score` and `mask` regions are
    not yet supported (the verifier rejects them): their derivative is not
    derived yet.

    ```mlir
    %dq, %dk, %dv = attn.attention_bwd %q, %k, %v, %o, %do, %lse {causal}
        : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>,
          tensor<?x32x?x128xbf16>, tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
        -> tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$query,
    AnyRankedTensor:$key,
    AnyRankedTensor:$value,
    AnyRankedTensor:$output,
    AnyRankedTensor:$grad_output,
    AnyRankedTensor:$lse,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    OptionalAttr<Attn_WindowAttr>:$window,
    OptionalAttr<F32Attr>:$softcap
  );
  let results = (outs AnyRankedTensor:$grad_query, AnyRankedTensor:$grad_key,
                      AnyRankedTensor:$grad_value);
  let regions = (region AnyRegion:$score, AnyRegion:$mask);

  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $grad_output `,` $lse attr-dict
    `:` type($query) `,` type($key) `,` type($value) `,` type($output) `,`
        type($grad_output) `,` type($lse)
    `->` type($grad_query) `,` type($grad_key) `,` type($grad_value)
    (`score` $score^)? (`mask` $mask^)?
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// The scale applied to Q·Kᵀ: the attribute, else 1/sqrt(head dim).
    float getEffectiveScale();
    int64_t getNumHeads() { return getQuery().getType().getDimSize(1); }
    int64_t getNumKVHeads() { return getKey().getType().getDimSize(1); }
    int64_t getHeadDim() { return getQuery().getType().getDimSize(3); }
    ::mlir::Type getElementType() {
      return getQuery().getType().getElementType();
    }
  }];
}

//===----------------------------------------------------------------------===//
// attn.decode
//===----------------------------------------------------------------------===//

def Attn_DecodeOp : Attn_Op<"decode", [Pure]> {
  let summary = "Attention of a few new query rows against a paged KV cache";
  let description = [{
    Decode (and speculative decoding: `seq_q` from 1 to a few): the query
    `[B, Hq, Sq, D]` attends to each sequence's cached keys and values. The
    cache is paged: `key_cache` and `value_cache` are `[pages, Hkv,
    page_size, D]` (any strides: NHD or HND pages), `block_table` is
    `[B, max_blocks]` i32 page indices and `kv_lens` `[B]` i32 the length of
    each sequence (a ragged batch): key `j` of sequence `b` is row
    `j mod page_size` of page `block_table[b, j / page_size]`. A contiguous
    cache is one page per sequence. The query rows are the last `Sq`
    positions of the sequence (`causal` is bottom-right aligned on
    `kv_lens[b]`). Scale, softcap, window, GQA and `sinks` (one f32 logit
    per query head in its softmax's denominator) as in `attn.attention`.

    ```mlir
    %o, %lse = attn.decode %q, %kc, %vc, %table, %lens {causal}
        : tensor<?x32x?x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>,
          tensor<?x?xi32>, tensor<?xi32> -> tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$query,
    AnyRankedTensor:$key_cache,
    AnyRankedTensor:$value_cache,
    AnyRankedTensor:$block_table,
    AnyRankedTensor:$kv_lens,
    Optional<AnyRankedTensor>:$sinks,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    OptionalAttr<Attn_WindowAttr>:$window,
    OptionalAttr<F32Attr>:$softcap
  );
  let results = (outs AnyRankedTensor:$output, Optional<AnyRankedTensor>:$lse);

  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache `,` $block_table `,` $kv_lens
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)? attr-dict
    `:` type($query) `,` type($key_cache) `,` type($value_cache) `,`
        type($block_table) `,` type($kv_lens)
    `->` type($output) (`,` type($lse)^)?
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    float getEffectiveScale();
    int64_t getNumHeads() { return getQuery().getType().getDimSize(1); }
    int64_t getNumKVHeads() { return getKeyCache().getType().getDimSize(1); }
    int64_t getPageSize() { return getKeyCache().getType().getDimSize(2); }
    int64_t getHeadDim() { return getQuery().getType().getDimSize(3); }
    ::mlir::Type getElementType() { return getQuery().getType().getElementType(); }
    bool hasSinks() { return static_cast<bool>(getSinks()); }
  }];
}

//===----------------------------------------------------------------------===//
// attn.lse_merge
//===----------------------------------------------------------------------===//

def Attn_LseMergeOp : Attn_Op<"lse_merge", [Pure,
    AllTypesMatch<["output_a", "output_b", "output"]>,
    AllTypesMatch<["lse_a", "lse_b"]>]> {
  let summary = "Merges two attention results over disjoint key sets";
  let description = [{
    Given the outputs and log-sum-exps of the same queries attending to two
    disjoint sets of keys (a shared prefix and a sequence's own suffix:
    cascade attention), returns the attention over their union:
    `o = (e^lse_a · o_a + e^lse_b · o_b) / (e^lse_a + e^lse_b)`,
    `lse = log(e^lse_a + e^lse_b)`. A side with `lse = -inf` (no visible
    key) weighs 0; if both have, `o = 0` and `lse = -inf`.

    ```mlir
    %o, %lse = attn.lse_merge %o_a, %lse_a, %o_b, %lse_b
        : tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
        -> tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$output_a, AnyRankedTensor:$lse_a,
                       AnyRankedTensor:$output_b, AnyRankedTensor:$lse_b);
  let results = (outs AnyRankedTensor:$output, Optional<AnyRankedTensor>:$lse);
  let assemblyFormat = [{
    $output_a `,` $lse_a `,` $output_b `,` $lse_b attr-dict
    `:` type($output_a) `,` type($lse_a) `->` type($output) (`,` type($lse)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// attn.kv_append
//===----------------------------------------------------------------------===//

def Attn_KVAppendOp : Attn_Op<"kv_append", [Pure,
    AllTypesMatch<["key", "value"]>,
    AllTypesMatch<["key_cache", "value_cache", "new_key_cache",
                   "new_value_cache"]>]> {
  let summary = "Writes new key/value rows into a paged KV cache";
  let description = [{
    The decode step's cache update (vLLM's `reshape_and_cache`): row `t` of
    `key` and `value` (`[tokens, Hkv, D]`) goes to slot
    `slot_mapping[t]` of the caches (`[pages, Hkv, page_size, D]`, any
    strides), that is page `slot / page_size`, row `slot mod page_size`,
    for every KV head. A negative slot (padding) writes nothing; so does a
    slot past the last page. The results are the updated caches (on the
    GPU the caches are updated in place).

    ```mlir
    %kc1, %vc1 = attn.kv_append %k, %v, %slots, %kc, %vc
        : tensor<?x8x128xbf16>, tensor<?xi64>, tensor<?x8x16x128xbf16>
        -> tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$key, AnyRankedTensor:$value,
                       AnyRankedTensor:$slot_mapping,
                       AnyRankedTensor:$key_cache,
                       AnyRankedTensor:$value_cache);
  let results = (outs AnyRankedTensor:$new_key_cache,
                      AnyRankedTensor:$new_value_cache);
  let assemblyFormat = [{
    $key `,` $value `,` $slot_mapping `,` $key_cache `,` $value_cache attr-dict
    `:` type($key) `,` type($slot_mapping) `,` type($key_cache)
    `->` type($new_key_cache) `,` type($new_value_cache)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumKVHeads() { return getKeyCache().getType().getDimSize(1); }
    int64_t getPageSize() { return getKeyCache().getType().getDimSize(2); }
    int64_t getHeadDim() { return getKeyCache().getType().getDimSize(3); }
    ::mlir::Type getElementType() { return getKey().getType().getElementType(); }
  }];
}

//===----------------------------------------------------------------------===//
// attn.yield
//===----------------------------------------------------------------------===//

def Attn_YieldOp : Attn_Op<"yield", [Pure, Terminator, ReturnLike,
                                     ParentOneOf<["AttentionOp", "AttentionBwdOp", "MapOp"]>]> {
  let summary = "Yields the value a scalar region computes";
  let description = [{
    Terminates the `score` and `mask` regions of `attn.attention` (and of
    `attn.attention_bwd`, which rejects them for now) and the body of
    `attn.map`.
    ```mlir
    attn.yield %s : f32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

include "dialects/Attn/IR/AttnElementwiseOps.td"

#endif // ATTNC_ATTN_OPS
