// RUN: attnc-opt %s -split-input-file | attnc-opt -split-input-file | FileCheck %s

// A paged load with the sequence's length, packed scores, an f32 finalize.
// CHECK-LABEL: func @paged_step
// CHECK: tile.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] length %{{.*}} pages %{{.*}} : memref<?x?xi32> : memref<?x2x16x64xbf16, strided<[?, ?, ?, 1]>> -> tensor<32x64xbf16>
// CHECK: tile.score {{.*}} {causal, packed, scale = 1.250000e-01 : f32} : tensor<16x32xf32>
// CHECK: tile.finalize {{.*}} -> tensor<16x64xf32>
func.func @paged_step(%cache: memref<?x2x16x64xbf16, strided<[?, ?, ?, 1]>>, %table: memref<?x?xi32>,
                      %q: tensor<16x64xbf16>, %b: index, %h: index, %k0: index, %len: index, %sq: index,
                      %m: tensor<16xf32>, %l: tensor<16xf32>, %acc: tensor<16x64xf32>) {
  %kt = tile.load %cache[%b, %h, %k0] length %len pages %table : memref<?x?xi32> : memref<?x2x16x64xbf16, strided<[?, ?, ?, 1]>> -> tensor<32x64xbf16>
  %s = tile.dot %q, %kt {transpose_b} : tensor<16x64xbf16>, tensor<32x64xbf16> -> tensor<16x32xf32>
  %c0 = arith.constant 0 : index
  %t = tile.score %s, %b, %h, %c0, %k0, %sq, %len {scale = 0.125 : f32, causal, packed} : tensor<16x32xf32>
  %out, %ls = tile.finalize %acc, %m, %l : tensor<16x64xf32>, tensor<16xf32> -> tensor<16x64xf32>
  return
}

// -----

// The combine's step: partial O and LSE tiles (a rank-3 view for the LSE).
// CHECK-LABEL: func @merge_step
// CHECK: tile.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x4x?xf32> -> tensor<16xf32>
// CHECK: tile.lse_accumulate %{{.*}}, %{{.*}} into %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x64xf32>, tensor<16x64xf32>, tensor<16xf32>
func.func @merge_step(%op: memref<?x4x?x64xf32>, %lp: memref<?x4x?xf32>, %b: index, %h: index, %q0: index,
                      %acc: tensor<16x64xf32>, %m: tensor<16xf32>, %l: tensor<16xf32>) {
  %o = tile.load %op[%b, %h, %q0] : memref<?x4x?x64xf32> -> tensor<16x64xf32>
  %lse = tile.load %lp[%b, %h, %q0] : memref<?x4x?xf32> -> tensor<16xf32>
  %a2, %m2, %l2 = tile.lse_accumulate %o, %lse into %acc, %m, %l : tensor<16x64xf32>, tensor<16x64xf32>, tensor<16xf32>
  return
}
