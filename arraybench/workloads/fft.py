"""One-dimensional complex FFT of a real signal."""

from __future__ import annotations

import math

from .check import Check
from .definition import Work
from .registry import workload


def _inputs(n, rng):
    return rng.standard_normal(n)


@workload(
    name="fft",
    size_means="elements of the vector",
    sizes={"small": 1_000, "large": 1_000_000},
    inputs=_inputs,
    description="fft(a) of a real vector, complex output (O(n log n))",
    # Rounding errors of an FFT grow with log2(n), the number of butterfly stages.
    check=Check.normwise(growth=lambda n: math.log2(max(n, 2)), ulps=8),
    # The conventional 5 n log2 n flop count of a complex FFT; read n reals, write n complexes.
    work=lambda n, itemsize: Work(flops=5 * n * math.log2(max(n, 2)), bytes=3 * n * itemsize),
    namespace="native",
)
def fft(xp, a):
    return xp.fft.fft(a)


@fft.override("mlx")
def _mlx_fft(xp, a):
    # MLX has no complex128: its FFT of a float64 vector computes and returns complex64, which
    # a float64 benchmark would compare against complex128 FFTs. Said as a skip, before timing.
    if a.dtype == xp.float64:
        from ..backends.base import Unavailable

        raise Unavailable("not applicable: MLX has no complex128, so its FFT of float64 data "
                          "computes in complex64; --dtype float32 runs it")
    return xp.fft.fft(a)
