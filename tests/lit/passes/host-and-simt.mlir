// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" -attnc-lower-tile-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" -attnc-lower-tile-to-linalg -attnc-host-grid | FileCheck %s --check-prefix=GRID
// RUN: attnc-opt %s -attnc-tile-attention="block-m=32 block-n=16" -attnc-map-tile-to-simt | FileCheck %s --check-prefix=SIMT

// The host path: tile ops as linalg on tensors, guarded loads/stores.
// LINALG-LABEL: func.func @attention_fwd
// LINALG-NOT: tile.load
// LINALG: tensor.generate
// LINALG: scf.for
// LINALG: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// LINALG: linalg.index
// LINALG: arith.select
// LINALG: math.exp2
// LINALG: math.log2
// LINALG-NOT: tile.

// The grid becomes three loops: batch, heads (2), query tiles (ceil(seq_q/32)).
// GRID: %[[TILES:.*]] = arith.ceildivsi %{{.*}}, %c32
// GRID: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// GRID: scf.for %{{.*}} = %c0 to %c2 step %c1
// GRID: scf.for %{{.*}} = %c0 to %[[TILES]] step %c1
// GRID-NOT: tile.program_id

// The SIMT mapping: a kernel in a gpu.module, 32 threads (one per query row), K and V
// staged in workgroup memory between barriers.
// SIMT: gpu.module @kernels
// SIMT: gpu.func @attention_fwd({{.*}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>
// SIMT: memref.view {{.*}} to memref<16x64xbf16, #gpu.address_space<workgroup>>
// SIMT: memref.view {{.*}} to memref<16x64xbf16, #gpu.address_space<workgroup>>
// SIMT: gpu.thread_id x
// SIMT: gpu.block_id x
// SIMT: vector.load {{.*}} {alignment = 16 : i64} : memref<?x2x?x64xbf16, strided<[?, ?, ?, 1]>>, vector<64xbf16>
// SIMT: scf.for
// SIMT: gpu.barrier
// SIMT: gpu.barrier
// SIMT: vector.reduction <add>
// SIMT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// SIMT: vector.fma
// SIMT: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// SIMT: gpu.return
// SIMT-NOT: func.func
func.func @attention_fwd(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}
