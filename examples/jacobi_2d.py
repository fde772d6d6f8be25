"""A 2-D Jacobi stencil with a time loop, as PolyBench writes it: two grids updated in place in turn.

Each time step averages every interior point with its four neighbours, from ``A`` into ``B``, then
from ``B`` back into ``A``. The function changes both grids (``mutates=("A", "B")``, restored
before every timed call, outside the timer) and returns nothing, so its result is the two grids.
The time-step count ``tsteps`` is a setting, an ``int`` as the code expects (``range(tsteps)``):
JAX's ``jax.jit`` sees a constant, so its ``fori_loop`` has a fixed trip count. JAX arrays are
immutable: its version updates with ``.at[...].set(...)`` and returns the grids.

    arraybench run --workload-files examples/jacobi_2d.py --modes latency,compiled
"""

import numpy as np

import arraybench

TSTEPS = 20


def grids(n):
    """PolyBench's initial values: smooth, positive, the same for every library."""
    i, j = np.meshgrid(np.arange(n, dtype=np.float64), np.arange(n, dtype=np.float64), indexing="ij")
    return (i * (j + 2) + 2) / n, (i * (j + 3) + 3) / n


def reference(A, B, *, tsteps):
    """NumPy float64 on copies, the five points summed by offset rather than written out."""
    A, B = A.copy(), B.copy()
    n = A.shape[0]
    offsets = ((0, 0), (0, -1), (0, 1), (1, 0), (-1, 0))

    def average(src):
        return 0.2 * sum(src[1 + di:n - 1 + di, 1 + dj:n - 1 + dj] for di, dj in offsets)

    for _ in range(tsteps):
        B[1:-1, 1:-1] = average(A)
        A[1:-1, 1:-1] = average(B)
    return A, B


@arraybench.workload(
    sizes={"small": 250, "large": 1000},
    inputs=grids,
    mutates=("A", "B"),
    reference=reference,
    # Every step adds five values and scales: a few rounding errors per step, accumulating over steps.
    check=arraybench.Check.normwise(growth=lambda n: 4 * TSTEPS),
    outputs=("A", "B"),
    # Per step: two sweeps of 4 additions and 1 multiplication per interior point; each sweep
    # reads one grid and writes the other.
    work=lambda n, itemsize, tsteps: arraybench.Work(flops=10 * tsteps * (n - 2) ** 2,
                                                     bytes=4 * tsteps * n * n * itemsize),
)
def jacobi_2d(xp, A, B, *, tsteps=TSTEPS):
    """2-D Jacobi: tsteps sweeps of a 5-point average between two n x n grids, in place"""
    for _ in range(tsteps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def _average(X):
    return 0.2 * (X[1:-1, 1:-1] + X[1:-1, :-2] + X[1:-1, 2:] + X[2:, 1:-1] + X[:-2, 1:-1])


def _step(_, grids):
    # One time step on immutable arrays: .at[...].set(...) returns the updated grid. Defined once,
    # at module level, so that JAX compiles the loop's body once and reuses it on every call.
    A, B = grids
    B = B.at[1:-1, 1:-1].set(_average(A))
    A = A.at[1:-1, 1:-1].set(_average(B))
    return A, B


@jacobi_2d.override("jax", namespace="native")
def _jacobi_2d_jax(jnp, A, B, *, tsteps=TSTEPS):
    from jax import lax

    return lax.fori_loop(0, tsteps, _step, (A, B))
