"""From the replicates of a cell (one per worker process) to its record: its status and honest warnings.

The record derives its figures itself; what it cannot derive is said here. Where the processes
disagree or the times fall into two modes, the warning names the measured quantity that differs
(``modes``); a cell measured while other processes loaded the machine says so.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..numeric import medians as stats
from ..model.cell import Cell
from ..model.record import Record, Summary, busy_reason
from ..model.replicate import HEADLINE, LARGE_OUTPUT_BYTES, WORDS, Replicate
from ..errors import option_name, spell
from ..units import format_interval, format_seconds
from . import modes
from .policy import EXPLAINED, explained

#: Two allocator states whose medians differ by this factor are both shown.
ALLOCATOR_DIFFERENCE = 1.05
#: Processes whose medians differ by more than this are reported.
PROCESS_SPREAD_WARN = 0.10


def aggregate(cell: Cell, replicates: Sequence[Replicate], wanted: int, rel_ci: float,
              stop: str = "") -> Record:
    """The record of a cell from its replicates so far, with its status and warnings; ``stop``
    says why it got no more processes (``policy``), "" while it may get more."""
    rec = Record.for_cell(cell)
    rec.replication_stop = stop
    rec.replicates = list(replicates)
    for status in ("failed", "wrong"):
        bad = [rep for rep in replicates if rep.status == status]
        if bad:
            rec.status = status
            rec.reason = bad[0].reason
            if status == "failed" and len(replicates) > 1:
                rec.reason += f" (in {len(bad)} of {len(replicates)} processes)"
            break
    if not rec.timed:
        if rec.status not in ("failed", "wrong"):
            rec.reason = (replicates[0].reason if replicates else "") or "not measured"
        return rec
    if rec.status == "skipped":
        rec.status = "ok"
    rec.warnings = (_timing_warnings(rec, wanted, rel_ci) + _allocator_warnings(rec)
                    + _throttle_warnings(rec.gpu_health))
    return rec


def _timing_warnings(rec: Record, wanted: int, rel_ci: float) -> list[str]:
    timed = rec.timed
    assert rec.median_s is not None and rec.ci_low_s is not None and rec.ci_high_s is not None
    spread = rec.replicate_spread or 0.0
    lo, hi = min(rec.replicate_medians_s), max(rec.replicate_medians_s)
    warnings = list(dict.fromkeys(w for rep in timed for w in rep.warnings))
    if rec.mode == "compiled" and rec.first_call_s is not None and rec.compile_s is None:
        warnings.append("compiling not seen: the first call was no slower than the fastest later one "
                        "(a cache may have served the compiled code)")
    if len(timed) < wanted:
        warnings.append(f"measured in {len(timed)} of {wanted} processes")
    clusters = modes.find_modes(rec.replicate_medians_s, rec.samples_s)
    if clusters is not None:
        contrast = modes.explain(timed, clusters)
        warnings.append(
            f"bimodal: samples cluster at {format_seconds(clusters[0])} and {format_seconds(clusters[1])}"
            + (f" ({contrast.sentence()})" if contrast is not None else
               " (some processes run slower for their whole life)"
               if spread > PROCESS_SPREAD_WARN else "")
        )
    elif spread > PROCESS_SPREAD_WARN and len(timed) > 1:
        contrast = modes.between_processes(timed, stats.median(rec.replicate_medians_s))
        warnings.append(
            f"processes disagree: their medians span {spread:.0%} "
            f"({format_seconds(lo)} to {format_seconds(hi)})" + (f"; {contrast.sentence()}" if contrast is not None else "")
        )
    busy = busy_reason(rec)
    if busy is not None:
        rounds = sum(len(rep.rounds or ()) for rep in timed)
        loaded = sum(len(rep.busy_rounds) for rep in timed)
        warnings.append(f"measured while the machine was busy: {busy}" + (
            f"; {loaded} of {rounds} rounds of turns under that load, left out of its comparisons "
            "where enough quiet ones remain" if loaded else ""))
    half = (rec.ci_high_s - rec.ci_low_s) / (2 * rec.median_s) if rec.median_s > 0 else 0.0
    if half > rel_ci:
        why = _why_wide(rec, timed, clusters is not None, busy is not None)
        interval = format_interval(rec.ci_low_s, rec.median_s, rec.ci_high_s)
        if interval == "undecided":  # wider than a factor of 2 either way: no ± says that
            warnings.append(f"95% CI of the median spans {format_seconds(rec.ci_low_s)} to "
                            f"{format_seconds(rec.ci_high_s)}, too wide to decide: {why}")
        else:
            warnings.append(f"95% CI of the median is {interval}, above the ±{rel_ci:.0%} target: {why}")
    if len(timed) == 1 and wanted <= 1:
        warnings.append("one process: the interval cannot include the variation between processes")
    return warnings


def _allocator_warnings(rec: Record) -> list[str]:
    """A headline in the unusual allocator state, said; the other state's figures where they differ."""
    if rec.allocator and rec.allocator != HEADLINE and not any(
            rep.other_allocator is not None and rep.other_allocator.samples_s for rep in rec.timed) and any(
            (rep.output_bytes or 0) >= LARGE_OUTPUT_BYTES for rep in rec.timed):
        return [f"the median is with {WORDS[rec.allocator]} only ({spell('allocator', rec.allocator)}"
                f"): glibc maps each output of {LARGE_OUTPUT_BYTES // 1024} KiB or more anew, "
                "and every call faults its pages in"]
    return [allocator_note(rec)] if allocator_states_differ(rec) else []


