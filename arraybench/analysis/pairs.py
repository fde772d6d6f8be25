"""One verdict per pair: two configurations of one case, compared from the turns they took together.

Each round gives a paired ratio, its two turns seconds apart, so a burst slows both sides. The
process is the unit: its estimate is the median of its rounds' log ratios, and the interval is t
over the processes. Rounds in one process are not independent when load comes in waves, so one
process gives no verdict (one read 97x between a library and itself). The self-check (``TWIN``)
runs a configuration against itself: any verdict but ``level`` or ``undecided`` there is false.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Iterable, Sequence

from ..host.environments import TWIN
from ..model.cell import case_key
from ..model.results import Pair
from ..model.record import Record
from ..model.replicate import Replicate
from ..numeric.medians import chi2_upper_10, median_ci, spread_factor
from ..numeric.stopping import LEVEL_WITHIN

#: Fewest rounds a process must share for its ratio to count.
MIN_ROUNDS = 2
#: Fewest processes with ``MIN_ROUNDS`` quiet rounds each for a pair to be judged on those alone.
QUIET_PROCESSES = 3
#: Fewest processes for any verdict: the variation between processes needs two to be seen.
MIN_PROCESSES = 2
#: Loaded rounds with no quiet turns to bear them out still decide a pair whose whole interval lies
#: beyond this factor: more than load makes of one side against the other (a thread pool short of
#: a core lost 3x against one thread).
LOADED_BEYOND = 2.0


@dataclass(frozen=True)
class _ProcessRatio:
    log_ratio: float
    log_low: float
    log_high: float
    rounds: int


def _process_ratio(a: Replicate, b: Replicate, quiet: bool) -> _ProcessRatio | None:
    """One process's paired log ratio from the rounds both sides sampled in (``quiet``: unloaded ones)."""
    skip = set(a.busy_rounds) | set(b.busy_rounds) if quiet else set()
    b_at = {r: s for s, r in reversed(list(zip(b.samples_s, b.rounds)))}  # a round's first sample
    logs = [math.log(x / b_at[r]) for x, r in zip(a.samples_s, a.rounds)
            if r in b_at and r not in skip and x > 0 and b_at[r] > 0]
    if len(logs) < MIN_ROUNDS:
        return None
    low, high = median_ci(logs)
    return _ProcessRatio(statistics.median(logs), low, high, len(logs))


def _quiet_sides_ratio(a: Replicate, b: Replicate) -> _ProcessRatio | None:
    """One process's log ratio from each side's quiet turns, paired by process: A's fastest quiet
    sample over B's, of as many turns each. Where bursts last about a round, a round with both
    turns quiet is rare while each side's quiet turns are not; the fastest, as timeit advises, as
    a burst too short to mark a turn busy only adds time. The spread between processes says how sure."""
    xs = [x for x in a.samples_by_load()[0] if x > 0]
    ys = [y for y in b.samples_by_load()[0] if y > 0]
    m = min(len(xs), len(ys))
    if not m:
        return None
    log = math.log(min(xs[:m]) / min(ys[:m]))
    return _ProcessRatio(log, log, log, m)


def verdict(low: float, high: float) -> str:
    """The verdict of a ratio A/B whose 95% interval is [low, high] (below 1: A takes less time)."""
    level = low >= 1.0 / (1.0 + LEVEL_WITHIN) and high <= 1.0 + LEVEL_WITHIN
    return "faster" if high < 1.0 else "slower" if low > 1.0 else "level" if level else "undecided"


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
    #: False where the interval may not be read as a verdict: undecided, ``method`` says why.
    judged: bool = True

    @property
    def verdict(self) -> str:
        return verdict(self.low, self.high) if self.judged else "undecided"

    def within(self, share: float) -> bool:
        """Whether the whole interval lies within ``share`` of 1 either way."""
        return self.low >= 1.0 / (1.0 + share) and self.high <= 1.0 + share

    def reachable(self, most: int, level: float) -> bool:
        """Whether ``most`` processes could still decide an undecided pair or find it within
        ``level`` of 1: a conditional-power projection, as a sequential trial stops for futility.
        The t interval narrows as t(k-1)/sqrt(k); the pair is out of reach where, at ``most``, the
        ratio would lie within half the projected half-width of 1 (about a one-in-ten chance) and
        the interval still wider than ``level``. The spread is taken as small as its own scatter
        allows (the lower 90% bound from k-1 degrees of freedom). Fewer than three processes, or
        loaded rounds that quiet ones may yet replace, are always reachable."""
        k = self.processes
        if k < 3 or most <= k or self.loaded:
            return True
        half = math.log(self.high / self.low) / 2
        smallest = math.sqrt((k - 1) / chi2_upper_10(k - 1))
        projected = half * smallest * spread_factor(most) / spread_factor(k) * math.sqrt(k / most)
        return abs(math.log(self.ratio)) >= projected / 2 or projected <= math.log1p(level)


