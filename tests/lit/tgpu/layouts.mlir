// RUN: attnc-opt %s | attnc-opt | FileCheck %s

// Every layout and the schedule print as they parse.
// CHECK-LABEL: func.func @layouts
// CHECK-SAME: tensor<64x64xf32, #tgpu.mma<warps = 4, rows_per_warp = 16>>
// CHECK-SAME: tensor<128x128xf32, #tgpu.wgmma<warpgroups = 2>>
// CHECK-SAME: tensor<128x64xbf16, #tgpu.dot_operand<parent = #tgpu.wgmma<warpgroups = 2>>>
// CHECK-SAME: tensor<128xf32, #tgpu.row_stats<parent = #tgpu.wgmma<warpgroups = 2>>>
// CHECK-SAME: tensor<64x128xbf16, #tgpu.shared<swizzle = 128, col_block = 64>>
// CHECK-SAME: tensor<64x128xbf16, #tgpu.shared<pad = 8>>
// CHECK-SAME: tgpu.schedule = #tgpu.wgmma_schedule<kv_sync = tma, kv_stages = 2, grid = persistent, stream_k = true, epilogue = tma, rescale = threshold>
func.func @layouts(
    %a: tensor<64x64xf32, #tgpu.mma<warps = 4, rows_per_warp = 16>>,
    %b: tensor<128x128xf32, #tgpu.wgmma<warpgroups = 2>>,
    %c: tensor<128x64xbf16, #tgpu.dot_operand<parent = #tgpu.wgmma<warpgroups = 2>>>,
    %d: tensor<128xf32, #tgpu.row_stats<parent = #tgpu.wgmma<warpgroups = 2>>>,
    %e: tensor<64x128xbf16, #tgpu.shared<swizzle = 128, col_block = 64>>,
    %f: tensor<64x128xbf16, #tgpu.shared<pad = 8>>)
    attributes {tgpu.schedule = #tgpu.wgmma_schedule<kv_sync = tma, kv_stages = 2, grid = persistent, stream_k = true, epilogue = tma, rescale = threshold>} {
  return
}

// P from its accumulator layout to the A operand of the next dot.
// CHECK-LABEL: func.func @convert
// CHECK: tgpu.convert_layout %{{.*}} : tensor<128x64xbf16, #tgpu.wgmma<warpgroups = 2>> -> tensor<128x64xbf16, #tgpu.dot_operand<parent = #tgpu.wgmma<warpgroups = 2>>>
func.func @convert(%p: tensor<128x64xbf16, #tgpu.wgmma<warpgroups = 2>>)
    -> tensor<128x64xbf16, #tgpu.dot_operand<parent = #tgpu.wgmma<warpgroups = 2>>> {
  %a = tgpu.convert_layout %p : tensor<128x64xbf16, #tgpu.wgmma<warpgroups = 2>> -> tensor<128x64xbf16, #tgpu.dot_operand<parent = #tgpu.wgmma<warpgroups = 2>>>
  return %a : tensor<128x64xbf16, #tgpu.dot_operand<parent = #tgpu.wgmma<warpgroups = 2>>>
}
