// RUN: attnc-opt %s -attnc-tile-decode -attnc-map-tile-to-simt -verify-diagnostics

// Decode runs on the mma.sync mapping: the SIMT baseline says so at the op.
func.func @decode(%q: tensor<?x4x?x64xbf16>, %kc: tensor<?x1x16x64xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> tensor<?x4x?x64xbf16> {
  // expected-error @+1 {{the SIMT mapping has no paged or length-bounded loads}}
  %o = attn.decode %q, %kc, %kc, %table, %lens : tensor<?x4x?x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x4x?x64xbf16>
  return %o : tensor<?x4x?x64xbf16>
}
