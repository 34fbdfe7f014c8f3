func.func @silu(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %s = attn.silu_mul %x : tensor<?x256xbf16> -> tensor<?x128xbf16>
  return %s : tensor<?x128xbf16>
}
