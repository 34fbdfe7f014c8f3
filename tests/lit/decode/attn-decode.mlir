// RUN: attnc-opt %s -split-input-file | attnc-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @decode
// CHECK: attn.decode %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal, softcap = 3.000000e+01 : f32} : tensor<?x32x?x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
func.func @decode(%q: tensor<?x32x?x128xbf16>, %kc: tensor<?x8x16x128xbf16>, %vc: tensor<?x8x16x128xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens {causal, softcap = 30.0 : f32}
      : tensor<?x32x?x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
  return %o, %lse : tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
}

// -----

// Without LSE; a contiguous cache is one page of the whole length.
// CHECK-LABEL: func @decode_no_lse
// CHECK: attn.decode {{.*}} -> tensor<2x4x1x64xf16>
func.func @decode_no_lse(%q: tensor<2x4x1x64xf16>, %kc: tensor<2x1x4096x64xf16>, %vc: tensor<2x1x4096x64xf16>,
                         %table: tensor<2x1xi32>, %lens: tensor<2xi32>) -> tensor<2x4x1x64xf16> {
  %o = attn.decode %q, %kc, %vc, %table, %lens
      : tensor<2x4x1x64xf16>, tensor<2x1x4096x64xf16>, tensor<2x1x4096x64xf16>, tensor<2x1xi32>, tensor<2xi32>
      -> tensor<2x4x1x64xf16>
  return %o : tensor<2x4x1x64xf16>
}

// -----

// CHECK-LABEL: func @merge
// CHECK: attn.lse_merge %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
func.func @merge(%oa: tensor<?x8x?x64xbf16>, %la: tensor<?x8x?xf32>, %ob: tensor<?x8x?x64xbf16>, %lb: tensor<?x8x?xf32>)
    -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %l = attn.lse_merge %oa, %la, %ob, %lb : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %l : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}
