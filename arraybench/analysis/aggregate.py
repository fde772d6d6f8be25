"""From the replicates of a cell (one per worker process) to its record's status and warnings, and
its samples as a histogram. Where the processes disagree or the times fall into two modes, a warning
names the counter (``replicate.Usage``) that moved with the time; every process is counted in the
same bins, so one that ran slow for its whole life shows as its own hump.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from ..numeric import medians as stats
from ..model.cell import Cell
from ..model.record import Record, Summary, busy_reason
from ..model.replicate import HEADLINE, LARGE_OUTPUT_BYTES, WORDS, Replicate
from ..errors import option_name, spell
from ..units import format_interval, format_seconds
from .crossover import Point, outcome
from .policy import EXPLAINED, explained

def _count(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:.2g}"


def _bytes(v: float) -> str:
    return f"{v / 1024**2:,.1f} MB"


@dataclass(frozen=True)
class Quantity:
    """A counter worth naming: its words, its format, and the smallest difference that matters."""

    name: str
    words: str
    fmt: Callable[[float], str]
    min_difference: float
    min_ratio: float = 1.0  # and the larger must be this many times the smaller


QUANTITIES: tuple[Quantity, ...] = (
    Quantity("minor_faults_per_call", "minor page faults per call", _count, 10.0, 2.0),
    Quantity("major_faults_per_call", "major page faults per call", _count, 1.0, 2.0),
    Quantity("kernel_share", "share of CPU time in the kernel", lambda v: f"{v:.0%}", 0.10),
    Quantity("cores", "cores used", lambda v: f"{v:.1f}", 0.25),
    Quantity("others_cores", "cores used by other processes", lambda v: f"{v:.1f}", 0.25),
    Quantity("steal_share", "CPU time stolen by the hypervisor", lambda v: f"{v:.0%}", 0.05),
    Quantity("involuntary_switches_per_call", "involuntary context switches per call", _count, 1.0, 2.0),
    Quantity("voluntary_switches_per_call", "voluntary context switches per call", _count, 1.0, 2.0),
    Quantity("peak_growth_bytes", "peak memory growth", _bytes, 1024.0**2, 2.0),
    Quantity("ipc", "instructions per cycle", lambda v: f"{v:.2f}", 0.2),
    Quantity("cache_misses_per_call", "cache misses per call", _count, 1000.0, 2.0),
)
#: The per-sample series kept for each window, by the quantity they measure.
SAMPLE_SERIES = {"minor_faults_per_call": "sample_minor_faults", "cores": "sample_cores",
                 "kernel_share": "sample_kernel_share", "others_cores": "sample_others_cores"}

#: How far apart (in pooled standard deviations) two groups must lie to be called different.
SEPARATION = 3.0
#: Separations beyond this are "clear" alike: among clear ones, the first in ``QUANTITIES`` (the
#: likelier cause) is named, not whichever happened to have no spread at all.
CLEAR = 10.0


@dataclass(frozen=True)
class Contrast:
    """One quantity, in the slow mode and in the fast one."""

    quantity: Quantity
    slow: float
    fast: float
    unit: str  # "processes" or "samples"

    def sentence(self) -> str:
        """``minor page faults per call: 7,780 in the slow processes, 0 in the fast ones``."""
        q = self.quantity
        return f"{q.words}: {q.fmt(self.slow)} in the slow {self.unit}, {q.fmt(self.fast)} in the fast ones"


def _differs(q: Quantity, slow: Sequence[float], fast: Sequence[float],
             unit: str) -> tuple[float, Contrast] | None:
    """How clearly ``slow`` and ``fast`` differ (separation in pooled sds), and how; or None."""
    if not slow or not fast:
        return None
    a, b = statistics.fmean(slow), statistics.fmean(fast)
    if abs(a - b) < q.min_difference:
        return None
    lo, hi = sorted((abs(a), abs(b)))
    if q.min_ratio > 1 and hi < q.min_ratio * lo:
        return None
    spread = [(v - a) ** 2 for v in slow] + [(v - b) ** 2 for v in fast]
    sd = math.sqrt(sum(spread) / max(len(spread) - 2, 1))
    separation = abs(a - b) / sd if sd > 0 else math.inf
    return (separation, Contrast(q, a, b, unit)) if separation >= SEPARATION else None


def _best(found: Iterable[tuple[float, Contrast] | None]) -> Contrast | None:
    order = {q.name: i for i, q in enumerate(QUANTITIES)}
    return max((c for c in found if c is not None), default=(0.0, None),
               key=lambda sc: (min(sc[0], CLEAR), -order[sc[1].quantity.name]))[1]


def between_processes(timed: Sequence[Replicate], threshold: float) -> Contrast | None:
    """The quantity that tells processes slower than ``threshold`` (their median) from the rest."""
    slow = [r for r in timed if r.usage is not None and stats.median(r.samples_s) > threshold]
    fast = [r for r in timed if r.usage is not None and stats.median(r.samples_s) <= threshold]
    return _best(_differs(q, [getattr(r.usage, q.name) for r in slow],
                          [getattr(r.usage, q.name) for r in fast], "processes") for q in QUANTITIES
                 if all(getattr(r.usage, q.name) is not None for r in slow + fast))


def within_processes(timed: Sequence[Replicate], threshold: float) -> Contrast | None:
    """The quantity that tells samples slower than ``threshold`` from the rest."""
    by_name = {q.name: q for q in QUANTITIES}
    found = []
    for name, series in SAMPLE_SERIES.items():
        # Each window's value beside its sample's time: the windows cover the last samples.
        paired = [(t, v) for r in timed if r.usage is not None and (values := getattr(r.usage, series))
                  for t, v in zip(r.samples_s[-len(values):], values)]
        found.append(_differs(by_name[name], [v for t, v in paired if t > threshold],
                              [v for t, v in paired if t <= threshold], "samples"))
    return _best(found)


def find_modes(process_medians: Sequence[float], pooled: Sequence[float]) -> tuple[float, float] | None:
    """The centers of two clusters among the samples, or among three or more processes' medians
    (a gap of 25%), or None."""
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


def explain(timed: Sequence[Replicate], modes: tuple[float, float]) -> Contrast | None:
    """What differs between the two modes: between processes first, then between samples."""
    threshold = math.sqrt(modes[0] * modes[1])  # the geometric midpoint
    return between_processes(timed, threshold) or within_processes(timed, threshold)


#: The most bins a histogram gets; fewer for few samples (``bin_count``).
MAX_BINS = 20


@dataclass(frozen=True)
class Histogram:
    """Bins shared by every process of one cell: ``edges`` (seconds, ascending, one more than the
    bins) and, per process in the record's order, its count in each bin and its median."""

    edges: tuple[float, ...]
    counts: tuple[tuple[int, ...], ...]
    medians: tuple[float, ...]

    @property
    def bins(self) -> int:
        return len(self.edges) - 1

    @property
    def processes(self) -> int:
        return len(self.counts)

    @property
    def totals(self) -> list[int]:
        """Every process's samples in each bin together."""
        return [sum(c[i] for c in self.counts) for i in range(self.bins)]

    @property
    def samples(self) -> int:
        return sum(map(sum, self.counts))


