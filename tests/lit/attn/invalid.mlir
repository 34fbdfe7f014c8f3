// RUN: attnc-opt %s -split-input-file -verify-diagnostics

func.func @rank(%q: tensor<32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected query to have rank 4 ([batch, heads, seq, head_dim]), got rank 3}}
  %o = attn.attention %q, %k, %v : tensor<32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<32x?x128xbf16>
  return
}

// -----

func.func @f32_inputs(%q: tensor<?x8x?x128xf32>, %k: tensor<?x8x?x128xf32>, %v: tensor<?x8x?x128xf32>) {
  // expected-error @+1 {{expected query element type bf16 or f16, got 'f32'}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32> -> tensor<?x8x?x128xf32>
  return
}

// -----

func.func @mixed_types(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected key element type 'bf16' to match the query, got 'f16'}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @dynamic_heads(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected query to have static heads and head dim, got 'tensor<?x?x?x128xbf16>'}}
  %o = attn.attention %q, %k, %v : tensor<?x?x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x?x?x128xbf16>
  return
}

// -----

func.func @kv_heads_differ(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x4x?x128xbf16>) {
  // expected-error @+1 {{expected key and value to have the same number of heads, got 8 and 4}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x4x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @gqa_ratio(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x6x?x128xbf16>, %v: tensor<?x6x?x128xbf16>) {
  // expected-error @+1 {{query heads (32) must be a multiple of key/value heads (6) for grouped-query attention}}
  %o = attn.attention %q, %k, %v : tensor<?x32x?x128xbf16>, tensor<?x6x?x128xbf16>, tensor<?x6x?x128xbf16> -> tensor<?x32x?x128xbf16>
  return
}

// -----

func.func @key_head_dim(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected key head dim 64 to match query head dim 128}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @value_head_dim(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x64xbf16>) {
  // expected-error @+1 {{expected value head dim 64 to match query head dim 128}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @head_dim_100(%q: tensor<?x8x?x100xbf16>, %k: tensor<?x8x?x100xbf16>, %v: tensor<?x8x?x100xbf16>) {
  // expected-error @+1 {{head dim 100 is not supported; expected one of 64, 96, 128, 192, 256}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x100xbf16>, tensor<?x8x?x100xbf16>, tensor<?x8x?x100xbf16> -> tensor<?x8x?x100xbf16>
  return
}

// -----

func.func @batch(%q: tensor<2x8x?x128xbf16>, %k: tensor<3x8x?x128xbf16>, %v: tensor<3x8x?x128xbf16>) {
  // expected-error @+1 {{expected query, key and value batch sizes to match, got 2, 3 and 3}}
  %o = attn.attention %q, %k, %v : tensor<2x8x?x128xbf16>, tensor<3x8x?x128xbf16>, tensor<3x8x?x128xbf16> -> tensor<2x8x?x128xbf16>
  return
}

// -----

func.func @kv_seq(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x100x128xbf16>, %v: tensor<?x8x99x128xbf16>) {
  // expected-error @+1 {{expected key and value sequence lengths to match, got 100 and 99}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x100x128xbf16>, tensor<?x8x99x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @output_type(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected the output type to equal the query type 'tensor<?x8x?x128xbf16>', got 'tensor<?x8x?x128xf16>'}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xf16>
  return
}

// -----

func.func @lse_type(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected the lse type 'tensor<?x8x?xf32>' ([batch, heads, seq] in f32), got 'tensor<?x8x?xbf16>'}}
  %o, %l = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>, tensor<?x8x?xbf16>
  return
}

// -----

