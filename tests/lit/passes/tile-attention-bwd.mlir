// RUN: attnc-opt %s -split-input-file -attnc-tile-attention-bwd="block-m=32 block-n=16" | FileCheck %s

// GQA 4/2, causal, soft-cap: three kernels with the backward's parameters.
// The preprocess: delta = rowsum(dO ∘ O), dq_accum zeroed.
// CHECK-LABEL: func.func @attention_bwd_preprocess(
// CHECK-SAME: %[[Q:.*]]: memref<bf16> {tile.param = "q"}
// CHECK-SAME: memref<f32> {tile.param = "dq_accum"}, %{{.*}}: memref<f32> {tile.param = "delta"}
// CHECK-SAME: i64 {tile.param = "lse_stride_h"}) attributes {tile.launch = #tile.launch<"attention_bwd_preprocess_v1", 32, 16, 4>}
// CHECK: %[[M:.*]] = tile.program_id 0
// CHECK: %[[H:.*]] = tile.program_id 1
// CHECK: %[[B:.*]] = tile.program_id 2
// CHECK: %[[Q0:.*]] = arith.muli %[[M]], %c32
// CHECK: %[[O:.*]] = tile.load {{.*}}[%[[B]], %[[H]], %[[Q0]]] {{.*}} -> tensor<32x64xbf16>
// CHECK: %[[DO:.*]] = tile.load {{.*}}[%[[B]], %[[H]], %[[Q0]]] {{.*}} -> tensor<32x64xbf16>
// CHECK: %[[DELTA:.*]] = tile.row_dot %[[DO]], %[[O]] : tensor<32x64xbf16> -> tensor<32xf32>
// CHECK: tile.store %[[DELTA]], {{.*}}[%[[B]], %[[H]], %[[Q0]]] : tensor<32xf32>, memref<?x4x?xf32, strided<[?, ?, 1]>>
// CHECK: tile.store %{{.*}}, {{.*}}[%[[B]], %[[H]], %[[Q0]]] : tensor<32x64xf32>, memref<?x4x?x64xf32, strided<[?, ?, ?, 1]>>

// The main kernel: one K/V tile, the group's query heads, the query tiles
// from the causal bound.
// CHECK-LABEL: func.func @attention_bwd(
// CHECK-SAME: attributes {tile.launch = #tile.launch<"attention_bwd_v1", 32, 16, 2>}
// CHECK: %[[N:.*]] = tile.program_id 0
// CHECK: %[[KVH:.*]] = tile.program_id 1
// CHECK: %[[B2:.*]] = tile.program_id 2
// CHECK: %[[K0:.*]] = arith.muli %[[N]], %c16
// CHECK: %[[K:.*]] = tile.load {{.*}}[%[[B2]], %[[KVH]], %[[K0]]] {{.*}} -> tensor<16x64xbf16>
// CHECK: %[[V:.*]] = tile.load {{.*}}[%[[B2]], %[[KVH]], %[[K0]]] {{.*}} -> tensor<16x64xbf16>
// CHECK: %[[H0:.*]] = arith.muli %[[KVH]], %c2
// CHECK: %[[H1:.*]] = arith.addi %[[H0]], %c2
// CHECK: scf.for %[[H:.*]] = %[[H0]] to %[[H1]] step %c1 iter_args
// CHECK: scf.for %[[QI:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[DK:.*]] = %{{.*}}, %[[DV:.*]] = %{{.*}})
// CHECK: %[[QT:.*]] = tile.load {{.*}}[%[[B2]], %[[H]], %[[QI]]] {{.*}} -> tensor<32x64xbf16>
// CHECK: %[[DOT:.*]] = tile.load {{.*}}[%[[B2]], %[[H]], %[[QI]]] {{.*}} -> tensor<32x64xbf16>
// CHECK: %[[LSE:.*]] = tile.load {{.*}} -> tensor<32xf32>
// CHECK: %[[DELTA2:.*]] = tile.load {{.*}} -> tensor<32xf32>
// CHECK: %[[S:.*]] = tile.dot %[[QT]], %[[K]] {transpose_b} : tensor<32x64xbf16>, tensor<16x64xbf16> -> tensor<32x16xf32>
// CHECK: %[[T:.*]] = tile.score %[[S]], %[[B2]], %[[H]], %[[QI]], %[[K0]], {{.*}} {causal, scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32}
// CHECK: %[[P:.*]] = tile.probs_from_lse %[[T]], %[[LSE]]
// CHECK: %[[PH:.*]] = arith.truncf %[[P]] : tensor<32x16xf32> to tensor<32x16xbf16>
// CHECK: %[[DV1:.*]] = tile.dot %[[PH]], %[[DOT]], %[[DV]] {transpose_a} : tensor<32x16xbf16>, tensor<32x64xbf16> -> tensor<16x64xf32>
// CHECK: %[[DP:.*]] = tile.dot %[[DOT]], %[[V]] {transpose_b} : tensor<32x64xbf16>, tensor<16x64xbf16> -> tensor<32x16xf32>
// CHECK: %[[DS:.*]] = tile.score_grad %[[P]], %[[DP]], %[[DELTA2]] scores %[[T]] {softcap = 3.000000e+01 : f32}
// CHECK: %[[DSH:.*]] = arith.truncf %[[DS]]
// CHECK: %[[DK1:.*]] = tile.dot %[[DSH]], %[[QT]], %[[DK]] {transpose_a} : tensor<32x16xbf16>, tensor<32x64xbf16> -> tensor<16x64xf32>
// CHECK: %[[DQ:.*]] = tile.dot %[[DSH]], %[[K]] : tensor<32x16xbf16>, tensor<16x64xbf16> -> tensor<32x64xf32>
// CHECK: %[[DQS:.*]] = arith.mulf %[[DQ]]
// CHECK: tile.store_add %[[DQS]], {{.*}}[%[[B2]], %[[H]], %[[QI]]] : tensor<32x64xf32>
// CHECK: scf.yield %[[DK1]], %[[DV1]]
// CHECK: scf.yield
// CHECK: arith.mulf
// CHECK: tile.store {{.*}}[%[[B2]], %[[KVH]], %[[K0]]] : tensor<16x64xbf16>
// CHECK: tile.store {{.*}}[%[[B2]], %[[KVH]], %[[K0]]] : tensor<16x64xbf16>

