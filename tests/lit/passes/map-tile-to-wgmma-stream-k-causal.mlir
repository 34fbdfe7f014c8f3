// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=128" -attnc-assign-layouts="kv-stages=2 kv-sync=tma grid=persistent" -attnc-map-tile-to-wgmma | FileCheck %s

// A causal KV loop ends where the item's diagonal is: the items differ, so
// no stream-K tail (no schedule, no workspace).
// CHECK-LABEL: gpu.func @attention_fwd
// CHECK-NOT: sk_rounds
// CHECK-NOT: workspace
func.func @attention_fwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
