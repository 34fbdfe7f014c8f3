func.func @merge(%oa: tensor<?x8x?x64xbf16>, %la: tensor<?x8x?xf32>, %ob: tensor<?x8x?x64xbf16>, %lb: tensor<?x8x?xf32>)
    -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %l = attn.lse_merge %oa, %la, %ob, %lb : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %l : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}
