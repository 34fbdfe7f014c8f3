// RUN: attnc-opt %s -attnc-tile-decode="block-n=128 stages=3" -attnc-choose-mma-schedule="decode-key-warps=4" -attnc-map-tile-to-mma | FileCheck %s
// RUN: attnc-opt %s -attnc-tile-decode="block-n=128 stages=3" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s --check-prefix=ONE
// RUN: not attnc-opt %s -attnc-tile-decode="block-n=32 stages=3" -attnc-choose-mma-schedule="decode-key-warps=4" -attnc-map-tile-to-mma 2>&1 | FileCheck %s --check-prefix=NARROW
// RUN: not attnc-opt %s -attnc-tile-decode="block-n=128 stages=3" -attnc-choose-mma-schedule="decode-key-warps=3" -attnc-map-tile-to-mma 2>&1 | FileCheck %s --check-prefix=COUNT

// Four warps along the keys of each 128-key tile (GQA 4/1, D128, one row
// warp): a block of 128 threads, every one copying the K/V tiles; the
// rings (3 x 128 x 128 bf16 each) and Q are followed by the scratch for the
// states of key warps 1-3 (3 x 68 floats x 32 lanes: 64 of acc, 2 maxima
// and 2 sums per lane).
// CHECK: decode_split = {dynamic_smem = 226816 : i64, threads = 128 : i64}
// CHECK: gpu.func @decode_split(
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: memref.view {{.*}} to memref<3x128x128xbf16
// CHECK: memref.view {{.*}} to memref<3x128x128xbf16
// CHECK: %[[SCRATCH:.*]] = memref.view {{.*}} to memref<26112xi8
// Each warp's QKᵀ and P·V cover its 32 keys only: 4 n8 tiles x 8 k16
// steps, then 2 k16 steps x 16 n8 tiles, 64 mma.syncs in the loop.
// CHECK: scf.for {{.*}} step %c128
// CHECK-COUNT-64: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// After the loop: the ring drained, key warps 1-3 store their 68 values,
// the block meets, and key warp 0 weighs the four states by exp2 of each
// max against the largest.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: %[[SLOTS:.*]] = memref.view %[[SCRATCH]]{{.*}} to memref<3x1x68x32xf32
// CHECK: scf.if
// CHECK-COUNT-68: memref.store {{.*}}, %[[SLOTS]]
// CHECK: gpu.barrier
// CHECK: scf.if %{{.*}} -> (f32, f32
// CHECK-COUNT-204: memref.load %[[SLOTS]]
// CHECK: arith.maximumf
// CHECK: arith.maximumf
// CHECK: arith.maximumf
// CHECK: llvm.nvvm.ex2.approx.ftz.f
// Only key warp 0 stores O.
// CHECK: scf.if
// CHECK: scf.if
// CHECK: vector.store {{.*}} : memref<?x1x?x128xbf16

// One warp: the whole tile per warp, 32 threads, no scratch.
// ONE: decode_split = {dynamic_smem = 200704 : i64, threads = 32 : i64}
// ONE: scf.for {{.*}} step %c128
// ONE-COUNT-256: nvvm.mma.sync
// ONE-NOT: nvvm.mma.sync
// ONE-NOT: xf32, #gpu.address_space<workgroup>>

// NARROW: error: decode-key-warps 4 needs K/V tiles of a multiple of 64 keys (16 per warp), not 32
// COUNT: error: #tgpu.mma_schedule: key_warps must be 1, 2, 4 or 8, not 3
func.func @decode(%q: tensor<?x4x?x128xbf16>, %kc: tensor<?x1x256x128xbf16>, %vc: tensor<?x1x256x128xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens
      : tensor<?x4x?x128xbf16>, tensor<?x1x256x128xbf16>, tensor<?x1x256x128xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
