// RUN: attnc-opt %s -split-input-file -verify-diagnostics

func.func @dot_k(%a: tensor<32x64xbf16>, %b: tensor<16x32xbf16>) {
  // expected-error @+1 {{expected the reduction dims to match, got 64 and 32}}
  %s = tile.dot %a, %b {transpose_b} : tensor<32x64xbf16>, tensor<16x32xbf16> -> tensor<32x16xf32>
  return
}

// -----

func.func @dot_types(%a: tensor<32x64xbf16>, %b: tensor<16x64xf16>) {
  // expected-error @+1 {{expected bf16 or f16 operands of one type, got 'bf16' and 'f16'}}
  %s = tile.dot %a, %b {transpose_b} : tensor<32x64xbf16>, tensor<16x64xf16> -> tensor<32x16xf32>
  return
}

// -----

func.func @dot_result(%a: tensor<32x64xbf16>, %b: tensor<16x64xbf16>) {
  // expected-error @+1 {{expected a 32x16 result, got 'tensor<32x32xf32>'}}
  %s = tile.dot %a, %b {transpose_b} : tensor<32x64xbf16>, tensor<16x64xbf16> -> tensor<32x32xf32>
  return
}

// -----

func.func @dot_f16_result(%a: tensor<32x64xbf16>, %b: tensor<16x64xbf16>) {
  // expected-error @+1 {{expected an f32 result}}
  %s = tile.dot %a, %b {transpose_b} : tensor<32x64xbf16>, tensor<16x64xbf16> -> tensor<32x16xbf16>
  return
}

// -----

func.func @load_rank(%v: memref<?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{expected a tile of rank 1 for a rank-3 view, got 'tensor<16x64xbf16>'}}
  %t = tile.load %v[%i, %i, %i] : memref<?x?x64xbf16> -> tensor<16x64xbf16>
  return
}

// -----

func.func @load_row(%v: memref<?x2x?x64xbf16>, %i: index) {
  // expected-error @+1 {{expected the tile's row length 32 to match the view's last dim 64}}
  %t = tile.load %v[%i, %i, %i] : memref<?x2x?x64xbf16> -> tensor<16x32xbf16>
  return
}

// -----

func.func @store_type(%t: tensor<16x64xf16>, %v: memref<?x2x?x64xbf16>, %i: index) {
  // expected-error @+1 {{expected the tile element type 'f16' to match the view's 'bf16'}}
  tile.store %t, %v[%i, %i, %i] : tensor<16x64xf16>, memref<?x2x?x64xbf16>
  return
}

// -----

func.func @store_rank(%t: tensor<16x64xf32>, %v: memref<?x2x?xf32>, %i: index) {
  // expected-error @+1 {{expected a tile of rank 1 for a rank-3 view, got 'tensor<16x64xf32>'}}
  tile.store %t, %v[%i, %i, %i] : tensor<16x64xf32>, memref<?x2x?xf32>
  return
}

// -----

