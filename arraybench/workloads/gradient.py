"""Gradient of L(w) = sum((w * x)^2) with respect to w: autodiff against finite differences."""

from __future__ import annotations

from .check import Check
from .definition import Work
from .registry import workload


def _inputs(n, rng):
    return rng.standard_normal(n), rng.standard_normal(n)


def _analytic(w, x):
    return 2.0 * w * x * x


@workload(
    name="gradient",
    size_means="parameters (elements of w and x)",
    sizes={"small": 100, "large": 10_000},
    inputs=_inputs,
    description=(
        "dL/dw of L = sum((w*x)^2): jax.grad and torch autograd; NumPy by forward finite "
        "differences, one forward pass per parameter (O(n^2), as in the seed)"
    ),
    reference=_analytic,
    check=Check.normwise(growth=lambda n: 1, ulps=8),
    # Forward and backward pass of the model itself; finite differences do ~n times this.
    work=lambda n, itemsize: Work(flops=6 * n, bytes=3 * n * itemsize),
    grad=True,
    namespace="native",
)
def gradient(xp, w, x):
    return xp.sum((w * x) ** 2)
