// RUN: not attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=pingpong grid=persistent" 2>&1 | FileCheck %s --check-prefix=GRID
// RUN: not attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-stages=5" 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not attnc-opt %s -attnc-tile-attention="block-m=96 block-n=64" -attnc-assign-layouts 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-map-tile-to-wgmma 2>&1 | FileCheck %s --check-prefix=NOSCHEDULE

// The schedule's verifier speaks at the kernel: persistent blocks exist on
// the TMA schedule only, the rings hold 2 to 4 tiles.
// GRID: error: #tgpu.wgmma_schedule: persistent blocks need kv_sync = tma, not pingpong
// STAGES: error: #tgpu.wgmma_schedule: kv_stages must be 2 to 4, not 5
// One warpgroup per 64 rows.
// ROWS: error: attnc-assign-layouts: the wgmma mapping needs block_m a multiple of 64, not 96
// The mapping reads what attnc-assign-layouts records, and says so when it
// is missing.
// NOSCHEDULE: error: the wgmma mapping needs the kernel's schedule (tgpu.schedule = #tgpu.wgmma_schedule<...>; run attnc-assign-layouts first)
func.func @attention_fwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> tensor<?x4x?x128xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x4x?x128xbf16>
  return %o : tensor<?x4x?x128xbf16>
}
