"""Workloads for benchmarks/harness.py: single operations with a known tight-loop reference."""

import arraybench


@arraybench.workload(
    sizes={"n1000": 1_000},
    inputs=lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n)),
    namespace="native",
    description="a + b: one element-wise kernel, ~1 µs at 1,000 elements",
)
def add(xp, a, b):
    return a + b
