// A custom-IR attention whose function is not named attention_fwd: the kernel
// keeps the function's name and the metadata's entry names it.
func.func @my_variant(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>,
                      %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
      -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %prefix = arith.constant 64 : index
    %in_prefix = arith.cmpi ult, %j, %prefix : index
    %causal = arith.cmpi ule, %j, %i : index
    %keep = arith.ori %in_prefix, %causal : i1
    attn.yield %keep : i1
  }
  return %o : tensor<?x8x?x128xbf16>
}
