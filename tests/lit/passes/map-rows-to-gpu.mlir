// RUN: attnc-opt %s -attnc-fuse-elementwise -canonicalize -cse -attnc-map-rows-to-gpu | FileCheck %s

// add_rmsnorm, 4096 columns: 2 rows of 256 threads per block, 2 vectors of
// 8 per thread and input (x, residual, weight), loaded before use; the mean
// of squares reduced by 5 shuffles within a warp, then across the 8 warps of
// the row through shared memory (16 slots: 2 rows x 8 warps).
// CHECK: gpu.module @kernels
// CHECK: gpu.func @add_rmsnorm
// CHECK-SAME: workgroup(%{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel
// CHECK-SAME: known_block_size = array<i32: 512, 1, 1>
// CHECK-COUNT-6: vector.load %{{.*}} {alignment = 16 : i64} : memref<{{.*}}xbf16{{.*}}>, vector<8xbf16>
// CHECK: vector.reduction <add>
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK-COUNT-4: vector.store %{{.*}} {alignment = 16 : i64} : memref<?x4096xbf16, strided<[?, 1]>>, vector<8xbf16>
// CHECK: gpu.return
func.func @add_rmsnorm(%x: tensor<?x4096xbf16> {attn.param = "x"}, %r: tensor<?x4096xbf16> {attn.param = "residual"},
                       %w: tensor<4096xbf16> {attn.param = "weight"})
    -> (tensor<?x4096xbf16> {attn.param = "out"}, tensor<?x4096xbf16> {attn.param = "residual_out"}) {
  %y, %h = attn.add_rmsnorm %x, %r, %w {epsilon = 1.0e-6 : f32}
      : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
