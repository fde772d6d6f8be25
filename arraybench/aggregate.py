"""From per-process measurements ("shards") of a cell to its record, with honest warnings.

Every cell is measured in several worker processes. Their samples are pooled for the headline
statistics; the spread between the processes' medians is reported on its own, because a process can
run slow for its whole life (memory placement, thread placement), and that is invisible inside it.
"""

from __future__ import annotations

from typing import Any, Sequence

from . import gpu_health, stats
from .plan import Cell
from .records import Record

#: Processes whose medians differ by more than this are reported.
PROCESS_SPREAD_WARN = 0.10


def _fmt(seconds: float) -> str:
    from .units import format_seconds

    return format_seconds(seconds)


def aggregate(cell: Cell, shards: Sequence[dict[str, Any]], processes: int, rel_ci: float) -> Record:
    """The record of a cell from the shards measured so far (possibly fewer than ``processes``)."""
    rec = Record(
        workload=cell.workload, size_label=cell.size_label, size=cell.size, backend=cell.backend,
        device=cell.device, dtype=cell.dtype, mode=cell.mode, status="skipped",
        transfer=cell.transfer,
    )
    if not shards:
        rec.reason = "not measured"
        return rec
    for s in shards:
        rec.method = rec.method or s.get("method", "")
        rec.timer = rec.timer or s.get("timer", "")
        rec.reduced_precision = rec.reduced_precision or s.get("reduced_precision", "")
        if rec.flops is None:
            rec.flops = s.get("flops")
        if rec.bytes is None:
            rec.bytes = s.get("bytes")
    errors = [s["max_rel_error"] for s in shards if s.get("max_rel_error") is not None]
    rec.max_rel_error = max(errors) if errors else None
    per_output = [s["output_errors"] for s in shards if s.get("output_errors")]
    if per_output:
        rec.output_names = next((list(s["output_names"]) for s in shards if s.get("output_names")), [])
        rec.output_errors = [max((e[i] for e in per_output if e[i] is not None), default=None)
                             for i in range(len(per_output[0]))]
    tolerances = [s["tolerance"] for s in shards if s.get("tolerance") is not None]
    rec.tolerance = tolerances[0] if tolerances else None
    for status in ("failed", "wrong"):
        bad = [s for s in shards if s.get("status") == status]
        if bad:
            rec.status = status
            rec.reason = bad[0].get("reason", "")
            if status == "failed" and len(shards) > 1:
                rec.reason += f" (in {len(bad)} of {len(shards)} processes)"
            break
    timed = [s for s in shards if s.get("samples_s")]
    if rec.status not in ("failed", "wrong") and not timed:
        rec.status = "skipped"
        rec.reason = shards[0].get("reason", "") or "not measured"
        return rec
    if not timed:
        return rec
    if rec.status == "skipped":
        rec.status = "ok"
    _fill_timing(rec, timed, processes, rel_ci)
    rec.gpu_health = gpu_health.summarize([s["gpu_health"] for s in timed if s.get("gpu_health")])
    throttled = gpu_health.throttle_warning(rec.gpu_health)
    if throttled:
        rec.warnings.append(throttled)
    return rec


def _fill_timing(rec: Record, shards: Sequence[dict[str, Any]], processes: int, rel_ci: float) -> None:
    pooled = [x for s in shards for x in s["samples_s"]]
    rec.samples_s = pooled
    rec.n_samples = len(pooled)
    rec.n_processes = len(shards)
    rec.median_s = stats.median(pooled)
    rec.iqr_s = stats.iqr(pooled)
    rec.min_s = min(pooled)
    rec.ci_low_s, rec.ci_high_s = stats.median_ci(pooled)
    rec.cv = stats.coefficient_of_variation(pooled)
    rec.number = max(int(s.get("number") or 1) for s in shards)
    firsts = [s["first_call_s"] for s in shards if s.get("first_call_s") is not None]
    rec.first_call_s = stats.median(firsts) if firsts else None
    device = [x for s in shards for x in (s.get("device_samples_s") or [])]
    rec.device_median_s = stats.median(device) if device else None
    if rec.mode == "compiled" and rec.first_call_s is not None:
        rec.compile_s = max(rec.first_call_s - rec.median_s, 0.0)
    rec.process_medians_s = [stats.median(s["samples_s"]) for s in shards]
    lo, hi = min(rec.process_medians_s), max(rec.process_medians_s)
    rec.process_spread = (hi - lo) / rec.median_s if rec.median_s > 0 else 0.0

    warnings: list[str] = []
    for s in shards:
        for w in s.get("warnings", []):
            if w not in warnings:
                warnings.append(w)
    if len(shards) < processes:
        warnings.append(f"measured in {len(shards)} of {processes} processes")
    clusters = _bimodal(rec.process_medians_s, pooled)
    if clusters is not None:
        warnings.append(
            f"bimodal: samples cluster at {_fmt(clusters[0])} and {_fmt(clusters[1])}"
            + (" (some processes run slower for their whole life)"
               if rec.process_spread > PROCESS_SPREAD_WARN else "")
        )
    elif rec.process_spread > PROCESS_SPREAD_WARN and len(shards) > 1:
        warnings.append(
            f"processes disagree: their medians span {rec.process_spread:.0%} "
            f"({_fmt(lo)} to {_fmt(hi)})"
        )
    half = (rec.ci_high_s - rec.ci_low_s) / (2 * rec.median_s) if rec.median_s > 0 else 0.0
    if half > rel_ci:
        why = _why_wide(rec, shards, clusters is not None)
        warnings.append(f"95% CI of the median is ±{half:.1%}, above the ±{rel_ci:.0%} target: {why}")
    rec.warnings = warnings


def _bimodal(process_medians: Sequence[float], pooled: Sequence[float]) -> tuple[float, float] | None:
    """Two clusters among the samples, or among the processes' medians."""
    found = stats.two_clusters(pooled)
    if found is not None:
        return found
    if len(process_medians) >= 3:
        ordered = sorted(process_medians)
        gaps = [b / a for a, b in zip(ordered, ordered[1:]) if a > 0]
        if gaps and max(gaps) > 1.25:
            i = gaps.index(max(gaps))
            return stats.median(ordered[: i + 1]), stats.median(ordered[i + 1:])
    return None


def _why_wide(rec: Record, shards: Sequence[dict[str, Any]], bimodal: bool) -> str:
    if bimodal:
        return "bimodal timings"
    budget_hit = any(s.get("stop_reason") == "budget" for s in shards)
    if rec.n_samples < 20 and budget_hit:
        return (f"too few samples ({rec.n_samples}) in the time budget, each call takes "
                f"{_fmt(rec.median_s)}; raise --max-time for a tighter interval")
    return f"noisy machine (coefficient of variation {rec.cv:.0%})"
