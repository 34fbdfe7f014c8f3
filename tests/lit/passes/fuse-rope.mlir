// RUN: attnc-opt %s -split-input-file -attnc-fuse-elementwise -canonicalize -cse | FileCheck %s

// NeoX, 2 query heads + 1 key head of 64 columns, all rotated: one kernel
// per token row, in place. The position picks the cache row; cos and sin
// are read once (repeat = 2: [cos, cos] and [sin, sin]) and every head is
// loaded, rotated and stored back at its column.
// CHECK-LABEL: func.func @neox
// CHECK-SAME: (%{{.*}}: memref<i64> {tile.param = "positions"}, %{{.*}}: memref<bf16> {tile.param = "query"}, %{{.*}}: memref<bf16> {tile.param = "key"}, %{{.*}}: memref<bf16> {tile.param = "cos_sin_cache"}, %{{.*}}: i64 {tile.param = "rows"}, %{{.*}}: i64 {tile.param = "query_stride"}, %{{.*}}: i64 {tile.param = "key_stride"}, %{{.*}}: i64 {tile.param = "cos_sin_cache_stride"})
// CHECK-SAME: tile.launch = #tile.launch<"rowwise_v1", 32, 4, 0>
// CHECK-SAME: tile.row_length = 64 : i64
// CHECK: %[[ROW:.*]] = tile.program_id 0
// CHECK: %[[P:.*]] = memref.load %{{.*}}[%[[ROW]]] : memref<?xi64>
// CHECK: %[[POS:.*]] = arith.index_cast %[[P]] : i64 to index
// CHECK: tile.load_row %{{.*}}[%[[POS]], %c0] {repeat = 2 : i64} : memref<?x64xbf16, strided<[?, 1]>> -> tensor<64xbf16>
// CHECK: tile.load_row %{{.*}}[%[[POS]], %c32] {repeat = 2 : i64}
// CHECK: %[[Q0:.*]] = tile.load_row %[[QV:.*]][%[[ROW]], %c0] : memref<?x128xbf16, strided<[?, 1]>> -> tensor<64xbf16>
// CHECK: tile.load_row %[[QV]][%[[ROW]], %c64]
// CHECK: tile.load_row %{{.*}}[%[[ROW]], %c0] : memref<?x64xbf16, strided<[?, 1]>> -> tensor<64xbf16>
// CHECK: tile.rotate_pairs %{{.*}} : tensor<64xf32>
// CHECK: tile.store_row %{{.*}}, %[[QV]][%[[ROW]], %c0] : tensor<64xbf16>, memref<?x128xbf16, strided<[?, 1]>>
// CHECK: tile.store_row %{{.*}}, %[[QV]][%[[ROW]], %c64]
// CHECK: tile.store_row
// CHECK-NOT: tile.store_row
// CHECK-NOT: attn.
func.func @neox(%pos: tensor<?xi64>, %q: tensor<?x128xbf16>, %k: tensor<?x64xbf16>, %c: tensor<?x64xbf16>)
    -> (tensor<?x128xbf16>, tensor<?x64xbf16>) {
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 64 : i64}
      : tensor<?xi64>, tensor<?x128xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x128xbf16>, tensor<?x64xbf16>
  return %q2, %k2 : tensor<?x128xbf16>, tensor<?x64xbf16>
}

// -----

// GPT-J, partial rotary (32 of 64 columns): interleaved repeat loads and
// neighbour pairs; only the first 32 columns of each head are touched.
// CHECK-LABEL: func.func @gptj
// CHECK-SAME: tile.launch = #tile.launch<"rowwise_v1", 32, 4, 0>
// CHECK-SAME: tile.row_length = 32 : i64
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: tile.load_row %{{.*}}[%{{.*}}, %c0] {interleaved, repeat = 2 : i64} : memref<?x32xf16, strided<[?, 1]>> -> tensor<32xf16>
// CHECK: tile.load_row %{{.*}}[%{{.*}}, %c16] {interleaved, repeat = 2 : i64}
// CHECK: tile.rotate_pairs %{{.*}} {interleaved} : tensor<32xf32>
// CHECK: tile.store_row %{{.*}}[%{{.*}}, %c64] : tensor<32xf16>
func.func @gptj(%pos: tensor<?xi32>, %q: tensor<?x128xf16>, %k: tensor<?x64xf16>, %c: tensor<?x32xf16>)
    -> (tensor<?x128xf16>, tensor<?x64xf16>) {
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 32 : i64, is_neox = false}
      : tensor<?xi32>, tensor<?x128xf16>, tensor<?x64xf16>, tensor<?x32xf16> -> tensor<?x128xf16>, tensor<?x64xf16>
  return %q2, %k2 : tensor<?x128xf16>, tensor<?x64xf16>
}
