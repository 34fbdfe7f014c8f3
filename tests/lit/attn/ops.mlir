// RUN: attnc-opt %s -split-input-file | FileCheck %s
// RUN: attnc-opt %s -split-input-file | attnc-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @gqa_causal_lse
// CHECK: %{{.*}}, %{{.*}} = attn.attention %arg0, %arg1, %arg2 {causal} : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
func.func @gqa_causal_lse(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>)
    -> (tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v {causal}
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>
      -> tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
  return %o, %lse : tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>
}

// -----

// CHECK-LABEL: func @window_softcap_scale_fp16
// CHECK: attn.attention %arg0, %arg1, %arg2 {scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32, window = #attn.window<4096, 0>}
// CHECK-SAME: -> tensor<2x16x100x64xf16>{{$}}
func.func @window_softcap_scale_fp16(%q: tensor<2x16x100x64xf16>, %k: tensor<2x16x77x64xf16>, %v: tensor<2x16x77x64xf16>)
    -> tensor<2x16x100x64xf16> {
  %o = attn.attention %q, %k, %v {scale = 0.125 : f32, softcap = 30.0 : f32, window = #attn.window<4096, 0>}
      : tensor<2x16x100x64xf16>, tensor<2x16x77x64xf16>, tensor<2x16x77x64xf16> -> tensor<2x16x100x64xf16>
  return %o : tensor<2x16x100x64xf16>
}

// -----

// MQA (one KV head), a FlexAttention score_mod (relative-position bias) and a
// mask_mod (document mask over 256-token documents).
// CHECK-LABEL: func @mqa_score_and_mask_mods
// CHECK: attn.attention
// CHECK: score {
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: arith.subi
// CHECK: attn.yield %{{.*}} : f32
// CHECK: } mask {
// CHECK: arith.cmpi eq
// CHECK: attn.yield %{{.*}} : i1
func.func @mqa_score_and_mask_mods(%q: tensor<1x8x?x256xbf16>, %k: tensor<1x1x?x256xbf16>, %v: tensor<1x1x?x256xbf16>)
    -> tensor<1x8x?x256xbf16> {
  %o = attn.attention %q, %k, %v
      : tensor<1x8x?x256xbf16>, tensor<1x1x?x256xbf16>, tensor<1x1x?x256xbf16> -> tensor<1x8x?x256xbf16>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.subi %i, %j : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %c = arith.constant -0.01 : f32
    %bias = arith.mulf %df, %c : f32
    %r = arith.addf %s, %bias : f32
    attn.yield %r : f32
  } mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c256 = arith.constant 256 : index
    %di = arith.divui %i, %c256 : index
    %dj = arith.divui %j, %c256 : index
    %same = arith.cmpi eq, %di, %dj : index
    attn.yield %same : i1
  }
  return %o : tensor<1x8x?x256xbf16>
}

// -----

// Varlen: packed [total, heads, head_dim] sequences with cu_seqlens, sinks
// and a mask region; the LSE is [heads, total_q].
// CHECK-LABEL: func.func @varlen
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} sinks(%{{.*}} : tensor<8xf32>) varlen(%{{.*}}, %{{.*}} : tensor<?xi32>, tensor<?xi32>) {causal}
// CHECK-SAME: -> tensor<?x8x128xbf16>, tensor<8x?xf32>
func.func @varlen(%q: tensor<?x8x128xbf16>, %k: tensor<?x2x128xbf16>, %v: tensor<?x2x128xbf16>,
                  %s: tensor<8xf32>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>)
    -> (tensor<?x8x128xbf16>, tensor<8x?xf32>) {
  %o, %lse = attn.attention %q, %k, %v sinks(%s : tensor<8xf32>) varlen(%cuq, %cuk : tensor<?xi32>, tensor<?xi32>) {causal}
      : tensor<?x8x128xbf16>, tensor<?x2x128xbf16>, tensor<?x2x128xbf16>
      -> tensor<?x8x128xbf16>, tensor<8x?xf32>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %keep = arith.cmpi ule, %j, %i : index
    attn.yield %keep : i1
  }
  return %o, %lse : tensor<?x8x128xbf16>, tensor<8x?xf32>
}