func.func @scale(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected scale to be a positive finite number, got -1}}
  %o = attn.attention %q, %k, %v {scale = -1.0 : f32} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @softcap(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected softcap to be a positive finite number, got 0}}
  %o = attn.attention %q, %k, %v {softcap = 0.0 : f32} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @causal_right_window(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{causal attention sees no key right of the diagonal; use window right = 0 or drop causal, got right = 16}}
  %o = attn.attention %q, %k, %v {causal, window = #attn.window<128, 16>} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @window_bounds(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{window bounds must be >= -1 (-1 means unbounded), got <-2, 0>}}
  %o = attn.attention %q, %k, %v {window = #attn.window<-2, 0>} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @window_unbounded(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{a window unbounded on both sides masks nothing; drop the window attribute}}
  %o = attn.attention %q, %k, %v {window = #attn.window<-1, -1>} : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @score_args(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected the score region to take (f32, index, index, index, index): the score and its batch, head, query and key indices}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  score {
  ^bb0(%s: f32):
    attn.yield %s : f32
  }
  return
}

// -----

func.func @score_yield(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected the score region to yield one 'f32'}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    attn.yield %i : index
  }
  return
}

// -----

func.func @score_blocks(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected the score region to have a single block}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    attn.yield %s : f32
  ^bb1:
    %c = arith.constant 0.0 : f32
    attn.yield %c : f32
  }
  return
}

// -----

func.func @mask_args(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected the mask region to take (index, index, index, index): the batch, head, query and key indices}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%i: index, %j: index):
    %t = arith.cmpi ule, %j, %i : index
    attn.yield %t : i1
  }
  return
}

// -----

func.func @mask_yield(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected the mask region to yield one 'i1'}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    attn.yield %i : index
  }
  return
}

// -----

func.func @region_op(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    // expected-error @+1 {{'tensor.empty' op is not allowed in the mask region: only pure arith and math ops, and tensor.extract of a captured tensor, can be lowered to every target}}
    %e = tensor.empty() : tensor<4xf32>
    %t = arith.cmpi ule, %j, %i : index
    attn.yield %t : i1
  }
  return
}

// -----

func.func @region_capture(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %limit: index) {
  // expected-note @+1 {{required by region isolation constraints}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    // expected-error @+1 {{using value defined outside the region}}
    %t = arith.cmpi ule, %j, %limit : index
    attn.yield %t : i1
  }
  return
}

// -----

func.func @yield_outside(%x: f32) {
  // expected-error @+1 {{'attn.yield' op expects parent op to be one of 'attn.attention, attn.attention_bwd, attn.map'}}
  attn.yield %x : f32
}

// -----

// No KV heads: once a division by zero (hq % hk) in the verifier.
func.func @zero_kv_heads(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x0x?x128xbf16>, %v: tensor<?x0x?x128xbf16>) {
  // expected-error @+1 {{expected at least one query head and one key/value head, got 8 and 0}}
  %o = attn.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x0x?x128xbf16>, tensor<?x0x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @zero_heads(%q: tensor<?x0x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected at least one query head and one key/value head, got 0 and 8}}
  %o = attn.attention %q, %k, %v : tensor<?x0x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x0x?x128xbf16>
  return
}

// -----

func.func @sinks_per_kv_head(%q: tensor<?x4x?x64xbf16>, %kv: tensor<?x2x?x64xbf16>, %s: tensor<2xf32>) -> tensor<?x4x?x64xbf16> {
  // expected-error @+1 {{expected the sinks type 'tensor<4xf32>' (one f32 logit per query head), got 'tensor<2xf32>'}}
  %o = attn.attention %q, %kv, %kv sinks(%s : tensor<2xf32>) : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x4x?x64xbf16>
  return %o : tensor<?x4x?x64xbf16>
}

// -----

func.func @sinks_bf16(%q: tensor<?x4x?x64xbf16>, %kv: tensor<?x2x?x64xbf16>, %s: tensor<4xbf16>) -> tensor<?x4x?x64xbf16> {
  // expected-error @+1 {{expected the sinks type 'tensor<4xf32>'}}
  %o = attn.attention %q, %kv, %kv sinks(%s : tensor<4xbf16>) : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x4x?x64xbf16>
  return %o : tensor<?x4x?x64xbf16>
}

// -----

