// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=tma epilogue=tma" -attnc-map-tile-to-wgmma -verify-diagnostics

// The TMA store of O writes whole boxes, past a sequence's end into the
// next sequence's rows: the wgmma mapping stores a varlen kernel's O from
// registers (bounded at the sequence's end) and refuses epilogue tma.
func.func @attention_fwd(%q: tensor<?x4x64xbf16>, %k: tensor<?x2x64xbf16>,
                         %v: tensor<?x2x64xbf16>, %cuq: tensor<?xi32>,
                         %cuk: tensor<?xi32>) -> tensor<?x4x64xbf16> {
  // expected-error @+1 {{the wgmma mapping stores a varlen kernel's O from registers, not by epilogue tma}}
  %o = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<?xi32>, tensor<?xi32>)
      : tensor<?x4x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2x64xbf16>
      -> tensor<?x4x64xbf16>
  return %o : tensor<?x4x64xbf16>
}
