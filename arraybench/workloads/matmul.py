"""Dense matrix multiplication: compute-bound, and where BLAS and GPUs differ most."""

from __future__ import annotations

from .check import Check
from .definition import Work
from .registry import workload


def _inputs(n, rng):
    return rng.standard_normal((n, n)), rng.standard_normal((n, n))


@workload(
    name="matmul",
    size_means="the side of each n x n matrix",
    sizes={"small": 100, "large": 2_000},
    inputs=_inputs,
    description="C = A @ B for n x n matrices (compute-bound; 2n^3 flops)",
    # Each entry is a length-n dot product. Its worst-case error grows as n, its typical error as
    # sqrt(n); 16 ulp x sqrt(n) leaves correct BLAS a wide margin yet flags TF32 or bf16 arithmetic
    # (a relative error near 1e-3) in a float32 run. matmul=True: with --allow-tf32 on a GPU that
    # runs TF32, the bound is 2 x TF32's unit roundoff (2^-11) x sqrt(n) instead
    # (accuracy.REDUCED_UNITS), and the record says so.
    check=Check.normwise(growth=lambda n: n ** 0.5, ulps=16, matmul=True),
    work=lambda n, itemsize: Work(flops=2 * n**3, bytes=3 * n * n * itemsize),
    namespace="native",
)
def matmul(xp, a, b):
    return a @ b
