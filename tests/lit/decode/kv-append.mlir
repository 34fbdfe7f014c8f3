// RUN: attnc-opt %s -split-input-file | attnc-opt -split-input-file | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: attnc-opt %s -split-input-file -attnc-tile-decode | FileCheck %s --check-prefix=TILE
// RUN: attnc-opt %s -split-input-file -attnc-tile-decode -attnc-map-kv-append-to-gpu | FileCheck %s --check-prefix=MAP

// ROUNDTRIP-LABEL: func @kv_append
// ROUNDTRIP: attn.kv_append %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8x128xbf16>, tensor<?xi64>, tensor<?x8x16x128xbf16> -> tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>

// The tile kernel: one program per (token, KV head) row; the slot is read,
// checked (negative = padding, past the last page = skipped) and split into
// page and offset; each of K and V is one row load and one row store.
// TILE-LABEL: func.func @kv_append(
// TILE-SAME: memref<i64> {tile.param = "slot_mapping"}
// TILE-SAME: i64 {tile.param = "vc_stride_s"}) attributes {tile.launch = #tile.launch<"kv_append_v1", 8, 16, 8>, tile.row_length = 128 : i64}
// TILE: %[[ROW:.*]] = tile.program_id 0
// TILE: %[[T:.*]] = arith.divui %[[ROW]], %{{.*}} : index
// TILE: %[[H:.*]] = arith.remui %[[ROW]], %{{.*}} : index
// TILE: %[[SLOT:.*]] = memref.load %{{.*}}[%[[T]]] : memref<?xi64, strided<[1]>>
// TILE-DAG: %[[NEG:.*]] = arith.cmpi sge, %[[SLOT]]
// TILE-DAG: %[[END:.*]] = arith.cmpi slt, %[[SLOT]]
// TILE: %[[OK:.*]] = arith.andi
// TILE: scf.if %[[OK]]
// TILE: %[[PAGE:.*]] = arith.divui
// TILE: %[[OFF:.*]] = arith.remui
// TILE: %[[K:.*]] = tile.load_row %{{.*}}[%[[T]], %[[H]], %{{.*}}] : memref<?x8x128xbf16, strided<[?, ?, 1]>> -> tensor<128xbf16>
// TILE: tile.store_row %[[K]], %{{.*}}[%[[PAGE]], %[[H]], %[[OFF]], %{{.*}}] : tensor<128xbf16>, memref<?x8x16x128xbf16, strided<[?, ?, ?, 1]>>
// TILE: tile.load_row
// TILE: tile.store_row

// On the GPU: 16 threads per row (one 16-byte vector each), 8 rows per
// block, rows past the end do nothing; the copies sit under the slot check.
// MAP: gpu.func @kv_append(
// MAP-SAME: known_block_size = array<i32: 128, 1, 1>
// MAP: gpu.thread_id x
// MAP: arith.cmpi ult
// MAP: scf.if
// MAP: memref.load
// MAP: scf.if
// MAP: vector.load {{.*}} {alignment = 16 : i64} : memref<?x8x128xbf16, strided<[?, ?, 1]>>, vector<8xbf16>
// MAP: vector.store {{.*}} {alignment = 16 : i64} : memref<?x8x16x128xbf16, strided<[?, ?, ?, 1]>>, vector<8xbf16>
// MAP: vector.load
// MAP: vector.store
// MAP-NOT: tile.
func.func @kv_append(%k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %slots: tensor<?xi64>,
                     %kc: tensor<?x8x16x128xbf16>, %vc: tensor<?x8x16x128xbf16>)
    -> (tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>) {
  %kc1, %vc1 = attn.kv_append %k, %v, %slots, %kc, %vc
      : tensor<?x8x128xbf16>, tensor<?xi64>, tensor<?x8x16x128xbf16> -> tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
  return %kc1, %vc1 : tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
}

// -----

// Head dim 64 at page 1 (fp16): 8 threads per row, 16 rows per block.
// TILE-LABEL: func.func @small(
// TILE-SAME: attributes {tile.launch = #tile.launch<"kv_append_v1", 16, 8, 2>, tile.row_length = 64 : i64}
// MAP: gpu.func @small(
// MAP-SAME: known_block_size = array<i32: 128, 1, 1>
func.func @small(%k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %slots: tensor<?xi64>,
                 %kc: tensor<?x2x1x64xf16>, %vc: tensor<?x2x1x64xf16>)
    -> (tensor<?x2x1x64xf16>, tensor<?x2x1x64xf16>) {
  %kc1, %vc1 = attn.kv_append %k, %v, %slots, %kc, %vc
      : tensor<?x2x64xf16>, tensor<?xi64>, tensor<?x2x1x64xf16> -> tensor<?x2x1x64xf16>, tensor<?x2x1x64xf16>
  return %kc1, %vc1 : tensor<?x2x1x64xf16>, tensor<?x2x1x64xf16>
}
