// RUN: attnc-opt %s -attnc-tile-decode="block-n=16 stages=2" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s --check-prefix=FOUR
// RUN: attnc-opt %s -attnc-tile-decode="block-n=16 stages=2 max-q-len=4" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s --check-prefix=SIXTEEN

// GQA 4/1 with one query row per sequence: 4 live rows of the warp's m16
// tile, so each lane's upper row (g + 8) is padding. The KV loop computes
// the softmax of the lower row only: 4 exponentials of a 16-key tile (2 n8
// tiles x 2 columns) and the rescale's, and the upper row's max and sum
// (iter_args 2 and 4) travel through the loop unchanged.
// FOUR: gpu.func @decode_split(
// FOUR: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}, %[[M1:[a-z0-9_]+]] = %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}, %[[L1:[a-z0-9_]+]] = %{{[a-z0-9_]+}}, %{{.*}}) -> (f32, f32, f32, f32,
// FOUR-COUNT-5: llvm.nvvm.ex2.approx.ftz.f
// FOUR-NOT: llvm.nvvm.ex2.approx.ftz.f
// FOUR: scf.yield %{{.*}}, %[[M1]], %{{.*}}, %[[L1]], {{.*}} : f32, f32, f32, f32, vector<2x2xf32>
// Four rows per sequence (16 live rows): both rows of every lane count.
// SIXTEEN: gpu.func @decode_split(
// SIXTEEN: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// SIXTEEN-COUNT-10: llvm.nvvm.ex2.approx.ftz.f
// SIXTEEN-NOT: llvm.nvvm.ex2.approx.ftz.f
// SIXTEEN: scf.yield {{.*}} : f32, f32, f32, f32, vector<2x2xf32>
func.func @decode(%q: tensor<?x4x?x64xbf16>, %kc: tensor<?x1x16x64xbf16>, %vc: tensor<?x1x16x64xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens
      : tensor<?x4x?x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
