"""From the replicates of a cell (one per worker process) to its record, with honest warnings.

Every cell is measured in several worker processes, and the process is the unit that repeats: the
headline time and its 95% interval come from the processes' medians (``intervals``), because a
process can run slow for its whole life (memory placement, thread placement, fresh pages from the
kernel), and that is invisible inside it. The quartiles, the minimum and the coefficient of
variation describe the pooled samples. The counters read around the samples are summed over the
processes (``usage.combine``); where the times fall into two modes, the warning names the measured
quantity that differs between them (``modes``), and a cell measured while other processes loaded
the machine says so.
"""

from __future__ import annotations

from typing import Sequence

from . import gpu_health
from . import stats
from ..model.replicate import Replicate
from ..model.cell import Cell
from ..model.allocator import HEADLINE, LARGE_OUTPUT_BYTES, WORDS
from ..model.record import Record
from ..errors import option_name, spell
from ..units import format_interval, format_seconds
from ..model.usage import combine
from . import modes
from .intervals import replicate_interval
from .policy import EXPLAINED, explained

#: Two allocator states whose medians differ by this factor are both shown.
ALLOCATOR_DIFFERENCE = 1.05
#: Processes whose medians differ by more than this are reported.
PROCESS_SPREAD_WARN = 0.10
#: A cell is "measured while busy" when other processes used this share of the machine's CPUs
#: during its samples, or the hypervisor stole this share of its CPU time.
BUSY_OTHERS_SHARE = 0.10
BUSY_STEAL_SHARE = 0.05


def aggregate(cell: Cell, replicates: Sequence[Replicate], wanted: int, rel_ci: float,
              stop: str = "") -> Record:
    """The record of a cell from the replicates measured so far (possibly fewer than ``wanted``);
    ``stop`` says why it got no more processes (``replication``), "" while it may get more."""
    rec = Record.for_cell(cell)
    rec.replication_stop = stop
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
    _fill_allocator(rec, timed)
    rec.gpu_health = gpu_health.summarize([rep.gpu_health for rep in timed if rep.gpu_health])
    throttled = gpu_health.throttle_warning(rec.gpu_health)
    if throttled:
        rec.warnings.append(throttled)
    return rec


def _fill_timing(rec: Record, timed: Sequence[Replicate], wanted: int, rel_ci: float) -> None:
    pooled = [x for rep in timed for x in rep.samples_s]
    rec.n_samples = len(pooled)
    rec.n_replicates = len(timed)
    interval = replicate_interval([rep.samples_s for rep in timed])
    rec.median_s = interval.center
    rec.ci_low_s, rec.ci_high_s = interval.low, interval.high
    rec.ci_method = interval.method
    rec.iqr_s = stats.iqr(pooled)
    rec.min_s = min(pooled)
    rec.cv = stats.coefficient_of_variation(pooled)
    rec.usage = combine(rep.usage for rep in timed)
    rec.number = max(rep.number or 1 for rep in timed)
    firsts = [rep.first_call_s for rep in timed if rep.first_call_s is not None]
    rec.first_call_s = stats.median(firsts) if firsts else None
    _fill_footprint(rec, timed)
    device = [x for rep in timed for x in (rep.device_samples_s or [])]
    rec.device_median_s = stats.median(device) if device else None
    compile_seen = True
    if rec.mode == "compiled" and firsts:
        # The first call over the fastest later call, per process: over the median, a loaded
        # process's median as slow as its first call read 0 s for torch.compile's matmul.
        compiled = stats.median([rep.first_call_s - min(rep.samples_s) for rep in timed
                                 if rep.first_call_s is not None])
        rec.compile_s = compiled if compiled > 0 else None
        compile_seen = compiled > 0
    rec.replicate_medians_s = [stats.median(rep.samples_s) for rep in timed]
    lo, hi = min(rec.replicate_medians_s), max(rec.replicate_medians_s)
    rec.replicate_spread = (hi - lo) / rec.median_s if rec.median_s > 0 else 0.0

    warnings = list(dict.fromkeys(w for rep in timed for w in rep.warnings))
    if not compile_seen:
        warnings.append("compiling not seen: the first call was no slower than the fastest later one "
                        "(a cache may have served the compiled code)")
    if len(timed) < wanted:
        warnings.append(f"measured in {len(timed)} of {wanted} processes")
    clusters = modes.find_modes(rec.replicate_medians_s, pooled)
    if clusters is not None:
        contrast = modes.explain(timed, clusters)
        warnings.append(
            f"bimodal: samples cluster at {format_seconds(clusters[0])} and {format_seconds(clusters[1])}"
            + (f" ({contrast.sentence()})" if contrast is not None else
               " (some processes run slower for their whole life)"
               if rec.replicate_spread > PROCESS_SPREAD_WARN else "")
        )
    elif rec.replicate_spread > PROCESS_SPREAD_WARN and len(timed) > 1:
        contrast = modes.between_processes(timed, stats.median(rec.replicate_medians_s))
        warnings.append(
            f"processes disagree: their medians span {rec.replicate_spread:.0%} "
            f"({format_seconds(lo)} to {format_seconds(hi)})" + (f"; {contrast.sentence()}" if contrast is not None else "")
        )
    busy = busy_reason(rec)
    rec.busy = None if rec.usage is None or rec.usage.others_cores is None else busy is not None
    if busy is not None:
        rounds = sum(len(rep.rounds or ()) for rep in timed)
        loaded = sum(len(rep.busy_rounds) for rep in timed)
        warnings.append(f"measured while the machine was busy: {busy}" + (
            f"; {loaded} of {rounds} rounds of turns under that load, left out of its comparisons "
            "where enough quiet ones remain" if loaded else ""))
    half = (rec.ci_high_s - rec.ci_low_s) / (2 * rec.median_s) if rec.median_s > 0 else 0.0
    if half > rel_ci:
        why = _why_wide(rec, timed, clusters is not None, busy is not None)
        spread = format_interval(rec.ci_low_s, rec.median_s, rec.ci_high_s)
        if spread == "undecided":  # wider than a factor of 2 either way: no ± says that
            warnings.append(f"95% CI of the median spans {format_seconds(rec.ci_low_s)} to "
                            f"{format_seconds(rec.ci_high_s)}, too wide to decide: {why}")
        else:
            warnings.append(f"95% CI of the median is {spread}, above the ±{rel_ci:.0%} target: {why}")
    if len(timed) == 1 and wanted <= 1:
        warnings.append("one process: the interval cannot include the variation between processes")
    rec.warnings = warnings


