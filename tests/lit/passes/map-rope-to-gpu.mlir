// RUN: attnc-opt %s -split-input-file -attnc-fuse-elementwise -canonicalize -cse -attnc-map-rows-to-gpu | FileCheck %s

// NeoX, rotary part 64: 4 threads per token, 32 tokens per block; a thread
// owns vectors l and l + 4 of each head (a pair's two halves), so the
// partner of a vector is the thread's other vector, negated in the first
// half. cos/sin: vector c reads vector c mod 4 of its half.
// CHECK: gpu.func @neox
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: memref.load %{{.*}} : memref<?xi64>
// CHECK: arith.remui
// CHECK: vector.load %{{.*}} : memref<?x64xbf16, strided<[?, 1]>>, vector<8xbf16>
// CHECK: arith.negf %{{.*}} : vector<8xf32>
// CHECK: vector.store
func.func @neox(%pos: tensor<?xi64>, %q: tensor<?x128xbf16>, %k: tensor<?x64xbf16>, %c: tensor<?x64xbf16>)
    -> (tensor<?x128xbf16>, tensor<?x64xbf16>) {
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 64 : i64}
      : tensor<?xi64>, tensor<?x128xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x128xbf16>, tensor<?x64xbf16>
  return %q2, %k2 : tensor<?x128xbf16>, tensor<?x64xbf16>
}

// -----

// GPT-J: cos/sin as 8-byte loads, each element twice; the partner is a
// swap of neighbours times (-1, 1, ...).
// CHECK: gpu.func @gptj
// CHECK: vector.load %{{.*}} {alignment = 8 : i64} : memref<?x32xf16, strided<[?, 1]>>, vector<4xf16>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 0, 1, 1, 2, 2, 3, 3] : vector<4xf16>, vector<4xf16>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [1, 0, 3, 2, 5, 4, 7, 6] : vector<8xf32>, vector<8xf32>
// CHECK: arith.constant dense<[-1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00]> : vector<8xf32>
func.func @gptj(%pos: tensor<?xi32>, %q: tensor<?x128xf16>, %k: tensor<?x64xf16>, %c: tensor<?x32xf16>)
    -> (tensor<?x128xf16>, tensor<?x64xf16>) {
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 32 : i64, is_neox = false}
      : tensor<?xi32>, tensor<?x128xf16>, tensor<?x64xf16>, tensor<?x32xf16> -> tensor<?x128xf16>, tensor<?x64xf16>
  return %q2, %k2 : tensor<?x128xf16>, tensor<?x64xf16>
}
