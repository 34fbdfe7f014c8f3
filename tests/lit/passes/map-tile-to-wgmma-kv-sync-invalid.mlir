// RUN: not attnc-opt %s -attnc-tile-attention="block-m=64 block-n=64" -attnc-assign-layouts="kv-sync=fence" -attnc-map-tile-to-wgmma 2>&1 | FileCheck %s

// kv-sync takes barrier, mbarrier (the default), producer, pingpong or tma.
// CHECK: for the --kv-sync option: Cannot find option named 'fence'!
func.func @attention_fwd(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>)
    -> tensor<?x2x?x64xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x2x?x64xbf16>
  return %o : tensor<?x2x?x64xbf16>
}