def _fill_footprint(rec: Record, timed: Sequence[Replicate]) -> None:
    """Peak memory and energy per call: the median over the processes that measured them, with
    the first process's words for how (or, where none measured, why not)."""
    peaks = [rep.peak_bytes for rep in timed if rep.peak_bytes is not None]
    rec.peak_bytes = int(stats.median(peaks)) if peaks else None
    rec.peak_note = next((rep.peak_note for rep in timed if (rep.peak_bytes is not None) == bool(peaks)
                          and rep.peak_note), "")
    joules = [rep.energy_j for rep in timed if rep.energy_j is not None]
    rec.energy_j = stats.median(joules) if joules else None
    rec.energy_note = next((rep.energy_note for rep in timed if (rep.energy_j is not None) == bool(joules)
                            and rep.energy_note), "")
    sizes = [rep.output_bytes for rep in timed if rep.output_bytes is not None]
    rec.output_bytes = sizes[0] if sizes else None


def _fill_allocator(rec: Record, timed: Sequence[Replicate]) -> None:
    """The allocator state of the headline, and the other state's own median and interval, from
    the same processes: two numbers side by side, never one mean."""
    held = {rep.allocator for rep in timed}
    rec.allocator = held.pop() if len(held) == 1 else ""  # mixed: a run resumed across versions
    other = [rep.other_allocator for rep in timed
             if rep.other_allocator is not None and rep.other_allocator.samples_s]
    if rec.allocator and rec.allocator != HEADLINE and not other and any(
            (rep.output_bytes or 0) >= LARGE_OUTPUT_BYTES for rep in timed):
        # --allocator fresh: not the usual headline, so said on every large-output row.
        rec.warnings.append(f"the median is with {WORDS[rec.allocator]} only ({spell('allocator', rec.allocator)}"
                            f"): glibc maps each output of {LARGE_OUTPUT_BYTES // 1024} KiB or more anew, "
                            "and every call faults its pages in")
    if not rec.allocator or not other or len({o.allocator for o in other}) != 1:
        return
    interval = replicate_interval([o.samples_s for o in other])
    rec.other_allocator = other[0].allocator
    rec.other_median_s = interval.center
    rec.other_ci_low_s, rec.other_ci_high_s = interval.low, interval.high
    rec.other_n_replicates = len(other)
    usage = combine(o.usage for o in other)
    rec.other_faults_per_call = usage.minor_faults_per_call if usage is not None else None
    if allocator_states_differ(rec):
        rec.warnings.append(allocator_note(rec))


def allocator_states_differ(rec: Record) -> bool:
    """Whether the record's two allocator states' medians are ``ALLOCATOR_DIFFERENCE`` apart:
    then the other is shown beside the headline (a note, with its own interval)."""
    if not rec.median_s or not rec.other_median_s:
        return False
    ratio = rec.other_median_s / rec.median_s
    return max(ratio, 1 / ratio) >= ALLOCATOR_DIFFERENCE


def allocator_states_apart(rec: Record) -> bool:
    """Whether they differ and their 95% intervals do not overlap: a difference to state as one."""
    if not allocator_states_differ(rec):
        return False
    assert rec.median_s and rec.other_median_s
    own_low, own_high = rec.ci_low_s or rec.median_s, rec.ci_high_s or rec.median_s
    other_low, other_high = rec.other_ci_low_s or rec.other_median_s, rec.other_ci_high_s or rec.other_median_s
    return own_high < other_low if rec.other_median_s > rec.median_s else other_high < own_low


def allocator_note(rec: Record) -> str:
    """``the median is with reused memory (glibc's malloc held so); with fresh pages: 37.8 ms
    ±1.1% in 1 process (8,438 page faults per call against 0)``: a record's other state.

    No multiple of the two: the other state is measured in one process, and a ratio from one
    process a state says nothing of the variation between processes (under load, one such
    ratio read 70× where plain processes give 3.4-3.8×)."""
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


def busy_reason(rec: Record) -> str | None:
    """Why the machine counts as busy during the record's samples, or None when it was quiet."""
    u = rec.usage
    if u is None or u.others_cores is None:
        return None
    cpus = u.machine_cpus or 1
    parts = []
    if u.others_cores >= BUSY_OTHERS_SHARE * cpus:
        parts.append(f"other processes used {u.others_cores:.1f} of {cpus} cores")
    if u.steal_share is not None and u.steal_share >= BUSY_STEAL_SHARE:
        parts.append(f"the hypervisor stole {u.steal_share:.0%} of the CPU time")
    if not parts:
        return None
    if u.load_average is not None:
        parts.append(f"load average {u.load_average:.1f}")
    return ", ".join(parts)


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
