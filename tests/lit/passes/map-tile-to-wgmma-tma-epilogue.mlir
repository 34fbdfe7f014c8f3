// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=128 block-n=128" -attnc-assign-layouts="kv-stages=2 kv-sync=tma epilogue=tma" -attnc-map-tile-to-wgmma | FileCheck %s
// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=128 block-n=128" -attnc-assign-layouts="kv-stages=2 kv-sync=tma epilogue=tma grid=persistent" -attnc-map-tile-to-wgmma | FileCheck %s --check-prefix=PERSISTENT
// RUN: not attnc-opt %s -split-input-file -attnc-tile-attention="block-m=128 block-n=128" -attnc-assign-layouts="kv-stages=2 kv-sync=pingpong epilogue=tma" -attnc-map-tile-to-wgmma 2>&1 | FileCheck %s --check-prefix=NOTMA
// RUN: not attnc-opt %s -split-input-file -attnc-tile-attention="block-m=128 block-n=176" -attnc-assign-layouts="kv-stages=2 kv-sync=tma epilogue=tma grid=persistent" -attnc-map-tile-to-wgmma 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not attnc-opt %s -split-input-file -attnc-tile-attention="block-m=128 block-n=128" -attnc-assign-layouts="kv-stages=2 kv-sync=tma epilogue=smem" -attnc-map-tile-to-wgmma 2>&1 | FileCheck %s --check-prefix=BADNAME

// epilogue=tma (issue #6): O leaves through shared memory and a TMA store.
// The kernel takes O's tensor map after Q's, K's and V's.
// CHECK-LABEL: gpu.func @attention_fwd
// CHECK-SAME: tile.param = "o_tmap"
// CHECK-SAME: attnc.tensor_map_args = array<i64: 22, 23, 24, 25>
// Each consumer warpgroup writes its 64 rows of O (D128: 16 n8 tiles, four
// 8x8 matrices per stmatrix) into Q's buffer in the swizzled layout, fences
// the generic proxy against the async one and syncs its 128 threads on a
// named barrier of its own; its first thread stores the two boxes of 64
// columns, commits the bulk group and waits until it has read the buffer
// (the block's shared memory must outlive the copy). No O element is
// stored from registers; LSE is.
// CHECK-NOT: vector.store
// CHECK: %[[WGTHREADS:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-COUNT-8: nvvm.stmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// CHECK-NOT: nvvm.stmatrix
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier id = %{{.*}} number_of_threads = %[[WGTHREADS]]
// CHECK: scf.if
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.global.shared.cta %arg25, %{{.*}}, box[
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NOT: vector.store
// CHECK: memref.store
// CHECK-NOT: vector.store
// CHECK: gpu.return

// Persistent blocks stage O in a buffer of their own (the producer reloads
// Q meanwhile), so before writing an item's O the warpgroup's first thread
// waits until the previous item's store has read it; the block's last store
// is waited for after the item loop. They use no `.aligned` instruction
// there (after a causal KV loop either one took that loop out of ptxas's
// uniform datapath): each thread stores its 32 fragments (D128: 16 n8 tiles
// x rows g, g + 8) with 4-byte shared stores instead of stmatrix, and the
// warpgroup meets at a non-aligned barrier.sync instead of bar.sync.
// PERSISTENT-LABEL: gpu.func @attention_fwd
// PERSISTENT: nvvm.setmaxregister  increase 240
// PERSISTENT: scf.for
// PERSISTENT: nvvm.cp.async.bulk.wait_group 0 {read}
// PERSISTENT: llvm.inline_asm has_side_effects asm_dialect = att "barrier.sync $0, $1;", "r,r,~{memory}"
// PERSISTENT-COUNT-32: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<3>
// PERSISTENT-NOT: nvvm.stmatrix
// PERSISTENT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// PERSISTENT-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "barrier.sync $0, $1;"
// PERSISTENT: nvvm.cp.async.bulk.commit.group
// PERSISTENT-NOT: nvvm.cp.async.bulk.wait_group
// PERSISTENT: scf.yield %{{.*}}, %{{.*}} : i32, i32
// PERSISTENT: nvvm.cp.async.bulk.wait_group 0 {read}
// PERSISTENT: gpu.return

// NOTMA: error: #tgpu.wgmma_schedule: the tma epilogue needs kv_sync = tma, not pingpong
// SMEM: error: epilogue tma with persistent blocks needs O's staging buffer (32768 bytes) beside the Q tile and K/V rings (212992 bytes), more than the 227 KiB of shared memory a block can have
// BADNAME: for the --epilogue option: Cannot find option named 'smem'!
func.func @attention_fwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
