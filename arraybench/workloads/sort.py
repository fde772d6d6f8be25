"""Sorting: comparisons and data-dependent memory access rather than arithmetic."""

from __future__ import annotations

import math

from .check import Check
from .definition import Work
from .registry import workload


def _inputs(n, rng):
    return rng.standard_normal(n)


@workload(
    name="sort",
    size_means="elements of the vector",
    sizes={"small": 1_000, "large": 1_000_000},
    inputs=_inputs,
    description="sort(a) ascending; exact (torch.sort also computes indices, which are discarded)",
    check=Check.exact(),
    work=lambda n, itemsize: Work(flops=n * math.log2(max(n, 2)), bytes=2 * n * itemsize),
    namespace="native",
)
def sort(xp, a):
    return xp.sort(a)


@sort.override("torch")
def _torch_sort(xp, a):
    # torch.sort returns (values, indices); match NumPy's semantics: values only.
    return xp.sort(a).values
