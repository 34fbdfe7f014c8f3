// ALiBi from a per-head slopes tensor and a document mask from [B, S]
// document ids (both captured tensors), on a causal GQA attention.
func.func @captures(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>,
                    %slopes: tensor<?xf32>, %doc: tensor<?x?xi32>) -> tensor<?x8x?x128xbf16> {
  %o = attn.attention %q, %k, %v captures(%slopes, %doc : tensor<?xf32>, tensor<?x?xi32>) {causal}
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %sl: tensor<?xf32>, %d: tensor<?x?xi32>):
    %m = tensor.extract %sl[%h] : tensor<?xf32>
    %dist = arith.subi %i, %j : index
    %di = arith.index_cast %dist : index to i64
    %df = arith.sitofp %di : i64 to f32
    %bias = arith.mulf %m, %df : f32
    %r = arith.subf %s, %bias : f32
    attn.yield %r : f32
  } mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %sl: tensor<?xf32>, %d: tensor<?x?xi32>):
    %di = tensor.extract %d[%b, %i] : tensor<?x?xi32>
    %dj = tensor.extract %d[%b, %j] : tensor<?x?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    attn.yield %same : i1
  }
  return %o : tensor<?x8x?x128xbf16>
}