def _throttle_warnings(summary: dict[str, Any]) -> list[str]:
    """``3 of 40 samples taken while the GPU was throttled (SW power cap)``, if any were."""
    k = summary.get("throttled_samples", 0)
    reasons = ", ".join(summary.get("reasons") or []) or "reason not reported"
    return [f"{k} of {summary.get('samples', k)} samples taken while the GPU was throttled "
            f"({reasons}): its clocks were lowered while they ran"] if k else []


def allocator_states_differ(rec: Record | Summary) -> bool:
    """Whether the two allocator states' medians are ``ALLOCATOR_DIFFERENCE`` apart (then shown)."""
    if not rec.median_s or not rec.other_median_s:
        return False
    ratio = rec.other_median_s / rec.median_s
    return max(ratio, 1 / ratio) >= ALLOCATOR_DIFFERENCE


def allocator_states_apart(rec: Record | Summary) -> bool:
    """Whether they differ and their 95% intervals do not overlap: a difference to state as one."""
    if not allocator_states_differ(rec):
        return False
    assert rec.median_s and rec.other_median_s
    own_low, own_high = rec.ci_low_s or rec.median_s, rec.ci_high_s or rec.median_s
    other_low, other_high = rec.other_ci_low_s or rec.other_median_s, rec.other_ci_high_s or rec.other_median_s
    return own_high < other_low if rec.other_median_s > rec.median_s else other_high < own_low


def allocator_note(rec: Record | Summary) -> str:
    """``the median is with reused memory (glibc's malloc held so); with fresh pages: 37.8 ms
    ±1.1% in 1 process (8,438 page faults per call against 0)``. No multiple of the two: one
    process a state says nothing of the variation between processes."""
    assert rec.median_s and rec.other_median_s
    k = rec.other_n_replicates or 1
    text = (f"the median is with {WORDS.get(rec.allocator, rec.allocator)} (glibc's malloc held so); "
            f"with {WORDS.get(rec.other_allocator, rec.other_allocator)}: {format_seconds(rec.other_median_s)} "
            f"{format_interval(rec.other_ci_low_s, rec.other_median_s, rec.other_ci_high_s)} "
            f"in {k} process{'es' if k != 1 else ''}")
    own = rec.usage.minor_faults_per_call if rec.usage is not None else None
    if rec.other_faults_per_call is not None:
        text += f" ({rec.other_faults_per_call:,.0f} page faults per call"
        text += f" against {own:,.0f})" if own is not None else ")"
    return text


def _why_wide(rec: Record, timed: Sequence[Replicate], bimodal: bool, busy: bool) -> str:
    stopped = (f"; no more processes because {explained(rec.replication_stop)}"
               if rec.replication_stop in EXPLAINED and rec.replication_stop != "converged" else "")
    if bimodal:
        return "bimodal timings" + stopped
    if len(timed) > 1 and rec.replicate_spread and rec.replicate_spread > PROCESS_SPREAD_WARN:
        return f"the processes' medians span {rec.replicate_spread:.0%} in {len(timed)} processes" + stopped
    budget_hit = any(rep.stop_reason == "budget" for rep in timed)
    if rec.n_samples < 20 and budget_hit:
        return (f"too few samples ({rec.n_samples}) in the time budget, each call takes "
                f"{format_seconds(rec.median_s)}; raise {option_name('max_time')} for a tighter interval")
    if busy:
        return "a busy machine" + stopped
    return f"{len(timed)} process{'es' if len(timed) != 1 else ''} on a noisy machine" + stopped
