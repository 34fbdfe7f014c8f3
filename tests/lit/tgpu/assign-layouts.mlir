// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=tma grid=persistent epilogue=tma" | FileCheck %s
// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=192 block-n=128" -attnc-assign-layouts="kv-stages=3 rescale=exact" | FileCheck %s --check-prefix=THREE

// The schedule goes on the kernel; every tile gets the layout the wgmma
// mapping holds it in: Q, K and V swizzled in shared memory, S, P and O as
// accumulators of block_m / 64 warpgroups, the softmax state as their row
// statistics, and P in 16 bits converted to the A operand of P·V.
// CHECK-LABEL: func.func @attention_fwd
// CHECK-SAME: tgpu.schedule = #tgpu.wgmma_schedule<kv_sync = tma, kv_stages = 2, grid = persistent, stream_k = true, epilogue = tma, rescale = threshold>
// CHECK: %[[Q:.*]] = tile.load {{.*}} -> tensor<128x128xbf16, #tgpu.shared<swizzle = 128, col_block = 64>>
// CHECK: arith.constant dense<0xFF800000> : tensor<128xf32, #tgpu.row_stats<parent = #tgpu.wgmma<warpgroups = 2>>>
// CHECK: arith.constant dense<0.000000e+00> : tensor<128x128xf32, #tgpu.wgmma<warpgroups = 2>>
// CHECK: scf.for {{.*}} -> (tensor<128xf32, #tgpu.row_stats<parent = #tgpu.wgmma<warpgroups = 2>>>, tensor<128xf32, #tgpu.row_stats<parent = #tgpu.wgmma<warpgroups = 2>>>, tensor<128x128xf32, #tgpu.wgmma<warpgroups = 2>>)
// CHECK: %[[K:.*]] = tile.load {{.*}} -> tensor<64x128xbf16, #tgpu.shared<swizzle = 128, col_block = 64>>
// CHECK: %[[V:.*]] = tile.load {{.*}} -> tensor<64x128xbf16, #tgpu.shared<swizzle = 128, col_block = 64>>
// CHECK: %[[S:.*]] = tile.dot %[[Q]], %[[K]] {transpose_b} : {{.*}} -> tensor<128x64xf32, #tgpu.wgmma<warpgroups = 2>>
// CHECK: tile.score {{.*}} : tensor<128x64xf32, #tgpu.wgmma<warpgroups = 2>>
// CHECK: tile.softmax_update {{.*}} : tensor<128x64xf32, #tgpu.wgmma<warpgroups = 2>>, tensor<128xf32, #tgpu.row_stats<parent = #tgpu.wgmma<warpgroups = 2>>>
// CHECK: %[[O:.*]] = tile.rescale {{.*}} : tensor<128x128xf32, #tgpu.wgmma<warpgroups = 2>>, tensor<128xf32, #tgpu.row_stats<parent = #tgpu.wgmma<warpgroups = 2>>>
// CHECK: %[[P16:.*]] = arith.truncf {{.*}} to tensor<128x64xbf16, #tgpu.wgmma<warpgroups = 2>>
// CHECK-NEXT: %[[PA:.*]] = tgpu.convert_layout %[[P16]] : tensor<128x64xbf16, #tgpu.wgmma<warpgroups = 2>> -> tensor<128x64xbf16, #tgpu.dot_operand<parent = #tgpu.wgmma<warpgroups = 2>>>
// CHECK-NEXT: tile.dot %[[PA]], %[[V]], %[[O]] : {{.*}} -> tensor<128x128xf32, #tgpu.wgmma<warpgroups = 2>>
// CHECK: tile.finalize {{.*}} -> tensor<128x128xbf16, #tgpu.wgmma<warpgroups = 2>>
// CHECK: tile.store {{.*}} : tensor<128xf32, #tgpu.row_stats<parent = #tgpu.wgmma<warpgroups = 2>>>

// Three consumer warpgroups (block_m 192); stream_k only with persistent
// blocks, so off on the tiles grid.
// THREE-LABEL: func.func @attention_fwd
// THREE-SAME: tgpu.schedule = #tgpu.wgmma_schedule<kv_sync = mbarrier, kv_stages = 3, grid = tiles, stream_k = false, epilogue = registers, rescale = exact>
// THREE: tile.dot {{.*}} -> tensor<192x128xf32, #tgpu.wgmma<warpgroups = 3>>
func.func @attention_fwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}

// -----
// Functions that are not attention kernels are left as they are.
// CHECK-LABEL: func.func @other
// CHECK-NOT: tgpu
// THREE-LABEL: func.func @other
func.func @other(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  return %a : tensor<4x4xf32>
}