// The convert: dQ = dq_accum in bf16.
// CHECK-LABEL: func.func @attention_bwd_convert(
// CHECK-SAME: attributes {tile.launch = #tile.launch<"attention_bwd_convert_v1", 32, 16, 4>}
// CHECK: %[[ACC:.*]] = tile.load {{.*}} -> tensor<32x64xf32>
// CHECK: %[[DQH:.*]] = arith.truncf %[[ACC]] : tensor<32x64xf32> to tensor<32x64xbf16>
// CHECK: tile.store %[[DQH]]
func.func @attention_bwd(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>,
                         %o: tensor<?x4x?x64xbf16>, %do: tensor<?x4x?x64xbf16>, %lse: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) {
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %v, %o, %do, %lse {causal, scale = 0.125 : f32, softcap = 30.0 : f32}
      : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>,
        tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
      -> tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
}

// -----

// A window (8, 4) bounds the query tiles on both sides: the first row that
// sees key k0 is k0 - (Skv - Sq) - 4, aligned down to the tile; the last is
// k0 + 15 - (Skv - Sq) + 8. Without soft-cap tile.score_grad takes no scores.
// CHECK-LABEL: func.func @window(
// CHECK: %[[SHIFT:.*]] = arith.subi %{{.*}}, %{{.*}} : index
// CHECK: arith.maxsi
// CHECK: arith.divsi
// CHECK: %[[HI:.*]] = arith.minsi
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[HI]] step
// CHECK: tile.score {{.*}} {scale = 1.250000e-01 : f32, window = #attn.window<8, 4>}
// CHECK: tile.score_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x16xf32>, tensor<32xf32>
func.func @window(%q: tensor<?x1x?x64xf16>, %k: tensor<?x1x?x64xf16>, %v: tensor<?x1x?x64xf16>,
                  %o: tensor<?x1x?x64xf16>, %do: tensor<?x1x?x64xf16>, %lse: tensor<?x1x?xf32>)
    -> (tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>) {
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %v, %o, %do, %lse {window = #attn.window<8, 4>}
      : tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>,
        tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?xf32>
      -> tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>
  return %dq, %dk, %dv : tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>
}
