// A custom-IR attention whose function is not named attention_fwd: the kernel
// keeps the function's name and the metadata's entry names it. Its mask
// (the first 4 keys hidden) is the same for every query tile.
func.func @my_variant(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>,
                      %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
      -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %first = arith.constant 4 : index
    %keep = arith.cmpi uge, %j, %first : index
    attn.yield %keep : i1
  }
  return %o : tensor<?x8x?x128xbf16>
}
