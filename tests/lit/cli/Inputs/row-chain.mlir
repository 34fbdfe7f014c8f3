// softmax(x[:, 64:]) * w: slice, two reductions, three maps in one kernel.
func.func @chain(%x: tensor<?x128xbf16>, %w: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %hi = attn.slice %x {offset = 64 : i64, size = 64 : i64} : tensor<?x128xbf16> -> tensor<?x64xbf16>
  %f = attn.map %hi : tensor<?x64xbf16> -> tensor<?x64xf32> {
  ^bb0(%a: bf16):
    %e = arith.extf %a : bf16 to f32
    attn.yield %e : f32
  }
  %m = attn.reduce max %f : tensor<?x64xf32> -> tensor<?x1xf32>
  %e = attn.map %f, %m : tensor<?x64xf32>, tensor<?x1xf32> -> tensor<?x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %v = math.exp %d : f32
    attn.yield %v : f32
  }
  %s = attn.reduce sum %e : tensor<?x64xf32> -> tensor<?x1xf32>
  %y = attn.map %e, %s, %w : tensor<?x64xf32>, tensor<?x1xf32>, tensor<64xbf16> -> tensor<?x64xbf16> {
  ^bb0(%a: f32, %b: f32, %c: bf16):
    %q = arith.divf %a, %b : f32
    %cf = arith.extf %c : bf16 to f32
    %r = arith.mulf %q, %cf : f32
    %t = arith.truncf %r : f32 to bf16
    attn.yield %t : bf16
  }
  return %y : tensor<?x64xbf16>
}
