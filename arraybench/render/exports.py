"""Results in formats other tools read: github-action-benchmark and Bencher.

- ``github`` — github-action-benchmark's ``customSmallerIsBetter`` tool: a JSON list of
  ``{"name", "unit", "value", "range", "extra"}``, one per valid record.
- ``bencher`` — Bencher Metric Format (BMF): ``{name: {"latency": {"value", "lower_value",
  "upper_value"}}}``, Bencher's built-in ``latency`` measure, in nanoseconds.

Both name a record ``workload/size label/configuration`` (``matmul/large/PyTorch CPU``; the dtype
is appended when it is not float64, the machine is part of the configuration in results of several
machines), and both carry the median per call in nanoseconds with its 95% confidence interval.
Only valid records (status ``ok``) are exported: a wrong or failed cell has no time to chart.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..analysis.grouping import is_valid

if TYPE_CHECKING:
    from ..model.record import Record
    from ..model.results import Results

FORMATS = ("github", "bencher")
_NS = 1e9


def benchmark_name(r: "Record") -> str:
    """``matmul/large/PyTorch CPU`` (``/float32`` appended for float32)."""
    name = f"{r.workload}/{r.size_label}/{r.config_label}"
    return name if r.dtype == "float64" else f"{name}/{r.dtype}"


def _ns(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * _NS


def github_action_benchmark(results: "Results") -> list[dict[str, Any]]:
    """github-action-benchmark ``customSmallerIsBetter`` entries."""
    libs = results.environment.get("libraries") or {}
    out = []
    for r in results.records:
        if not is_valid(r):
            continue
        entry: dict[str, Any] = {"name": benchmark_name(r), "unit": "ns/call", "value": _ns(r.median_s)}
        if r.ci_low_s is not None and r.ci_high_s is not None:
            entry["range"] = f"± {(r.ci_high_s - r.ci_low_s) / 2 * _NS:.4g}"
        extra = [f"n = {r.size:,}", f"{r.n_replicates} processes, {r.n_samples} samples"]
        if r.ci_low_s is not None and r.ci_high_s is not None:
            extra.append(f"95% CI {_ns(r.ci_low_s):.4g}–{_ns(r.ci_high_s):.4g} ns")
        version = libs.get(r.backend) if isinstance(libs, dict) else None
        if version:
            extra.append(f"{r.backend} {version}")
        entry["extra"] = "\n".join(extra)
        out.append(entry)
    return out


def bencher_metric_format(results: "Results") -> dict[str, Any]:
    """Bencher Metric Format: each valid record's ``latency`` in nanoseconds."""
    out: dict[str, Any] = {}
    for r in results.records:
        if not is_valid(r):
            continue
        metric: dict[str, float] = {"value": r.median_s * _NS}
        if r.ci_low_s is not None and r.ci_high_s is not None:
            metric["lower_value"] = r.ci_low_s * _NS
            metric["upper_value"] = r.ci_high_s * _NS
        out[benchmark_name(r)] = {"latency": metric}
    return out


def export_text(results: "Results", fmt: str) -> str:
    """The results in ``fmt`` (one of ``FORMATS``) as JSON text."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    data: Any = github_action_benchmark(results) if fmt == "github" else bencher_metric_format(results)
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
