// RUN: attnc-opt %s -split-input-file -verify-diagnostics

func.func @positions(%pos: tensor<?xf32>, %q: tensor<?x256xbf16>, %k: tensor<?x128xbf16>, %c: tensor<?x64xbf16>) {
  // expected-error @+1 {{expected positions to be a 1-D tensor of i32 or i64 (one per token), got 'tensor<?xf32>'}}
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 128 : i64, rotary_dim = 64 : i64}
      : tensor<?xf32>, tensor<?x256xbf16>, tensor<?x128xbf16>, tensor<?x64xbf16> -> tensor<?x256xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @heads(%pos: tensor<?xi64>, %q: tensor<?x200xbf16>, %k: tensor<?x128xbf16>, %c: tensor<?x64xbf16>) {
  // expected-error @+1 {{expected query and key rows (200, 128) to be whole heads of 128 columns}}
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 128 : i64, rotary_dim = 64 : i64}
      : tensor<?xi64>, tensor<?x200xbf16>, tensor<?x128xbf16>, tensor<?x64xbf16> -> tensor<?x200xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @rotary_too_wide(%pos: tensor<?xi64>, %q: tensor<?x128xbf16>, %k: tensor<?x64xbf16>, %c: tensor<?x128xbf16>) {
  // expected-error @+1 {{expected rotary_dim in (0, head_size = 64] and a multiple of 16 (NeoX: each half is whole 16-byte vectors), got 128}}
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 128 : i64}
      : tensor<?xi64>, tensor<?x128xbf16>, tensor<?x64xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>, tensor<?x64xbf16>
  return
}

// -----

func.func @rotary_odd(%pos: tensor<?xi64>, %q: tensor<?x128xbf16>, %k: tensor<?x64xbf16>, %c: tensor<?x12xbf16>) {
  // expected-error @+1 {{expected rotary_dim in (0, head_size = 64] and a multiple of 8 (GPT-J: whole 16-byte vectors), got 12}}
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 12 : i64, is_neox = false}
      : tensor<?xi64>, tensor<?x128xbf16>, tensor<?x64xbf16>, tensor<?x12xbf16> -> tensor<?x128xbf16>, tensor<?x64xbf16>
  return
}

// -----

func.func @cache(%pos: tensor<?xi64>, %q: tensor<?x128xbf16>, %k: tensor<?x64xbf16>, %c: tensor<?x64xbf16>) {
  // expected-error @+1 {{expected the cos/sin cache rows to hold rotary_dim = 32 values (cos then sin), got 64}}
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 32 : i64}
      : tensor<?xi64>, tensor<?x128xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x128xbf16>, tensor<?x64xbf16>
  return
}

// -----

func.func @dtype(%pos: tensor<?xi64>, %q: tensor<?x128xbf16>, %k: tensor<?x64xf16>, %c: tensor<?x64xbf16>) {
  // expected-error @+1 {{expected query, key and the cos/sin cache to share one 16-bit element type (bf16 or f16), got 'bf16', 'f16', 'bf16'}}
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 64 : i64}
      : tensor<?xi64>, tensor<?x128xbf16>, tensor<?x64xf16>, tensor<?x64xbf16> -> tensor<?x128xbf16>, tensor<?x64xf16>
  return
}

// -----

func.func @tokens(%pos: tensor<8xi64>, %q: tensor<4x128xbf16>, %k: tensor<4x64xbf16>, %c: tensor<?x64xbf16>) {
  // expected-error @+1 {{expected one position and one query and key row per token, got 8, 4 and 4 rows}}
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 64 : i64}
      : tensor<8xi64>, tensor<4x128xbf16>, tensor<4x64xbf16>, tensor<?x64xbf16> -> tensor<4x128xbf16>, tensor<4x64xbf16>
  return
}

// -----

func.func @results(%pos: tensor<?xi64>, %q: tensor<?x128xbf16>, %k: tensor<?x64xbf16>, %c: tensor<?x64xbf16>) {
  // expected-error @+1 {{expected the results to have the query and key types 'tensor<?x128xbf16>', 'tensor<?x64xbf16>'}}
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 64 : i64}
      : tensor<?xi64>, tensor<?x128xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x64xbf16>, tensor<?x64xbf16>
  return
}
