// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=32 block-n=32" -attnc-choose-mma-schedule="swizzle-staged=true" -attnc-map-tile-to-mma | FileCheck %s

// Head dim 128: the K/V tiles are unpadded (32 x 128) with XOR-swizzled
// 16-byte chunks: the copy writes global column c of tile row r to column
// c ^ 8 (r mod 8), and ldmatrix reads through the same XOR (with the lane's
// row mod 8), so every 128-byte row segment stays one aligned segment.
// CHECK-LABEL: gpu.func @attention_fwd(
// CHECK: memref.view {{.*}} to memref<2x32x128xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<2x32x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[R:.*]] = arith.divui %{{.*}}, %c16
// CHECK: %[[COL:.*]] = arith.muli %{{.*}}, %c8
// CHECK: %[[R8:.*]] = arith.andi %[[R]], %c7
// CHECK: %[[SH:.*]] = arith.shli %[[R8]], %c3
// CHECK: %[[SCOL:.*]] = arith.xori %[[COL]], %[[SH]] : index
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[COL]]], %{{.*}}[%[[R]], %[[SCOL]]], 8
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 2
// CHECK: %[[LOW:.*]] = arith.xori %{{.*}}, %{{.*}} : index
// CHECK-NEXT: nvgpu.ldmatrix %{{.*}}[%{{.*}}, %[[LOW]]] {numTiles = 4 : i32, transpose = true}
func.func @attention_fwd(%q: tensor<?x2x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v
      : tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>
  return %o, %lse : tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>
}

// -----

// Head dim 96 (12 chunks per row, not a multiple of 8): padded rows
// (96 + 8), no swizzle.
// CHECK-LABEL: gpu.func @attention_fwd(
// CHECK: memref.view {{.*}} to memref<2x32x104xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT: arith.xori
// CHECK: gpu.return
func.func @attention_fwd(%q: tensor<?x2x?x96xbf16>, %k: tensor<?x2x?x96xbf16>, %v: tensor<?x2x?x96xbf16>)
    -> (tensor<?x2x?x96xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v
      : tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16> -> tensor<?x2x?x96xbf16>, tensor<?x2x?xf32>
  return %o, %lse : tensor<?x2x?x96xbf16>, tensor<?x2x?xf32>
}
