// RUN: attnc-opt %s -attnc-fuse-elementwise=threads-per-row=8 -verify-diagnostics

// NeoX: a thread owns both vectors of its pairs, so threads per row must
// divide the 4 vectors of each half of a 64-column rotary part.
func.func @rope(%pos: tensor<?xi64>, %q: tensor<?x64xbf16>, %k: tensor<?x64xbf16>, %c: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  // expected-error @+1 {{unsupported row schedule: 8 threads per row, 32 rows per program (threads per row must be a power of two dividing the 4 vectors of half the rotary part; at most 1024 threads)}}
  %q2, %k2 = attn.rope %pos, %q, %k, %c {head_size = 64 : i64, rotary_dim = 64 : i64}
      : tensor<?xi64>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x64xbf16>, tensor<?x64xbf16>
  return %q2, %k2 : tensor<?x64xbf16>, tensor<?x64xbf16>
}
