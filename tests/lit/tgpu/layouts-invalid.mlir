// RUN: attnc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{#tgpu.mma holds 16 or 32 rows per warp, not 8}}
func.func @rows(%a: tensor<32x64xf32, #tgpu.mma<warps = 4, rows_per_warp = 8>>) { return }

// -----
// expected-error @+1 {{#tgpu.wgmma spreads 128 rows over its threads, but the tile has 64}}
func.func @shape(%a: tensor<64x64xf32, #tgpu.wgmma<warpgroups = 2>>) { return }

// -----
// expected-error @+1 {{#tgpu.wgmma needs a multiple of 8 columns (n8 tiles), not 12}}
func.func @columns(%a: tensor<64x12xf32, #tgpu.wgmma<warpgroups = 1>>) { return }

// -----
// expected-error @+1 {{#tgpu.wgmma spreads a tile over 1 to 3 warpgroups, not 4}}
func.func @warpgroups(%a: tensor<256x64xf32, #tgpu.wgmma<warpgroups = 4>>) { return }

// -----
// expected-error @+1 {{#tgpu.dot_operand's parent must be #tgpu.mma or #tgpu.wgmma}}
func.func @parent(%a: tensor<64x64xbf16, #tgpu.dot_operand<parent = #tgpu.shared<pad = 8>>>) { return }

// -----
// expected-error @+1 {{#tgpu.dot_operand holds 16-bit elements, not 'f32'}}
func.func @operand_f32(%a: tensor<64x64xf32, #tgpu.dot_operand<parent = #tgpu.wgmma<warpgroups = 1>>>) { return }

// -----
// expected-error @+1 {{#tgpu.dot_operand needs a multiple of 16 columns (k16 steps), not 40}}
func.func @operand_k(%a: tensor<64x40xbf16, #tgpu.dot_operand<parent = #tgpu.wgmma<warpgroups = 1>>>) { return }

// -----
// expected-error @+1 {{#tgpu.row_stats: its parent holds 64 rows, but the tile has 128}}
func.func @stats(%a: tensor<128xf32, #tgpu.row_stats<parent = #tgpu.wgmma<warpgroups = 1>>>) { return }

// -----
// expected-error @+1 {{#tgpu.row_stats needs a 1-d tile, not rank 2}}
func.func @stats_rank(%a: tensor<64x8xf32, #tgpu.row_stats<parent = #tgpu.wgmma<warpgroups = 1>>>) { return }

// -----
// expected-error @+1 {{#tgpu.shared swizzles 0 or 128 bytes, not 64}}
func.func @swizzle(%a: tensor<64x64xbf16, #tgpu.shared<swizzle = 64>>) { return }

// -----
// expected-error @+1 {{#tgpu.shared: a 128-byte swizzle needs rows of a multiple of 64 elements, not 96}}
func.func @swizzle_rows(%a: tensor<64x96xbf16, #tgpu.shared<swizzle = 128>>) { return }

// -----
// expected-error @+1 {{#tgpu.shared: a swizzled tile has no padding}}
func.func @swizzle_pad(%a: tensor<64x64xbf16, #tgpu.shared<swizzle = 128, pad = 8>>) { return }

// -----
// expected-error @+1 {{#tgpu.shared: column blocks need swizzle = 128}}
func.func @blocks(%a: tensor<64x64xbf16, #tgpu.shared<col_block = 64>>) { return }

// -----
// expected-error @+1 {{#tgpu.wgmma_schedule: persistent blocks need kv_sync = tma, not pingpong}}
func.func @schedule() attributes {tgpu.schedule = #tgpu.wgmma_schedule<kv_sync = pingpong, kv_stages = 2, grid = persistent, stream_k = false, epilogue = registers, rescale = exact>} { return }

// -----
// expected-error @+1 {{#tgpu.wgmma_schedule: kv_stages must be 2 to 4, not 1}}
func.func @stages() attributes {tgpu.schedule = #tgpu.wgmma_schedule<kv_sync = mbarrier, kv_stages = 1, grid = tiles, stream_k = false, epilogue = registers, rescale = exact>} { return }

// -----
func.func @same(%p: tensor<64x64xf32, #tgpu.wgmma<warpgroups = 1>>) {
  // expected-error @+1 {{'tgpu.convert_layout' op converts a tile to the layout it has}}
  %a = tgpu.convert_layout %p : tensor<64x64xf32, #tgpu.wgmma<warpgroups = 1>> -> tensor<64x64xf32, #tgpu.wgmma<warpgroups = 1>>
  return
}

// -----
func.func @none(%p: tensor<64x64xf32>) {
  // expected-error @+1 {{'tgpu.convert_layout' op converts between two layouts; both tiles need one}}
  %a = tgpu.convert_layout %p : tensor<64x64xf32> -> tensor<64x64xf32, #tgpu.wgmma<warpgroups = 1>>
  return
}

// -----
// expected-error @+1 {{#tgpu.mma_schedule: rows_per_warp must be 16 or 32, not 8}}
func.func @mma_rows() attributes {tgpu.schedule = #tgpu.mma_schedule<rows_per_warp = 8, q_in_smem = false, kv_stages = 2, staging = padded, key_warps = 1>} { return }

// -----
// expected-error @+1 {{#tgpu.mma_schedule: kv_stages must be 2 to 4, not 5}}
func.func @mma_stages() attributes {tgpu.schedule = #tgpu.mma_schedule<rows_per_warp = 16, q_in_smem = true, kv_stages = 5, staging = swizzled, key_warps = 1>} { return }

// -----
// expected-error @+1 {{#tgpu.mma_schedule: key_warps must be 1, 2, 4 or 8, not 6}}
func.func @mma_key_warps() attributes {tgpu.schedule = #tgpu.mma_schedule<rows_per_warp = 16, q_in_smem = false, kv_stages = 2, staging = padded, key_warps = 6>} { return }