func.func @varlen_one_cu(%q: tensor<?x8x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{expected both cu_seqlens_q and cu_seqlens_k for a varlen attention, got only one}}
  %o = "attn.attention"(%q, %k, %v, %cu) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 0, 0, 0>}> ({}, {}) : (tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?xi32>) -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @varlen_rank4(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>) {
  // expected-error @+1 {{expected query to have rank 3 ([total, heads, head_dim], packed sequences of a varlen batch), got rank 4}}
  %o = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<?xi32>, tensor<?xi32>) : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @varlen_i64(%q: tensor<?x8x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %cuq: tensor<?xi64>, %cuk: tensor<?xi32>) {
  // expected-error @+1 {{expected cu_seqlens_q to be a 1-D i32 tensor (B + 1 sequence starts), got 'tensor<?xi64>'}}
  %o = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<?xi64>, tensor<?xi32>) : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16> -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @varlen_sizes(%q: tensor<?x8x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %cuq: tensor<5xi32>, %cuk: tensor<4xi32>) {
  // expected-error @+1 {{expected cu_seqlens_q and cu_seqlens_k of one size (B + 1), got 5 and 4}}
  %o = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<5xi32>, tensor<4xi32>) : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16> -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @varlen_empty_cu(%q: tensor<?x8x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %cuq: tensor<0xi32>, %cuk: tensor<0xi32>) {
  // expected-error @+1 {{expected cu_seqlens_q to hold at least one entry (B + 1), got 'tensor<0xi32>'}}
  %o = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<0xi32>, tensor<0xi32>) : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16> -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @varlen_lse(%q: tensor<?x8x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>) {
  // expected-error @+1 {{expected the lse type 'tensor<8x?xf32>' ([heads, total] in f32), got 'tensor<?x8xf32>'}}
  %o, %lse = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<?xi32>, tensor<?xi32>) : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16> -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return
}

// -----

func.func @varlen_heads(%q: tensor<?x8x128xbf16>, %k: tensor<?x3x128xbf16>, %v: tensor<?x3x128xbf16>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>) {
  // expected-error @+1 {{query heads (8) must be a multiple of key/value heads (3) for grouped-query attention}}
  %o = attn.attention %q, %k, %v varlen(%cuq, %cuk : tensor<?xi32>, tensor<?xi32>) : tensor<?x8x128xbf16>, tensor<?x3x128xbf16>, tensor<?x3x128xbf16> -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @packed_without_varlen(%q: tensor<?x8x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>) {
  // expected-error @+1 {{expected query to have rank 4 ([batch, heads, seq, head_dim]), got rank 3}}
  %o = attn.attention %q, %k, %v : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16> -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @capture_args(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %c: tensor<?xf32>) {
  // expected-error @+1 {{expected the mask region to take (index, index, index, index): the batch, head, query and key indices, then the captured tensors in the order of the op's captures}}
  %o = attn.attention %q, %k, %v captures(%c : tensor<?xf32>) : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %t = arith.cmpi ule, %j, %i : index
    attn.yield %t : i1
  }
  return
}

// -----

func.func @capture_type(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %c: tensor<?xf64>) {
  // expected-error @+1 {{captured tensor #0 has type 'tensor<?xf64>'; expected rank 1 to 4 and element type f32, f16, bf16, i32, i64 or i8}}
  %o = attn.attention %q, %k, %v captures(%c : tensor<?xf64>) : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %x: tensor<?xf64>):
    %t = arith.cmpi ule, %j, %i : index
    attn.yield %t : i1
  }
  return
}

// -----

func.func @capture_rank(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %c: tensor<f32>) {
  // expected-error @+1 {{captured tensor #0 has type 'tensor<f32>'; expected rank 1 to 4}}
  %o = attn.attention %q, %k, %v captures(%c : tensor<f32>) : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %x: tensor<f32>):
    %t = arith.cmpi ule, %j, %i : index
    attn.yield %t : i1
  }
  return
}

// -----

