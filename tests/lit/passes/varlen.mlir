// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" | FileCheck %s --check-prefix=TILE
// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" -attnc-lower-tile-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: attnc-opt %s -attnc-tile-attention="block-m=64 block-n=32" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s --check-prefix=MMA
// RUN: attnc-opt %s -attnc-tile-attention="block-m=192 block-n=64" -attnc-assign-layouts="kv-sync=mbarrier" -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=WGMMA
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=tma" -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=TMA
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=tma grid=persistent" -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=PERSIST
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-sync=tma grid=persistent epilogue=tma" -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=TMASTORE

// Varlen: the kernel takes cu_seqlens_q and cu_seqlens_k after the
// contract's parameters; each program reads its sequence's start and end
// (program id 2 is the sequence), and every view starts at the sequence's
// first row and is as long as the sequence, so that loads past its end read
// zeros and stores past it write nothing. The causal tile order counts from
// the sequence's own last tile; programs past its tiles run no KV tile.
// TILE-LABEL: func.func @attention_fwd(
// TILE-SAME: %[[LSEP:[a-z0-9]+]]: memref<f32> {tile.param = "lse"}
// TILE-SAME: %[[QS:[a-z0-9]+]]: i64 {tile.param = "q_stride_s"}
// TILE-SAME: %[[CUQ:[a-z0-9]+]]: memref<i32> {tile.param = "cu_seqlens_q"}, %[[CUK:[a-z0-9]+]]: memref<i32> {tile.param = "cu_seqlens_k"})
// TILE: %[[P0:.*]] = tile.program_id 0
// TILE: %[[H:.*]] = tile.program_id 1
// TILE: %[[B:.*]] = tile.program_id 2
// TILE: %[[CQ:.*]] = memref.reinterpret_cast %[[CUQ]]
// TILE: %[[B1:.*]] = arith.addi %[[B]], %{{.*}} : index
// TILE: %[[QS0:.*]] = memref.load %[[CQ]][%[[B]]] : memref<?xi32>
// TILE: %[[Q0:.*]] = arith.index_cast %[[QS0]] : i32 to index
// TILE: %[[QE0:.*]] = memref.load %[[CQ]][%[[B1]]] : memref<?xi32>
// TILE: %[[QE:.*]] = arith.index_cast %[[QE0]] : i32 to index
// TILE: memref.reinterpret_cast %[[CUK]]
// TILE: %[[LQ:.*]] = arith.subi %[[QE]], %[[Q0]] : index
// TILE: %[[LK:.*]] = arith.subi
// TILE: %[[C0:.*]] = arith.constant 0 : index
// TILE: %[[QSI:.*]] = arith.index_cast %[[QS]] : i64 to index
// TILE: %[[QOFF:.*]] = arith.muli %[[Q0]], %[[QSI]] : index
// TILE: %[[QV:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%[[QOFF]]], sizes: [1, 4, %[[LQ]], 64]
// TILE-SAME: to memref<1x4x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
// TILE: memref.reinterpret_cast %[[LSEP]] to offset: [%{{.*}}], sizes: [1, 4, %[[LQ]]]
// TILE: %[[TILES:.*]] = arith.ceildivsi %[[LQ]], %{{.*}} : index
// TILE: %[[ROWS:.*]] = arith.cmpi slt, %[[P0]], %[[TILES]] : index
// TILE: %[[LAST:.*]] = arith.subi
// TILE: %[[REV:.*]] = arith.subi %[[LAST]], %[[P0]] : index
// TILE: %[[MT:.*]] = arith.select %[[ROWS]], %[[REV]], %[[TILES]] : index
// TILE: tile.load %[[QV]][%[[C0]], %[[H]], %{{.*}}]
// TILE: %[[HI:.*]] = arith.select %[[ROWS]], %{{.*}}, %{{.*}} : index
// TILE: scf.for %[[K0:.*]] = %{{.*}} to %[[HI]]
// TILE: tile.load %{{.*}}[%[[C0]], %{{.*}}, %[[K0]]] : memref<1x2x?x64xbf16
// TILE: tile.score %{{.*}}, %[[B]], %[[H]], %{{.*}}, %[[K0]], %[[LQ]], %[[LK]] {causal
// TILE: tile.store %{{.*}}, %{{.*}}[%[[C0]], %[[H]], %{{.*}}] : tensor<32x64xbf16>, memref<1x4x?x64xbf16
// TILE: tile.store %{{.*}}, %{{.*}}[%[[C0]], %[[H]], %{{.*}}] : tensor<32xf32>, memref<1x4x?xf32

// The host path keeps the per-sequence views (their sizes bound the copies).
// LINALG: memref.load %{{.*}} : memref<?xi32>
// LINALG: memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [1, 4, %{{.*}}, 64]
// LINALG: scf.for

