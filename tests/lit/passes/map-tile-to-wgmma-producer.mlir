// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-stages=2 kv-sync=producer" -attnc-map-tile-to-wgmma -verify-diagnostics | FileCheck %s --check-prefixes=CHECK,PRODUCER
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-stages=2 kv-sync=pingpong" -attnc-map-tile-to-wgmma -verify-diagnostics | FileCheck %s --check-prefixes=CHECK,PINGPONG

// Warp specialisation (issue #6): 128x64 tiles, D = 128, two stages. Two
// consumer warpgroups (256 threads) and a producer warpgroup after them:
// 384 threads, capped at one block per SM (setmaxnreg moves registers only
// in a kernel whose count is capped at entry). Q, two K and two V stages,
// then 9 mbarriers (the rings' 8 and Q's full barrier: 72 bytes, 80 in the
// frame's 16-byte scratch units).
// CHECK: attnc.launch_info = {attention_fwd = {dynamic_smem = 98384 : i64, threads = 384 : i64}}
// CHECK-LABEL: gpu.func @attention_fwd
// CHECK-SAME: known_block_size = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32
// CHECK: %[[Q:.*]] = memref.view %{{.*}}[%c0{{.*}}][] : {{.*}} to memref<128x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[K:.*]] = memref.view %{{.*}}[%c32768{{.*}}][] : {{.*}} to memref<2x64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[V:.*]] = memref.view %{{.*}}[%c65536{{.*}}][] : {{.*}} to memref<2x64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view %{{.*}}[%c98304{{.*}}][] : {{.*}} to memref<72xi8, #gpu.address_space<workgroup>>
// Q is not copied before the loop: the producer copies it.
// CHECK-NOT: nvgpu.device_async_copy
// The full barriers count the 128 copying threads of the producer, the
// empty ones the 8 consumer warps; Q's full barrier last.
// CHECK: %[[COPIERS:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK: %[[WARPS:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %[[COPIERS]] : !llvm.ptr<3>, i32
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %[[WARPS]] : !llvm.ptr<3>, i32
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %[[COPIERS]] : !llvm.ptr<3>, i32
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %[[WARPS]] : !llvm.ptr<3>, i32
// CHECK-NEXT: arith.constant 8 : index
// CHECK: nvvm.mbarrier.init %{{.*}}, %[[COPIERS]] : !llvm.ptr<3>, i32
// CHECK-NOT: nvvm.mbarrier.init
// CHECK: gpu.barrier
// The producer: threads 256 and up, down to 40 registers; Q (2048 chunks
// over its 128 threads) then an arrive on Q's full barrier, then every
// tile of the loop in order, K then V, each after its stage's empty phase
// (from tile 2 on) and followed by an arrive on the stage's full barrier.
// CHECK: %[[PRODUCER:.*]] = arith.cmpi uge, %thread_id_x, %c256 : index
// CHECK-NEXT: scf.if %[[PRODUCER]] {
// CHECK-NEXT: nvvm.setmaxregister  decrease 40
// CHECK: %[[COPIER:.*]] = arith.subi %thread_id_x, %c256{{.*}} : index
// CHECK: scf.if
// CHECK: scf.for %{{.*}} = %[[COPIER]] to %c2048 step %c128
// CHECK: nvgpu.device_async_copy {{.*}}, %[[Q]][{{.*}}]
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: arith.ceildivui
// CHECK: scf.for
// CHECK: scf.if
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: scf.for %{{.*}} = %[[COPIER]] to %c1024 step %c128
// CHECK: nvgpu.device_async_copy {{.*}}, %[[K]][{{.*}}]
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: scf.if
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvgpu.device_async_copy {{.*}}, %[[V]][{{.*}}]
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// The consumers: up to 232 registers; they copy nothing, wait on Q's and
// the tiles' full barriers (then the proxy fence), issue QKᵀ_j and
// P_{j-1}·V_{j-1}, and release K_j after wait 1, V_{j-1} after wait 0.
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister  increase 232
// CHECK-NOT: nvgpu.device_async_copy
// Pingpong: warpgroup 0 arrives on its own turn barrier first.
// PINGPONG: scf.if %{{[0-9]+}} {
// PINGPONG-NEXT: nvvm.barrier.arrive id = %[[MINE:.*]] number_of_threads = %[[TURN:.*]]
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// PRODUCER-NOT: nvvm.barrier
// PINGPONG-NEXT: nvvm.barrier id = %[[MINE]] number_of_threads = %[[TURN]]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// PINGPONG-NEXT: nvvm.barrier.arrive id = %[[NEXT:.*]] number_of_threads = %[[TURN]]
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// CHECK: scf.for
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.fence.proxy
// PINGPONG-NEXT: nvvm.barrier id = %[[MINE]] number_of_threads = %[[TURN]]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// PINGPONG-NEXT: nvvm.barrier.arrive id = %[[NEXT]] number_of_threads = %[[TURN]]
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield
// Epilogue: the last P·V; the last warpgroup does not pass its last turn.
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.fence.proxy
// PINGPONG-NEXT: nvvm.barrier id = %[[MINE]] number_of_threads = %[[TURN]]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// PINGPONG-NEXT: scf.if
// PINGPONG-NEXT: nvvm.barrier.arrive id = %[[NEXT]] number_of_threads = %[[TURN]]
// CHECK-NOT: nvvm.cp.async
// CHECK: } else {
// CHECK-NOT: nvvm.cp.async.wait.group
// The rest of the kernel (finalize, the O and LSE stores) is the
// consumers': inside their branch, and the kernel returns after it.
// CHECK: vector.store
// CHECK-COUNT-2: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return
func.func @attention_fwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
