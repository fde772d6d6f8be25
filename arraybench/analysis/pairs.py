"""One verdict per pair: two configurations of one case, compared from the turns they took together.

Where a run's configurations took turns (``executors/turns``), the samples of one round of one case
were taken seconds apart at most, in separate processes, one running at a time. Each round gives a
paired ratio (A's sample over B's), and a burst of load that slows a round slows both sides of it,
so the ratio keeps what the machine's drift would blur. The model is the one of
``intervals.replicate_interval``, on ratios: the worker process is the unit that repeats, and
within a process the median of its rounds' log ratios is its estimate, with the distribution-free
interval of that median. Across processes:

- three or more: Student's t over the processes' log ratios, never narrower than their own
  intervals combined (as for a cell's time);
- two: no t interval (one degree of freedom makes it 12.7 standard errors wide, or meaningless):
  the span of the two processes' own intervals;
- one: that process's own interval, which says nothing of the variation between processes.

The verdict reads the interval and nothing else: ``faster`` or ``slower`` where it excludes 1,
``level`` where it lies within ``LEVEL_WITHIN`` of 1 either way, ``undecided`` otherwise. Every
table, finding and report reads these verdicts; none judges "faster" another way.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from itertools import combinations
from typing import Iterable, Sequence

from ..model.cell import case_key
from ..model.pair import Pair
from ..model.record import Record
from ..model.replicate import Replicate
from ..numeric.medians import median_ci
from .intervals import CONFIDENCE, spread_factor

#: A pair whose interval lies within this share of 1 either way is level: neither is faster by
#: more than this, with 95% confidence.
LEVEL_WITHIN = 0.05

#: Fewest rounds a process must share for its ratio to count.
MIN_ROUNDS = 2
#: Fewest processes with ``MIN_ROUNDS`` quiet rounds each for a pair to be judged on its quiet
#: rounds alone: a t interval's fewest.
QUIET_PROCESSES = 3


@dataclass(frozen=True)
class _ProcessRatio:
    log_ratio: float
    log_low: float
    log_high: float
    rounds: int


def _process_ratio(a: Replicate, b: Replicate, quiet: bool) -> _ProcessRatio | None:
    """One process's paired log ratio from the rounds both sides sampled in (``quiet``: only
    those during which no other process loaded the machine)."""
    assert a.rounds is not None and b.rounds is not None
    skip = set(a.busy_rounds) | set(b.busy_rounds) if quiet else set()
    b_at: dict[int, float] = {}
    for s, r in zip(b.samples_s, b.rounds):
        b_at.setdefault(r, s)
    logs = [math.log(x / b_at[r]) for x, r in zip(a.samples_s, a.rounds)
            if r in b_at and r not in skip and x > 0 and b_at[r] > 0]
    if len(logs) < MIN_ROUNDS:
        return None
    low, high = median_ci(logs, CONFIDENCE)
    return _ProcessRatio(statistics.median(logs), low, high, len(logs))


def _quiet_sides_ratio(a: Replicate, b: Replicate) -> _ProcessRatio | None:
    """One process's log ratio from each side's quiet turns, paired by process rather than by
    round: A's fastest quiet sample over B's. Where a tenant's bursts are about as long as a
    round (three 150 ms matmuls under load), a round whose two turns were both quiet is rare,
    while each side's quiet turns, taken in the same seconds, are not. The fastest, as timeit
    advises for a loaded machine: a burst that began in a turn's last moments (too short to
    make it busy) only ever adds time. Its own interval is its point: with a turn or two a
    side, the spread between processes is what says how sure."""
    xs = [x for x in a.samples_by_load()[0] if x > 0]
    ys = [y for y in b.samples_by_load()[0] if y > 0]
    if not xs or not ys:
        return None
    log = math.log(min(xs) / min(ys))
    return _ProcessRatio(log, log, log, min(len(xs), len(ys)))


def verdict(low: float, high: float) -> str:
    """``faster``, ``slower``, ``level`` or ``undecided``, for a ratio A/B whose 95% interval is
    [low, high] (below 1: A takes less time)."""
    if high < 1.0:
        return "faster"
    if low > 1.0:
        return "slower"
    if low >= 1.0 / (1.0 + LEVEL_WITHIN) and high <= 1.0 + LEVEL_WITHIN:
        return "level"
    return "undecided"


@dataclass(frozen=True)
class Ratio:
    """A paired ratio (A's time over B's) with its 95% interval and how it was formed."""

    ratio: float
    low: float
    high: float
    processes: int
    rounds: int
    method: str
    #: Rounds under other processes' load were kept: too few processes had quiet ones.
    loaded: bool = False

    @property
    def verdict(self) -> str:
        return verdict(self.low, self.high)

    def within(self, share: float) -> bool:
        """Whether the whole interval lies within ``share`` of 1 either way."""
        return self.low >= 1.0 / (1.0 + share) and self.high <= 1.0 + share

    def reachable(self, most: int, level: float) -> bool:
        """Whether ``most`` processes could still answer an undecided pair: decide it, or find it
        within ``level`` of 1 either way. A conditional-power projection, as a sequential trial
        stops for futility: the t interval narrows as t(k-1)/sqrt(k) with more processes, and the
        pair is out of reach where, at ``most``, the ratio found would lie within half the
        projected half-width of 1 (about a one-in-ten chance of deciding, were the ratio found
        the true one) and the interval would still be wider than ``level``. A pair whose
        interval kept rounds under other processes' load is always reachable: more processes may
        bring the quiet rounds that judge it without them. The projection takes
        the processes' spread as small as their own scatter allows (the lower 90% bound of a
        standard deviation from k-1 degrees of freedom): three processes' spread is itself only
        known to a factor of several. Fewer than three processes make no t interval: always
        reachable."""
        k = self.processes
        if k < 3 or most <= k or self.loaded:
            return True
        # scipy.special's chi-squared quantile, imported here as spread_factor imports its t.
        from scipy.special import chdtri

        half = math.log(self.high / self.low) / 2
        smallest = math.sqrt((k - 1) / chdtri(k - 1, 0.1))
        projected = half * smallest * spread_factor(most) / spread_factor(k) * math.sqrt(k / most)
        return abs(math.log(self.ratio)) >= projected / 2 or projected <= math.log1p(level)


def paired_ratio(a: Sequence[Replicate], b: Sequence[Replicate]) -> Ratio | None:
    """A's time over B's from their replicates' shared rounds, replicate index by index (the
    process is the unit); None where they took no turns together.

    Rounds during which other processes loaded the machine (``Replicate.busy_rounds``) are left
    out where ``QUIET_PROCESSES`` processes keep enough quiet rounds: a burst does not slow a
    library on two threads and one on one thread alike, so those rounds pair times that the
    machine alone would not give. Where too few processes keep two quiet rounds, each process
    pairs its two sides' quiet turns (``_quiet_sides_ratio``), where that leaves
    ``QUIET_PROCESSES``; else every round counts, and ``method`` says so.
    """
    both = [(x, y) for x, y in zip(a, b) if x is not None and y is not None and x.rounds and y.rounds
            and x.status == "ok" and y.status == "ok"]
    every = [p for p in (_process_ratio(x, y, quiet=False) for x, y in both) if p is not None]
    if not every:
        return None
    per_process, note, loaded = every, "", False
    if any(x.busy_rounds or y.busy_rounds for x, y in both):
        quiet = [p for p in (_process_ratio(x, y, quiet=True) for x, y in both) if p is not None]
        shared = sum(p.rounds for p in every)
        if len(quiet) >= QUIET_PROCESSES:
            per_process = quiet
            note = f"; {shared - sum(p.rounds for p in quiet)} of {shared} rounds left out: other processes loaded the machine"
        elif len(sides := [p for p in (_quiet_sides_ratio(x, y) for x, y in both) if p is not None]) \
                >= QUIET_PROCESSES:
            per_process = sides
            note = ("; each side's fastest quiet turn, paired by process: too few rounds had both "
                    "sides' turns quiet while other processes loaded the machine")
        else:
            note, loaded = "; rounds under other processes' load kept: too few quiet ones", True
    k = len(per_process)
    logs = [p.log_ratio for p in per_process]
    center = statistics.fmean(logs)
    if k >= 3:
        half = spread_factor(k) * statistics.stdev(logs) / math.sqrt(k)
        # Never narrower than the processes' own uncertainty, combined.
        own = math.sqrt(sum(((p.log_high - p.log_low) / 2) ** 2 for p in per_process)) / k
        half = max(half, own)
        low, high = center - half, center + half
        method = f"t over {k} processes"
    elif k == 2:
        low, high = min(p.log_low for p in per_process), max(p.log_high for p in per_process)
        method = "span of 2 processes' intervals"
    else:
        low, high = per_process[0].log_low, per_process[0].log_high
        method = "1 process: its rounds only"
    return Ratio(math.exp(center), math.exp(low), math.exp(high), k, sum(p.rounds for p in per_process),
                 method + note, loaded)


def pair(a: Record, b: Record) -> Pair | None:
    """The verdict of ``a`` against ``b`` (ratio: a's time over b's), from their replicates'
    shared rounds; None where they took no turns together."""
    found = paired_ratio(a.replicates, b.replicates)
    if found is None:
        return None
    return Pair(case=case_key(a.cell), a=a.key, b=b.key, a_label=a.config_label, b_label=b.config_label,
                ratio=found.ratio, ci_low=found.low, ci_high=found.high, verdict=found.verdict,
                processes=found.processes, rounds=found.rounds, method=found.method)


def pairs_of(records: Iterable[Record]) -> list[Pair]:
    """Every pair of ``ok`` records of one case that took turns together, in record order."""
    by_case: dict[str, list[Record]] = {}
    for r in records:
        if r.status == "ok" and any(rep.rounds for rep in r.replicates):
            by_case.setdefault(case_key(r.cell), []).append(r)
    out = []
    for group in by_case.values():
        for a, b in combinations(group, 2):
            found = pair(a, b)
            if found is not None:
                out.append(found)
    return out



def against_regressions(pairs: Iterable[Pair], here: str, limit: float) -> tuple[list[Pair], list[Pair]]:
    """The gate of a run against a ref (``--against``): (the pairs whose work-tree side, the
    environment ``here``, is slower than the ref's by more than ``limit`` (0.1: 10%) with 95%
    confidence; the pairs it could not decide). Only a library against itself counts."""
    slower, undecided = [], []
    suffix = f"[{here}]"
    for p in pairs:
        if p.a.endswith(suffix) == p.b.endswith(suffix):
            continue  # both sides in one environment: two libraries, not two versions of the code
        if p.a.split("[")[0] != p.b.split("[")[0]:
            continue
        mine = p if p.a.endswith(suffix) else p.reversed()
        if mine.verdict == "slower" and mine.ratio > 1 + limit:
            slower.append(mine)
        elif mine.verdict == "undecided":
            undecided.append(mine)
    return slower, undecided
