func.func @neox(%pos: tensor<?xi64>, %q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %c: tensor<?x128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>) {
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 128 : i64, rotary_dim = 128 : i64, is_neox = true}
      : tensor<?xi64>, tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x128xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
  return %q2, %k2 : tensor<?x4096xbf16>, tensor<?x1024xbf16>
}
