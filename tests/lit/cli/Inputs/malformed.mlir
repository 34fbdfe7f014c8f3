func.func @broken(%q: tensor<?x32x?x128xbf16>) {
  %o = attn.attention %q, %q : tensor<?x32x?x128xbf16>
  return
}
