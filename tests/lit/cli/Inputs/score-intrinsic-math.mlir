// Math ops with neither an NVVM nor a libdevice lowering but an LLVM
// intrinsic (math.trunc, math.ctpop) in a score region.
func.func @intrinsic_math(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>,
                          %v: tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>
      -> tensor<?x8x?x64xbf16>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = math.trunc %s : f32
    %j32 = arith.index_cast %j : index to i32
    %bits = math.ctpop %j32 : i32
    %fb = arith.sitofp %bits : i32 to f32
    %r = arith.addf %t, %fb : f32
    attn.yield %r : f32
  }
  return %o : tensor<?x8x?x64xbf16>
}
