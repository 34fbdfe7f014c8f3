// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" | FileCheck %s --check-prefix=TILE
// RUN: attnc-opt %s -attnc-tile-attention="block-m=64 block-n=32" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s --check-prefix=MMA
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=WGMMA

// Key ranges: the kernel takes "kv_bounds" after the contract's parameters,
// reads the first key of the query tile's first row and the end key of its
// last row, and narrows the KV loop to them (the first rounded down to a KV
// tile): the tiles outside are never loaded. It also reads the keys every
// row sees by its range (the last row's first, the first row's end) once, for
// tile.score's choice of the unmasked path; the masked path loads each row's
// bounds.
// TILE-LABEL: func.func @ranges(
// TILE-SAME: %[[R:[a-z0-9]+]]: memref<i32> {tile.param = "kv_bounds"})
// TILE: %[[RV:.*]] = memref.reinterpret_cast %[[R]] to offset: [0], sizes: [%{{.*}}, %{{.*}}, 2], strides: [%{{.*}}, 2, 1] : memref<i32> to memref<?x?x2xi32>
// TILE: %[[LAST:.*]] = arith.subi %{{.*}}, %c1{{.*}} : index
// TILE: memref.load %[[RV]][%{{.*}}, %{{.*}}, %c0{{.*}}] : memref<?x?x2xi32>
// TILE: %[[LO:.*]] = arith.maxsi %c0{{.*}}, %{{.*}} : index
// TILE: memref.load %[[RV]][%{{.*}}, %[[LAST]], %c1{{.*}}] : memref<?x?x2xi32>
// TILE: %[[HI:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
// TILE: scf.for %{{.*}} = %[[LO]] to %[[HI]] step %c16
// TILE: tile.score {{.*}} kv_bounds(%[[RV]] : memref<?x?x2xi32>) inner(%{{.*}}, %{{.*}}) {causal

// MMA: gpu.func @ranges
// MMA: memref.load %{{.*}} : memref<?x?x2xi32>
// MMA: scf.for
// MMA: scf.if
// MMA: memref.load %{{.*}} : memref<?x?x2xi32>

// WGMMA: gpu.func @ranges
// WGMMA: memref.load %{{.*}} : memref<?x?x2xi32>

func.func @ranges(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>,
                  %r: tensor<?x?x2xi32>) -> tensor<?x8x?x128xbf16> {
  %o = attn.attention %q, %k, %v kv_bounds(%r : tensor<?x?x2xi32>) {causal}
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
