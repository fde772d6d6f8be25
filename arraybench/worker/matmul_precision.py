"""Which precision a float32 matmul really ran in (float32, TF32, bfloat16...), told from its
result: against the inputs rounded as each reduced precision would, or by the error's size."""

from __future__ import annotations

import math

import numpy as np

from .accuracy import REDUCED_PRECISION_EPS, Check

__all__ = ["MATMUL_CHECK", "round_mantissa", "which_precision"]

#: The matmul workload's check: what a float32 result is judged by.
MATMUL_CHECK = Check.normwise(growth=lambda n: n ** 0.5, ulps=16, matmul=True)


def round_mantissa(a: np.ndarray, bits: int, nearest: bool = True) -> np.ndarray:
    """float32 values with only ``bits`` explicit mantissa bits (TF32: 10, bfloat16: 7), rounded to
    nearest even or truncated: what a GPU's matrix units read from float32 inputs."""
    drop = 23 - bits
    raw = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    if nearest:
        raw = raw + ((1 << (drop - 1)) - 1) + ((raw >> drop) & 1)
    return (raw & (0xFFFFFFFF ^ ((1 << drop) - 1))).astype(np.uint32).view(np.float32)


#: Explicit mantissa bits of the reduced precisions (``accuracy.REDUCED_PRECISION_EPS`` = 2^-bits).
_MANTISSA_BITS = {p: round(-math.log2(eps)) for p, eps in REDUCED_PRECISION_EPS.items()}
#: Normwise error of a random float32 matmul in precision p, in p's unit roundoff, below which the
#: result is put down to p by its size alone: about 0.8 rounding to nearest, 2.5 truncating, and
#: the next coarser precision (8x the unit) well above.
_BY_SIZE_UNITS = 4.0


def which_precision(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[str, str]:
    """(the precision a float32 matmul ``out = a @ b`` ran in, how that was told).

    First against emulated references: the inputs rounded as each reduced precision would
    (nearest or truncated), multiplied in float64; the result that matches one within float32's
    own accumulation bound ran in it. Otherwise by the error's size (random inputs: the error of a
    precision is near its unit roundoff whatever n), so bfloat16 is never called TF32.
    """
    n = a.shape[1]
    full = MATMUL_CHECK.tolerance("float32", n)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    error = MATMUL_CHECK.error(out, exact)
    if error <= full:
        return "float32", f"error {error:.1e} within float32's {full:.1e}"
    for p, bits in sorted(_MANTISSA_BITS.items(), key=lambda kv: -kv[1]):
        for nearest in (True, False):
            ref = (round_mantissa(a, bits, nearest).astype(np.float64)
                   @ round_mantissa(b, bits, nearest).astype(np.float64))
            if MATMUL_CHECK.error(out, ref) <= full:
                how = "rounded to nearest" if nearest else "truncated"
                return p, f"error {error:.1e}; matches float32 inputs {how} to {p}"
    for p, eps in sorted(REDUCED_PRECISION_EPS.items(), key=lambda kv: kv[1]):
        if error <= _BY_SIZE_UNITS * eps / 2:
            return p, f"error {error:.1e}, {p}'s size (no emulated reference matches)"
    return "worse", f"error {error:.1e}, worse than any precision arraybench knows"
