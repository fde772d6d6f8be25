"""Element-wise a + b, a * b and sin(a): the seed's memory-bandwidth-bound kernels."""

from __future__ import annotations

from .check import Check
from .definition import Work
from .registry import workload


def _inputs(n, rng):
    return rng.standard_normal(n), rng.standard_normal(n)


@workload(
    name="elementwise",
    size_means="elements of each vector",
    sizes={"small": 1_000, "large": 1_000_000},
    inputs=_inputs,
    description="a + b, a * b and sin(a) on vectors (memory-bound; three new outputs per call)",
    check=Check.elementwise(ulps=8),
    # Three kernels read 5 vectors and write 3; sin is counted as one operation per element.
    work=lambda n, itemsize: Work(flops=3 * n, bytes=8 * n * itemsize),
    namespace="native",
    outputs=("a + b", "a * b", "sin(a)"),
)
def elementwise(xp, a, b):
    return a + b, a * b, xp.sin(a)
