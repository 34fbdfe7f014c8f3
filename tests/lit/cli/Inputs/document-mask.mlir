func.func @doc_mask(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>)
    -> tensor<?x32x?x128xbf16> {
  %o = attn.attention %q, %k, %v {causal}
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c256 = arith.constant 256 : index
    %di = arith.divui %i, %c256 : index
    %dj = arith.divui %j, %c256 : index
    %same = arith.cmpi eq, %di, %dj : index
    attn.yield %same : i1
  }
  return %o : tensor<?x32x?x128xbf16>
}
