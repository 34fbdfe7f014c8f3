// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" | FileCheck %s --check-prefix=TILE
// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" -attnc-lower-tile-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" -attnc-map-tile-to-simt | FileCheck %s --check-prefix=SIMT
// RUN: attnc-opt %s -attnc-tile-attention="block-m=64 block-n=32" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s --check-prefix=MMA
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=WGMMA

// Attention sinks: the kernel takes one more parameter, "sinks", reads
// its head's logit once, before the KV loop, and tile.finalize merges it
// into the row state; each mapping turns it into the log2 domain
// (x log2 e) and merges it as one more key of value zero.
// TILE-LABEL: func.func @attention_fwd(
// TILE-SAME: %[[S:[a-z0-9]+]]: memref<f32> {tile.param = "sinks"})
// TILE: %[[H:.*]] = tile.program_id 1
// TILE: %[[SV:.*]] = memref.reinterpret_cast %[[S]] to offset: [0], sizes: [4], strides: [1] : memref<f32> to memref<4xf32>
// TILE: %[[SINK:.*]] = memref.load %[[SV]][%[[H]]] : memref<4xf32>
// TILE: scf.for
// TILE: tile.finalize %{{.*}}, %{{.*}}, %{{.*}} sink %[[SINK]] : tensor<32x64xf32>, tensor<32xf32> -> tensor<32x64xbf16>

// LINALG: %[[SINK:.*]] = memref.load
// LINALG: %[[SL2:.*]] = arith.mulf %[[SINK]], %{{.*}} : f32
// LINALG: linalg.generic
// LINALG: arith.maximumf %{{.*}}, %[[SL2]]
// LINALG: math.exp2
// LINALG: math.exp2

// SIMT: gpu.func @attention_fwd
// SIMT: %[[SINK:.*]] = memref.load %{{.*}} : memref<4xf32>
// SIMT: %[[LOOP:.*]]:3 = scf.for
// SIMT: %[[S2:.*]] = arith.mulf %[[SINK]], %{{.*}} : f32
// SIMT: arith.maximumf %[[LOOP]]#0, %[[S2]] : f32
// MMA: gpu.func @attention_fwd
// MMA: %[[SINK:.*]] = memref.load %{{.*}} : memref<4xf32>
// MMA: scf.for
// MMA: %[[S2:.*]] = arith.mulf %[[SINK]], %{{.*}} : f32
// MMA: arith.maximumf %{{.*}}, %[[S2]] : f32
// WGMMA: gpu.func @attention_fwd
// WGMMA: %[[SINK:.*]] = memref.load %{{.*}} : memref<4xf32>
// WGMMA: %[[S2:.*]] = arith.mulf %[[SINK]], %{{.*}} : f32
// WGMMA: arith.maximumf %{{.*}}, %[[S2]] : f32
func.func @attention_fwd(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                         %v: tensor<?x2x?x64xbf16>, %s: tensor<4xf32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v sinks(%s : tensor<4xf32>) {causal}
      : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
