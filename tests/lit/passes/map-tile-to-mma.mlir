// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=32" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s
// RUN: attnc-opt %s -attnc-tile-attention="block-m=64 block-n=32" -attnc-choose-mma-schedule="rows-per-warp=32 q-in-smem=true" -attnc-map-tile-to-mma | FileCheck %s --check-prefix=TWO
// RUN: not attnc-opt %s -attnc-tile-attention="block-m=32 block-n=32" -attnc-choose-mma-schedule="rows-per-warp=24" -attnc-map-tile-to-mma 2>&1 | FileCheck %s --check-prefix=BAD

// Two warps (64 threads) for 32 query rows; K and V staged in shared memory
// with rows padded from 64 to 72 elements; QKᵀ as 2 n8 tiles x 4 k16 steps
// and P·V as 8 n8 tiles x 2 k16 steps of mma.sync m16n8k16 with bf16
// operands as i32 pairs, B fragments from ldmatrix.x4 (transposed for V);
// the row max reduced over the quad (xor 1, 2) every tile, the row sum once
// at the end.
// The staging buffers are views of dynamic shared memory (128-byte aligned
// offsets), whose size the module records for the runtime's metadata. K and
// V are two-stage rings: iteration j computes on stage j % 2 while the
// copies of tile j + 1 fill the other stage.
// CHECK: module attributes {attnc.launch_info = {attention_fwd = {dynamic_smem = 18432 : i64, threads = 64 : i64}}
// CHECK: gpu.module @kernels
// CHECK: gpu.func @attention_fwd({{.*}}) kernel attributes {known_block_size = array<i32: 64, 1, 1>
// CHECK: %[[SMEM:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[K:.*]] = memref.view %[[SMEM]][%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x32x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[V:.*]] = memref.view %[[SMEM]][%c9216{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x32x72xbf16, #gpu.address_space<workgroup>>
// Prologue: tile 0 of K and of V by cp.async (zero-filled past seq_kv), one
// group each, into stage 0.
// CHECK: %[[K0:.*]] = memref.subview %[[K]][%c0{{.*}}, 0, 0] [1, 32, 72] [1, 1, 1]
// CHECK: nvgpu.device_async_copy {{.*}}, %[[K0]][{{.*}}], 8, %{{.*}} :
// CHECK: nvvm.cp.async.commit.group
// CHECK: %[[V0:.*]] = memref.subview %[[V]][%c0{{.*}}, 0, 0] [1, 32, 72] [1, 1, 1]
// CHECK: nvgpu.device_async_copy {{.*}}, %[[V0]][{{.*}}], 8, %{{.*}} :
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.for
// CHECK: %[[KCUR:.*]] = memref.subview %[[K]][%[[STAGE:.*]], 0, 0] [1, 32, 72] [1, 1, 1]
// CHECK: %[[KNEXT:.*]] = memref.subview %[[K]][%[[OTHER:.*]], 0, 0] [1, 32, 72] [1, 1, 1]
// CHECK: %[[VCUR:.*]] = memref.subview %[[V]][%[[STAGE]], 0, 0] [1, 32, 72] [1, 1, 1]
// CHECK: %[[VNEXT:.*]] = memref.subview %[[V]][%[[OTHER]], 0, 0] [1, 32, 72] [1, 1, 1]
// Two barriers per iteration. The first: K_j has landed (V_j may still be
// in flight) and every warp is done with iteration j - 1, so the copies of
// tile j + 1 go out at once.
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: nvgpu.device_async_copy {{.*}}, %[[KNEXT]][{{.*}}], 8, %{{.*}} :
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvgpu.device_async_copy {{.*}}, %[[VNEXT]][{{.*}}], 8, %{{.*}} :
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvgpu.ldmatrix %[[KCUR]][{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<32x72xbf16, strided<[72, 1], offset: ?>, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-2: nvvm.mma.sync A[{{.*}}]  B[{{.*}}]  C[{{.*}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// Only tiles that a bound crosses pay for the masks.
// CHECK-NOT: gpu.barrier
// CHECK: scf.if %{{.*}} -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>)
// CHECK: arith.cmpi sle
// CHECK: } else {
// CHECK-NOT: arith.cmpi
// CHECK: scf.yield
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32{{.*}} : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// At head dim 64, O is always rescaled (the skip of a unit rescale starts at
// 128: map-tile-to-mma-rescale.mlir).
// CHECK-NOT: nvvm.vote.sync
// The second barrier: V_j has landed (the two copies of j + 1 may not).
// CHECK: nvvm.cp.async.wait.group 2
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.ldmatrix %[[VCUR]][{{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: gpu.shuffle xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// CHECK: gpu.return
// Two m16 tiles per warp: 64 rows on 2 warps; Q staged first (its own
// cp.async group), its A fragments read with ldmatrix (not transposed) at
// each QKᵀ; each K fragment feeds both tiles (4 mma per ldmatrix.x4), and
// the waits for Q and K share one barrier.
// TWO: attnc.launch_info = {attention_fwd = {dynamic_smem = 27648 : i64, threads = 64 : i64}}
// TWO: %[[Q:.*]] = memref.view %{{.*}}[%c0{{.*}}][] : {{.*}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// TWO: %[[K:.*]] = memref.view %{{.*}}[%c9216{{.*}}][] : {{.*}} to memref<2x32x72xbf16, #gpu.address_space<workgroup>>
// TWO: nvgpu.device_async_copy {{.*}}, %[[Q]][{{.*}}], 8, %{{.*}} :
// TWO: nvvm.cp.async.commit.group
// TWO: nvgpu.device_async_copy
// TWO: nvvm.cp.async.commit.group
// TWO: nvgpu.device_async_copy
// TWO: nvvm.cp.async.commit.group
// TWO: scf.for
// TWO: %[[KCUR:.*]] = memref.subview %[[K]]
// Q, K_j: one wait (V_j may stay in flight), one barrier.
// TWO: nvvm.cp.async.wait.group 1
// TWO-NEXT: gpu.barrier
// TWO-NOT: gpu.barrier
// TWO: nvgpu.ldmatrix %[[Q]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// TWO: nvgpu.ldmatrix %[[KCUR]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// TWO-COUNT-4: nvvm.mma.sync
// TWO: gpu.return

// BAD: #tgpu.mma_schedule: rows_per_warp must be 16 or 32, not 24

func.func @attention_fwd(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}
