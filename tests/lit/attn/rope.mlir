// RUN: attnc-opt %s -split-input-file | FileCheck %s
// RUN: attnc-opt %s -split-input-file | attnc-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @neox
// CHECK: attn.rope %arg0, %arg1, %arg2, %arg3 {head_size = 128 : i64, rotary_dim = 128 : i64} : tensor<?xi64>, tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x128xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
func.func @neox(%pos: tensor<?xi64>, %q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %c: tensor<?x128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>) {
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 128 : i64, rotary_dim = 128 : i64, is_neox = true}
      : tensor<?xi64>, tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x128xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
  return %q2, %k2 : tensor<?x4096xbf16>, tensor<?x1024xbf16>
}

// -----

// GPT-J style, partial rotary (32 of 64 columns), i32 positions.
// CHECK-LABEL: func @gptj
// CHECK: attn.rope %arg0, %arg1, %arg2, %arg3 {head_size = 64 : i64, is_neox = false, rotary_dim = 32 : i64} : tensor<?xi32>, tensor<?x256xf16>, tensor<?x64xf16>, tensor<?x32xf16>
func.func @gptj(%pos: tensor<?xi32>, %q: tensor<?x256xf16>, %k: tensor<?x64xf16>, %c: tensor<?x32xf16>)
    -> (tensor<?x256xf16>, tensor<?x64xf16>) {
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 32 : i64, is_neox = false}
      : tensor<?xi32>, tensor<?x256xf16>, tensor<?x64xf16>, tensor<?x32xf16> -> tensor<?x256xf16>, tensor<?x64xf16>
  return %q2, %k2 : tensor<?x256xf16>, tensor<?x64xf16>
}
