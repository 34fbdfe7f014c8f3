// RUN: attnc-opt %s -split-input-file -attnc-fuse-elementwise -canonicalize -cse | FileCheck %s
// RUN: attnc-opt %s -split-input-file -attnc-fuse-elementwise -canonicalize -cse | FileCheck %s --check-prefix=COUNT

// A chain of five ops (slice, reduce, map, reduce, map) becomes one kernel:
// each input read once, the output written once, nothing else in memory.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%{{.*}}: memref<f32> {tile.param = "in0"}, %{{.*}}: memref<f32> {tile.param = "in1"}, %{{.*}}: memref<f32> {tile.param = "out0"}, %{{.*}}: i64 {tile.param = "rows"}, %{{.*}}: i64 {tile.param = "in0_stride"}, %{{.*}}: i64 {tile.param = "out0_stride"})
// CHECK-SAME: tile.launch = #tile.launch<"rowwise_v1", 32, 4, 0>
// CHECK-SAME: tile.row_length = 64 : i64
// CHECK: %[[ROW:.*]] = tile.program_id 0
// CHECK: tile.load_row %{{.*}}[%[[ROW]], %c64] : memref<?x128xf32, strided<[?, 1]>> -> tensor<64xf32>
// CHECK: tile.reduce_row max
// CHECK: math.exp %{{.*}} : tensor<64xf32>
// CHECK: tile.reduce_row sum
// CHECK: tile.load_row %{{.*}}[%c0] : memref<64xf32> -> tensor<64xf32>
// CHECK: tile.store_row %{{.*}}, %{{.*}}[%[[ROW]], %{{.*}}] : tensor<64xf32>, memref<?x64xf32, strided<[?, 1]>>
// CHECK-NOT: tile.store_row
// CHECK-NOT: attn.
// CHECK: return
// COUNT-LABEL: func.func @chain
// COUNT-COUNT-2: tile.load_row
// COUNT-NOT: tile.load_row
// COUNT-COUNT-1: tile.store_row
// COUNT-NOT: tile.store_row
func.func @chain(%x: tensor<?x128xf32>, %w: tensor<64xf32>) -> tensor<?x64xf32> {
  %hi = attn.slice %x {offset = 64 : i64, size = 64 : i64} : tensor<?x128xf32> -> tensor<?x64xf32>
  %m = attn.reduce max %hi : tensor<?x64xf32> -> tensor<?x1xf32>
  %e = attn.map %hi, %m : tensor<?x64xf32>, tensor<?x1xf32> -> tensor<?x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %v = math.exp %d : f32
    attn.yield %v : f32
  }
  %s = attn.reduce sum %e : tensor<?x64xf32> -> tensor<?x1xf32>
  %y = attn.map %e, %s, %w : tensor<?x64xf32>, tensor<?x1xf32>, tensor<64xf32> -> tensor<?x64xf32> {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %q = arith.divf %a, %b : f32
    %r = arith.mulf %q, %c : f32
    attn.yield %r : f32
  }
  return %y : tensor<?x64xf32>
}

// -----

// COUNT-LABEL: func.func @silu_mul
// silu_mul: two loads of one input (the gate and up halves), one store.
// CHECK-LABEL: func.func @silu_mul
// CHECK-SAME: {tile.param = "x"}
// CHECK-SAME: {tile.param = "out"}
// CHECK-SAME: #tile.launch<"rowwise_v1", 1, 1024, 0>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[CD:.*]] = arith.constant 14336 : index
// CHECK-DAG: tile.load_row %{{.*}}[%{{.*}}, %[[C0]]] : memref<?x28672xbf16, strided<[?, 1]>> -> tensor<14336xbf16>
// CHECK-DAG: tile.load_row %{{.*}}[%{{.*}}, %[[CD]]] : memref<?x28672xbf16, strided<[?, 1]>> -> tensor<14336xbf16>
// CHECK: math.exp
// CHECK: arith.truncf %{{.*}} : tensor<14336xf32> to tensor<14336xbf16>
// CHECK: tile.store_row
// CHECK-NOT: tile.store_row
func.func @silu_mul(%x: tensor<?x28672xbf16> {attn.param = "x"}) -> (tensor<?x14336xbf16> {attn.param = "out"}) {
  %y = attn.silu_mul %x : tensor<?x28672xbf16> -> tensor<?x14336xbf16>
  return %y : tensor<?x14336xbf16>
}

// -----

// add_rmsnorm: three loads (x, residual, weight), a mean-of-squares
// reduction, two stores; the new residual is rounded before the norm.
// CHECK-LABEL: func.func @add_rmsnorm
// CHECK-SAME: #tile.launch<"rowwise_v1", 2, 256, 0>
// CHECK-COUNT-3: tile.load_row
// CHECK: arith.addf %{{.*}} : tensor<4096xf32>
// CHECK: %[[H:.*]] = arith.truncf %{{.*}} : tensor<4096xf32> to tensor<4096xbf16>
// CHECK: tile.reduce_row mean_sq
// CHECK: math.rsqrt %{{.*}} : f32
// CHECK: tensor.splat
// CHECK-COUNT-2: tile.store_row
func.func @add_rmsnorm(%x: tensor<?x4096xbf16>, %r: tensor<?x4096xbf16>, %w: tensor<4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %y, %h = attn.add_rmsnorm %x, %r, %w {epsilon = 1.0e-6 : f32}
      : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
