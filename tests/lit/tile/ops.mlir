// RUN: attnc-opt %s -split-input-file | attnc-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @one_kv_step
// CHECK: tile.program_id 0
// CHECK: tile.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x2x?x64xbf16, strided<[?, ?, ?, 1]>> -> tensor<32x64xbf16>
// CHECK: tile.dot %{{.*}}, %{{.*}} {transpose_b} : tensor<32x64xbf16>, tensor<16x64xbf16> -> tensor<32x16xf32>
// CHECK: tile.score %{{.*}} {causal, scale = 1.250000e-01 : f32, window = #attn.window<8, 0>} : tensor<32x16xf32>
// CHECK: tile.softmax_update %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x16xf32>, tensor<32xf32>
// CHECK: tile.rescale %{{.*}}, %{{.*}} : tensor<32x64xf32>, tensor<32xf32>
// CHECK: tile.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x16xbf16>, tensor<16x64xbf16> -> tensor<32x64xf32>
// CHECK: tile.finalize %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x64xf32>, tensor<32xf32> -> tensor<32x64xbf16>
// CHECK: tile.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : tensor<32xf32>, memref<?x2x?xf32, strided<[?, ?, 1]>>
func.func @one_kv_step(%q: memref<?x2x?x64xbf16, strided<[?, ?, ?, 1]>>,
                       %o: memref<?x2x?x64xbf16, strided<[?, ?, ?, 1]>>,
                       %lse: memref<?x2x?xf32, strided<[?, ?, 1]>>,
                       %b: index, %h: index, %q0: index, %k0: index, %sq: index, %skv: index,
                       %m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>)
    attributes {tile.launch = #tile.launch<"attention_fwd_v1", 32, 16, 2>} {
  %pid = tile.program_id 0
  %qt = tile.load %q[%b, %h, %q0] : memref<?x2x?x64xbf16, strided<[?, ?, ?, 1]>> -> tensor<32x64xbf16>
  %kt = tile.load %q[%b, %h, %k0] : memref<?x2x?x64xbf16, strided<[?, ?, ?, 1]>> -> tensor<16x64xbf16>
  %s = tile.dot %qt, %kt {transpose_b} : tensor<32x64xbf16>, tensor<16x64xbf16> -> tensor<32x16xf32>
  %t = tile.score %s, %b, %h, %q0, %k0, %sq, %skv {scale = 0.125 : f32, causal, window = #attn.window<8, 0>} : tensor<32x16xf32>
  %p, %m2, %l2, %alpha = tile.softmax_update %t, %m, %l : tensor<32x16xf32>, tensor<32xf32>
  %acc2 = tile.rescale %acc, %alpha : tensor<32x64xf32>, tensor<32xf32>
  %pb = arith.truncf %p : tensor<32x16xf32> to tensor<32x16xbf16>
  %acc3 = tile.dot %pb, %kt, %acc2 : tensor<32x16xbf16>, tensor<16x64xbf16> -> tensor<32x64xf32>
  %out, %ls = tile.finalize %acc3, %m2, %l2 : tensor<32x64xf32>, tensor<32xf32> -> tensor<32x64xbf16>
  tile.store %out, %o[%b, %h, %q0] : tensor<32x64xbf16>, memref<?x2x?x64xbf16, strided<[?, ?, ?, 1]>>
  tile.store %ls, %lse[%b, %h, %q0] : tensor<32xf32>, memref<?x2x?xf32, strided<[?, ?, 1]>>
  return
}

// -----

// A mask region on tile.score (cloned from attn's mask_mod).
// CHECK-LABEL: func @score_with_mask
// CHECK: tile.score
// CHECK: mask {
// CHECK: tile.yield %{{.*}} : i1
func.func @score_with_mask(%s: tensor<16x16xf32>, %i: index) -> tensor<16x16xf32> {
  %t = tile.score %s, %i, %i, %i, %i, %i, %i {scale = 1.0 : f32} : tensor<16x16xf32>
  mask {
  ^bb0(%b: index, %h: index, %r: index, %c: index):
    %keep = arith.cmpi ule, %c, %r : index
    tile.yield %keep : i1
  }
  return %t : tensor<16x16xf32>
}
