// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=64 block-n=64" -attnc-assign-layouts="kv-sync=barrier" -attnc-map-tile-to-wgmma -verify-diagnostics | FileCheck %s
// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=64 block-n=64" -attnc-wgmma-pipeline -verify-diagnostics | FileCheck %s --check-prefix=NVVM

// One warpgroup (128 threads) for 64 query rows, D = 128. Q and the K and
// V rings (kv-stages = 2 tiles each) are views of dynamic shared memory at
// 1024-byte-aligned offsets (the 128-byte swizzle's period), filled by
// cp.async into the swizzled layout (chunk ^ row % 8).
// CHECK-LABEL: gpu.func @attention_fwd
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: %[[Q:.*]] = memref.view %{{.*}}[%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[K:.*]] = memref.view %{{.*}}[%c16384{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[V:.*]] = memref.view %{{.*}}[%c49152{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x128xbf16, #gpu.address_space<workgroup>>
// Descriptors: start address >> 4 (14 bits) | 128-byte swizzle (1 << 62).
// CHECK: memref.extract_aligned_pointer_as_index %[[K]]
// CHECK: arith.constant 4611686018427387904 : i64
// CHECK: arith.xori
// CHECK: nvgpu.device_async_copy {{.*}}, %[[Q]][{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK: nvvm.cp.async.commit.group
// The loop is skipped as a whole when it has no tile (rows that see no
// key keep O = 0).
// CHECK: scf.if
// Prologue: K's first tile into stage 0.
// CHECK: nvgpu.device_async_copy {{.*}}, %[[K]][{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK: nvvm.cp.async.commit.group
// The first tile (peeled): wait for Q and K_0, make them visible to the
// async proxy; copy K_1 and V_0; QKᵀ as 8 k16 steps of m64n64k16 from
// descriptors; no P·V before it, so wait for all.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy {{.*}}, %[[K]][{{.*}}]
// CHECK: nvgpu.device_async_copy {{.*}}, %[[V]][{{.*}}]
// CHECK: nvvm.cp.async.commit.group
// Q's and K's descriptors at k16 step 0: SBO 1024 >> 4 in bits [32, 46),
// LBO (unused) 1 in bits [16, 30); Q's 64-row offset of the warpgroup added.
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: arith.constant 274877972480 : i64
// CHECK: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// The next k16 step starts 32 bytes (2 in the address field) further.
// CHECK: arith.constant 274877972482 : i64
// CHECK-COUNT-7: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: gpu.shuffle xor
// The steady state: one barrier per tile; the copies of K_{j+1} and V_j;
// QKᵀ_j, then P_{j-1}·V_{j-1} (P from registers: the register-A form as
// inline PTX; V N-major with the transpose bit, LBO = 64 keys x 128 B = the
// next 64 columns of D, SBO = 1024 B = the next 8 keys; k16 step j starts
// 2 KiB further); wait for QKᵀ_j only (group 1 of 2 may run on), softmax
// under the P·V, then wait for it.
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy {{.*}}, %[[K]][{{.*}}]
// CHECK: nvgpu.device_async_copy {{.*}}, %[[V]][{{.*}}]
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: arith.constant 274911461376 : i64
// CHECK: llvm.inline_asm
// CHECK: arith.constant 274911461504 : i64
// CHECK-COUNT-3: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $133, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {$0, {{.*}}, $63}, {$128, $129, $130, $131}, $132, p, 1, 1, 1;\0A}\0A"
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: gpu.shuffle xor
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: scf.yield
// Epilogue: the last tile's P·V.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: gpu.barrier
// CHECK-COUNT-4: llvm.inline_asm
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: } else {
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK: gpu.return

// After the pipeline every wgmma is inline PTX inside an NVVM kernel.
// NVVM-LABEL: llvm.func @attention_fwd
// NVVM: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// NVVM: nvvm.wgmma.fence.aligned
// NVVM: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// NVVM: nvvm.wgmma.commit.group.sync.aligned
// NVVM: nvvm.wgmma.wait.group.sync.aligned 0
// NVVM: nvvm.wgmma.fence.aligned
// NVVM: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// NVVM-NOT: nvvm.wgmma.mma_async
func.func @attention_fwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}

// -----

// Head dims the mapping does not take yet are rejected at the kernel (the
// drivers check first and fall back to mma.sync).
func.func @attention_fwd(%q: tensor<?x2x?x96xbf16>, %k: tensor<?x2x?x96xbf16>, %v: tensor<?x2x?x96xbf16>)
    -> tensor<?x2x?x96xbf16> {
  // expected-error @+1 {{the wgmma mapping supports head dims 64, 128, 192 and 256, not 96}}
  %o = attn.attention %q, %k, %v
      : tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16> -> tensor<?x2x?x96xbf16>
  return %o : tensor<?x2x?x96xbf16>
}
