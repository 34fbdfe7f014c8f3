// Score and mask regions in math ops, which the GPU lowering turns into
// libdevice calls: a soft-cap of 20 as 20·tanh(s/20) passed through exp and
// log, and a causal mask as sqrt(|j|) <= sqrt(i).
func.func @score_math(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>,
                      %v: tensor<?x8x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>
      -> tensor<?x8x?x128xbf16>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 20.0 : f32
    %x = arith.divf %s, %c : f32
    %t = math.tanh %x : f32
    %y = arith.mulf %t, %c : f32
    %e = math.exp %y : f32
    %l = math.log %e : f32
    attn.yield %l : f32
  } mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_cast %j : index to i64
    %fi = arith.sitofp %i64 : i64 to f32
    %fj = arith.sitofp %j64 : i64 to f32
    %aj = math.absf %fj : f32
    %si = math.sqrt %fi : f32
    %sj = math.sqrt %aj : f32
    %keep = arith.cmpf ole, %sj, %si : f32
    attn.yield %keep : i1
  }
  return %o : tensor<?x8x?x128xbf16>
}
