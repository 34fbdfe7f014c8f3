func.func @attention_bwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>,
                         %o: tensor<?x4x?x128xbf16>, %do: tensor<?x4x?x128xbf16>, %lse: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>) {
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %v, %o, %do, %lse {causal}
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>,
        tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
      -> tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
}
