// RUN: attnc-opt %s -split-input-file -verify-diagnostics

func.func @slot_type(%k: tensor<?x8x128xbf16>, %slots: tensor<?xi32>, %kc: tensor<?x8x16x128xbf16>) {
  // expected-error @+1 {{expected slot_mapping to be [tokens] i64, got 'tensor<?xi32>'}}
  %a, %b = attn.kv_append %k, %k, %slots, %kc, %kc : tensor<?x8x128xbf16>, tensor<?xi32>, tensor<?x8x16x128xbf16> -> tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
  return
}

// -----

func.func @heads(%k: tensor<?x4x128xbf16>, %slots: tensor<?xi64>, %kc: tensor<?x8x16x128xbf16>) {
  // expected-error @+1 {{expected rows of 8 heads x 128 (the cache's), got 'tensor<?x4x128xbf16>'}}
  %a, %b = attn.kv_append %k, %k, %slots, %kc, %kc : tensor<?x4x128xbf16>, tensor<?xi64>, tensor<?x8x16x128xbf16> -> tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
  return
}

// -----

func.func @dynamic_page(%k: tensor<?x8x128xbf16>, %slots: tensor<?xi64>, %kc: tensor<?x8x?x128xbf16>) {
  // expected-error @+1 {{expected caches [pages, kv_heads, page_size, head_dim] with static heads, page size and head dim, got 'tensor<?x8x?x128xbf16>'}}
  %a, %b = attn.kv_append %k, %k, %slots, %kc, %kc : tensor<?x8x128xbf16>, tensor<?xi64>, tensor<?x8x?x128xbf16> -> tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>
  return
}

// -----

func.func @dtype(%k: tensor<?x8x128xf16>, %slots: tensor<?xi64>, %kc: tensor<?x8x16x128xbf16>) {
  // expected-error @+1 {{expected the cache element type to match the rows' 'f16', got 'bf16'}}
  %a, %b = attn.kv_append %k, %k, %slots, %kc, %kc : tensor<?x8x128xf16>, tensor<?xi64>, tensor<?x8x16x128xbf16> -> tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
  return
}

// -----

func.func @f32(%k: tensor<?x8x128xf32>, %slots: tensor<?xi64>, %kc: tensor<?x8x16x128xf32>) {
  // expected-error @+1 {{expected bf16 or f16 key and value rows [tokens, kv_heads, head_dim], got 'tensor<?x8x128xf32>'}}
  %a, %b = attn.kv_append %k, %k, %slots, %kc, %kc : tensor<?x8x128xf32>, tensor<?xi64>, tensor<?x8x16x128xf32> -> tensor<?x8x16x128xf32>, tensor<?x8x16x128xf32>
  return
}

// -----

func.func @head_dim(%k: tensor<?x8x12xbf16>, %slots: tensor<?xi64>, %kc: tensor<?x8x16x12xbf16>) {
  // expected-error @+1 {{expected a static head dim that is a multiple of 8 (rows are copied in 16-byte vectors), got 12}}
  %a, %b = attn.kv_append %k, %k, %slots, %kc, %kc : tensor<?x8x12xbf16>, tensor<?xi64>, tensor<?x8x16x12xbf16> -> tensor<?x8x16x12xbf16>, tensor<?x8x16x12xbf16>
  return
}

// -----

func.func @tokens(%k: tensor<4x8x128xbf16>, %slots: tensor<3xi64>, %kc: tensor<?x8x16x128xbf16>) {
  // expected-error @+1 {{expected one slot per token: 4 tokens, 3 slots}}
  %a, %b = attn.kv_append %k, %k, %slots, %kc, %kc : tensor<4x8x128xbf16>, tensor<3xi64>, tensor<?x8x16x128xbf16> -> tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>
  return
}

// -----

func.func @zero_heads(%k: tensor<?x0x128xbf16>, %slots: tensor<?xi64>, %kc: tensor<?x0x16x128xbf16>) {
  // expected-error @+1 {{expected a positive page size and at least one KV head, got 16 and 0}}
  %a, %b = attn.kv_append %k, %k, %slots, %kc, %kc : tensor<?x0x128xbf16>, tensor<?xi64>, tensor<?x0x16x128xbf16> -> tensor<?x0x16x128xbf16>, tensor<?x0x16x128xbf16>
  return
}
