// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=64 block-n=32" | FileCheck %s
// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=128 block-n=128" -attnc-assign-layouts -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=WGMMA

// A mask region of the query row that the interval evaluation understands
// (here causal written as a mod): the KV loop runs over the tiles found by
// two binary searches (scf.while over tile indices, each step evaluating
// the region over a range of keys), the longest query tiles go first
// (tile.dim0_major), as for the built-in causal flag.
// CHECK-LABEL: func.func @causal_mod(
// CHECK-SAME: tile.dim0_major
// CHECK: %[[END:.*]]:2 = scf.while
// CHECK: arith.cmpi slt
// CHECK: scf.condition
// CHECK: } do {
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[ENDKEY:.*]] = arith.muli %[[END]]#0, %c32
// CHECK-NEXT: %[[CAPPEDEND:.*]] = arith.minsi %{{.*}}, %[[ENDKEY]] : index
// CHECK-NEXT: %[[HI:.*]] = arith.maxsi %[[CAPPEDEND]], %{{.*}} : index
// CHECK-NEXT: %[[FIRST:.*]]:2 = scf.while
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[FIRSTKEY:.*]] = arith.muli %[[FIRST]]#0, %c32
// CHECK-NEXT: %[[CAPPED:.*]] = arith.minsi %[[FIRSTKEY]], %[[HI]] : index
// CHECK-NEXT: %[[LO:.*]] = arith.maxsi %c0, %[[CAPPED]] : index
// CHECK: scf.for %{{.*}} = %[[LO]] to %[[HI]] step %c32

// The wgmma mapping clones the searches into the kernel (a persistent
// kernel into each role's walk of the item prologue:
// cli/bundle-kernel-name.test and the GPU tests).
// WGMMA-LABEL: gpu.func @causal_mod
// WGMMA-COUNT-2: scf.while
func.func @causal_mod(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %keep = arith.cmpi sle, %j, %i : index
    attn.yield %keep : i1
  }
  return %o : tensor<?x8x?x128xbf16>
}

// -----

// A mask that reads a captured tensor says nothing over a range: the loop
// runs over every key and every tile takes the per-element masks.
// CHECK-LABEL: func.func @documents(
// CHECK-NOT: tile.dim0_major
// CHECK-NOT: scf.while
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c32
func.func @documents(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %d: tensor<?x?xi32>) -> tensor<?x8x?x128xbf16> {
  %o = attn.attention %q, %k, %v captures(%d : tensor<?x?xi32>)
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %doc: tensor<?x?xi32>):
    %di = tensor.extract %doc[%b, %i] : tensor<?x?xi32>
    %dj = tensor.extract %doc[%b, %j] : tensor<?x?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    attn.yield %same : i1
  }
  return %o : tensor<?x8x?x128xbf16>
}

// -----

// A mask of the keys alone is the same for every query tile: no search, and
// the loop stays item-invariant (the persistent schedule keeps its stream-K
// tail: cli/bundle-kernel-name.test).
// CHECK-LABEL: func.func @keys_only(
// CHECK-NOT: tile.dim0_major
// CHECK-NOT: scf.while
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c32
func.func @keys_only(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c4 = arith.constant 4 : index
    %keep = arith.cmpi uge, %j, %c4 : index
    attn.yield %keep : i1
  }
  return %o : tensor<?x8x?x128xbf16>
}