func.func @softmax_stats(%s: tensor<32x16xf32>, %m: tensor<16xf32>) {
  // expected-error @+1 {{expected the row max of type 'tensor<32xf32>', got 'tensor<16xf32>'}}
  %p, %m2, %l2, %a = tile.softmax_update %s, %m, %m : tensor<32x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @softmax_f16(%s: tensor<32x16xf16>, %m: tensor<32xf32>) {
  // expected-error @+1 {{expected an f32 M x N score tile}}
  %p, %m2, %l2, %a = tile.softmax_update %s, %m, %m : tensor<32x16xf16>, tensor<32xf32>
  return
}

// -----

func.func @score_type(%s: tensor<32x16xf16>, %i: index) {
  // expected-error @+1 {{expected an f32 M x N score tile in and out}}
  %t = tile.score %s, %i, %i, %i, %i, %i, %i {scale = 1.0 : f32} : tensor<32x16xf16>
  return
}

// -----

func.func @rescale_alpha(%acc: tensor<32x64xf32>, %a: tensor<64xf32>) {
  // expected-error @+1 {{expected alpha of type 'tensor<32xf32>', got 'tensor<64xf32>'}}
  %r = tile.rescale %acc, %a : tensor<32x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @rescale_acc(%acc: tensor<32x64xbf16>, %a: tensor<32xf32>) {
  // expected-error @+1 {{expected an f32 M x D accumulator}}
  %r = tile.rescale %acc, %a : tensor<32x64xbf16>, tensor<32xf32>
  return
}

// -----

func.func @finalize_out(%acc: tensor<32x64xf32>, %m: tensor<32xf32>) {
  // expected-error @+1 {{expected a bf16, f16 or f32 output of the accumulator's shape}}
  %o, %l = tile.finalize %acc, %m, %m : tensor<32x64xf32>, tensor<32xf32> -> tensor<32x64xi32>
  return
}

// -----

func.func @finalize_acc(%acc: tensor<32x64xbf16>, %m: tensor<32xf32>) {
  // expected-error @+1 {{expected an f32 M x D accumulator}}
  %o, %l = tile.finalize %acc, %m, %m : tensor<32x64xbf16>, tensor<32xf32> -> tensor<32x64xbf16>
  return
}

// -----

func.func @program_id_dim() {
  // expected-error @+1 {{attribute 'dim' failed to satisfy constraint}}
  %x = tile.program_id 3
  return
}

// -----

func.func @repeat(%v: memref<?x64xbf16, strided<[?, 1]>>, %i: index) {
  // expected-error @+1 {{expected repeat 1 or 2, got 3}}
  %t = tile.load_row %v[%i, %i] {repeat = 3 : i64} : memref<?x64xbf16, strided<[?, 1]>> -> tensor<64xbf16>
  return
}

// -----

func.func @repeat_halves(%v: memref<?x64xbf16, strided<[?, 1]>>, %i: index) {
  // expected-error @+1 {{expected each half of a repeat = 2 row to be whole 16-byte vectors (a multiple of 16 elements), got 24}}
  %t = tile.load_row %v[%i, %i] {repeat = 2 : i64} : memref<?x64xbf16, strided<[?, 1]>> -> tensor<24xbf16>
  return
}

// -----

func.func @interleaved_alone(%v: memref<?x64xbf16, strided<[?, 1]>>, %i: index) {
  // expected-error @+1 {{'interleaved' needs repeat = 2}}
  %t = tile.load_row %v[%i, %i] {interleaved} : memref<?x64xbf16, strided<[?, 1]>> -> tensor<64xbf16>
  return
}

// -----

func.func @rotate_pairs(%x: tensor<24xf32>) {
  // expected-error @+1 {{expected a length that splits into pairs of whole 16-byte vectors, got 24}}
  %p = tile.rotate_pairs %x : tensor<24xf32>
  return
}

// -----

func.func @rotate_pairs_type(%x: tensor<32xbf16>) {
  // expected-error @+1 {{expected a 1-D f32 tile, got 'tensor<32xbf16>'}}
  %p = tile.rotate_pairs %x : tensor<32xbf16>
  return
}

// -----

func.func @sink_on_partial(%acc: tensor<16x64xf32>, %m: tensor<16xf32>, %l: tensor<16xf32>, %s: f32) {
  // expected-error @+1 {{a sink belongs to the final result, not to an f32 split-KV partial}}
  %o, %lse = tile.finalize %acc, %m, %l sink %s : tensor<16x64xf32>, tensor<16xf32> -> tensor<16x64xf32>
  return
}

// -----

func.func @dot_transpose_a(%a: tensor<64x32xbf16>, %b: tensor<32x128xbf16>) {
  // expected-error @+1 {{expected the reduction dims to match, got 64 and 32}}
  %s = tile.dot %a, %b {transpose_a} : tensor<64x32xbf16>, tensor<32x128xbf16> -> tensor<32x128xf32>
  return
}

// -----

func.func @probs_lse_rows(%t: tensor<64x32xf32>, %lse: tensor<32xf32>) {
  // expected-error @+1 {{expected the lse of type 'tensor<64xf32>', got 'tensor<32xf32>'}}
  %p = tile.probs_from_lse %t, %lse : tensor<64x32xf32>, tensor<32xf32>
  return
}

// -----

func.func @score_grad_softcap(%p: tensor<64x32xf32>, %delta: tensor<64xf32>) {
  // expected-error @+1 {{the soft-cap's derivative needs the capped score tile (`scores`)}}
  %ds = tile.score_grad %p, %p, %delta {softcap = 30.0 : f32} : tensor<64x32xf32>, tensor<64xf32>
  return
}

// -----

func.func @row_dot_result(%a: tensor<64x128xbf16>) {
  // expected-error @+1 {{expected the result of type 'tensor<64xf32>', got 'tensor<64xbf16>'}}
  %r = tile.row_dot %a, %a : tensor<64x128xbf16> -> tensor<64xbf16>
  return
}

// -----

func.func @store_add_bf16(%v: tensor<64x128xbf16>, %dst: memref<?x4x?x128xbf16>, %i: index) {
  // expected-error @+1 {{expected an f32 destination (an accumulator), got 'bf16'}}
  tile.store_add %v, %dst[%i, %i, %i] : tensor<64x128xbf16>, memref<?x4x?x128xbf16>
  return
}
