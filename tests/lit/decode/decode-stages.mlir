// RUN: attnc-opt %s -attnc-tile-decode="block-n=32 stages=2" | FileCheck %s --check-prefix=TILE
// RUN: attnc-opt %s -attnc-tile-decode="block-n=32 stages=2" -attnc-map-tile-to-mma | FileCheck %s --check-prefix=MMA
// RUN: attnc-opt %s -attnc-tile-decode="block-n=32 stages=1" -attnc-map-tile-to-mma | FileCheck %s --check-prefix=ONE
// RUN: not attnc-opt %s -attnc-tile-decode="stages=3" 2>&1 | FileCheck %s --check-prefix=BAD

// Two stages: the split kernel is marked so that the GPU mapping copies the
// next paged K/V tile into a two-stage ring while this one is computed.
// TILE: func.func @decode_split({{.*}}) attributes {tile.launch = #tile.launch<"decode_split_v2", 16, 32, 1>, tile.prefetch_paged}
// TILE-NOT: tile.prefetch_paged
// The rings double the split kernel's tiles (2 rings of 2 stages of 32 x
// 72 bf16) and the first tiles are copied before the loop.
// MMA: decode_split = {dynamic_smem = 18432 : i64, threads = 32 : i64}
// MMA: gpu.func @decode_split(
// MMA: memref.view {{.*}} to memref<2x32x72xbf16, #gpu.address_space<workgroup>>
// MMA: memref.view {{.*}} to memref<2x32x72xbf16, #gpu.address_space<workgroup>>
// MMA: nvgpu.device_async_copy
// MMA: scf.for
// MMA: nvgpu.device_async_copy
// MMA: nvvm.mma.sync
// One stage: tiles copied where they stand.
// ONE: decode_split = {dynamic_smem = 10240 : i64, threads = 32 : i64}
// ONE: memref.view {{.*}} to memref<32x72xbf16, #gpu.address_space<workgroup>>
// BAD: error: 'attn.decode' op cannot be tiled with 3 stages: the split kernel takes 1 or 2
func.func @decode(%q: tensor<?x4x?x64xbf16>, %kc: tensor<?x1x16x64xbf16>, %vc: tensor<?x1x16x64xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens
      : tensor<?x4x?x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
