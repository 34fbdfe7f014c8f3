// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=32 block-n=16" | FileCheck %s

// GQA 4/2, causal: the launch ABI, the program ids (query tiles in reverse,
// and tile.dim0_major: the longest causal rows of every head first), the KV head of a query head, the causal
// upper bound of the KV loop, and the online-softmax body.
// CHECK-LABEL: func.func @attention_fwd(
// CHECK-SAME: %[[Q:.*]]: memref<bf16> {tile.param = "q"}
// CHECK-SAME: i64 {tile.param = "lse_stride_h"}) attributes {tile.dim0_major, tile.launch = #tile.launch<"attention_fwd_v1", 32, 16, 4>}
// CHECK: %[[QV:.*]] = memref.reinterpret_cast %[[Q]] to offset: [0], sizes: [%{{.*}}, 4, %{{.*}}, 64], strides: [%{{.*}}, %{{.*}}, %{{.*}}, 1]
// CHECK: %[[PID:.*]] = tile.program_id 0
// CHECK: %[[TILES:.*]] = arith.ceildivsi %{{.*}}, %c32
// CHECK: %[[LAST:.*]] = arith.subi %[[TILES]], %c1
// CHECK: %[[M:.*]] = arith.subi %[[LAST]], %[[PID]]
// CHECK: %[[H:.*]] = tile.program_id 1
// CHECK: %[[B:.*]] = tile.program_id 2
// CHECK: %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK: %[[Q0:.*]] = arith.muli %[[M]], %c32
// CHECK: tile.load %[[QV]][%[[B]], %[[H]], %[[Q0]]] {{.*}} -> tensor<32x64xbf16>
// CHECK: %[[HI:.*]] = arith.minsi
// CHECK: scf.for %[[K0:.*]] = %c0 to %[[HI]] step %c16 iter_args
// CHECK: tile.load {{.*}}[%[[B]], %[[KVH]], %[[K0]]] {{.*}} -> tensor<16x64xbf16>
// CHECK: tile.dot {{.*}} {transpose_b} : tensor<32x64xbf16>, tensor<16x64xbf16> -> tensor<32x16xf32>
// CHECK: tile.score {{.*}} {causal, scale = 1.250000e-01 : f32}
// CHECK: tile.softmax_update
// CHECK: tile.rescale
// CHECK: arith.truncf {{.*}} : tensor<32x16xf32> to tensor<32x16xbf16>
// CHECK: tile.dot
// CHECK: scf.yield
// CHECK: tile.finalize
// CHECK: tile.store {{.*}} : tensor<32x64xbf16>
// CHECK: tile.store {{.*}} : tensor<32xf32>
func.func @attention_fwd(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}

// -----

// A left window starts the KV loop on a tile boundary; no LSE, no store of it.
// CHECK-LABEL: func.func @window
// CHECK: arith.maxsi
// CHECK: arith.divsi {{.*}}, %c16
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c16
// CHECK: tile.score {{.*}} {scale = {{.*}}, window = #attn.window<100, 0>}
// CHECK: tile.store
// CHECK-NOT: tile.store
func.func @window(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x2x?x64xbf16> {
  %o = attn.attention %q, %k, %v {window = #attn.window<100, 0>}
      : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x2x?x64xbf16>
  return %o : tensor<?x2x?x64xbf16>
}

// -----

// mask_mod and score_mod regions move onto tile.score with tile.yield.
// CHECK-LABEL: func.func @mods
// CHECK: tile.score
// CHECK: score {
// CHECK: arith.addf
// CHECK: tile.yield %{{.*}} : f32
// CHECK: } mask {
// CHECK: tile.yield %{{.*}} : i1
func.func @mods(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x2x?x64xbf16> {
  %o = attn.attention %q, %k, %v : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x2x?x64xbf16>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 1.0 : f32
    %r = arith.addf %s, %c : f32
    attn.yield %r : f32
  } mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %t = arith.cmpi ne, %i, %j : index
    attn.yield %t : i1
  }
  return %o : tensor<?x2x?x64xbf16>
}