// Both GPU mappings bound the copies of Q, K and V and the stores of O by
// the per-sequence views' lengths (memref.dim of the sequence dimension).
// MMA: gpu.func @attention_fwd({{.*}}%{{.*}}: memref<i32> {tile.param = "cu_seqlens_q"}, %{{.*}}: memref<i32> {tile.param = "cu_seqlens_k"})
// MMA: memref.load %{{.*}} : memref<?xi32>
// MMA: %[[QV:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [1, 4, %{{.*}}, 64]
// MMA: memref.dim %[[QV]], %{{.*}} : memref<1x4x?x64xbf16
// WGMMA: gpu.func @attention_fwd({{.*}}%{{.*}}: memref<i32> {tile.param = "cu_seqlens_q"}, %{{.*}}: memref<i32> {tile.param = "cu_seqlens_k"})
// WGMMA-SAME: known_block_size = array<i32: 384, 1, 1>
// WGMMA: memref.load %{{.*}} : memref<?xi32>
// WGMMA: memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [1, 4, %{{.*}}, 64]
// WGMMA: memref.dim
// kv_sync tma: the tensor maps address the whole packed tensor, so each
// TMA copy's row coordinate adds the view's first row (its offset over its
// row stride, at least 1) to the tile's row.
// TMA: gpu.func @attention_fwd(
// TMA: %{{.*}}, %[[OFF:.*]], %{{.*}}:4, %[[STR:.*]]:4 = memref.extract_strided_metadata
// TMA: %[[ST:.*]] = arith.maxui %[[STR]]#2, %{{.*}} : index
// TMA: %[[FIRST:.*]] = arith.divui %[[OFF]], %[[ST]] : index
// TMA: %[[ROW:.*]] = arith.addi %{{.*}}, %[[FIRST]] : index
// TMA: %[[ROW32:.*]] = arith.index_cast %[[ROW]] : index to i32
// TMA: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %[[ROW32]], %{{.*}}, %{{.*}}]
// Persistent blocks: each role's item loop reads the item's sequence from
// cu_seqlens (its views are made per item); the KV loop's bounds differ
// per item, so there is no stream-K tail (no schedule or workspace
// parameters).
// PERSIST: gpu.func @attention_fwd(
// PERSIST-NOT: tile.param = "workspace"
// PERSIST-SAME: tile.param = "cu_seqlens_k"
// PERSIST-NOT: tile.param = "workspace"
// PERSIST: gpu.grid_dim x
// PERSIST: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (i32, i32)
// PERSIST: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<i32> to memref<?xi32>
// PERSIST: memref.load %{{.*}} : memref<?xi32>
// PERSIST: gpu.grid_dim x
// PERSIST: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (i32, i32)
// PERSIST: memref.load %{{.*}} : memref<?xi32>
// epilogue tma (an opt-in for varlen): a warpgroup whose 64 rows lie
// inside the sequence (row0 + 64 (warpgroup) + 64 <= the view's length)
// stores them by TMA at the sequence's first row (the view's offset over
// its row stride) plus row0 plus its rows, batch coordinate 0, with the
// persistent blocks' unaligned stores and barrier; one reaching past the
// end stores from registers, bounded per row by the same view's length (a
// box would write into the next sequence's rows).
// TMASTORE: gpu.func @attention_fwd(
// TMASTORE-SAME: tile.param = "o_tmap"
// TMASTORE: %[[LEN:.*]] = memref.dim %[[OV:.*]], %{{.*}} : memref<1x4x?x64xbf16
// TMASTORE: %[[WG:.*]] = arith.divui %thread_id_x, %{{.*}} : index
// TMASTORE: %[[WGROWS:.*]] = arith.muli %[[WG]], %{{.*}} : index
// TMASTORE: %[[END0:.*]] = arith.addi %[[ROW0:.*]], %[[WGROWS]] : index
// TMASTORE: %[[END:.*]] = arith.addi %[[END0]], %{{.*}} : index
// TMASTORE: %[[INSIDE:.*]] = arith.cmpi ule, %[[END]], %[[LEN]] : index
// TMASTORE: scf.if %[[INSIDE]] {
// TMASTORE: nvvm.cp.async.bulk.wait_group 0 {read}
// TMASTORE-NOT: nvvm.stmatrix
// TMASTORE-NOT: nvvm.barrier
// TMASTORE: "barrier.sync $0, $1;"
// TMASTORE: %{{.*}}, %[[OFF:.*]], %{{.*}}:4, %[[STR:.*]]:4 = memref.extract_strided_metadata %[[OV]]
// TMASTORE: %[[ST:.*]] = arith.maxui %[[STR]]#2, %{{.*}} : index
// TMASTORE: %[[FIRST:.*]] = arith.divui %[[OFF]], %[[ST]] : index
// TMASTORE: %[[SEQROW0:.*]] = arith.addi %[[ROW0]], %[[FIRST]] : index
// TMASTORE: %[[BOXROW:.*]] = arith.addi %[[SEQROW0]], %{{.*}} : index
// TMASTORE: %[[BOXROW32:.*]] = arith.index_cast %[[BOXROW]] : index to i32
// TMASTORE: %[[B0:.*]] = arith.index_cast %c0{{.*}} : index to i32
// TMASTORE: nvvm.cp.async.bulk.tensor.global.shared.cta %{{.*}}, %{{.*}}, box[%{{.*}}, %[[BOXROW32]], %{{.*}}, %[[B0]]]
// TMASTORE: nvvm.cp.async.bulk.commit.group
// TMASTORE: } else {
// TMASTORE: %[[LEN2:.*]] = memref.dim %[[OV]], %{{.*}} : memref<1x4x?x64xbf16
// TMASTORE: %[[IN:.*]] = arith.cmpi slt, %{{.*}}, %[[LEN2]] : index
// TMASTORE: scf.if %[[IN]] {
// TMASTORE: vector.store %{{.*}}, %[[OV]]
// The block's last bulk store is waited for after the item loop.
// TMASTORE: nvvm.cp.async.bulk.wait_group 0 {read}
func.func @attention_fwd(%q: tensor<?x4x64xbf16>, %k: tensor<?x2x64xbf16>,
                         %v: tensor<?x2x64xbf16>, %cuq: tensor<?xi32>,
                         %cuk: tensor<?xi32>)
    -> (tensor<?x4x64xbf16>, tensor<4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<?xi32>, tensor<?xi32>) {causal}
      : tensor<?x4x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2x64xbf16>
      -> tensor<?x4x64xbf16>, tensor<4x?xf32>
  return %o, %lse : tensor<?x4x64xbf16>, tensor<4x?xf32>
}
