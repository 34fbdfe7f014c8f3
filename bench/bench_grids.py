"""Benchmark grids and FLOP/byte formulas for bench/compare.py.

Pure Python: no torch, no numpy. Everything here is checked offline by
bench/test_compare_offline.py.

Conventions (the same as shared/PEERS.md):
  * prefill: FLOPs = 4*B*H*S^2*D, halved for causal masks (the two matmuls
    QK^T and PV at 2*S^2*D each per (batch, head); softmax not counted).
    B*S = 16384 tokens, H = 2048 // D.
  * decode: TB/s of the K+V bytes read, 2*B*L*Hkv*D*2 bytes (bf16), counted
    once (minimal traffic; the Q read and O write are negligible and not counted).
  * elementwise: TB/s of minimal traffic (every input read once, every output
    written once), bf16.
"""

from dataclasses import dataclass

BF16_BYTES = 2
PREFILL_TOKENS = 16384  # B * S
PREFILL_HIDDEN = 2048  # H * D
RELATIVE_L2_TOL = 2e-2  # bf16 outputs vs float32 reference


def size_label(n):
    """1024 -> '1k', 131072 -> '128k', 100 -> '100'."""
    if n % 1024 == 0:
        return f"{n // 1024}k"
    return str(n)


def prefill_flops(B, H, S, D, causal):
    """4*B*H*S^2*D, halved for causal (PEERS.md's convention)."""
    flops = 4 * B * H * S * S * D
    return flops // 2 if causal else flops


def decode_kv_bytes(B, L, Hkv, D, elem_bytes=BF16_BYTES):
    """Bytes of K and V read once: 2 (K and V) * B * L * Hkv * D * elem_bytes."""
    return 2 * B * L * Hkv * D * elem_bytes


def silu_and_mul_bytes(T, I, elem_bytes=BF16_BYTES):
    """Read x (T x 2I) once, write out (T x I) once."""
    return T * 2 * I * elem_bytes + T * I * elem_bytes


def add_rms_norm_bytes(T, N, elem_bytes=BF16_BYTES):
    """Read x, r (T x N) and w (N); write y and residual (T x N)."""
    return (2 * T * N + N + 2 * T * N) * elem_bytes


def silu_and_mul_unfused_bytes(T, I, elem_bytes=BF16_BYTES):
    """Two kernels: silu(x[:, :I]) -> tmp (read I, write I), then
    tmp * x[:, I:] -> out (read 2I, write I): the seed's 1.17 GB at
    8192 x 14336 against 0.70 GB fused."""
    return 5 * T * I * elem_bytes


def add_rms_norm_unfused_bytes(T, N, elem_bytes=BF16_BYTES):
    """x + r -> residual (read 2, write 1), then rms_norm reads the residual
    twice (sum of squares, scaling) and w, and writes y."""
    return (6 * T * N + N) * elem_bytes


def tflops(flops, ms):
    return flops / (ms * 1e-3) / 1e12


def tbps(nbytes, ms):
    return nbytes / (ms * 1e-3) / 1e12


