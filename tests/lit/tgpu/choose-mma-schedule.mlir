// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=64 block-n=32" -attnc-choose-mma-schedule | FileCheck %s
// RUN: attnc-opt %s -split-input-file -attnc-tile-attention="block-m=64 block-n=32" -attnc-choose-mma-schedule="rows-per-warp=32 q-in-smem=true kv-stages=3 swizzle-staged=true" | FileCheck %s --check-prefix=OPTS
// RUN: attnc-opt %s -split-input-file -attnc-tile-decode="block-n=128 stages=3" -attnc-choose-mma-schedule="decode-key-warps=4" | FileCheck %s --check-prefix=DECODE
// RUN: not attnc-opt %s -split-input-file -attnc-tile-attention="block-m=64 block-n=32" -attnc-map-tile-to-mma 2>&1 | FileCheck %s --check-prefix=NONE

// The mma.sync mapping's choices go on each tile kernel as its schedule:
// by default 16 rows per warp, Q in registers, two-stage K/V rings, padded
// rows, no key warps (those are the decode split kernel's).
// CHECK-LABEL: func.func @attention_fwd
// CHECK-SAME: tgpu.schedule = #tgpu.mma_schedule<rows_per_warp = 16, q_in_smem = false, kv_stages = 2, staging = padded, key_warps = 1>
// OPTS-LABEL: func.func @attention_fwd
// OPTS-SAME: tgpu.schedule = #tgpu.mma_schedule<rows_per_warp = 32, q_in_smem = true, kv_stages = 3, staging = swizzled, key_warps = 1>
// NONE: error: the mma.sync mapping needs the kernel's #tgpu.mma_schedule (run attnc-choose-mma-schedule first)
func.func @attention_fwd(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}

// -----
// Rows of 96 elements cannot be swizzled (the XOR permutes 8 chunks of 16
// bytes, rows of a multiple of 64 elements): swizzle-staged keeps them
// padded.
// OPTS-LABEL: func.func @attention_fwd
// OPTS-SAME: staging = padded
func.func @attention_fwd(%q: tensor<?x4x?x96xbf16>, %k: tensor<?x2x?x96xbf16>, %v: tensor<?x2x?x96xbf16>)
    -> (tensor<?x4x?x96xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v
      : tensor<?x4x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16> -> tensor<?x4x?x96xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x96xbf16>, tensor<?x4x?xf32>
}

// -----
// Decode: the split kernel takes the key warps; a module with a decode split
// kernel stages its tiles swizzled.
// DECODE: func.func @decode_split
// DECODE-SAME: tgpu.schedule = #tgpu.mma_schedule<rows_per_warp = 16, q_in_smem = false, kv_stages = 2, staging = swizzled, key_warps = 4>
func.func @decode(%q: tensor<?x4x?x128xbf16>, %kc: tensor<?x1x256x128xbf16>, %vc: tensor<?x1x256x128xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens
      : tensor<?x4x?x128xbf16>, tensor<?x1x256x128xbf16>, tensor<?x1x256x128xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
