// RUN: attnc-opt %s -split-input-file -verify-diagnostics

func.func @odd_gate(%x: tensor<?x255xbf16>) {
  // expected-error @+1 {{expected an even input row length (gate and up halves), got 255}}
  %y = attn.silu_mul %x : tensor<?x255xbf16> -> tensor<?x127xbf16>
  return
}

// -----

func.func @gate_result(%x: tensor<?x256xbf16>) {
  // expected-error @+1 {{expected the result type 'tensor<?x128xbf16>' (half the input row), got 'tensor<?x256xbf16>'}}
  %y = attn.gelu_mul %x : tensor<?x256xbf16> -> tensor<?x256xbf16>
  return
}

// -----

func.func @weight(%x: tensor<?x128xbf16>, %w: tensor<64xbf16>) {
  // expected-error @+1 {{expected the weight type 'tensor<128xbf16>' (one per column), got 'tensor<64xbf16>'}}
  %y, %r = attn.add_rmsnorm %x, %x, %w {epsilon = 1.0e-6 : f32}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<64xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @eps(%x: tensor<?x128xbf16>, %w: tensor<128xbf16>) {
  // expected-error @+1 {{expected epsilon to be a positive finite number, got 0}}
  %y, %r = attn.add_rmsnorm %x, %x, %w {epsilon = 0.0 : f32}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @rank(%x: tensor<128xbf16>) {
  // expected-error @+1 {{expected the input to have rank 2 ([rows, d]), got 'tensor<128xbf16>'}}
  %m = attn.reduce sum %x : tensor<128xbf16> -> tensor<?x1xf32>
  return
}

// -----

func.func @reduce_type(%x: tensor<?x128xbf16>) {
  // expected-error @+1 {{expected the result type 'tensor<?x1xf32>' (one f32 per row), got 'tensor<?x1xbf16>'}}
  %m = attn.reduce sum %x : tensor<?x128xbf16> -> tensor<?x1xbf16>
  return
}

// -----

func.func @slice_align(%x: tensor<?x128xbf16>) {
  // expected-error @+1 {{expected the offset to be a multiple of 8 elements (16-byte aligned rows), got 4}}
  %s = attn.slice %x {offset = 4 : i64, size = 64 : i64} : tensor<?x128xbf16> -> tensor<?x64xbf16>
  return
}

// -----

func.func @slice_bounds(%x: tensor<?x128xbf16>) {
  // expected-error @+1 {{expected columns [96, 160) to lie within the row of 128}}
  %s = attn.slice %x {offset = 96 : i64, size = 64 : i64} : tensor<?x128xbf16> -> tensor<?x64xbf16>
  return
}

// -----

func.func @broadcast(%x: tensor<?x128xbf16>, %y: tensor<?x64xbf16>) {
  // expected-error @+1 {{expected input #1 of shape [?, 128], [?, 1] or [128] to broadcast to the result, got 'tensor<?x64xbf16>'}}
  %z = attn.map %x, %y : tensor<?x128xbf16>, tensor<?x64xbf16> -> tensor<?x128xbf16> {
  ^bb0(%a: bf16, %b: bf16):
    attn.yield %a : bf16
  }
  return
}

// -----

func.func @body_types(%x: tensor<?x128xbf16>) {
  // expected-error @+1 {{expected the body to yield one 'f32' (the result's element type)}}
  %z = attn.map %x : tensor<?x128xbf16> -> tensor<?x128xf32> {
  ^bb0(%a: bf16):
    attn.yield %a : bf16
  }
  return
}

// -----

func.func @body_ops(%x: tensor<?x128xf32>) {
  %z = attn.map %x : tensor<?x128xf32> -> tensor<?x128xf32> {
  ^bb0(%a: f32):
    // expected-error @+1 {{is not allowed in the body of attn.map: only pure arith and math ops can be lowered to every target}}
    %t = tensor.empty() : tensor<2xf32>
    attn.yield %a : f32
  }
  return
}
