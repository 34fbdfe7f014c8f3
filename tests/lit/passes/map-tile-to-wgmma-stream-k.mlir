// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=128" -attnc-assign-layouts="kv-stages=2 kv-sync=tma grid=persistent epilogue=tma" -attnc-map-tile-to-wgmma | FileCheck %s
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=128" -attnc-assign-layouts="kv-stages=2 kv-sync=tma grid=persistent stream-k=false" -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=OFF
// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=128" -attnc-assign-layouts="kv-stages=2 kv-sync=tma" -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=OFF

// The stream-K tail (issue #6, bench/NOTES-hopper.md, 2026-12-03):
// persistent blocks over items whose KV loop is the same for all of them
// take the schedule's seven i32 parameters and the workspace last.
// CHECK-LABEL: gpu.func @attention_fwd
// CHECK-SAME: {tile.param = "o_tmap"}, %{{.*}}: i32 {tile.param = "sk_rounds"}, %{{.*}}: i32 {tile.param = "sk_round_rem"}, %{{.*}}: i32 {tile.param = "sk_units"}, %{{.*}}: i32 {tile.param = "sk_units_rem"}, %{{.*}}: i32 {tile.param = "sk_tiles"}, %{{.*}}: i32 {tile.param = "sk_tiles_mul"}, %{{.*}}: i32 {tile.param = "sk_tiles_shr"}, %[[WS:.*]]: !llvm.ptr {tile.param = "workspace"})
// floor(x / T) by the runtime's magic numbers: a multiply-high and a shift.
// CHECK: arith.mului_extended
// CHECK: arith.shrui
// A piece that does not start its item: its partial (16 float4 of O and
// one of m, l per thread at D128), the warpgroup's barrier, a release of
// the block's flag.
// CHECK-COUNT-17: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK: "barrier.sync $0, $1;"
// CHECK: "st.release.gpu.global.u32 [$0], $1;"
// The item's first piece, when it does not end it: for each later block's
// slot, every thread polls the flag until its warp saw it set, the
// warpgroup meets, the first thread clears it, and all fold the slot in.
// CHECK: scf.for
// CHECK: scf.while
// CHECK: "ld.acquire.gpu.global.u32 $0, [$1];"
// CHECK: nvvm.vote.sync  all
// CHECK: "barrier.sync $0, $1;"
// CHECK: "st.relaxed.gpu.global.u32 [$0], $1;"
// CHECK-COUNT-17: llvm.load volatile %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// Only the item's first piece writes O (the epilogue under its scf.if).
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta

// Off: without stream-k, one block per tile, or a causal bound (next).
// OFF-NOT: workspace
// OFF-NOT: ld.acquire
func.func @attention_fwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
