"""From the replicates of a cell (one per worker process) to its record, with honest warnings.

Every cell is measured in several worker processes. Their samples are pooled for the headline
statistics; the spread between the replicates' medians is reported on its own, because a process
can run slow for its whole life (memory placement, thread placement), and that is invisible inside
it.
"""

from __future__ import annotations

from typing import Sequence

from .. import gpu_health, stats
from ..measurement import Replicate
from ..plan import Cell
from ..records import Record

#: Processes whose medians differ by more than this are reported.
PROCESS_SPREAD_WARN = 0.10


def _fmt(seconds: float) -> str:
    from ..units import format_seconds

    return format_seconds(seconds)


def aggregate(cell: Cell, replicates: Sequence[Replicate], wanted: int, rel_ci: float) -> Record:
    """The record of a cell from the replicates measured so far (possibly fewer than ``wanted``)."""
    rec = Record.for_cell(cell)
    rec.replicates = list(replicates)
    if not replicates:
        rec.reason = "not measured"
        return rec
    for rep in replicates:
        rec.method = rec.method or rep.method
        rec.gradient = rec.gradient or rep.gradient
        rec.timer = rec.timer or rep.timer
        rec.reduced_precision = rec.reduced_precision or rep.reduced_precision
        if rec.flops is None:
            rec.flops = rep.flops
        if rec.bytes is None:
            rec.bytes = rep.bytes
    errors = [rep.max_rel_error for rep in replicates if rep.max_rel_error is not None]
    rec.max_rel_error = max(errors) if errors else None
    per_output = [rep.output_errors for rep in replicates if rep.output_errors]
    if per_output:
        rec.output_names = next((list(rep.output_names) for rep in replicates if rep.output_names), [])
        rec.output_errors = [max((e[i] for e in per_output if e[i] is not None), default=None)
                             for i in range(len(per_output[0]))]
    tolerances = [rep.tolerance for rep in replicates if rep.tolerance is not None]
    rec.tolerance = tolerances[0] if tolerances else None
    for status in ("failed", "wrong"):
        bad = [rep for rep in replicates if rep.status == status]
        if bad:
            rec.status = status
            rec.reason = bad[0].reason
            if status == "failed" and len(replicates) > 1:
                rec.reason += f" (in {len(bad)} of {len(replicates)} processes)"
            break
    timed = [rep for rep in replicates if rep.timed]
    if rec.status not in ("failed", "wrong") and not timed:
        rec.status = "skipped"
        rec.reason = replicates[0].reason or "not measured"
        return rec
    if not timed:
        return rec
    if rec.status == "skipped":
        rec.status = "ok"
    _fill_timing(rec, timed, wanted, rel_ci)
    rec.gpu_health = gpu_health.summarize([rep.gpu_health for rep in timed if rep.gpu_health])
    throttled = gpu_health.throttle_warning(rec.gpu_health)
    if throttled:
        rec.warnings.append(throttled)
    return rec


def _fill_timing(rec: Record, timed: Sequence[Replicate], wanted: int, rel_ci: float) -> None:
    pooled = [x for rep in timed for x in rep.samples_s]
    rec.n_samples = len(pooled)
    rec.n_replicates = len(timed)
    rec.median_s = stats.median(pooled)
    rec.iqr_s = stats.iqr(pooled)
    rec.min_s = min(pooled)
    rec.ci_low_s, rec.ci_high_s = stats.median_ci(pooled)
    rec.cv = stats.coefficient_of_variation(pooled)
    rec.number = max(rep.number or 1 for rep in timed)
    firsts = [rep.first_call_s for rep in timed if rep.first_call_s is not None]
    rec.first_call_s = stats.median(firsts) if firsts else None
    device = [x for rep in timed for x in (rep.device_samples_s or [])]
    rec.device_median_s = stats.median(device) if device else None
    if rec.mode == "compiled" and rec.first_call_s is not None:
        rec.compile_s = max(rec.first_call_s - rec.median_s, 0.0)
    rec.replicate_medians_s = [stats.median(rep.samples_s) for rep in timed]
    lo, hi = min(rec.replicate_medians_s), max(rec.replicate_medians_s)
    rec.replicate_spread = (hi - lo) / rec.median_s if rec.median_s > 0 else 0.0

    warnings: list[str] = []
    for rep in timed:
        for w in rep.warnings:
            if w not in warnings:
                warnings.append(w)
    if len(timed) < wanted:
        warnings.append(f"measured in {len(timed)} of {wanted} processes")
    clusters = _bimodal(rec.replicate_medians_s, pooled)
    if clusters is not None:
        warnings.append(
            f"bimodal: samples cluster at {_fmt(clusters[0])} and {_fmt(clusters[1])}"
            + (" (some processes run slower for their whole life)"
               if rec.replicate_spread > PROCESS_SPREAD_WARN else "")
        )
    elif rec.replicate_spread > PROCESS_SPREAD_WARN and len(timed) > 1:
        warnings.append(
            f"processes disagree: their medians span {rec.replicate_spread:.0%} "
            f"({_fmt(lo)} to {_fmt(hi)})"
        )
    half = (rec.ci_high_s - rec.ci_low_s) / (2 * rec.median_s) if rec.median_s > 0 else 0.0
    if half > rel_ci:
        why = _why_wide(rec, timed, clusters is not None)
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


def _why_wide(rec: Record, timed: Sequence[Replicate], bimodal: bool) -> str:
    if bimodal:
        return "bimodal timings"
    budget_hit = any(rep.stop_reason == "budget" for rep in timed)
    if rec.n_samples < 20 and budget_hit:
        return (f"too few samples ({rec.n_samples}) in the time budget, each call takes "
                f"{_fmt(rec.median_s)}; raise --max-time for a tighter interval")
    return f"noisy machine (coefficient of variation {rec.cv:.0%})"
