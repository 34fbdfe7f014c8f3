// RUN: attnc-opt %s -attnc-tile-attention="block-m=128 block-n=64" -attnc-assign-layouts="kv-stages=2 kv-sync=tma" -attnc-map-tile-to-wgmma -verify-diagnostics | FileCheck %s

// kv-sync=tma (issue #6): the producer of the warp-specialised schedule is
// one thread issuing TMA copies (cp.async.bulk.tensor) of three tensor maps
// appended to the launch ABI's parameters; each full barrier expects its
// tile's bytes. 128x64 tiles, D = 128, two stages, two consumer
// warpgroups in ping-pong.
// CHECK-LABEL: gpu.func @attention_fwd
// CHECK-SAME: %[[QMAP:arg22]]: !llvm.ptr {tile.param = "q_tmap"}, %[[KMAP:arg23]]: !llvm.ptr {tile.param = "k_tmap"}, %[[VMAP:arg24]]: !llvm.ptr {tile.param = "v_tmap"})
// CHECK-SAME: attnc.tensor_map_args = array<i64: 22, 23, 24>
// The full barriers count the one elected thread's arrive.expect_tx, the
// empty ones the 8 consumer warps; the init is fenced for the async proxy.
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[WARPS:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %[[ONE]]
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %[[WARPS]]
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %[[ONE]]
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %[[WARPS]]
// CHECK: nvvm.mbarrier.init %{{.*}}, %[[ONE]]
// CHECK-NEXT: nvvm.fence.mbarrier.init
// CHECK: gpu.barrier
// CHECK: nvvm.setmaxregister  decrease 24
// Q: 128 x 128 bf16 = 32768 bytes, two boxes of 64 columns at column 0 and
// 64, into the Q buffer's column blocks (16 KiB apart).
// CHECK: %[[QBYTES:.*]] = llvm.mlir.constant(32768 : i32) : i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[QFULL:.*]], %[[QBYTES]] : !llvm.ptr<3>, i32
// CHECK: llvm.mlir.constant(0 : i32) : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[QMAP]], %[[QFULL]], box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: arith.constant 16384 : i64
// CHECK: llvm.mlir.constant(64 : i32) : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[QMAP]], %[[QFULL]]
// Every tile in order, K then V, each after its stage's empty phase:
// 64 x 128 bf16 = 16384 bytes.
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: %[[TBYTES:.*]] = llvm.mlir.constant(16384 : i32) : i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %[[TBYTES]]
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[KMAP]]
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[VMAP]]
// No cp.async anywhere: the consumers copy nothing either.
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: nvvm.setmaxregister  increase 240
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: gpu.return
func.func @attention_fwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
