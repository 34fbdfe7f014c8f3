// RUN: attnc-opt %s -split-input-file -verify-diagnostics

func.func @paged_no_length(%cache: memref<?x2x16x64xbf16>, %table: memref<?x?xi32>, %b: index) {
  // expected-error @+1 {{a paged load needs the sequence's length}}
  %kt = tile.load %cache[%b, %b, %b] pages %table : memref<?x?xi32> : memref<?x2x16x64xbf16> -> tensor<32x64xbf16>
  return
}

// -----

func.func @table_type(%cache: memref<?x2x16x64xbf16>, %table: memref<?x?xi64>, %b: index) {
  // expected-error @+1 {{expected a [batch, max_blocks] i32 block table, got 'memref<?x?xi64>'}}
  %kt = tile.load %cache[%b, %b, %b] length %b pages %table : memref<?x?xi64> : memref<?x2x16x64xbf16> -> tensor<32x64xbf16>
  return
}

// -----

func.func @dynamic_page(%cache: memref<?x2x?x64xbf16>, %table: memref<?x?xi32>, %b: index) {
  // expected-error @+1 {{expected a paged cache view [pages, heads, page_size, dim] with a static page size, got 'memref<?x2x?x64xbf16>'}}
  %kt = tile.load %cache[%b, %b, %b] length %b pages %table : memref<?x?xi32> : memref<?x2x?x64xbf16> -> tensor<32x64xbf16>
  return
}

// -----

func.func @merge_stat(%o: tensor<16x64xf32>, %lse: tensor<8xf32>, %m: tensor<8xf32>) {
  // expected-error @+1 {{expected the row max of type 'tensor<16xf32>', got 'tensor<8xf32>'}}
  %a2, %m2, %l2 = tile.lse_accumulate %o, %lse into %o, %m, %m : tensor<16x64xf32>, tensor<16x64xf32>, tensor<8xf32>
  return
}

// -----

func.func @merge_acc(%o: tensor<16x64xbf16>, %lse: tensor<16xf32>) {
  // expected-error @+1 {{expected an f32 M x D accumulator}}
  %a2, %m2, %l2 = tile.lse_accumulate %o, %lse into %o, %lse, %lse : tensor<16x64xbf16>, tensor<16x64xbf16>, tensor<16xf32>
  return
}

// -----

func.func @packed_regions(%s: tensor<16x32xf32>, %i: index) {
  // expected-error @+1 {{packed rows (several heads per tile) cannot take score or mask regions}}
  %t = tile.score %s, %i, %i, %i, %i, %i, %i {scale = 1.0 : f32, packed} : tensor<16x32xf32> mask {
  ^bb0(%b: index, %h: index, %q: index, %k: index):
    %true = arith.constant true
    tile.yield %true : i1
  }
  return
}

