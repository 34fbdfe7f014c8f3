func.func @window_softcap_scale_fp16(%q: tensor<2x16x100x64xf16>, %k: tensor<2x16x77x64xf16>, %v: tensor<2x16x77x64xf16>)
    -> tensor<2x16x100x64xf16> {
  %o = attn.attention %q, %k, %v {scale = 0.125 : f32, softcap = 30.0 : f32, window = #attn.window<4096, 0>}
      : tensor<2x16x100x64xf16>, tensor<2x16x77x64xf16>, tensor<2x16x77x64xf16> -> tensor<2x16x100x64xf16>
  return %o : tensor<2x16x100x64xf16>
}
