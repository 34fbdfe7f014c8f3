// math.clampf has no GPU lowering: attnc emit says so at the op.
func.func @clamped(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>,
                   %v: tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>
      -> tensor<?x8x?x64xbf16>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %lo = arith.constant -5.0 : f32
    %hi = arith.constant 5.0 : f32
    %r = math.clampf %s to [%lo, %hi] : f32
    attn.yield %r : f32
  }
  return %o : tensor<?x8x?x64xbf16>
}
