// RUN: attnc-opt %s -attnc-lower-tile-to-linalg | FileCheck %s

// The host meaning of the backward's tile ops.
// CHECK-DAG: #[[AT:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @lower(
// tile.dot transpose_a: lhs read as a[k, m].
// CHECK: linalg.generic {indexing_maps = [#[[AT]], #[[B]], #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]}
// tile.probs_from_lse: exp2(t - lse · log2 e), 0 where lse = -inf.
// CHECK: linalg.generic
// CHECK: %[[REF:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: %[[D:.*]] = arith.subf %{{.*}}, %[[REF]] : f32
// CHECK: %[[E:.*]] = math.exp2 %[[D]] : f32
// CHECK: %[[NOKEY:.*]] = arith.cmpf oeq, %{{.*}}, %cst{{.*}} : f32
// CHECK: arith.select %[[NOKEY]], %{{.*}}, %[[E]] : f32
// tile.score_grad with soft-cap: p (dp - delta) (1 - u²), u = t ln2 / c;
// 0 where t = -inf.
// CHECK: linalg.generic
// CHECK: %[[DIFF:.*]] = arith.subf %{{.*}}, %{{.*}} : f32
// CHECK: %[[DS:.*]] = arith.mulf %{{.*}}, %[[DIFF]] : f32
// CHECK: arith.constant 0.0231049061 : f32
// CHECK: %[[SLOPE:.*]] = arith.subf %{{.*}}, %{{.*}} : f32
// CHECK: %[[MASKED:.*]] = arith.cmpf oeq
// CHECK: %[[CAPPED:.*]] = arith.mulf %[[DS]], %[[SLOPE]] : f32
// CHECK: arith.select %[[MASKED]], %{{.*}}, %[[CAPPED]] : f32
// tile.row_dot: a row reduction from 0.
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #[[ROW]]], iterator_types = ["parallel", "reduction"]}
// tile.store_add: read, add, write the rows below the sequence length.
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[X:.*]] = tensor.extract
// CHECK: %[[OLD:.*]] = memref.load
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[X]] : f32
// CHECK: memref.store %[[SUM]]
func.func @lower(%p16: tensor<64x32xbf16>, %do: tensor<64x128xbf16>, %dv: tensor<32x128xf32>,
                 %t: tensor<64x32xf32>, %lse: tensor<64xf32>, %dp: tensor<64x32xf32>,
                 %acc: memref<?x4x?x128xf32>, %b: index, %h: index, %q0: index) -> (tensor<32x128xf32>, tensor<64x32xf32>, tensor<64xf32>) {
  %dv1 = tile.dot %p16, %do, %dv {transpose_a} : tensor<64x32xbf16>, tensor<64x128xbf16> -> tensor<32x128xf32>
  %p = tile.probs_from_lse %t, %lse : tensor<64x32xf32>, tensor<64xf32>
  %ds = tile.score_grad %p, %dp, %lse scores %t {softcap = 30.0 : f32} : tensor<64x32xf32>, tensor<64xf32>
  %delta = tile.row_dot %do, %do : tensor<64x128xbf16> -> tensor<64xf32>
  %z = arith.constant dense<0.0> : tensor<64x128xf32>
  tile.store_add %z, %acc[%b, %h, %q0] : tensor<64x128xf32>, memref<?x4x?x128xf32>
  return %dv1, %ds, %delta : tensor<32x128xf32>, tensor<64x32xf32>, tensor<64xf32>
}
