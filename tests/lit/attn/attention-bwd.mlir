// RUN: attnc-opt %s -split-input-file | attnc-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @gqa_causal
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = attn.attention_bwd %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 {causal, softcap = 3.000000e+01 : f32}
// CHECK-SAME: -> tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
func.func @gqa_causal(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>,
                      %o: tensor<?x8x?x128xbf16>, %do: tensor<?x8x?x128xbf16>, %lse: tensor<?x8x?xf32>)
    -> (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>) {
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %v, %o, %do, %lse {causal, softcap = 30.0 : f32}
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>,
        tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
      -> tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
}

// -----

// CHECK-LABEL: func @window_scale_fp16
// CHECK: attn.attention_bwd {{.*}} {scale = 1.250000e-01 : f32, window = #attn.window<64, 0>}
func.func @window_scale_fp16(%q: tensor<2x4x100x64xf16>, %k: tensor<2x4x77x64xf16>, %v: tensor<2x4x77x64xf16>,
                             %o: tensor<2x4x100x64xf16>, %do: tensor<2x4x100x64xf16>, %lse: tensor<2x4x100xf32>)
    -> (tensor<2x4x100x64xf16>, tensor<2x4x77x64xf16>, tensor<2x4x77x64xf16>) {
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %v, %o, %do, %lse {scale = 0.125 : f32, window = #attn.window<64, 0>}
      : tensor<2x4x100x64xf16>, tensor<2x4x77x64xf16>, tensor<2x4x77x64xf16>,
        tensor<2x4x100x64xf16>, tensor<2x4x100x64xf16>, tensor<2x4x100xf32>
      -> tensor<2x4x100x64xf16>, tensor<2x4x77x64xf16>, tensor<2x4x77x64xf16>
  return %dq, %dk, %dv : tensor<2x4x100x64xf16>, tensor<2x4x77x64xf16>, tensor<2x4x77x64xf16>
}