def _interval(per_process: Sequence[_ProcessRatio]) -> tuple[float, float, float, str]:
    """(center, low, high, how) of the log ratio: t on k - 1 degrees of freedom, never narrower than
    the processes' own intervals combined."""
    k = len(per_process)
    logs = [p.log_ratio for p in per_process]
    center = statistics.fmean(logs)
    if k < 2:  # never judged: its own interval only
        return (center, per_process[0].log_low, per_process[0].log_high,
                "1 process: not judged (its rounds say nothing of the spread between processes)")
    half = spread_factor(k) * statistics.stdev(logs) / math.sqrt(k)
    own = math.sqrt(sum(((p.log_high - p.log_low) / 2) ** 2 for p in per_process)) / k
    return center, center - max(half, own), center + max(half, own), f"t over {k} processes"


def _quiet_ratios(both: Sequence[tuple[Replicate, Replicate]], least: int) -> tuple[list[_ProcessRatio], str] | None:
    """The processes' ratios from quiet turns, paired by round, else by process, where ``least``
    processes have them."""
    for how, ratio in (("rounds", lambda x, y: _process_ratio(x, y, quiet=True)), ("sides", _quiet_sides_ratio)):
        found = [p for p in (ratio(x, y) for x, y in both) if p is not None]
        if len(found) >= least:
            return found, how
    return None


def paired_ratio(a: Sequence[Replicate], b: Sequence[Replicate]) -> Ratio | None:
    """A's time over B's from their replicates' shared rounds, index by index; None where they
    took no turns together. Loaded rounds are left out where ``QUIET_PROCESSES`` processes keep
    quiet ones (a burst does not slow two threads and one alike), else each side's quiet turns are
    paired by process; else every round counts, and the verdict stands only where the quiet turns
    of ``MIN_PROCESSES`` processes bear it out. One process is never judged."""
    both = [(x, y) for x, y in zip(a, b) if x is not None and y is not None and x.rounds and y.rounds
            and x.status == "ok" and y.status == "ok"]
    every = [p for p in (_process_ratio(x, y, quiet=False) for x, y in both) if p is not None]
    if not every:
        return None
    per_process, note, loaded, judged = every, "", False, len(every) >= MIN_PROCESSES
    if any(x.busy_rounds or y.busy_rounds for x, y in both):
        shared = sum(p.rounds for p in every)
        found = _quiet_ratios(both, QUIET_PROCESSES)
        if found is not None:
            per_process = found[0]
            note = (f"; {shared - sum(p.rounds for p in per_process)} of {shared} rounds left out: other "
                    "processes loaded the machine" if found[1] == "rounds" else
                    "; each side's fastest quiet turn, paired by process: too few rounds had both "
                    "sides' turns quiet while other processes loaded the machine")
        else:
            busy = sum(len((set(x.busy_rounds) | set(y.busy_rounds)) & set(x.rounds or ()) & set(y.rounds or ()))
                       for x, y in both)
            loaded = True
            note = f"; {busy} of {shared} rounds under other processes' load kept: too few quiet ones"
            quiet = _quiet_ratios(both, MIN_PROCESSES)
            if judged:
                _, lo, hi, _ = _interval(every)
                said = verdict(math.exp(lo), math.exp(hi))
                heard = None if quiet is None else verdict(*map(math.exp, _interval(quiet[0])[1:3]))
                # Beyond what load makes of a ratio, loaded rounds tell the direction where the
                # quiet turns say nothing against it.
                beyond = lo > math.log(LOADED_BEYOND) or hi < -math.log(LOADED_BEYOND)
                if said != "undecided" and heard != said and not (heard in (None, "undecided") and beyond):
                    judged = False
                    note += (f"; not judged: the loaded rounds read {said}, the quiet turns of "
                             f"{len(quiet[0])} processes {heard}" if quiet is not None else
                             "; not judged: too few quiet turns to bear out what the loaded rounds read")
    k = len(per_process)
    center, low, high, method = _interval(per_process)
    return Ratio(math.exp(center), math.exp(low), math.exp(high), k, sum(p.rounds for p in per_process),
                 method + note, loaded, judged and k >= MIN_PROCESSES)


