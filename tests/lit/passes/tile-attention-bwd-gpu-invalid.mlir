// RUN: attnc-opt %s -attnc-tile-attention-bwd -attnc-map-tile-to-simt -verify-diagnostics

// The backward's kernels have no GPU mapping yet: the mapping stops with an
// error at the op (at the first tile op it has no mapping for), never with
// a kernel that silently lacks a part.
func.func @attention_bwd(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x1x?x64xbf16>, %v: tensor<?x1x?x64xbf16>,
                         %o: tensor<?x2x?x64xbf16>, %do: tensor<?x2x?x64xbf16>, %lse: tensor<?x2x?xf32>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>) {
  // expected-error @+1 {{no GPU mapping for this tile op}}
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %v, %o, %do, %lse {causal}
      : tensor<?x2x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>,
        tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
      -> tensor<?x2x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x2x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>
}
