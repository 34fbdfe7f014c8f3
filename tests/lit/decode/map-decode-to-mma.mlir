// RUN: attnc-opt %s -attnc-tile-decode="block-n=32" -attnc-map-combine-to-gpu -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s

// The split kernel: one warp for the 4 packed rows of a GQA group (padded to
// 16), staged in shared memory by cp.async and read into registers once;
// K/V tiles of 32 keys copied by cp.async from the paged cache (the
// page of each row from the block table: page 16 < 32 keys) into views of
// dynamic shared memory, each where it stands in the loop; the sequence's
// length read from kv_lens.
// CHECK: attnc.launch_info = {decode_combine = {dynamic_smem = 0 : i64, threads = 256 : i64}, decode_split = {dynamic_smem = 10240 : i64, threads = 32 : i64}}
// The combine (attnc-map-combine-to-gpu, before the mma.sync mapping): 256
// threads, per query row of the program: each warp's share of the splits,
// eight splits' LSEs and O vectors loaded before they are folded into the
// warp's online state (max, rescale, weighted sums), then the warps' states
// through shared memory (each weighed by exp2 of its max against the
// largest), O = sum / l and the LSE. No block-wide maximum pass first.
// CHECK: gpu.func @decode_combine({{.*}}) workgroup(%[[ACC:.*]] : memref<512xf32, #gpu.address_space<workgroup>>, %[[MAX:.*]] : memref<8xf32, #gpu.address_space<workgroup>>, %[[SUM:.*]] : memref<8xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NOT: gpu.barrier
// CHECK: scf.for {{.*}} step %c64{{.*}} iter_args
// CHECK-COUNT-8: vector.load {{.*}} : memref<?x4x?x64xf32, strided<[?, ?, 64, 1]>>, vector<4xf32>
// CHECK: arith.maximumf
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: vector.fma
// CHECK: vector.store {{.*}}, %[[ACC]]
// CHECK: memref.store {{.*}}, %[[SUM]]
// CHECK: memref.store {{.*}}, %[[MAX]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[MAX]]
// CHECK: llvm.intr.fma
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: memref.store {{.*}} : memref<?x4x?x64xbf16
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// CHECK: memref.store {{.*}} : memref<?x4x?xf32
// CHECK: gpu.barrier
// CHECK: gpu.func @decode_split({{.*}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>
// CHECK: %[[Q:.*]] = memref.view {{.*}} to memref<16x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[K:.*]] = memref.view {{.*}} to memref<32x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[V:.*]] = memref.view {{.*}} to memref<32x64xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.load %{{.*}} : memref<?xi32, strided<[1]>>
// CHECK: scf.for
// CHECK: memref.load %{{.*}} : memref<?x?xi32, strided<[?, 1]>>
// CHECK: nvgpu.device_async_copy {{.*}}, %[[K]][{{.*}}], 8, %{{.*}} :
// CHECK: nvvm.mma.sync
// CHECK: arith.remui
// The f32 partial O (two floats per lane) and its LSE.
// CHECK: vector.store {{.*}} : memref<?x1x?x64xf32, {{.*}}>, vector<2xf32>
// CHECK: memref.store {{.*}} : memref<?x1x?xf32
// write_o = 2: every thread fences its partials, the block meets, thread 0
// counts the arrival (the ticketed compare-and-swap), a reducing barrier
// hands every thread the verdict, and the last program fences again and
// merges every split's f32 partial (C-layout pairs and the LSE) into O.
// CHECK: arith.cmpi eq, %arg29, %c2_i64
// CHECK: llvm.inline_asm has_side_effects {{.*}}"fence.acq_rel.gpu;"
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: llvm.inline_asm has_side_effects {{.*}}atom.acq_rel.gpu.global.cas.b64{{.*}}"=r,l,r,r,~{memory}"
// CHECK: llvm.inline_asm has_side_effects {{.*}}bar.red.or.pred
// CHECK: scf.if
// CHECK-NEXT: llvm.inline_asm has_side_effects {{.*}}"fence.acq_rel.gpu;"
// CHECK: scf.if
// CHECK: scf.for {{.*}} iter_args
// CHECK: vector.load {{.*}} : memref<?x1x?x64xf32, {{.*}}>, vector<2xf32>
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: scf.yield
// CHECK: arith.truncf {{.*}} to vector<2xbf16>
func.func @decode(%q: tensor<?x4x?x64xbf16>, %kc: tensor<?x1x16x64xbf16>, %vc: tensor<?x1x16x64xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens
      : tensor<?x4x?x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
