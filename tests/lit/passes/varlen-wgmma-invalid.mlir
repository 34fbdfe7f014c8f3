// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=tma grid=persistent" -attnc-map-tile-to-wgmma -verify-diagnostics
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=tma epilogue=tma" -attnc-map-tile-to-wgmma -verify-diagnostics

// A persistent item assumes one length for every sequence, and the TMA
// store of O writes whole boxes past a sequence's end: the wgmma mapping
// refuses both for a varlen kernel.
func.func @attention_fwd(%q: tensor<?x4x64xbf16>, %k: tensor<?x2x64xbf16>,
                         %v: tensor<?x2x64xbf16>, %cuq: tensor<?xi32>,
                         %cuk: tensor<?xi32>) -> tensor<?x4x64xbf16> {
  // expected-error @+1 {{the wgmma mapping takes a varlen kernel with grid tiles and epilogue registers, not grid}}
  %o = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<?xi32>, tensor<?xi32>)
      : tensor<?x4x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2x64xbf16>
      -> tensor<?x4x64xbf16>
  return %o : tensor<?x4x64xbf16>
}
