// RUN: attnc-opt %s -split-input-file | FileCheck %s

// The RoPE pieces of the row ops: repeat = 2 loads (cos/sin per pair) and
// rotate_pairs (each element's partner).
// CHECK-LABEL: func @pieces
// CHECK: tile.load_row %arg0[%arg1, %c0] {repeat = 2 : i64} : memref<?x128xbf16, strided<[?, 1]>> -> tensor<128xbf16>
// CHECK: tile.load_row %arg0[%arg1, %c64] {interleaved, repeat = 2 : i64} : memref<?x128xbf16, strided<[?, 1]>> -> tensor<128xbf16>
// CHECK: tile.rotate_pairs %arg2 : tensor<128xf32>
// CHECK: tile.rotate_pairs %arg2 {interleaved} : tensor<128xf32>
func.func @pieces(%c: memref<?x128xbf16, strided<[?, 1]>>, %pos: index, %x: tensor<128xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %cos = tile.load_row %c[%pos, %c0] {repeat = 2 : i64} : memref<?x128xbf16, strided<[?, 1]>> -> tensor<128xbf16>
  %sin = tile.load_row %c[%pos, %c64] {repeat = 2 : i64, interleaved} : memref<?x128xbf16, strided<[?, 1]>> -> tensor<128xbf16>
  %p = tile.rotate_pairs %x : tensor<128xf32>
  %q = tile.rotate_pairs %x {interleaved} : tensor<128xf32>
  return
}
