// RUN: attnc-opt %s -split-input-file -attnc-tile-attention-bwd -verify-diagnostics

func.func @not_on_args(%q: tensor<?x1x?x64xbf16>, %k: tensor<?x1x?x64xbf16>, %lse: tensor<?x1x?xf32>)
    -> tensor<?x1x?x64xbf16> {
  %c = arith.constant 0 : index
  %o = tensor.empty(%c, %c) : tensor<?x1x?x64xbf16>
  // expected-error @+1 {{cannot be tiled: attnc-tile-attention-bwd expects a function whose body is one attn.attention_bwd on the function's arguments}}
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %k, %o, %q, %lse
      : tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>,
        tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?xf32>
      -> tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>
  return %dq : tensor<?x1x?x64xbf16>
}
