// RUN: attnc-opt %s -split-input-file -verify-diagnostics

func.func @dynamic_page(%q: tensor<?x32x?x128xbf16>, %kc: tensor<?x8x?x128xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{expected the key cache to be [pages, kv_heads, page_size, head_dim] with static heads, page size and head dim, got 'tensor<?x8x?x128xbf16>'}}
  %o = attn.decode %q, %kc, %kc, %table, %lens : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x32x?x128xbf16>
  return
}

// -----

func.func @gqa(%q: tensor<?x6x?x128xbf16>, %kc: tensor<?x4x16x128xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{query heads (6) must be a multiple of key/value heads (4) for grouped-query attention}}
  %o = attn.decode %q, %kc, %kc, %table, %lens : tensor<?x6x?x128xbf16>, tensor<?x4x16x128xbf16>, tensor<?x4x16x128xbf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x6x?x128xbf16>
  return
}

// -----

func.func @table_type(%q: tensor<?x8x?x128xbf16>, %kc: tensor<?x8x16x128xbf16>, %table: tensor<?x?xi64>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{expected the block table to be [batch, max_blocks] i32, got 'tensor<?x?xi64>'}}
  %o = attn.decode %q, %kc, %kc, %table, %lens : tensor<?x8x?x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x?xi64>, tensor<?xi32> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @lens_type(%q: tensor<?x8x?x128xbf16>, %kc: tensor<?x8x16x128xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?x1xi32>) {
  // expected-error @+1 {{expected kv_lens to be [batch] i32, got 'tensor<?x1xi32>'}}
  %o = attn.decode %q, %kc, %kc, %table, %lens : tensor<?x8x?x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x?xi32>, tensor<?x1xi32> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @batch(%q: tensor<2x8x1x128xbf16>, %kc: tensor<?x8x16x128xbf16>, %table: tensor<3x?xi32>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{expected query, block table and kv_lens batch sizes to match, got 2, 3 and ?}}
  %o = attn.decode %q, %kc, %kc, %table, %lens : tensor<2x8x1x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>, tensor<3x?xi32>, tensor<?xi32> -> tensor<2x8x1x128xbf16>
  return
}

// -----

func.func @cache_dtype(%q: tensor<?x8x?x128xbf16>, %kc: tensor<?x8x16x128xf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{expected the key cache element type to match the query's 'bf16', got 'f16'}}
  %o = attn.decode %q, %kc, %kc, %table, %lens : tensor<?x8x?x128xbf16>, tensor<?x8x16x128xf16>, tensor<?x8x16x128xf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @value_shape(%q: tensor<?x8x?x128xbf16>, %kc: tensor<?x8x16x128xbf16>, %vc: tensor<?x8x32x128xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{expected key and value caches of one shape}}
  %o = attn.decode %q, %kc, %vc, %table, %lens : tensor<?x8x?x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x32x128xbf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @lse(%q: tensor<?x8x?x128xbf16>, %kc: tensor<?x8x16x128xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{expected the lse type 'tensor<?x8x?xf32>' ([batch, heads, seq] in f32), got 'tensor<?x8xf32>'}}
  %o, %l = attn.decode %q, %kc, %kc, %table, %lens : tensor<?x8x?x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x8x?x128xbf16>, tensor<?x8xf32>
  return
}

// -----

func.func @softcap(%q: tensor<?x8x?x128xbf16>, %kc: tensor<?x8x16x128xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{expected softcap to be a positive finite number, got -1}}
  %o = attn.decode %q, %kc, %kc, %table, %lens {softcap = -1.0 : f32} : tensor<?x8x?x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @merge_lse(%oa: tensor<?x8x?x64xbf16>, %la: tensor<?x8xf32>) {
  // expected-error @+1 {{expected log-sum-exps of type 'tensor<?x8x?xf32>' ([batch, heads, seq] in f32), got 'tensor<?x8xf32>'}}
  %o = attn.lse_merge %oa, %la, %oa, %la : tensor<?x8x?x64xbf16>, tensor<?x8xf32> -> tensor<?x8x?x64xbf16>
  return
}

// -----

func.func @merge_dtype(%oa: tensor<?x8x?x64xf32>, %la: tensor<?x8x?xf32>) {
  // expected-error @+1 {{expected bf16 or f16 outputs [batch, heads, seq, head_dim], got 'tensor<?x8x?x64xf32>'}}
  %o = attn.lse_merge %oa, %la, %oa, %la : tensor<?x8x?x64xf32>, tensor<?x8x?xf32> -> tensor<?x8x?x64xf32>
  return
}

// -----

// No KV heads: once a division by zero (hq % hk) in the verifier.
func.func @zero_kv_heads(%q: tensor<?x8x?x128xbf16>, %kc: tensor<?x0x16x128xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{expected at least one query head and one key/value head, got 8 and 0}}
  %o = attn.decode %q, %kc, %kc, %table, %lens : tensor<?x8x?x128xbf16>, tensor<?x0x16x128xbf16>, tensor<?x0x16x128xbf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x8x?x128xbf16>
  return
}

// -----

// No query heads: once a crash in the GPU mapping.
func.func @zero_heads(%q: tensor<?x0x?x128xbf16>, %kc: tensor<?x4x16x128xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{expected at least one query head and one key/value head, got 0 and 4}}
  %o = attn.decode %q, %kc, %kc, %table, %lens : tensor<?x0x?x128xbf16>, tensor<?x4x16x128xbf16>, tensor<?x4x16x128xbf16>, tensor<?x?xi32>, tensor<?xi32> -> tensor<?x0x?x128xbf16>
  return
}

// -----

func.func @merge_zero_heads(%oa: tensor<?x0x?x64xbf16>, %la: tensor<?x0x?xf32>) {
  // expected-error @+1 {{expected static heads (at least one) and head dim, got 'tensor<?x0x?x64xbf16>'}}
  %o = attn.lse_merge %oa, %la, %oa, %la : tensor<?x0x?x64xbf16>, tensor<?x0x?xf32> -> tensor<?x0x?x64xbf16>
  return
}
