// RUN: attnc-opt %s -split-input-file | attnc-opt -split-input-file | FileCheck %s

// The attention backward's tile ops round-trip.
// CHECK-LABEL: func @backward_ops
// CHECK: tile.dot %{{.*}}, %{{.*}}, %{{.*}} {transpose_a} : tensor<64x32xbf16>, tensor<64x128xbf16> -> tensor<32x128xf32>
// CHECK: tile.probs_from_lse %{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<64xf32>
// CHECK: tile.score_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<64xf32>
// CHECK: tile.score_grad %{{.*}}, %{{.*}}, %{{.*}} scores %{{.*}} {softcap = 3.000000e+01 : f32} : tensor<64x32xf32>, tensor<64xf32>
// CHECK: tile.row_dot %{{.*}}, %{{.*}} : tensor<64x128xbf16> -> tensor<64xf32>
// CHECK: tile.store_add %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : tensor<64x128xf32>, memref<?x4x?x128xf32>
func.func @backward_ops(%p16: tensor<64x32xbf16>, %do: tensor<64x128xbf16>, %dv: tensor<32x128xf32>,
                        %t: tensor<64x32xf32>, %lse: tensor<64xf32>, %dp: tensor<64x32xf32>,
                        %acc: memref<?x4x?x128xf32>, %b: index, %h: index, %q0: index) {
  %dv1 = tile.dot %p16, %do, %dv {transpose_a} : tensor<64x32xbf16>, tensor<64x128xbf16> -> tensor<32x128xf32>
  %p = tile.probs_from_lse %t, %lse : tensor<64x32xf32>, tensor<64xf32>
  %ds = tile.score_grad %p, %dp, %lse : tensor<64x32xf32>, tensor<64xf32>
  %ds2 = tile.score_grad %p, %dp, %lse scores %t {softcap = 30.0 : f32} : tensor<64x32xf32>, tensor<64xf32>
  %delta = tile.row_dot %do, %do : tensor<64x128xbf16> -> tensor<64xf32>
  %dq = tile.dot %p16, %do {transpose_a} : tensor<64x32xbf16>, tensor<64x128xbf16> -> tensor<32x128xf32>
  %dq64 = tensor.empty() : tensor<64x128xf32>
  tile.store_add %dq64, %acc[%b, %h, %q0] : tensor<64x128xf32>, memref<?x4x?x128xf32>
  return
}
