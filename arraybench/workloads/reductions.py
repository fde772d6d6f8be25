"""Reductions: mean and standard deviation, where libraries' summation orders make numbers differ."""

from __future__ import annotations

import math

from .check import Check
from .definition import Work
from .registry import workload


def _inputs(n, rng):
    # A mean of 1 and a spread of 1, so relative errors of both outputs are meaningful.
    return rng.normal(1.0, 1.0, n)


@workload(
    name="stats",
    size_means="elements of the vector",
    sizes={"small": 1_000, "large": 1_000_000},
    inputs=_inputs,
    description="(mean(a), std(a)) with NumPy's semantics (ddof=0); torch.std defaults to ddof=1",
    reference=lambda a: (a.mean(), a.std()),
    # Summation error grows with the reduction length: pairwise sums as log2(n), naive ones as
    # sqrt(n) on average; sqrt(n) admits every correct implementation.
    check=Check.normwise(growth=lambda n: math.sqrt(n), ulps=8),
    work=lambda n, itemsize: Work(flops=4 * n, bytes=2 * n * itemsize),
    namespace="native",
    outputs=("mean", "std"),
)
def stats(xp, a):
    return xp.mean(a), xp.std(a)


@stats.override("torch")
def _torch_stats(xp, a):
    # torch.std is unbiased (ddof=1) by default; NumPy's is not. Same semantics first.
    return xp.mean(a), xp.std(a, correction=0)
