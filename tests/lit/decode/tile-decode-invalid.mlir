// RUN: attnc-opt %s -split-input-file -attnc-tile-decode="max-q-len=16" -verify-diagnostics

func.func @too_many_rows(%q: tensor<?x8x?x64xbf16>, %kc: tensor<?x1x16x64xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> tensor<?x8x?x64xbf16> {
  // expected-error @+1 {{cannot pack 8 query heads x max-q-len 16 rows into one program: at most 64 rows}}
  %o = attn.decode %q, %kc, %kc, %table, %lens : tensor<?x8x?x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x8x?x64xbf16>
  return %o : tensor<?x8x?x64xbf16>
}

// -----

func.func @not_args(%k: tensor<?x8x128xbf16>, %slots: tensor<?xi64>, %kc: tensor<?x8x16x128xbf16>) -> tensor<?x8x16x128xbf16> {
  // expected-error @+1 {{cannot be tiled: attnc-tile-decode expects a function whose body is one attn.kv_append on the function's arguments}}
  %a, %b = attn.kv_append %k, %k, %slots, %kc, %kc : tensor<?x8x128xbf16>, tensor<?xi64>, tensor<?x8x16x128xbf16> -> tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
  %c, %d = attn.kv_append %k, %k, %slots, %a, %b : tensor<?x8x128xbf16>, tensor<?xi64>, tensor<?x8x16x128xbf16> -> tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
  return %c : tensor<?x8x16x128xbf16>
}
