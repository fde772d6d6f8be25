"""Synthetic records and results with known samples, for tests of reports and comparisons."""

from __future__ import annotations

from typing import Any, Sequence

from arraybench import stats
from arraybench.records import Record, Results


def record(workload: str = "matmul", backend: str = "numpy", device: str = "cpu",
           samples: Sequence[float] | None = None, size_label: str = "small", size: int = 100,
           status: str = "ok", **fields: Any) -> Record:
    """A record whose statistics are computed from ``samples`` exactly as a run computes them."""
    r = Record(workload=workload, size_label=size_label, size=size, backend=backend, device=device,
               dtype="float64", mode="latency", status=status, **fields)
    if samples:
        r.samples_s = list(samples)
        r.n_samples = len(samples)
        r.n_processes = 1
        r.median_s = stats.median(samples)
        r.iqr_s = stats.iqr(samples)
        r.min_s = min(samples)
        r.ci_low_s, r.ci_high_s = stats.median_ci(samples)
        r.first_call_s = max(samples) * 3
        r.max_rel_error = 1e-16 if r.max_rel_error is None else r.max_rel_error
        r.tolerance = 1e-14 if r.tolerance is None else r.tolerance
    return r


def spread(center: float, n: int = 40, width: float = 0.02) -> list[float]:
    """``n`` samples evenly spread within ±width (relative) around ``center``: a tight cluster."""
    return [center * (1 - width + 2 * width * i / (n - 1)) for i in range(n)]


def results(records: Sequence[Record], **environment: Any) -> Results:
    env = {"cpu_model": "Test CPU 9000", "cpu_count": 4, "python": "3.11.7",
           "libraries": {"numpy": "2.0.0", "torch": "2.5.0"}, "timestamp": "2026-01-01T00:00:00+00:00",
           **environment}
    return Results(environment=env, settings={"dtype": "float64", "processes": 1}, records=list(records))
