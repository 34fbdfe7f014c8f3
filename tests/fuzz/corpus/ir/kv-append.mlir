func.func @kv_append(%k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %slots: tensor<?xi64>,
                     %kc: tensor<?x8x16x128xbf16>, %vc: tensor<?x8x16x128xbf16>)
    -> (tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>) {
  %kc1, %vc1 = attn.kv_append %k, %v, %slots, %kc, %vc
      : tensor<?x8x128xbf16>, tensor<?xi64>, tensor<?x8x16x128xbf16> -> tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
  return %kc1, %vc1 : tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
