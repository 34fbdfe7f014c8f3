// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=tma" -attnc-map-tile-to-wgmma -verify-diagnostics
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=tma grid=persistent" -attnc-map-tile-to-wgmma -verify-diagnostics

// TMA boxes and persistent items address whole tensors, so they would cross
// a sequence's end: the wgmma mapping refuses them for a varlen kernel.
func.func @attention_fwd(%q: tensor<?x4x64xbf16>, %k: tensor<?x2x64xbf16>,
                         %v: tensor<?x2x64xbf16>, %cuq: tensor<?xi32>,
                         %cuk: tensor<?xi32>) -> tensor<?x4x64xbf16> {
  // expected-error @+1 {{the wgmma mapping takes a varlen kernel with kv-sync barrier, mbarrier, producer or pingpong, grid tiles and epilogue registers, not kv-sync tma}}
  %o = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<?xi32>, tensor<?xi32>)
      : tensor<?x4x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2x64xbf16>
      -> tensor<?x4x64xbf16>
  return %o : tensor<?x4x64xbf16>
}
