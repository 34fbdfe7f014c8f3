// RUN: attnc-opt %s -attnc-tile-decode="block-n=32" -attnc-map-tile-to-mma | FileCheck %s

// The split kernel: one warp for the 4 packed rows of a GQA group (padded to
// 16); K/V tiles of 32 keys copied by cp.async from the paged cache (the
// page of each row from the block table: page 16 < 32 keys) into views of
// dynamic shared memory, each where it stands in the loop; the sequence's
// length read from kv_lens.
// CHECK: attnc.launch_info = {decode_combine = {dynamic_smem = 0 : i64, threads = 32 : i64}, decode_split = {dynamic_smem = 10240 : i64, threads = 32 : i64}}
// CHECK: gpu.func @decode_split({{.*}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>
// CHECK: %[[K:.*]] = memref.view {{.*}} to memref<32x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[V:.*]] = memref.view {{.*}} to memref<32x72xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.load %{{.*}} : memref<?xi32, strided<[1]>>
// CHECK: scf.for
// CHECK: memref.load %{{.*}} : memref<?x?xi32, strided<[?, 1]>>
// CHECK: nvgpu.device_async_copy {{.*}}, %[[K]][{{.*}}], 8, %{{.*}} :
// CHECK: nvvm.mma.sync
// CHECK: arith.remui
// The f32 partial O (two floats per lane) and its LSE.
// CHECK: vector.store {{.*}} : memref<?x1x?x64xf32, {{.*}}>, vector<2xf32>
// CHECK: memref.store {{.*}} : memref<?x1x?xf32
// The combine: no shared memory, partials in the accumulator layout.
// CHECK: gpu.func @decode_combine({{.*}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>
// CHECK: scf.for
// CHECK: vector.load {{.*}} : memref<?x4x?x64xf32, {{.*}}>, vector<2xf32>
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: gpu.shuffle xor
// CHECK: vector.store {{.*}} : memref<?x4x?x64xbf16, {{.*}}>, vector<2xbf16>
func.func @decode(%q: tensor<?x4x?x64xbf16>, %kc: tensor<?x1x16x64xbf16>, %vc: tensor<?x1x16x64xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens
      : tensor<?x4x?x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
