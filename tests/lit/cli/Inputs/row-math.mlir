// A map whose region uses math ops: exp, tanh, log and sqrt take the row
// kernels' fast paths (ex2/lg2.approx, sqrt.rn); absf, erf and powf are left
// to the GPU-to-NVVM conversion (an intrinsic or a libdevice call).
func.func @row_math(%x: tensor<?x256xbf16>, %y: tensor<?x256xbf16>) -> tensor<?x256xbf16> {
  %z = attn.map %x, %y : tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x256xbf16> {
  ^bb0(%a: bf16, %b: bf16):
    %fa = arith.extf %a : bf16 to f32
    %fb = arith.extf %b : bf16 to f32
    %e = math.exp %fa : f32
    %t = math.tanh %fb : f32
    %l = math.log %e : f32
    %s = math.sqrt %e : f32
    %m = math.absf %t : f32
    %r = math.erf %m : f32
    %p = math.powf %s, %r : f32
    %u = arith.addf %l, %p : f32
    %o = arith.truncf %u : f32 to bf16
    attn.yield %o : bf16
  }
  return %z : tensor<?x256xbf16>
}
