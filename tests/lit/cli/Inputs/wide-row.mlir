// A row of 131072 elements: past the row kernels' 65536 (each thread's share
// of a row is unrolled; 10^9 elements once compiled for minutes).
func.func @wide(%x: tensor<?x262144xbf16>) -> tensor<?x131072xbf16> {
  %s = attn.silu_mul %x : tensor<?x262144xbf16> -> tensor<?x131072xbf16>
  return %s : tensor<?x131072xbf16>
}
