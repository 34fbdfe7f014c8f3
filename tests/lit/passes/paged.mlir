// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" | FileCheck %s --check-prefix=TILE
// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" -attnc-lower-tile-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: attnc-opt %s -attnc-tile-attention="block-m=64 block-n=32" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s --check-prefix=MMA
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=tma" -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=TMA
// RUN: not attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=mbarrier" -attnc-map-tile-to-wgmma 2>&1 | FileCheck %s --check-prefix=NOTMA
// RUN: not attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=tma grid=persistent" -attnc-map-tile-to-wgmma 2>&1 | FileCheck %s --check-prefix=NOPERSIST

// Paged prefill: varlen queries (cu_seqlens_q) over a paged cache [pages,
// Hkv, 16, D]. The kernel takes the block table, kv_lens, max_blocks and the
// page count after cu_seqlens_q (no cu_seqlens_k); the sequence's key count
// is kv_lens[b], and the K/V tiles are paged loads whose table row is the
// sequence.
// TILE-LABEL: func.func @attention_fwd(
// TILE-SAME: %[[CUQ:[a-z0-9]+]]: memref<i32> {tile.param = "cu_seqlens_q"}, %[[TABLE:[a-z0-9]+]]: memref<i32> {tile.param = "block_table"}, %[[LENS:[a-z0-9]+]]: memref<i32> {tile.param = "kv_lens"}, %[[MAXB:[a-z0-9]+]]: i64 {tile.param = "max_blocks"}, %[[PAGES:[a-z0-9]+]]: i64 {tile.param = "num_pages"})
// TILE-SAME: tile.prefetch_paged = 0
// TILE: %[[B:.*]] = tile.program_id 2
// TILE: %[[LV:.*]] = memref.reinterpret_cast %[[LENS]]
// TILE: %[[LK0:.*]] = memref.load %[[LV]][%[[B]]] : memref<?xi32>
// TILE: %[[LK:.*]] = arith.index_cast %[[LK0]] : i32 to index
// TILE: %[[KC:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [%{{.*}}, 2, 16, 64]
// TILE: %[[VC:.*]] = memref.reinterpret_cast %arg2 to offset: [0], sizes: [%{{.*}}, 2, 16, 64]
// TILE: %[[TV:.*]] = memref.reinterpret_cast %[[TABLE]]
// TILE: scf.for %[[K0:arg[0-9]+]] =
// TILE: tile.load %[[KC]][%[[B]], %{{.*}}, %[[K0]]] length %[[LK]] pages %[[TV]]
// TILE: tile.load %[[VC]][%[[B]], %{{.*}}, %[[K0]]] length %[[LK]] pages %[[TV]]
// TILE: tile.score {{.*}}, %[[LK]]

// The host lowering gathers each key row from its page.
// LINALG-LABEL: func.func @attention_fwd(
// LINALG: tensor.generate

// mma.sync: K/V tiles of 32 rows over two pages each, copied by cp.async
// into the rings.
// MMA-LABEL: gpu.func @attention_fwd(
// MMA: nvgpu.device_async_copy

// The wgmma mapping copies by TMA, a 64-row K tile in four boxes of one
// 16-row page each, a loop over the boxes: the table entry of the box's
// first row (clamped into the sequence), the box 16 rows (2048 bytes) down
// the stage per step; the barrier expects the whole tile's bytes.
// TMA-LABEL: gpu.func @attention_fwd(
// TMA-SAME: {tile.param = "k_tmap"}
// TMA: nvvm.mbarrier.arrive.expect_tx
// TMA: scf.for %[[FIRST:arg[0-9]+]] = %{{.*}} to %c64{{.*}} step %c16
// TMA: %[[MIN:.*]] = arith.minsi
// TMA: %[[BLK:.*]] = arith.divui %[[MIN]], %c16
// TMA: %[[PAGE:.*]] = memref.load %{{.*}}[%{{.*}}, %[[BLK]]] : memref<?x?xi32, strided<[?, 1]>>
// TMA: %[[IN:.*]] = arith.remui %[[MIN]], %c16
// TMA: %[[PG:.*]] = arith.index_cast %[[PAGE]] : i32 to index
// TMA: arith.muli %[[FIRST]], %c128
// TMA: %[[PG32:.*]] = arith.index_cast %[[PG]] : index to i32
// TMA: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg28, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %[[PG32]]]
// TMA-NEXT: }
// TMA: scf.for %{{.*}} step %c16
// TMA: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg29

// NOTMA: error: the wgmma mapping copies a paged cache's K/V by TMA with one block per query tile: it needs kv-sync tma and grid tiles, not kv-sync mbarrier, grid tiles
// NOPERSIST: error: the wgmma mapping copies a paged cache's K/V by TMA with one block per query tile: it needs kv-sync tma and grid tiles, not kv-sync tma, grid persistent

func.func @attention_fwd(%q: tensor<?x4x64xbf16>, %kc: tensor<?x2x16x64xbf16>, %vc: tensor<?x2x16x64xbf16>,
                         %cuq: tensor<?xi32>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>)
    -> (tensor<?x4x64xbf16>, tensor<4x?xf32>) {
  %o, %lse = attn.attention %q, %kc, %vc varlen(%cuq : tensor<?xi32>)
      paged(%table, %lens : tensor<?x?xi32>, tensor<?xi32>) {causal}
      : tensor<?x4x64xbf16>, tensor<?x2x16x64xbf16>, tensor<?x2x16x64xbf16>
      -> tensor<?x4x64xbf16>, tensor<4x?xf32>
  return %o, %lse : tensor<?x4x64xbf16>, tensor<4x?xf32>
}