def pair(a: Record, b: Record) -> Pair | None:
    """The verdict of ``a`` against ``b`` (a's time over b's); None where they took no turns together."""
    found = paired_ratio(a.replicates, b.replicates) if case_key(a.cell) == case_key(b.cell) else None
    return None if found is None else Pair(
        a=a.cell, b=b.cell, a_label=a.config_label, b_label=b.config_label, ratio=found.ratio,
        ci_low=found.low, ci_high=found.high, verdict=found.verdict, processes=found.processes,
        rounds=found.rounds, method=found.method)


def pairs_of(records: Iterable[Record]) -> list[Pair]:
    """Every pair of ``ok`` records of one case that took turns together, in record order."""
    by_case: dict[str, list[Record]] = {}
    for r in records:
        if r.status == "ok" and any(rep.rounds for rep in r.replicates):
            by_case.setdefault(case_key(r.cell), []).append(r)
    return [p for group in by_case.values() for a, b in combinations(group, 2)
            if (p := pair(a, b)) is not None]


def against_regressions(pairs: Iterable[Pair], here: str, limit: float) -> tuple[list[Pair], list[Pair]]:
    """The gate of a run against a ref (``--against``): (the pairs of a library against itself
    whose side in environment ``here`` is slower by more than ``limit``; those undecided)."""
    slower, undecided = [], []
    for p in pairs:
        if (p.a.environment == here) == (p.b.environment == here):
            continue  # both sides in one environment: two libraries, not two versions of the code
        if replace(p.a, environment="") != replace(p.b, environment=""):
            continue
        mine = p if p.a.environment == here else p.reversed()
        if mine.verdict == "slower" and mine.ratio > 1 + limit:
            slower.append(mine)
        elif mine.verdict == "undecided":
            undecided.append(mine)
    return slower, undecided


def split(records: Iterable[Record]) -> tuple[list[Record], list[Record]]:
    """(the run's own records, the self-check twin's)."""
    records = list(records)
    return [r for r in records if r.environment != TWIN], [r for r in records if r.environment == TWIN]


def twin_pairs(twins: Sequence[Record], own: Sequence[Record], original: str) -> list[Pair]:
    """Each twin against its original (the same configuration in environment ``original``)."""
    by_key = {r.key: r for r in own}
    sames = ((t, by_key.get(replace(t.cell, environment=original).key)) for t in twins)
    return [p for t, same in sames if same is not None and t.status == same.status == "ok"
            and (p := pair(t, same)) is not None]


@dataclass(frozen=True)
class SelfCheck:
    """What the A/A pairs of a run say of its verdicts."""

    pairs: tuple[Pair, ...]

    @property
    def false(self) -> list[Pair]:
        """The A/A pairs called faster or slower: each a false verdict."""
        return [p for p in self.pairs if p.verdict in ("faster", "slower")]

    @property
    def level(self) -> int:
        return sum(1 for p in self.pairs if p.verdict == "level")

    @property
    def worst(self) -> float:
        """The largest factor a false verdict put between a configuration and its twin."""
        return max((max(p.ratio, 1 / p.ratio) for p in self.false), default=1.0)

    @property
    def drift(self) -> float:
        """The median factor between a configuration and its twin (1.0: none)."""
        return math.exp(statistics.median(abs(math.log(p.ratio)) for p in self.pairs)) if self.pairs else 1.0
