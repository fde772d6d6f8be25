"""Synthetic records and results with known samples, for tests of reports and comparisons."""

from __future__ import annotations

from typing import Any, Sequence

from arraybench.analysis.aggregate import aggregate
from arraybench.analysis.pairs import pairs_of
from arraybench.model.replicate import Replicate
from arraybench.model.cell import Cell
from arraybench.model.record import Record
from arraybench.model.results import Results


def record(workload: str = "matmul", backend: str = "numpy", device: str = "cpu",
           samples: Sequence[float] | None = None, size_label: str = "small", size: int = 100,
           status: str = "ok", replicates: int = 1, **fields: Any) -> Record:
    """A record whose statistics are derived from ``samples`` exactly as a run derives them.

    The samples are dealt into ``replicates`` replicates in turn (one by default), as a run with
    that many worker processes would have measured them. Of ``fields``, what every process
    measures alike (the work, the error, the footprint) goes into each replicate, so the record
    derives it as a run's does; any other is set on the record.
    """
    cell = Cell(workload, size_label, size, backend, device, "float64", "latency")
    if not samples:
        r = Record(status=status, **cell.to_dict())
        for k, v in fields.items():
            setattr(r, k, v)
        return r
    measured = {"max_rel_error": 1e-16, "tolerance": 1e-14,
                **{k: fields.pop(k) for k in list(fields) if k in _MEASURED}}
    reps = [Replicate(status="ok", samples_s=list(samples[i::replicates]), number=1,
                      first_call_s=max(samples) * 3, **measured)
            for i in range(replicates)]
    r = aggregate(cell, reps, replicates, rel_ci=1.0)
    r.warnings = []
    r.status = status
    for k, v in fields.items():
        setattr(r, k, v)
    return r


_MEASURED = {"flops", "bytes", "max_rel_error", "tolerance", "method", "gradient", "timer", "reduced_precision",
             "output_errors", "output_names", "output_bytes", "peak_bytes", "peak_note", "energy_j", "energy_note"}


def spread(center: float, n: int = 40, width: float = 0.02) -> list[float]:
    """``n`` samples evenly spread within ±width (relative) around ``center``: a tight cluster."""
    return [center * (1 - width + 2 * width * i / (n - 1)) for i in range(n)]


def results(records: Sequence[Record], **environment: Any) -> Results:
    env = {"cpu_model": "Test CPU 9000", "cpu_count": 4, "python": "3.11.7",
           "libraries": {"numpy": "2.0.0", "torch": "2.5.0"}, "timestamp": "2026-01-01T00:00:00+00:00",
           **environment}
    return Results(environment=env, settings={"dtype": "float64", "processes": 1}, records=list(records),
                   pairs=pairs_of(records))


def fingerprint(host: str = "host-a", cpu: str = "Test CPU 9000", os_release: str = "Linux 6.1",
                driver: str | None = None) -> dict[str, Any]:
    """A machine's fingerprint as ``machine.fingerprint`` gives it (the host already hashed)."""
    return {"cpu_model": cpu, "cpu_isa": ["avx2"], "cpu_flags_sha": "f00", "cpu_count": 4,
            "cpu_physical_cores": 2, "memory_gib": 16.0,
            "gpus": [] if driver is None else [{"name": "Test GPU", "driver": driver}],
            "os": os_release, "arch": "x86_64", "host_sha": host}


def timed_run(day: int, *, torch: str = "2.5.0", numpy_s: float = 1e-3, torch_s: float = 2e-3,
              width: float = 0.01, host: str = "host-a", os_release: str = "Linux 6.1",
              context: dict | None = None, complete: bool = True) -> Results:
    """A run of matmul small on NumPy and PyTorch, started on ``day`` of January 2026, on the machine
    ``host``: what the store and history are fed in tests."""
    from arraybench.model.runs import machine_id

    fp = fingerprint(host=host, os_release=os_release)
    env = {"timestamp": f"2026-01-{day:02d}T00:00:00+00:00", "fingerprint": fp,
           "machine_id": machine_id(fp), "python": "3.11.7",
           "libraries": {"numpy": "2.0.0", "torch": torch}, "context": dict(context or {})}
    res = results([record("matmul", "numpy", samples=spread(numpy_s, width=width), replicates=3),
                   record("matmul", "torch", samples=spread(torch_s, width=width), replicates=3)], **env)
    res.complete = complete
    return res
