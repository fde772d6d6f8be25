"""A cell's samples in bins, per process: the numbers a histogram draws (rendering draws them).

Every process of a cell is counted in the same bins, so that a process that ran slow for its whole
life shows as its own hump beside the others: the reason the process, not the sample, is the unit
that repeats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median
from typing import Sequence

from ..model.record import Record

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
    return max(1, min(most, math.ceil(2 * n ** (1 / 3)))) if n > 0 else 1


def histogram(per_process: Sequence[Sequence[float]], bins: int | None = None) -> Histogram | None:
    """The samples of each process (seconds per call) in equal bins from the fastest sample to the
    slowest; ``bins`` by default from the number of samples (``bin_count``). None without a
    sample. Processes without a sample are left out (they measured nothing to show)."""
    kept = [[x for x in samples if math.isfinite(x)] for samples in per_process]
    kept = [s for s in kept if s]
    if not kept:
        return None
    n = sum(map(len, kept))
    k = bins if bins is not None else bin_count(n)
    if k < 1:
        raise ValueError(f"bins must be at least 1, not {k}")
    lo, hi = min(map(min, kept)), max(map(max, kept))
    if hi <= lo:  # every sample the same: one bin holds them all
        return Histogram((lo, hi), tuple((len(s),) for s in kept), tuple(median(s) for s in kept))
    width = (hi - lo) / k
    edges = tuple(lo + width * i for i in range(k)) + (hi,)
    counts = []
    for samples in kept:
        row = [0] * k
        for x in samples:
            row[min(k - 1, int((x - lo) / width))] += 1
        counts.append(tuple(row))
    return Histogram(edges, tuple(counts), tuple(median(s) for s in kept))


def record_histogram(record: Record, bins: int | None = None) -> Histogram | None:
    """A record's histogram: its replicates' samples, a process each (None: nothing was timed)."""
    return histogram([rep.samples_s for rep in record.replicates], bins)
