// RUN: attnc-opt %s -attnc-tile-decode="block-n=32 stages=2" | FileCheck %s --check-prefix=TILE
// RUN: attnc-opt %s -attnc-tile-decode="block-n=32 stages=2" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s --check-prefix=MMA
// RUN: attnc-opt %s -attnc-tile-decode="block-n=32 stages=1" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s --check-prefix=ONE
// RUN: attnc-opt %s -attnc-tile-decode="block-n=32 stages=3" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s --check-prefix=THREE
// RUN: not attnc-opt %s -attnc-tile-decode="stages=5" 2>&1 | FileCheck %s --check-prefix=BAD

// Two stages: the split kernel is marked so that the GPU mapping copies the
// next paged K/V tile into a two-stage ring while this one is computed.
// TILE: func.func @decode_split({{.*}}) attributes {tile.launch = #tile.launch<"decode_split_v4", 16, 32, 1>, tile.live_rows = 4 : i64, tile.prefetch_paged = 2 : i64}
// TILE-NOT: tile.prefetch_paged
// The rings double the split kernel's tiles (2 rings of 2 stages of 32 x
// 64 bf16, rows unpadded and swizzled), after Q's 16 x 64 staging tile.
// Q's copy is issued first, then the rings' first tiles; Q is waited for
// (the ring's group stays in flight: wait_group 2) and read into registers
// with ldmatrix before the loop.
// MMA: decode_split = {dynamic_smem = 18432 : i64, threads = 32 : i64}
// MMA: gpu.func @decode_split(
// MMA: %[[Q:.*]] = memref.view {{.*}} to memref<16x64xbf16, #gpu.address_space<workgroup>>
// MMA: memref.view {{.*}} to memref<2x32x64xbf16, #gpu.address_space<workgroup>>
// MMA: memref.view {{.*}} to memref<2x32x64xbf16, #gpu.address_space<workgroup>>
// MMA: nvgpu.device_async_copy {{.*}}, %[[Q]][
// MMA: nvvm.cp.async.commit.group
// MMA: nvgpu.device_async_copy {{.*}} to memref<32x64xbf16
// MMA: nvvm.cp.async.wait.group 2
// MMA-NEXT: gpu.barrier
// MMA-COUNT-4: nvgpu.ldmatrix %[[Q]]
// MMA: scf.for
// MMA-NOT: nvgpu.ldmatrix %[[Q]]
// MMA: nvgpu.device_async_copy
// MMA: nvvm.mma.sync
// One stage: tiles copied where they stand.
// ONE: decode_split = {dynamic_smem = 10240 : i64, threads = 32 : i64}
// ONE: memref.view {{.*}} to memref<16x64xbf16, #gpu.address_space<workgroup>>
// ONE: memref.view {{.*}} to memref<32x64xbf16, #gpu.address_space<workgroup>>
// Three stages: rings of three tiles, Q (a fast and a checked variant) and
// tiles 0 and 1 copied before the loop (K then V, each a fast and a checked
// variant), and the loop carries the
// two block-table pages (16-key pages, 32-key tiles) of tile j + 2 that
// iteration j copies; stage j % 3 is read and stage (j + 2) % 3 refilled.
// THREE: decode_split = {dynamic_smem = 26624 : i64, threads = 32 : i64}
// THREE: memref.view {{.*}} to memref<16x64xbf16
// THREE: memref.view {{.*}} to memref<3x32x64xbf16, #gpu.address_space<workgroup>>
// THREE: memref.view {{.*}} to memref<3x32x64xbf16, #gpu.address_space<workgroup>>
// THREE-COUNT-10: nvgpu.device_async_copy
// THREE: scf.for {{.*}} -> (f32, f32, f32, f32, {{.*}}vector<2x2xf32>, index, index) {
// THREE: arith.remui {{.*}}, %c3
// THREE: arith.remui {{.*}}, %c3
// THREE: gpu.barrier
// THREE: nvgpu.device_async_copy
// THREE: nvvm.mma.sync
// BAD: error: 'attn.decode' op cannot be tiled with 5 stages: the split kernel takes 1 to 4
func.func @decode(%q: tensor<?x4x?x64xbf16>, %kc: tensor<?x1x16x64xbf16>, %vc: tensor<?x1x16x64xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens
      : tensor<?x4x?x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
