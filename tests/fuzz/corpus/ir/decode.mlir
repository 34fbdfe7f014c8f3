func.func @decode(%q: tensor<?x32x?x128xbf16>, %kc: tensor<?x8x16x128xbf16>, %vc: tensor<?x8x16x128xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens {causal, softcap = 30.0 : f32}
      : tensor<?x32x?x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
  return %o, %lse : tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
}
