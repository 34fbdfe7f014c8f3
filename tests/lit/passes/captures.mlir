// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" | FileCheck %s --check-prefix=TILE
// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" -attnc-lower-tile-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: attnc-opt %s -attnc-tile-attention="block-m=64 block-n=32" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s --check-prefix=MMA
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=WGMMA

// Captured tensors: each is a kernel parameter (its data), then one size
// and one stride per dim (abi::captureParamName), viewed as a strided
// memref; tile.score takes the views and its regions read them with
// memref.load. Every mapping loads an element per score element.
// TILE-LABEL: func.func @captures(
// TILE-SAME: %[[SL:[a-z0-9]+]]: memref<f32> {tile.param = "capture0"}, %[[SLN:[a-z0-9]+]]: i64 {tile.param = "capture0_size0"}, %[[SLS:[a-z0-9]+]]: i64 {tile.param = "capture0_stride0"},
// TILE-SAME: %[[DOC:[a-z0-9]+]]: memref<i32> {tile.param = "capture1"}, %{{.*}}: i64 {tile.param = "capture1_size0"}, %{{.*}}: i64 {tile.param = "capture1_size1"}, %{{.*}}: i64 {tile.param = "capture1_stride0"}, %{{.*}}: i64 {tile.param = "capture1_stride1"})
// TILE: %[[SLV:.*]] = memref.reinterpret_cast %[[SL]] to offset: [0], sizes: [%{{.*}}], strides: [%{{.*}}] : memref<f32> to memref<?xf32, strided<[?]>>
// TILE: %[[DOCV:.*]] = memref.reinterpret_cast %[[DOC]] to offset: [0], sizes: [%{{.*}}, %{{.*}}], strides: [%{{.*}}, %{{.*}}] : memref<i32> to memref<?x?xi32, strided<[?, ?]>>
// TILE: tile.score {{.*}} captures(%[[SLV]], %[[DOCV]] : memref<?xf32, strided<[?]>>, memref<?x?xi32, strided<[?, ?]>>)
// TILE: ^bb0(%{{.*}}: f32, %{{.*}}: index, %[[H:.*]]: index, %{{.*}}: index, %{{.*}}: index, %[[A:.*]]: memref<?xf32, strided<[?]>>, %{{.*}}: memref<?x?xi32, strided<[?, ?]>>):
// TILE: memref.load %[[A]][%[[H]]] : memref<?xf32, strided<[?]>>
// TILE: tile.yield
// TILE: mask {
// TILE: ^bb0(%[[B:.*]]: index, %{{.*}}: index, %[[I:.*]]: index, %[[J:.*]]: index, %{{.*}}: memref<?xf32, strided<[?]>>, %[[D:.*]]: memref<?x?xi32, strided<[?, ?]>>):
// TILE: memref.load %[[D]][%[[B]], %[[I]]]
// TILE: memref.load %[[D]][%[[B]], %[[J]]]

// LINALG: linalg.generic
// LINALG: memref.load %{{.*}} : memref<?xf32, strided<[?]>>
// LINALG: memref.load %{{.*}} : memref<?x?xi32, strided<[?, ?]>>

// MMA: gpu.func @captures
// MMA: memref.load %{{.*}} : memref<?xf32, strided<[?]>>
// MMA: memref.load %{{.*}} : memref<?x?xi32, strided<[?, ?]>>

// WGMMA: gpu.func @captures
// WGMMA: memref.load %{{.*}} : memref<?xf32, strided<[?]>>
// WGMMA: memref.load %{{.*}} : memref<?x?xi32, strided<[?, ?]>>

func.func @captures(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>,
                    %slopes: tensor<?xf32>, %doc: tensor<?x?xi32>) -> tensor<?x8x?x128xbf16> {
  %o = attn.attention %q, %k, %v captures(%slopes, %doc : tensor<?xf32>, tensor<?x?xi32>) {causal}
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %sl: tensor<?xf32>, %d: tensor<?x?xi32>):
    %m = tensor.extract %sl[%h] : tensor<?xf32>
    %r = arith.subf %s, %m : f32
    attn.yield %r : f32
  } mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %sl: tensor<?xf32>, %d: tensor<?x?xi32>):
    %di = tensor.extract %d[%b, %i] : tensor<?x?xi32>
    %dj = tensor.extract %d[%b, %j] : tensor<?x?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    attn.yield %same : i1
  }
  return %o : tensor<?x8x?x128xbf16>
}