func.func @capture_unread(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %c: tensor<?xf32>) {
  // expected-error @+1 {{takes captured tensors but has no score or mask region to read them}}
  %o = attn.attention %q, %k, %v captures(%c : tensor<?xf32>) : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @region_tensor_constant(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %c: tensor<?xi32>) {
  %o = attn.attention %q, %k, %v captures(%c : tensor<?xi32>) : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %x: tensor<?xi32>):
    // expected-error @+1 {{'arith.constant' op in the mask region must compute scalars (one element at a time)}}
    %cst = arith.constant dense<[1, 2]> : tensor<2xi32>
    %e = tensor.extract %cst[%i] : tensor<2xi32>
    %t = arith.cmpi ule, %j, %i : index
    attn.yield %t : i1
  }
  return
}

// -----

func.func @capture_static(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %c: tensor<8xf32>) {
  // expected-error @+1 {{captured tensor #0 has type 'tensor<8xf32>'; its dims must be dynamic (?): the kernel takes every size at launch}}
  %o = attn.attention %q, %k, %v captures(%c : tensor<8xf32>) : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %x: tensor<8xf32>):
    %t = arith.cmpi ule, %j, %i : index
    attn.yield %t : i1
  }
  return
}

// -----

func.func @nine_captures(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %c: tensor<?xf32>) {
  // expected-error @+1 {{takes 9 captured tensors; at most 8 are supported}}
  %o = attn.attention %q, %k, %v captures(%c, %c, %c, %c, %c, %c, %c, %c, %c : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %x0: tensor<?xf32>, %x1: tensor<?xf32>, %x2: tensor<?xf32>, %x3: tensor<?xf32>, %x4: tensor<?xf32>, %x5: tensor<?xf32>, %x6: tensor<?xf32>, %x7: tensor<?xf32>, %x8: tensor<?xf32>):
    %t = arith.cmpi ule, %j, %i : index
    attn.yield %t : i1
  }
  return
}

// -----

