// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-stages=3 kv-sync=mbarrier" -attnc-map-tile-to-wgmma -verify-diagnostics | FileCheck %s
// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-stages=3 kv-sync=mbarrier" -attnc-map-tile-to-wgmma -convert-gpu-to-nvvm -verify-diagnostics | FileCheck %s --check-prefix=NVVM

// kv-sync=mbarrier: the K/V rings synchronised by per-stage full/empty
// mbarriers instead of one CTA barrier per tile. 128x64 tiles (two
// warpgroups, 256 threads), D = 128, three stages.
//
// The 4 x 3 mbarrier objects (96 bytes) are the frame's scratch buffer at
// the end of the dynamic shared memory, after Q and the rings, counted in
// dynamic_smem: never a static workgroup attribution (laid out after the
// dynamic-memory symbol, it would alias Q's first row).
// CHECK: attnc.launch_info = {attention_fwd = {dynamic_smem = 131168 : i64, threads = 256 : i64}}
// CHECK-LABEL: gpu.func @attention_fwd
// CHECK-NOT: workgroup(
// CHECK: %[[Q:.*]] = memref.view %{{.*}}[%c0{{.*}}][] : {{.*}} to memref<128x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[K:.*]] = memref.view %{{.*}}[%c32768{{.*}}][] : {{.*}} to memref<3x64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[V:.*]] = memref.view %{{.*}}[%c81920{{.*}}][] : {{.*}} to memref<3x64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[BARS:.*]] = memref.view %{{.*}}[%c131072{{.*}}][] : {{.*}} to memref<96xi8, #gpu.address_space<workgroup>>
// Q: its own commit group.
// CHECK: nvgpu.device_async_copy {{.*}}, %[[Q]][{{.*}}]
// CHECK: nvvm.cp.async.commit.group
// Thread 0 initialises the 12 objects: the full ones expect all 256
// threads per phase (each thread's copies), the empty ones the 8 warps (one
// arrive per warp); a CTA barrier orders the init before every use.
// CHECK: memref.extract_aligned_pointer_as_index %[[BARS]]
// CHECK: scf.if
// CHECK: %[[THREADS:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK: %[[WARPS:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.*}}, %[[THREADS]] : !llvm.ptr<3>, i32
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.*}}, %[[WARPS]] : !llvm.ptr<3>, i32
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.*}}, %[[THREADS]] : !llvm.ptr<3>, i32
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.*}}, %[[WARPS]] : !llvm.ptr<3>, i32
// CHECK-NOT: nvvm.mbarrier.init
// CHECK: gpu.barrier
// The guarded loop. Prologue: K_0, K_1, V_0, each followed by this thread's
// cp.async.mbarrier.arrive.noinc on the stage's full barrier (.noinc: the
// arrival counts against the 256); no commit groups for the rings.
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy {{.*}}, %[[K]][{{.*}}]
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: nvgpu.device_async_copy {{.*}}, %[[K]][{{.*}}]
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: nvgpu.device_async_copy {{.*}}, %[[V]][{{.*}}]
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK-NOT: nvvm.cp.async.commit.group
// First tile: Q's group and a CTA barrier (Q is copied by all threads),
// then wait for K_0's full phase, proxy fence, copy K_2 and V_1 (stages
// never used yet: no empty wait is reached), QKᵀ_0, release K_0.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvgpu.device_async_copy {{.*}}, %[[K]][{{.*}}]
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: nvgpu.device_async_copy {{.*}}, %[[V]][{{.*}}]
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3> -> i64
// Steady state, no CTA barrier: wait for K_j's and V_{j-1}'s full phases,
// proxy fence; before refilling a stage (tile >= 3) wait for its empty
// phase, copy, arrive on its full barrier; QKᵀ_j, P_{j-1}·V_{j-1}; release
// K_j once QKᵀ_j is done (wait 1), V_{j-1} once P·V is (wait 0).
// CHECK: scf.for
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NOT: gpu.barrier
// CHECK: scf.if
// CHECK-NEXT: arith.constant 3 : index
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvgpu.device_async_copy {{.*}}, %[[K]][{{.*}}]
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: scf.if
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvgpu.device_async_copy {{.*}}, %[[V]][{{.*}}]
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.mbarrier.arrive
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield
// Epilogue: wait for V_last's full phase, fence, P·V; then finish the
// (zero-byte) copies past the end before the block exits.
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.fence.proxy
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK: } else {
// CHECK-NEXT: nvvm.cp.async.wait.group 0

// After the GPU-to-NVVM conversion the objects are addressed from the one
// dynamic shared memory symbol: no other shared global exists.
// NVVM: llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// NVVM-NOT: llvm.mlir.global {{.*}}addr_space = 3
// NVVM: nvvm.mbarrier.init
// NVVM: nvvm.cp.async.mbarrier.arrive {{.*}} {noinc = true}
// NVVM: nvvm.mbarrier.try_wait.parity
// NVVM: nvvm.mbarrier.arrive
func.func @attention_fwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
