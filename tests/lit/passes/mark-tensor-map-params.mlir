// RUN: attnc-opt %s -split-input-file -attnc-mark-tensor-map-params -verify-diagnostics | FileCheck %s

// The arguments a kernel lists in attnc.tensor_map_args become 128-byte
// byval grid constants, 64-byte aligned (NVPTX: .param .align 64 .b8
// p[128]); the list itself is dropped; other arguments are left alone.
// CHECK-LABEL: llvm.func @kernel
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %{{.*}}: i64)
// CHECK-NOT: attnc.tensor_map_args
llvm.func @kernel(%a: !llvm.ptr, %map: !llvm.ptr, %n: i64) attributes {attnc.tensor_map_args = array<i64: 1>, nvvm.kernel} {
  llvm.return
}

// -----

// CHECK-LABEL: llvm.func @plain
// CHECK-SAME: (%{{.*}}: !llvm.ptr)
llvm.func @plain(%a: !llvm.ptr) attributes {nvvm.kernel} {
  llvm.return
}

// -----

// expected-error @+1 {{attnc.tensor_map_args names argument 1, which is not a pointer argument}}
llvm.func @wrong(%a: !llvm.ptr, %n: i64) attributes {attnc.tensor_map_args = array<i64: 1>, nvvm.kernel} {
  llvm.return
}
