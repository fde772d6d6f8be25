"""The machine's own ceilings, measured like any workload: memory bandwidth and peak matmul rate.

``--roofline`` adds these to a run, on every library and device in it; the best of them is the
ceiling each record is set against (``report/roofline.py``).
"""

from __future__ import annotations

from .check import Check
from .definition import Work
from .registry import workload

#: Sizes per device: the stream must dwarf the caches, the matmul must be large enough to saturate.
CEILING_WORKLOADS = ("ceiling_bandwidth", "ceiling_matmul")


@workload(
    name="ceiling_bandwidth",
    size_means="elements of the vector",
    sizes={"cpu": 1 << 25, "gpu": 1 << 27},
    inputs=lambda n, rng: rng.standard_normal(n),
    description="memory bandwidth: b = 2 * a over a vector far larger than the caches (STREAM scale)",
    check=Check.elementwise(ulps=1),
    work=lambda n, itemsize: Work(flops=n, bytes=2 * n * itemsize),
    namespace="native",
    modes=("latency",),
)
def ceiling_bandwidth(xp, a):
    return 2.0 * a


@workload(
    name="ceiling_matmul",
    size_means="the side of each n x n matrix",
    sizes={"cpu": 2048, "gpu": 8192},
    inputs=lambda n, rng: (rng.standard_normal((n, n)), rng.standard_normal((n, n))),
    description="peak floating-point rate: a large square matmul",
    check=Check.normwise(growth=lambda n: n ** 0.5, ulps=16, matmul=True),
    work=lambda n, itemsize: Work(flops=2 * n**3, bytes=3 * n * n * itemsize),
    namespace="native",
    modes=("latency",),
)
def ceiling_matmul(xp, a, b):
    return a @ b
