// RUN: attnc-opt %s -split-input-file -verify-diagnostics

func.func @f32_inputs(%q: tensor<?x8x?x128xf32>, %k: tensor<?x8x?x128xf32>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{expected query element type bf16 or f16, got 'f32'}}
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %k, %q, %q, %lse
      : tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>, tensor<?x8x?xf32>
      -> tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>
  return
}

// -----

func.func @head_dim(%q: tensor<?x8x?x80xbf16>, %k: tensor<?x8x?x80xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{head dim 80 is not supported; expected one of 64, 96, 128, 192, 256}}
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %k, %q, %q, %lse
      : tensor<?x8x?x80xbf16>, tensor<?x8x?x80xbf16>, tensor<?x8x?x80xbf16>, tensor<?x8x?x80xbf16>, tensor<?x8x?x80xbf16>, tensor<?x8x?xf32>
      -> tensor<?x8x?x80xbf16>, tensor<?x8x?x80xbf16>, tensor<?x8x?x80xbf16>
  return
}

// -----

func.func @gqa_heads(%q: tensor<?x6x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %lse: tensor<?x6x?xf32>) {
  // expected-error @+1 {{query heads (6) must be a multiple of key/value heads (4) for grouped-query attention}}
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %k, %q, %q, %lse
      : tensor<?x6x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x6x?x64xbf16>, tensor<?x6x?x64xbf16>, tensor<?x6x?xf32>
      -> tensor<?x6x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>
  return
}

// -----

func.func @grad_output_type(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %do: tensor<?x8x?x64xf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{expected the output gradient type to equal the query type 'tensor<?x8x?x64xbf16>', got 'tensor<?x8x?x64xf16>'}}
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %k, %q, %do, %lse
      : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
      -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @grad_key_heads(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // dK has K's heads (summed over each group's query heads), not Q's.
  // expected-error @+1 {{expected the key gradient type to equal the key type 'tensor<?x2x?x64xbf16>', got 'tensor<?x8x?x64xbf16>'}}
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %k, %q, %q, %lse
      : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
      -> tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @lse_type(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %lse: tensor<?x8x?xbf16>) {
  // expected-error @+1 {{expected the lse type 'tensor<?x8x?xf32>' ([batch, heads, seq] in f32), got 'tensor<?x8x?xbf16>'}}
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %k, %q, %q, %lse
      : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xbf16>
      -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @causal_right(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{causal attention sees no key right of the diagonal; use window right = 0 or drop causal, got right = 4}}
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %k, %q, %q, %lse {causal, window = #attn.window<16, 4>}
      : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
      -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @softcap(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{expected softcap to be a positive finite number, got -1}}
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %k, %q, %q, %lse {softcap = -1.0 : f32}
      : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
      -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return
}

// -----

func.func @mask_region(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %lse: tensor<?x8x?xf32>) {
  // expected-error @+1 {{score and mask regions are not yet supported in the backward (their derivative is not derived yet)}}
  %dq, %dk, %dv = attn.attention_bwd %q, %k, %k, %q, %q, %lse
      : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
      -> tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %keep = arith.cmpi ule, %j, %i : index
    attn.yield %keep : i1
  }
  return
}
