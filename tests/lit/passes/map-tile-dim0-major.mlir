// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=32 block-n=32" | FileCheck %s --check-prefix=TILE
// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=32 block-n=32" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s

// Causal: the kernel asks for its programs to start with program id 0 (the
// query tile, counted from the last) slowest, so that every head's longest
// tile starts before any shorter one. The mapping keeps the grid's shape
// and splits the block's linear index (x fastest) again: id 0 = linear /
// (grid y * grid z), id 1 = (linear mod that) mod grid y, id 2 = (linear mod
// that) / grid y.
// TILE-LABEL: func.func @causal(
// TILE-SAME: attributes {tile.dim0_major, tile.launch =
// CHECK-LABEL: gpu.func @causal(
// CHECK-DAG: %[[BX:.*]] = gpu.block_id x
// CHECK-DAG: %[[BY:.*]] = gpu.block_id y
// CHECK-DAG: %[[BZ:.*]] = gpu.block_id z
// CHECK-DAG: %[[GX:.*]] = gpu.grid_dim x
// CHECK-DAG: %[[GY:.*]] = gpu.grid_dim y
// CHECK-DAG: %[[GZ:.*]] = gpu.grid_dim z
// CHECK-DAG: %[[YZ:.*]] = arith.muli %[[GY]], %[[BZ]]
// CHECK-DAG: %[[Y:.*]] = arith.addi %[[BY]], %[[YZ]]
// CHECK-DAG: %[[XY:.*]] = arith.muli %[[GX]], %[[Y]]
// CHECK-DAG: %[[LIN:.*]] = arith.addi %[[BX]], %[[XY]]
// CHECK-DAG: %[[INNER:.*]] = arith.muli %[[GY]], %[[GZ]]
// CHECK-DAG: %[[P0:.*]] = arith.divui %[[LIN]], %[[INNER]]
// CHECK-DAG: %[[REST:.*]] = arith.remui %[[LIN]], %[[INNER]]
// CHECK-DAG: %[[P1:.*]] = arith.remui %[[REST]], %[[GY]]
// CHECK-DAG: %[[P2:.*]] = arith.divui %[[REST]], %[[GY]]
// CHECK: gpu.return
func.func @causal(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x2x?x64xbf16> {
  %o = attn.attention %q, %k, %v {causal}
      : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x2x?x64xbf16>
  return %o : tensor<?x2x?x64xbf16>
}

// -----

// Without the mask every program has the same KV tiles: block ids are
// program ids, and consecutive blocks share a head's K/V in L2.
// TILE-LABEL: func.func @full(
// TILE-NOT: tile.dim0_major
// TILE-SAME: attributes {tile.launch =
// CHECK-LABEL: gpu.func @full(
// CHECK-NOT: gpu.grid_dim
// CHECK: gpu.block_id x
// CHECK-NOT: gpu.grid_dim
// CHECK: gpu.return
func.func @full(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x2x?x64xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x2x?x64xbf16>
  return %o : tensor<?x2x?x64xbf16>
}
