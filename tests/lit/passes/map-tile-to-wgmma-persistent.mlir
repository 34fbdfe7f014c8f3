// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=128" -attnc-assign-layouts="kv-stages=2 kv-sync=tma grid=persistent" -attnc-map-tile-to-wgmma | FileCheck %s
// RUN: not attnc-opt %s -attnc-tile-attention="block-m=128 block-n=128" -attnc-assign-layouts="kv-sync=pingpong grid=persistent" -attnc-map-tile-to-wgmma 2>&1 | FileCheck %s --check-prefix=NOTMA

// Persistent blocks (issue #6): the barriers, the role split and setmaxnreg
// once per block; then each role loops over the block's work items (pairs
// of the ceil(seq_q / 128) x 4 heads x batch, strided by gridDim.x; the same
// count in both roles), carrying the rings' per-stage phases and the Q
// loads so far.
// CHECK-LABEL: gpu.func @attention_fwd
// The rings' 4 x 2 barriers, then Q's full (one expect_tx) and Q's empty
// barrier (every one of the 256 consumer threads).
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[WARPS:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-COUNT-8: nvvm.mbarrier.init
// CHECK: nvvm.mbarrier.init %{{.*}}, %[[ONE]]
// CHECK: %[[THREADS:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %[[THREADS]]
// CHECK-NEXT: nvvm.fence.mbarrier.init
// CHECK: gpu.barrier
// The producer: one elected thread's loop over the items.
// CHECK: nvvm.setmaxregister  decrease 24
// CHECK: scf.if
// CHECK: gpu.block_id  x
// CHECK: gpu.grid_dim  x
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[PH32:.*]] = %{{.*}}, %[[QN32:.*]] = %{{.*}}) -> (i32, i32)
// CHECK: %[[PH:.*]] = arith.index_castui %[[PH32]] : i32 to index
// CHECK: %[[QN:.*]] = arith.index_castui %[[QN32]] : i32 to index
// From its second Q on, it waits for the consumers' release of the last.
// CHECK: arith.cmpi ne, %[[QN]]
// CHECK: scf.if
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// Tile t of an item goes into stage t mod 2, also in later items; the
// stage's phase parity adds the carried bit of its earlier uses, and a
// stage used before is waited for (bit 16 + stage) even at t < 2.
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// CHECK: arith.remui %[[T]], %{{.*}} : index
// CHECK: %[[LATER:.*]] = arith.cmpi sge, %[[T]], %{{.*}} : index
// CHECK: %[[STAGE:.*]] = arith.remui %[[T]], %{{.*}} : index
// CHECK: %[[BIT:.*]] = arith.addi %[[STAGE]], %c16{{.*}} : index
// CHECK: arith.shrui %[[PH]], %[[BIT]] : index
// CHECK: arith.ori %[[LATER]], %{{.*}} : i1
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx
// After the item: per stage, its uses' parity flipped (xor) and marked used
// (or).
// CHECK-COUNT-2: arith.xori %{{.*}}, %{{.*}} : index
// CHECK: scf.yield %{{.*}}, %{{.*}} : i32, i32
// The consumers: warpgroup 0's first turn once, the same item loop, and
// one last bar.sync after it (the last warpgroup's final hand-off).
// Each role counts its items itself, after setmaxnreg (values live across
// it were spilled).
// CHECK: nvvm.setmaxregister  increase 240
// CHECK: nvvm.barrier.arrive id = %[[TURN:.*]] number_of_threads
// CHECK: gpu.block_id  x
// CHECK: gpu.grid_dim  x
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (i32, i32)
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.barrier id
// CHECK: nvvm.barrier.arrive id
// Q's release after the item's last Q·Kᵀ: every thread arrives, outside
// any branch (a lane-0 arrive kept ptxas from the uniform datapath in the
// next items' KV loops), then the last V's release by lane 0 of each warp.
// CHECK: nvvm.vote.sync any
// CHECK: scf.yield %{{.*}} : f32, f32, f32, f32,
// CHECK-NEXT: }
// CHECK-NOT: scf.if
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: scf.if
// CHECK-NEXT: nvvm.mbarrier.arrive
// CHECK: scf.yield %{{.*}}, %{{.*}} : i32, i32
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads
// CHECK: gpu.return

// NOTMA: error: #tgpu.wgmma_schedule: persistent blocks need kv_sync = tma, not pingpong
func.func @attention_fwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
