// RUN: attnc-opt %s -split-input-file | FileCheck %s
// RUN: attnc-opt %s -split-input-file | attnc-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @named
// CHECK: attn.silu_mul %arg0 : tensor<?x256xbf16> -> tensor<?x128xbf16>
// CHECK: attn.gelu_mul %arg0 : tensor<?x256xbf16> -> tensor<?x128xbf16>
// CHECK: attn.add_rmsnorm %arg1, %arg1, %arg2 {epsilon = 9.99999997E-7 : f32} : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
func.func @named(%x: tensor<?x256xbf16>, %h: tensor<?x128xbf16>, %w: tensor<128xbf16>)
    -> (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>) {
  %s = attn.silu_mul %x : tensor<?x256xbf16> -> tensor<?x128xbf16>
  %g = attn.gelu_mul %x : tensor<?x256xbf16> -> tensor<?x128xbf16>
  %y, %r = attn.add_rmsnorm %h, %h, %w {epsilon = 1.0e-6 : f32}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return %s, %g, %y : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
}

// -----

// CHECK-LABEL: func @generic
// CHECK: attn.slice %arg0 {offset = 64 : i64, size = 64 : i64} : tensor<?x128xf16> -> tensor<?x64xf16>
// CHECK: attn.reduce max %{{.*}} : tensor<?x64xf16> -> tensor<?x1xf32>
// CHECK: attn.map %{{.*}}, %{{.*}}, %arg1 : tensor<?x64xf16>, tensor<?x1xf32>, tensor<64xf16> -> tensor<?x64xf32> {
// CHECK: attn.yield %{{.*}} : f32
func.func @generic(%x: tensor<?x128xf16>, %w: tensor<64xf16>) -> tensor<?x64xf32> {
  %hi = attn.slice %x {offset = 64 : i64, size = 64 : i64} : tensor<?x128xf16> -> tensor<?x64xf16>
  %m = attn.reduce max %hi : tensor<?x64xf16> -> tensor<?x1xf32>
  %y = attn.map %hi, %m, %w : tensor<?x64xf16>, tensor<?x1xf32>, tensor<64xf16> -> tensor<?x64xf32> {
  ^bb0(%a: f16, %b: f32, %c: f16):
    %af = arith.extf %a : f16 to f32
    %cf = arith.extf %c : f16 to f32
    %d = arith.subf %af, %b : f32
    %e = math.exp %d : f32
    %p = arith.mulf %e, %cf : f32
    attn.yield %p : f32
  }
  return %y : tensor<?x64xf32>
}
