// RUN: attnc-opt %s -split-input-file -attnc-tile-decode="block-n=32 max-q-len=2" | FileCheck %s

// GQA 8/2, page 16: the split kernel packs 4 heads x 2 rows (padded to 16),
// reads each sequence's length, splits it into whole KV tiles, loads paged
// K/V tiles and writes an f32 partial; the combine merges the partials.
// CHECK-LABEL: func.func @decode_split(
// CHECK-SAME: {tile.param = "q"}
// CHECK-SAME: memref<i32> {tile.param = "block_table"}
// CHECK-SAME: memref<i64> {tile.param = "merge_counts"}
// CHECK-SAME: i64 {tile.param = "v_stride_s"}
// CHECK-SAME: i64 {tile.param = "write_o"}, %[[TICKET:.*]]: i64 {tile.param = "merge_ticket"}) attributes {tile.launch = #tile.launch<"decode_split_v4", 16, 32, 2>, tile.live_rows = 8 : i64}
// CHECK: %[[SPLIT:.*]] = tile.program_id 0
// CHECK: %[[KVH:.*]] = tile.program_id 1
// CHECK: %[[B:.*]] = tile.program_id 2
// CHECK: %[[LEN32:.*]] = memref.load %{{.*}}[%[[B]]] : memref<?xi32, strided<[1]>>
// CHECK: %[[LEN:.*]] = arith.index_cast %[[LEN32]]
// CHECK: arith.ceildivsi %[[LEN]]
// CHECK: tile.load %{{.*}}[%[[B]], %[[KVH]], %c0] : memref<?x2x?x64xbf16, {{.*}}> -> tensor<16x64xbf16>
// CHECK: scf.for %[[K0:.*]] = %{{.*}} to %{{.*}} step %c32
// CHECK: tile.load %{{.*}}[%[[B]], %[[KVH]], %[[K0]]] length %[[LEN]] pages %{{.*}} : memref<?x?xi32, strided<[?, 1]>> : memref<?x2x16x64xbf16, {{.*}}> -> tensor<32x64xbf16>
// CHECK: tile.score {{.*}} {causal, packed, scale = 1.250000e-01 : f32} : tensor<16x32xf32>
// With write_o = 1 (one split) O and LSE go straight to the caller's
// tensors, else the f32 partials to the workspace; with write_o = 2 the
// group's last program to arrive then merges the other splits' partials
// (split + 1, split + 2, ... mod splits) into its own state and writes O
// and LSE.
// CHECK: %[[WRITE:.*]] = arith.cmpi eq, %arg29, %c1_i64
// CHECK: scf.if %[[WRITE]] {
// CHECK: tile.finalize {{.*}} -> tensor<16x64xbf16>
// CHECK: tile.store {{.*}} : tensor<16x64xbf16>, memref<?x2x?x64xbf16
// CHECK: tile.store {{.*}} : tensor<16xf32>, memref<?x2x?xf32
// CHECK: } else {
// CHECK: tile.finalize {{.*}} -> tensor<16x64xf32>
// CHECK: tile.store {{.*}} : tensor<16x64xf32>, memref<?x2x?x64xf32
// CHECK: tile.store {{.*}} : tensor<16xf32>, memref<?x2x?xf32
// CHECK: %[[MERGE:.*]] = arith.cmpi eq, %arg29, %c2_i64
// CHECK: scf.if %[[MERGE]] {
// CHECK: %[[LAST:.*]] = tile.split_arrive %{{.*}}[%[[B]], %[[KVH]]] ticket %[[TICKET]] of %{{.*}} : memref<?x2xi64, strided<[2, 1]>>
// CHECK: scf.if %[[LAST]] {
// CHECK: scf.for %[[T:[^ ]*]] = %c1{{[_0-9]*}} to %{{.*}} step %c1{{[_0-9]*}} iter_args
// CHECK: %[[NEXT:.*]] = arith.addi %[[SPLIT]], %[[T]]
// CHECK: arith.remui %[[NEXT]]
// CHECK: tile.load {{.*}} -> tensor<16x64xf32>
// CHECK: tile.load {{.*}} -> tensor<16xf32>
// CHECK: tile.lse_accumulate
// CHECK: tile.finalize {{.*}} -> tensor<16x64xbf16>
// CHECK: tile.store {{.*}} : tensor<16x64xbf16>, memref<?x2x?x64xbf16
// CHECK: tile.store {{.*}} : tensor<16xf32>, memref<?x2x?xf32
// CHECK: }
// CHECK-LABEL: func.func @decode_combine(
// CHECK-SAME: attributes {tile.launch = #tile.launch<"decode_combine_v2", 16, 0, 8>}
// CHECK: scf.for
// CHECK: tile.load {{.*}} -> tensor<16x64xf32>
// CHECK: tile.load {{.*}} -> tensor<16xf32>
// CHECK: tile.lse_accumulate
// CHECK: tile.finalize {{.*}} -> tensor<16x64xbf16>
// CHECK: tile.store {{.*}} : tensor<16x64xbf16>
// CHECK: tile.store {{.*}} : tensor<16xf32>
func.func @decode(%q: tensor<?x8x?x64xbf16>, %kc: tensor<?x2x16x64xbf16>, %vc: tensor<?x2x16x64xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens {causal}
      : tensor<?x8x?x64xbf16>, tensor<?x2x16x64xbf16>, tensor<?x2x16x64xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// -----

// CHECK-LABEL: func.func @merge(
// CHECK-SAME: attributes {tile.launch = #tile.launch<"lse_merge_v1", 16, 0, 4>}
// CHECK: tile.load {{.*}} -> tensor<16x64xf16>
// CHECK: tile.lse_accumulate
// CHECK: tile.lse_accumulate
// CHECK: tile.finalize {{.*}} -> tensor<16x64xf16>
// CHECK-NOT: tile.store {{.*}} : tensor<16xf32>
func.func @merge(%oa: tensor<?x4x?x64xf16>, %la: tensor<?x4x?xf32>, %ob: tensor<?x4x?x64xf16>, %lb: tensor<?x4x?xf32>)
    -> tensor<?x4x?x64xf16> {
  %o = attn.lse_merge %oa, %la, %ob, %lb : tensor<?x4x?x64xf16>, tensor<?x4x?xf32> -> tensor<?x4x?x64xf16>
  return %o : tensor<?x4x?x64xf16>
}