func.func @kv_bounds_type(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %r: tensor<?x?x2xi64>) {
  // expected-error @+1 {{expected kv_bounds of type [batch, seq_q, 2] i32 (each query row's first and end key), got 'tensor<?x?x2xi64>'}}
  %o = attn.attention %q, %k, %v kv_bounds(%r : tensor<?x?x2xi64>) : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @kv_bounds_rows(%q: tensor<2x8x100x128xbf16>, %k: tensor<2x8x?x128xbf16>, %v: tensor<2x8x?x128xbf16>, %r: tensor<2x99x2xi32>) {
  // expected-error @+1 {{expected kv_bounds of type [batch, seq_q, 2] i32}}
  %o = attn.attention %q, %k, %v kv_bounds(%r : tensor<2x99x2xi32>) : tensor<2x8x100x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16> -> tensor<2x8x100x128xbf16>
  return
}

// -----

func.func @kv_bounds_varlen(%q: tensor<?x8x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %cu: tensor<?xi32>, %r: tensor<?x?x2xi32>) {
  // expected-error @+1 {{kv_bounds are not supported with varlen}}
  %o = attn.attention %q, %k, %v varlen(%cu, %cu : tensor<?xi32>, tensor<?xi32>) kv_bounds(%r : tensor<?x?x2xi32>) : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16> -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @paged_with_cu_k(%q: tensor<?x8x128xbf16>, %kc: tensor<?x2x16x128xbf16>, %vc: tensor<?x2x16x128xbf16>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>, %t: tensor<?x?xi32>, %l: tensor<?xi32>) {
  // expected-error @+1 {{expected a paged attention to take varlen(cu_seqlens_q) alone (the key lengths are kv_lens)}}
  %o = attn.attention %q, %kc, %vc varlen(%cuq, %cuk : tensor<?xi32>, tensor<?xi32>) paged(%t, %l : tensor<?x?xi32>, tensor<?xi32>) : tensor<?x8x128xbf16>, tensor<?x2x16x128xbf16>, tensor<?x2x16x128xbf16> -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @paged_rank3_cache(%q: tensor<?x8x128xbf16>, %k: tensor<?x2x128xbf16>, %v: tensor<?x2x128xbf16>, %cuq: tensor<?xi32>, %t: tensor<?x?xi32>, %l: tensor<?xi32>) {
  // expected-error @+1 {{expected key to have rank 4 ([pages, heads, page_size, head_dim], a paged cache), got rank 3}}
  %o = attn.attention %q, %k, %v varlen(%cuq : tensor<?xi32>) paged(%t, %l : tensor<?x?xi32>, tensor<?xi32>) : tensor<?x8x128xbf16>, tensor<?x2x128xbf16>, tensor<?x2x128xbf16> -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @paged_dynamic_page(%q: tensor<?x8x128xbf16>, %kc: tensor<?x2x?x128xbf16>, %vc: tensor<?x2x?x128xbf16>, %cuq: tensor<?xi32>, %t: tensor<?x?xi32>, %l: tensor<?xi32>) {
  // expected-error @+1 {{expected key to have a static page size (dim 2)}}
  %o = attn.attention %q, %kc, %vc varlen(%cuq : tensor<?xi32>) paged(%t, %l : tensor<?x?xi32>, tensor<?xi32>) : tensor<?x8x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @paged_table_rank(%q: tensor<?x8x128xbf16>, %kc: tensor<?x2x16x128xbf16>, %vc: tensor<?x2x16x128xbf16>, %cuq: tensor<?xi32>, %t: tensor<?xi32>, %l: tensor<?xi32>) {
  // expected-error @+1 {{expected the block table to be a 2-D i32 tensor ([B, max_blocks] page indices)}}
  %o = attn.attention %q, %kc, %vc varlen(%cuq : tensor<?xi32>) paged(%t, %l : tensor<?xi32>, tensor<?xi32>) : tensor<?x8x128xbf16>, tensor<?x2x16x128xbf16>, tensor<?x2x16x128xbf16> -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @paged_batch(%q: tensor<?x8x128xbf16>, %kc: tensor<?x2x16x128xbf16>, %vc: tensor<?x2x16x128xbf16>, %cuq: tensor<4xi32>, %t: tensor<3x?xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{expected the block table, kv_lens and cu_seqlens_q to describe one batch ([B, max_blocks], [B], [B + 1])}}
  %o = attn.attention %q, %kc, %vc varlen(%cuq : tensor<4xi32>) paged(%t, %l : tensor<3x?xi32>, tensor<2xi32>) : tensor<?x8x128xbf16>, tensor<?x2x16x128xbf16>, tensor<?x2x16x128xbf16> -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @paged_table_without_lens(%q: tensor<?x8x128xbf16>, %kc: tensor<?x2x16x128xbf16>, %vc: tensor<?x2x16x128xbf16>, %cuq: tensor<?xi32>, %t: tensor<?x?xi32>) {
  // expected-error @+1 {{expected both block_table and kv_lens for a paged attention, got only one}}
  %o = "attn.attention"(%q, %kc, %vc, %cuq, %t) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 1, 0, 0>}> ({}, {}) : (tensor<?x8x128xbf16>, tensor<?x2x16x128xbf16>, tensor<?x2x16x128xbf16>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x128xbf16>
  return
}

// -----

func.func @paged_table_rows(%q: tensor<?x8x128xbf16>, %kc: tensor<?x2x16x128xbf16>, %vc: tensor<?x2x16x128xbf16>, %cuq: tensor<4xi32>, %t: tensor<5x?xi32>, %l: tensor<?xi32>) {
  // expected-error @+1 {{expected the block table, kv_lens and cu_seqlens_q to describe one batch}}
  %o = attn.attention %q, %kc, %vc varlen(%cuq : tensor<4xi32>) paged(%t, %l : tensor<5x?xi32>, tensor<?xi32>) : tensor<?x8x128xbf16>, tensor<?x2x16x128xbf16>, tensor<?x2x16x128xbf16> -> tensor<?x8x128xbf16>
  return
}
