// RUN: attnc-opt %s -attnc-fuse-elementwise -canonicalize -cse -attnc-map-rows-to-gpu | FileCheck %s

// add_rmsnorm, 4096 columns: 128 threads per row, 4 vectors of 8 per thread
// and input, loaded before use; the mean of squares reduced by 5 shuffles
// within a warp, then across the 4 warps through shared memory.
// CHECK: gpu.module @kernels
// CHECK: gpu.func @add_rmsnorm
// CHECK-SAME: workgroup(%{{.*}} : memref<4xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-COUNT-12: vector.load %{{.*}} {alignment = 16 : i64} : memref<{{.*}}xbf16{{.*}}>, vector<8xbf16>
// CHECK: vector.reduction <add>
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK-COUNT-8: vector.store %{{.*}} {alignment = 16 : i64} : memref<?x4096xbf16, strided<[?, 1]>>, vector<8xbf16>
// CHECK: gpu.return
func.func @add_rmsnorm(%x: tensor<?x4096xbf16> {attn.param = "x"}, %r: tensor<?x4096xbf16> {attn.param = "residual"},
                       %w: tensor<4096xbf16> {attn.param = "weight"})
    -> (tensor<?x4096xbf16> {attn.param = "out"}, tensor<?x4096xbf16> {attn.param = "residual_out"}) {
  %y, %h = attn.add_rmsnorm %x, %r, %w {epsilon = 1.0e-6 : f32}
      : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
