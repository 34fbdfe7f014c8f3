// RUN: attnc-opt %s -split-input-file -attnc-tile-decode="block-n=32" -attnc-map-combine-to-gpu -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s

// Page 64, tiles of 32 keys: each tile lies in one page. The split kernel
// looks the first tile's page up before the KV loop and carries it (the
// last iter_arg, an index); each iteration loads the next tile's page at
// its top, so no block-table load sits between the loop's barrier and its
// copies. K and V of a tile share the page. A tile wholly inside the
// sequence copies without bounds checks (full 16-byte cp.async); the last
// one takes the checked copy (zero-fill past the end).
// CHECK-LABEL: gpu.func @decode_split(
// CHECK: %[[FIRST:.*]] = memref.load %{{.*}}[%block_id_z, %{{.*}}] : memref<?x?xi32, strided<[?, 1]>>
// CHECK: %[[FIRSTI:.*]] = arith.index_cast %[[FIRST]]
// CHECK: scf.for %[[IV:.*]] = {{.*}} iter_args({{.*}}, %[[PAGE:.*]] = %[[FIRSTI]]) -> ({{.*}}, index)
// CHECK: %[[NEXTROW:.*]] = arith.addi %[[IV]], %c32
// CHECK: memref.load %{{.*}}[%block_id_z, %{{.*}}] : memref<?x?xi32, strided<[?, 1]>>
// The whole tile: each thread's eight chunks through one view whose offset
// is the tile's (page, head, first row) plus the thread's own; the chunks
// step by a fixed stride (unrolled, no per-chunk address arithmetic).
// CHECK: scf.if %{{.*}} {
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:4, %[[ST:.*]]:4 = memref.extract_strided_metadata
// CHECK: arith.muli %[[PAGE]], %[[ST]]#0
// CHECK: %[[MINE:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%{{.*}}], sizes: [8, 8], strides: [%{{.*}}, 1]
// CHECK-COUNT-8: nvgpu.device_async_copy %[[MINE]][%c{{[0-7]}}{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 8 {bypassL1}
// CHECK: } else {
// CHECK: nvgpu.device_async_copy %{{.*}}, 8, %{{.*}} {bypassL1}
// CHECK: nvvm.cp.async.commit.group
// CHECK: arith.muli %[[PAGE]], %{{.*}}#0
// CHECK: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NOT: memref.load %{{.*}} : memref<?x?xi32
// CHECK: scf.yield
func.func @decode(%q: tensor<?x4x?x64xbf16>, %kc: tensor<?x1x64x64xbf16>, %vc: tensor<?x1x64x64xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens
      : tensor<?x4x?x64xbf16>, tensor<?x1x64x64xbf16>, tensor<?x1x64x64xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}

// -----

// Page 16, tiles of 32 keys: each tile covers two whole pages, both looked
// up an iteration ahead and carried (two index iter_args); a chunk's page is
// picked by its row's page within the tile.
// CHECK-LABEL: gpu.func @decode_split(
// CHECK: scf.for %[[IV:.*]] = {{.*}} iter_args({{.*}}, %[[P0:.*]] = %{{.*}}, %[[P1:.*]] = %{{.*}}) -> ({{.*}}, index, index)
// CHECK-COUNT-2: memref.load %{{.*}}[%block_id_z, %{{.*}}] : memref<?x?xi32, strided<[?, 1]>>
// CHECK: scf.if %{{.*}} {
// CHECK: arith.select %{{.*}}, %[[P0]], %[[P1]] : index
// CHECK: nvgpu.device_async_copy %{{.*}}, 8 {bypassL1}
func.func @decode(%q: tensor<?x4x?x64xbf16>, %kc: tensor<?x1x16x64xbf16>, %vc: tensor<?x1x16x64xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens
      : tensor<?x4x?x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
