// A document mask from [B, S] document ids (a captured tensor) with the
// documents' key ranges (kv_bounds), causal, GQA 8/2.
func.func @documents(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>,
                     %bounds: tensor<?x?x2xi32>, %doc: tensor<?x?xi32>) -> tensor<?x8x?x128xbf16> {
  %o = attn.attention %q, %k, %v kv_bounds(%bounds : tensor<?x?x2xi32>) captures(%doc : tensor<?x?xi32>) {causal}
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?x?xi32>):
    %di = tensor.extract %d[%b, %i] : tensor<?x?xi32>
    %dj = tensor.extract %d[%b, %j] : tensor<?x?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    attn.yield %same : i1
  }
  return %o : tensor<?x8x?x128xbf16>
}
