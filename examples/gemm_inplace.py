"""General matrix multiply in place, as BLAS and PolyBench define it: ``C = alpha * A @ B + beta * C``.

Written the way NumPy users write it: the function updates ``C`` and returns nothing. ``mutates=``
tells arraybench so, and every timed call gets a fresh ``C``, restored outside the timer: without
it, each call would start from the previous call's output (and the first result, a view of ``C``,
would change under the check). ``alpha`` and ``beta`` are settings (``params=``), passed to every
library as Python floats and recorded with the result. PyTorch has the operation as one call
(``addmm_``); JAX arrays are immutable, so its version returns the new ``C``.

    arraybench run --workload-files examples/gemm_inplace.py --modes latency,compiled
"""

import arraybench


def make(n, rng):
    return rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal((n, n))


def reference(A, B, C, *, alpha, beta):
    """NumPy float64 on copies: the C the in-place call must leave behind."""
    return alpha * (A @ B) + beta * C


@arraybench.workload(
    sizes={"small": 256, "large": 1024},
    inputs=make,
    params={"alpha": 1.5, "beta": 1.2},
    mutates=("C",),
    reference=reference,
    # Each element of A @ B sums n products: its rounding error grows with n.
    check=arraybench.Check.normwise(growth=lambda n: n),
    # 2n^3 for the product, 3n^2 to scale and add; A and B read, C read and written.
    work=lambda n, itemsize: arraybench.Work(flops=2 * n**3 + 3 * n**2, bytes=4 * n * n * itemsize),
)
def gemm_inplace(xp, A, B, C, *, alpha, beta):
    """C = alpha * A @ B + beta * C, updating C in place (n x n, float)"""
    C *= beta
    C += alpha * (A @ B)


@gemm_inplace.override("torch", namespace="native")
def _gemm_inplace_torch(torch, A, B, C, *, alpha, beta):
    C.addmm_(A, B, beta=beta, alpha=alpha)  # one BLAS call, in place


@gemm_inplace.override("jax", namespace="native")
def _gemm_inplace_jax(jnp, A, B, C, *, alpha, beta):
    return alpha * (A @ B) + beta * C  # JAX arrays are immutable: the new C is the result