def bin_count(n: int) -> int:
    """Bins for ``n`` samples: Rice's rule (twice the cube root), at least one, at most ``MAX_BINS``."""
    return max(1, min(MAX_BINS, math.ceil(2 * n ** (1 / 3))))


def histogram(per_process: Sequence[Sequence[float]], bins: int | None = None) -> Histogram | None:
    """Each process's samples in equal bins from the fastest to the slowest (``bin_count`` bins by
    default); None without a sample. Processes without a sample are left out."""
    kept = [s for samples in per_process if (s := [x for x in samples if math.isfinite(x)])]
    if not kept:
        return None
    k = bins if bins is not None else bin_count(sum(map(len, kept)))
    lo, hi = min(map(min, kept)), max(map(max, kept))
    if hi <= lo:  # every sample the same: one bin holds them all
        return Histogram((lo, hi), tuple((len(s),) for s in kept), tuple(stats.median(s) for s in kept))
    width = (hi - lo) / k
    edges = tuple(lo + width * i for i in range(k)) + (hi,)
    at = [Counter(min(k - 1, int((x - lo) / width)) for x in samples) for samples in kept]
    return Histogram(edges, tuple(tuple(c[i] for i in range(k)) for c in at),
                     tuple(stats.median(s) for s in kept))


def record_histogram(record: Record, bins: int | None = None) -> Histogram | None:
    """A record's histogram: its replicates' samples, a process each (None: nothing was timed)."""
    return histogram([rep.samples_s for rep in record.replicates], bins)


#: Two allocator states whose medians differ by this factor are both shown.
ALLOCATOR_DIFFERENCE = 1.05
#: Processes whose medians differ by more than this are reported.
PROCESS_SPREAD_WARN = 0.10


def aggregate(cell: Cell, replicates: Sequence[Replicate], wanted: int, rel_ci: float,
              stop: str = "") -> Record:
    """The record of a cell from its replicates so far, with its status and warnings; ``stop``
    says why it got no more processes (``policy``), "" while it may get more."""
    rec = Record(replication_stop=stop, replicates=list(replicates), **cell.to_dict())
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
    spread = rec.replicate_spread or 0.0
    medians = rec.replicate_medians_s
    warnings = list(dict.fromkeys(w for rep in timed for w in rep.warnings))
    if rec.mode == "compiled" and rec.first_call_s is not None and rec.compile_s is None:
        warnings.append("compiling not seen: the first call was no slower than the fastest later one "
                        "(a cache may have served the compiled code)")
    if len(timed) < wanted:
        warnings.append(f"measured in {len(timed)} of {wanted} processes")
    clusters = find_modes(medians, rec.samples_s)
    if clusters is not None:
        contrast = explain(timed, clusters)
        warnings.append(
            f"bimodal: samples cluster at {format_seconds(clusters[0])} and {format_seconds(clusters[1])}"
            + (f" ({contrast.sentence()})" if contrast is not None else
               " (some processes run slower for their whole life)"
               if spread > PROCESS_SPREAD_WARN else "")
        )
    elif spread > PROCESS_SPREAD_WARN and len(timed) > 1:
        contrast = between_processes(timed, stats.median(medians))
        warnings.append(f"processes disagree: their medians span {spread:.0%} ({format_seconds(min(medians))} "
                        f"to {format_seconds(max(medians))})" + (f"; {contrast.sentence()}" if contrast else ""))
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
    return allocator_states_differ(rec) and outcome(
        Point(rec.size, rec.median_s or 0.0, rec.ci_low_s, rec.ci_high_s),
        Point(rec.size, rec.other_median_s or 0.0, rec.other_ci_low_s, rec.other_ci_high_s)) != "level"


def allocator_note(rec: Record | Summary) -> str:
    """``the median is with reused memory (glibc's malloc held so); with fresh pages: 37.8 ms
    ±1.1% in 1 process (8,438 page faults per call against 0)``. No multiple of the two: one
    process a state says nothing of the variation between processes."""
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
