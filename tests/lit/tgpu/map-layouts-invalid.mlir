// RUN: attnc-opt %s -split-input-file -attnc-map-tile-to-wgmma -verify-diagnostics

// The wgmma mapping lowers the layouts it was given, and refuses a tile
// without one or in a layout it has no lowering for.
func.func @attention_fwd(%q: memref<?x1x?x64xbf16>, %o: memref<?x1x?x64xbf16>)
    attributes {tile.launch = #tile.launch<"attention_fwd_v1", 64, 64, 1>,
                tgpu.schedule = #tgpu.wgmma_schedule<kv_sync = barrier, kv_stages = 2, grid = tiles, stream_k = false, epilogue = registers, rescale = exact>} {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{the wgmma mapping needs the layout of every tile (run attnc-assign-layouts first)}}
  %cst = arith.constant dense<0.0> : tensor<64x64xf32>
  return
}

// -----
func.func @attention_fwd(%q: memref<?x1x?x64xbf16>, %o: memref<?x1x?x64xbf16>)
    attributes {tile.launch = #tile.launch<"attention_fwd_v1", 64, 64, 1>,
                tgpu.schedule = #tgpu.wgmma_schedule<kv_sync = barrier, kv_stages = 2, grid = tiles, stream_k = false, epilogue = registers, rescale = exact>} {
  // expected-error @+1 {{the wgmma mapping has no lowering for layout #tgpu.mma<warps = 4, rows_per_warp = 16> in a kernel of block_m 64}}
  %cst = arith.constant dense<0.0> : tensor<64x64xf32, #tgpu.mma<warps = 4, rows_per_warp = 16>>
  return
}
