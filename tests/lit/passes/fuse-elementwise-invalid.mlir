// RUN: attnc-opt %s -split-input-file -attnc-fuse-elementwise -verify-diagnostics

func.func @slice_of_computed(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = attn.map %x : tensor<?x64xf32> -> tensor<?x64xf32> {
  ^bb0(%a: f32):
    attn.yield %a : f32
  }
  // expected-error @+1 {{can slice only the kernel's inputs: the fused kernel loads each input once by columns}}
  %s = attn.slice %y {offset = 0 : i64, size = 64 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}

// -----

func.func @row_length(%x: tensor<?x128xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{expected a row of 64 elements (the kernel's row length) or a slice of one, got 'tensor<?x128xf32>'}}
  %y = attn.map %x : tensor<?x128xf32> -> tensor<?x128xf32> {
  ^bb0(%a: f32):
    attn.yield %a : f32
  }
  %s = attn.slice %y {offset = 0 : i64, size = 64 : i64} : tensor<?x128xf32> -> tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}

// -----

func.func @mixed(%x: tensor<?x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{cannot be fused into a row kernel with the attn elementwise ops around it}}
  %c = arith.constant 0 : index
  %y = attn.map %x : tensor<?x128xf32> -> tensor<?x128xf32> {
  ^bb0(%a: f32):
    attn.yield %a : f32
  }
  return %y : tensor<?x128xf32>
}

// -----

// expected-error @+1 {{expected the row kernel's results to be [rows, d] with d a multiple of 8 (16-byte vectors)}}
func.func @short_row(%x: tensor<?x12xf32>) -> tensor<?x12xf32> {
  %y = attn.map %x : tensor<?x12xf32> -> tensor<?x12xf32> {
  ^bb0(%a: f32):
    attn.yield %a : f32
  }
  return %y : tensor<?x12xf32>
}

// -----

func.func @rope_not_alone(%pos: tensor<?xi64>, %q: tensor<?x64xbf16>, %k: tensor<?x64xbf16>, %c: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  // expected-error @+1 {{must be alone in its function and return its two results (the kernel rotates query and key in place)}}
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 64 : i64}
      : tensor<?xi64>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x64xbf16>, tensor<?x64xbf16>
  return %q2 : tensor<?x64xbf16>
}
