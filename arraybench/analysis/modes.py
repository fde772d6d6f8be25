"""A cell's samples as a distribution: in bins per process, and what tells its modes apart.

Every process is counted in the same bins, so one that ran slow for its whole life shows as its own
hump. When the times fall into two clusters (``stats.two_clusters``), the counters read around the
samples (``usage.Usage``) name the quantity that moved with the time, between processes first, then
between samples, where the groups differ by more than its noise and by an amount that matters.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from ..model.record import Record
from ..model.replicate import Replicate
from ..numeric import medians as stats


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
    candidates = [c for c in found if c is not None]
    if not candidates:
        return None
    order = {q.name: i for i, q in enumerate(QUANTITIES)}
    return max(candidates, key=lambda sc: (min(sc[0], CLEAR), -order[sc[1].quantity.name]))[1]


def between_processes(timed: Sequence[Replicate], threshold: float) -> Contrast | None:
    """The quantity that tells processes slower than ``threshold`` (their median) from the rest."""
    slow = [r for r in timed if r.usage is not None and stats.median(r.samples_s) > threshold]
    fast = [r for r in timed if r.usage is not None and stats.median(r.samples_s) <= threshold]
    return _best(_differs(q, [getattr(r.usage, q.name) for r in slow],
                          [getattr(r.usage, q.name) for r in fast], "processes") for q in QUANTITIES
                 if all(getattr(r.usage, q.name) is not None for r in slow + fast))


def within_processes(timed: Sequence[Replicate], threshold: float) -> Contrast | None:
    """The quantity that tells samples slower than ``threshold`` from the rest."""
    found = []
    by_name = {q.name: q for q in QUANTITIES}
    for name, series in SAMPLE_SERIES.items():
        slow: list[float] = []
        fast: list[float] = []
        for r in timed:
            values = getattr(r.usage, series) if r.usage is not None else []
            if not values:
                continue
            times = r.samples_s[-len(values):]  # the windows cover the last samples
            for t, v in zip(times, values):
                (slow if t > threshold else fast).append(v)
        found.append(_differs(by_name[name], slow, fast, "samples"))
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


def bin_count(n: int, most: int = MAX_BINS) -> int:
    """Bins for ``n`` samples: Rice's rule (twice the cube root), at least one, at most ``most``."""
    return max(1, min(most, math.ceil(2 * n ** (1 / 3))))


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
    counts = []
    for samples in kept:
        row = [0] * k
        for x in samples:
            row[min(k - 1, int((x - lo) / width))] += 1
        counts.append(tuple(row))
    return Histogram(edges, tuple(counts), tuple(stats.median(s) for s in kept))


def record_histogram(record: Record, bins: int | None = None) -> Histogram | None:
    """A record's histogram: its replicates' samples, a process each (None: nothing was timed)."""
    return histogram([rep.samples_s for rep in record.replicates], bins)
