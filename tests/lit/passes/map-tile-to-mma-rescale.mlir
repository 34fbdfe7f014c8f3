// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=32" -attnc-choose-mma-schedule -attnc-map-tile-to-mma | FileCheck %s

// Head dim 128: O (16 n8 tiles per m16 tile) is rescaled only when some
// lane's alpha = 2^(m_old - m_new) is not 1, i.e. some row's max grew; a
// warp vote decides, the multiplies sit under an scf.if, and the else
// branch yields O as it was (exact: O * 1 = O).
// CHECK: gpu.func @attention_fwd(
// CHECK: scf.for
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: arith.cmpf une, %{{.*}}, %cst
// CHECK: %[[GREW:.*]] = nvvm.vote.sync any %{{.*}}, %{{.*}} -> i1
// CHECK: scf.if %[[GREW]] -> (vector<2x2xf32>, {{.*}}vector<2x2xf32>)
// CHECK-COUNT-32: arith.mulf
// CHECK: } else {
// CHECK-NOT: arith.mulf
// CHECK: scf.yield %arg
// CHECK: nvvm.cp.async.wait.group
// CHECK: nvvm.mma.sync
func.func @attention_fwd(%q: tensor<?x2x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v
      : tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>
  return %o, %lse : tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>
}
