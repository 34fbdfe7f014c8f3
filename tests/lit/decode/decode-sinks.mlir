// RUN: attnc-opt %s -attnc-tile-decode="block-n=16" | FileCheck %s
// RUN: attnc-opt %s -attnc-tile-decode="block-n=16" -attnc-map-combine-to-gpu | FileCheck %s --check-prefix=GPU

// Decode with attention sinks: the split kernel stores only its f32
// partials (no write_o branches, no tile.finalize into O), and the
// combine, one program per query head, takes "sinks" as its last
// parameter and merges the head's logit once at tile.finalize.
// CHECK-LABEL: func.func @decode_split(
// CHECK-NOT: scf.if
// CHECK: tile.finalize %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} : tensor<16x128xf32>, tensor<16xf32> -> tensor<16x128xf32>
// CHECK-NOT: scf.if
// CHECK-NOT: tile.split_arrive
// CHECK: return
// CHECK-LABEL: func.func @decode_combine(
// CHECK-SAME: %[[S:[a-z0-9]+]]: memref<f32> {tile.param = "sinks"})
// CHECK: %[[H:.*]] = tile.program_id 1
// CHECK: %[[SV:.*]] = memref.reinterpret_cast %[[S]] to offset: [0], sizes: [32], strides: [1]
// CHECK: %[[SINK:.*]] = memref.load %[[SV]][%[[H]]]
// CHECK: scf.for
// CHECK: tile.lse_accumulate
// CHECK: tile.finalize %{{.*}} sink %[[SINK]]

// GPU: gpu.func @decode_combine
// GPU: %[[SINK:.*]] = memref.load
// GPU: arith.mulf %[[SINK]]
func.func @decode(%q: tensor<?x32x?x128xbf16>, %kc: tensor<?x8x16x128xbf16>,
                  %vc: tensor<?x8x16x128xbf16>, %table: tensor<?x?xi32>,
                  %lens: tensor<?xi32>, %sinks: tensor<32xf32>)
    -> (tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens sinks(%sinks : tensor<32xf32>)
      : tensor<?x32x?x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>,
        tensor<?x?xi32>, tensor<?xi32> -> tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
  return %o, %lse : tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
}