// Captured tensors: per-head ALiBi slopes and [B, S] document ids, read by
// both regions with tensor.extract after their indices.
// CHECK-LABEL: func @captured_tensors
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} captures(%{{.*}}, %{{.*}} : tensor<?xf32>, tensor<?x?xi32>) {causal}
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %[[SL:.*]]: tensor<?xf32>, %{{.*}}: tensor<?x?xi32>):
// CHECK: tensor.extract %[[SL]][%{{.*}}] : tensor<?xf32>
// CHECK: } mask {
// CHECK: ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: tensor<?xf32>, %[[DOC:.*]]: tensor<?x?xi32>):
// CHECK: tensor.extract %[[DOC]][%{{.*}}, %{{.*}}] : tensor<?x?xi32>
func.func @captured_tensors(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>,
                            %slopes: tensor<?xf32>, %doc: tensor<?x?xi32>) -> tensor<?x8x?x64xbf16> {
  %o = attn.attention %q, %k, %v captures(%slopes, %doc : tensor<?xf32>, tensor<?x?xi32>) {causal}
      : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
  score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %sl: tensor<?xf32>, %d: tensor<?x?xi32>):
    %m = tensor.extract %sl[%h] : tensor<?xf32>
    %dist = arith.subi %i, %j : index
    %di = arith.index_cast %dist : index to i64
    %df = arith.sitofp %di : i64 to f32
    %bias = arith.mulf %m, %df : f32
    %r = arith.subf %s, %bias : f32
    attn.yield %r : f32
  } mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %sl: tensor<?xf32>, %d: tensor<?x?xi32>):
    %di = tensor.extract %d[%b, %i] : tensor<?x?xi32>
    %dj = tensor.extract %d[%b, %j] : tensor<?x?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    attn.yield %same : i1
  }
  return %o : tensor<?x8x?x64xbf16>
}

// Key ranges per query row (kv_bounds) beside a mask region.
// CHECK-LABEL: func @key_ranges
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} kv_bounds(%{{.*}} : tensor<?x?x2xi32>) {causal}
func.func @key_ranges(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>,
                      %r: tensor<?x?x2xi32>) -> tensor<?x8x?x64xbf16> {
  %o = attn.attention %q, %k, %v kv_bounds(%r : tensor<?x?x2xi32>) {causal}
      : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16> -> tensor<?x8x?x64xbf16>
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c64 = arith.constant 64 : index
    %di = arith.divui %i, %c64 : index
    %dj = arith.divui %j, %c64 : index
    %same = arith.cmpi eq, %di, %dj : index
    attn.yield %same : i1
  }
  return %o : tensor<?x8x?x64xbf16>
}

// -----

// Paged prefill: varlen queries over a paged cache [pages, Hkv, page_size,
// D] through a block table and kv_lens (no cu_seqlens_k).
// CHECK-LABEL: func.func @paged
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} varlen(%{{.*}} : tensor<?xi32>) paged(%{{.*}}, %{{.*}} : tensor<?x?xi32>, tensor<?xi32>) {causal}
func.func @paged(%q: tensor<?x8x128xbf16>, %kc: tensor<?x2x16x128xbf16>, %vc: tensor<?x2x16x128xbf16>,
                 %cuq: tensor<?xi32>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>)
    -> tensor<?x8x128xbf16> {
  %o = attn.attention %q, %kc, %vc varlen(%cuq : tensor<?xi32>)
      paged(%table, %lens : tensor<?x?xi32>, tensor<?xi32>) {causal}
      : tensor<?x8x128xbf16>, tensor<?x2x16x128xbf16>, tensor<?x2x16x128xbf16>
      -> tensor<?x8x128xbf16>
  return %o : tensor<?x8x128xbf16>
}
