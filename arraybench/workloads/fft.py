"""One-dimensional complex FFT of a real signal."""

from __future__ import annotations

import math

from ..worker.accuracy import Check
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