def rotation_sets(bytes_per_set, l2_bytes, factor=4, max_sets=8):
    """How many input sets to rotate among so that the sets together exceed
    factor * L2 (1 when one set already does)."""
    if bytes_per_set <= 0:
        raise ValueError("bytes_per_set must be positive")
    need = -(-factor * l2_bytes // bytes_per_set)  # ceil
    return max(1, min(max_sets, need))


# --------------------------------------------------------------------------
# Prefill forward grid
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class PrefillProblem:
    D: int
    S: int
    causal: bool

    @property
    def B(self):
        return PREFILL_TOKENS // self.S

    @property
    def H(self):
        return PREFILL_HIDDEN // self.D

    @property
    def flops(self):
        return prefill_flops(self.B, self.H, self.S, self.D, self.causal)

    @property
    def io_bytes(self):
        """Q, K, V read and O written once (used only for L2 rotation)."""
        return 4 * self.B * self.S * self.H * self.D * BF16_BYTES

    @property
    def key(self):
        return (self.D, self.S, self.causal)

    @property
    def label(self):
        return f"D={self.D} S={size_label(self.S)} {'causal' if self.causal else 'non-causal'}"


PREFILL_GRID = [
    PrefillProblem(64, 4096, False),
    PrefillProblem(64, 16384, True),
    PrefillProblem(128, 1024, False),
    PrefillProblem(128, 1024, True),
    PrefillProblem(128, 4096, False),
    PrefillProblem(128, 4096, True),
    PrefillProblem(128, 16384, False),
    PrefillProblem(128, 16384, True),
    PrefillProblem(256, 16384, False),
]

PREFILL_PEERS = ["FA2", "cuDNN", "flex"]

# PEERS.md (H200, 2026-11-29), TFLOP/s, keyed by (D, S, causal): (FA2, cuDNN, flex)
PEERS_PREFILL = {
    (64, 4096, False): (297, 467, 231),
    (64, 16384, True): (284, 438, 272),
    (128, 1024, False): (283, 450, 207),
    (128, 1024, True): (195, 294, 146),
    (128, 4096, False): (336, 611, 349),
    (128, 4096, True): (286, 474, 267),
    (128, 16384, False): (343, 651, 371),
    (128, 16384, True): (314, 609, 342),
    (256, 16384, False): (318, 712, 299),
}


# --------------------------------------------------------------------------
# Decode grid: one query token, 32 q heads / 8 KV heads, D = 128
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeProblem:
    B: int
    L: int
    Hq: int = 32
    Hkv: int = 8
    D: int = 128

    @property
    def kv_bytes(self):
        return decode_kv_bytes(self.B, self.L, self.Hkv, self.D)

    @property
    def io_bytes(self):
        return self.kv_bytes + 2 * self.B * self.Hq * self.D * BF16_BYTES

    @property
    def key(self):
        return (self.B, self.L)

    @property
    def label(self):
        return f"B={self.B} L={size_label(self.L)}"


DECODE_GRID = [
    DecodeProblem(1, 131072),
    DecodeProblem(16, 32768),
    DecodeProblem(64, 4096),
    DecodeProblem(64, 16384),
]

DECODE_PEERS = ["FA2", "cuDNN", "flex"]

# PEERS.md, TB/s of K+V read, keyed by (B, L): (FA2, cuDNN)
PEERS_DECODE = {
    (1, 131072): (2.59, 2.95),
    (16, 32768): (3.80, 3.91),
    (64, 4096): (2.28, 3.50),
    (64, 16384): (2.57, 4.13),
}


# --------------------------------------------------------------------------
# Fused elementwise rows
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class ElementwiseProblem:
    op: str  # "silu_and_mul" or "add_rms_norm"
    T: int
    N: int  # silu_and_mul: intermediate size I (x is T x 2I); add_rms_norm: hidden N
    eps: float = 1e-6

    @property
    def bytes(self):
        if self.op == "silu_and_mul":
            return silu_and_mul_bytes(self.T, self.N)
        if self.op == "add_rms_norm":
            return add_rms_norm_bytes(self.T, self.N)
        raise ValueError(f"unknown elementwise op {self.op!r}")

    @property
    def unfused_bytes(self):
        if self.op == "silu_and_mul":
            return silu_and_mul_unfused_bytes(self.T, self.N)
        return add_rms_norm_unfused_bytes(self.T, self.N)

    @property
    def io_bytes(self):
        return self.bytes

    @property
    def key(self):
        return (self.op, self.T, self.N)

    @property
    def label(self):
        if self.op == "silu_and_mul":
            return f"silu_and_mul {self.T}x{2 * self.N} -> {self.T}x{self.N}"
        return f"add+rms_norm {self.T}x{self.N}"


ELEMENTWISE_GRID = [
    ElementwiseProblem("silu_and_mul", 8192, 14336),
    ElementwiseProblem("add_rms_norm", 8192, 4096),
]

ELEMENTWISE_PEERS = ["eager", "compile"]

# PEERS.md, TB/s of minimal traffic: {peer: value}
PEERS_ELEMENTWISE = {
    ("silu_and_mul", 8192, 14336): {"compile": 3.06},
    ("add_rms_norm", 8192, 4096): {"eager": 2.55, "compile": 1.90},
}

GRID_NAMES = ["prefill", "decode", "elementwise"]

# PEERS.md ceilings on the same card
PEERS_CEILINGS = {"copy_tbs": 4.22, "matmul_tflops": 752}


def parse_grids(spec):
    """'prefill,decode' -> ['prefill', 'decode'] in canonical order; raises on unknown names."""
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise ValueError("no grid named")
    bad = [n for n in names if n not in GRID_NAMES]
    if bad:
        raise ValueError(f"unknown grid(s) {bad}; choose from {GRID_NAMES}")
    return [n for n in GRID_NAMES if n in names]
