func.func @attention_fwd(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>,
                         %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
      -> tensor<?x8x?x128xbf16>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %h32 = arith.index_cast %h : index to i32
    %c126 = arith.constant 126 : i32
    %exp = arith.subi %c126, %h32 : i32
    %c23 = arith.constant 23 : i32
    %bits = arith.shli %exp, %c23 : i32
    %slope = arith.bitcast %bits : i32 to f32    // 2^-(h+1)
    %d = arith.subi %i, %j : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.subf %s, %bias : f32
    attn.yield %r : f32
  } mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %prefix = arith.constant 512 : index
    %in_prefix = arith.cmpi ult, %j, %prefix : index
    %causal = arith.cmpi ule, %j, %i : index
    %keep = arith.ori %in_prefix, %causal : i1
    attn.yield %keep : i1
  }
  return %o : tensor<?x8x?x128xbf16>
}
