"""How many worker processes a cell gets: a fixed count, or more until its interval is tight enough.

With ``--processes N`` every cell gets N processes. By default (``--processes auto``, or
``MIN:MAX``; auto is 3:6) a cell gets MIN, then one more per round while the interval between its processes
(``intervals.replicate_interval``) is wider than ``--rel-ci``, fewer than MAX processes have
measured it, and the next process still fits the cell's budget (``--max-time``): the sampling of
the first MIN processes, plus the whole cost of each added one (its first call, a compilation,
warm-up and calibration included, which for a jitted gradient dwarfs the sampling), must stay
within it. So a cell costs about what it cost with a fixed MIN processes sharing the budget, and
a cell whose processes are expensive to start stops at MIN. Each process samples briefly (the
budget over MAX): between-process variation, not the samples within one process, is what limits
a cell's interval, so more short processes buy more precision than a few long ones.

The decision is a pure function of the replicates measured so far, so a resumed run decides as
the interrupted one would have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from ..model.replicate import Replicate
from ..model.timer_settings import TimerSettings
from ..numeric.intervals import replicate_interval


class Asked(Protocol):
    """What a run's options ask of replication (``RunOptions`` answers it): how many processes,
    how long and how tight each cell's measurement, and how each process samples."""

    @property
    def processes(self) -> int: ...
    @property
    def max_processes(self) -> int | None: ...
    @property
    def adaptive(self) -> bool: ...
    @property
    def max_time(self) -> float: ...
    @property
    def min_samples(self) -> int: ...
    @property
    def rel_ci(self) -> float: ...
    @property
    def target_sample(self) -> float: ...
    @property
    def warmup(self) -> float: ...
    @property
    def cold(self) -> bool: ...


#: Why a cell got no more processes (``Record.replication_stop``).
CONVERGED = "converged"  # its interval is within the target
BUDGET = "budget"  # another process's sampling would exceed the cell's budget
MOST = "max_processes"  # the most processes allowed have measured it
FIXED = "fixed"  # --processes N: the count was given
ENDED = "not timed"  # a process failed, or the cell was skipped: more would not help
DECIDED = "decided"  # every pair it is part of has its verdict
OUT_OF_REACH = "out of reach"  # its open pairs are too near 1 for the most processes to decide
UNPAIRED = "unpaired"  # the other sides of its open pairs got no more processes

EXPLAINED = {
    CONVERGED: "its interval reached the target",
    BUDGET: "its time budget ({max_time}) was spent",
    MOST: "it reached the most processes allowed",
    FIXED: "the number of processes was fixed ({processes})",
    ENDED: "it was not timed in every process (skipped or failed)",
    DECIDED: "every comparison it is part of was decided",
    OUT_OF_REACH: "the comparisons it is part of that are still open lie too near 1 for the most "
                  "processes allowed to decide them",
    UNPAIRED: "the other sides of the comparisons it is part of that are still open got no more "
              "processes, so another of its own would be compared with nothing",
}

#: A pair counts as answered when it is faster or slower, or level within this share either way.
ANSWERED_LEVEL = 0.02
#: The budget of a cell with an open pair, in times ``--max-time``, where other processes loaded
#: some of its turns and left others quiet (``decide``). Its quiet turns are few, a process's
#: verdict rests on a turn or two a side, and three processes give a t interval 4.3 standard
#: errors wide: under a tenant's bursts, 150 ms matmuls 0.87-0.90x apart stopped at 3-4
#: processes on three times the budget, undecided in most runs.
BETWEEN_BURSTS = 5
#: The share of turns that must have been quiet for the machine to count as resting between
#: bursts: a cell's budget then pays only for its quiet turns, and a case short of quiet rounds
#: takes more (``executors/turns``).
RESTED_SHARE = 0.1


def explained(stop: str) -> str:
    """Why a cell got no more processes, its options named as the caller writes them (the command
    line's ``--max-time``, the API's ``max_time``, the pytest plugin's ``--arraybench-max-time``)."""
    from ..errors import option_name, spell

    return EXPLAINED[stop].format(max_time=option_name("max_time"), processes=spell("processes", "N"))


@dataclass(frozen=True)
class Policy:
    """How many processes a cell may get; ``least == most`` is a fixed count."""

    least: int
    most: int
    rel_ci: float
    budget_s: float

    @property
    def fixed(self) -> bool:
        return self.most <= self.least


@dataclass(frozen=True)
class Decision:
    """How many processes a cell wants now, and why it stopped ("" while it may want more)."""

    wanted: int
    stop: str = ""


def sampling_s(rep: Replicate) -> float:
    """The time a replicate spent in its timed batches."""
    return sum(rep.samples_s) * (rep.number or 1)


def cost_s(rep: Replicate) -> float:
    """The whole time a replicate took: first call, warm-up, calibration and sampling."""
    return max(rep.elapsed_s or 0.0, sampling_s(rep))


def spent_s(replicates: Sequence[Replicate], least: int) -> float:
    """What a cell's budget has paid: the first ``least`` replicates' sampling, the others whole."""
    return (sum(sampling_s(r) for r in replicates[:least])
            + sum(cost_s(r) for r in replicates[least:]))


def busy_s(rep: Replicate) -> float:
    """The time of a replicate's samples taken while other processes loaded the machine."""
    return sum(rep.samples_by_load()[1]) * (rep.number or 1)


def rested(replicates: Sequence[Replicate]) -> bool:
    """Whether the machine was quiet during at least ``RESTED_SHARE`` of the turns these
    replicates took: quiet turns come between another process's bursts, so another process
    will likely find some too."""
    turns = sum(len(r.rounds or ()) for r in replicates)
    busy = sum(len(r.busy_rounds) for r in replicates)
    return turns > 0 and turns - busy >= RESTED_SHARE * turns


def decide(replicates: Sequence[Replicate], policy: Policy, open_pairs: bool | None = None,
           reachable: bool = True) -> Decision:
    """The number of processes the cell wants, given the replicates it has.

    ``open_pairs``: whether a pair the cell is part of still lacks its answer (``pairs``; None
    where it was paired with nothing). A cell whose pairs are all answered stops, however wide
    its own interval: processes go where a verdict is still open. ``reachable``: whether the
    most processes could answer one of its open pairs (``Ratio.reachable``); where none could,
    it stops too.
    """
    n = len(replicates)
    if n < policy.least:
        return Decision(policy.least)
    if policy.fixed:
        return Decision(policy.least, FIXED)
    timed = [r for r in replicates if r.timed]
    if len(timed) < n or any(r.status in ("failed", "wrong") for r in replicates):
        return Decision(n, ENDED)
    if open_pairs is False:
        return Decision(n, DECIDED)
    if open_pairs and not reachable:
        return Decision(n, OUT_OF_REACH)
    interval = replicate_interval([r.samples_s for r in timed])
    if open_pairs is None and interval.half_width <= policy.rel_ci:
        return Decision(n, CONVERGED)
    if n >= policy.most:
        return Decision(n, MOST)
    # A verdict still open may spend twice the budget: processes are what decide it, and a busy
    # machine makes each cost more; a cell with no pair to decide stops at the budget. Where other
    # processes loaded some of its turns and left others quiet, the budget (``BETWEEN_BURSTS``
    # times) pays for the quiet ones: the pairs leave the loaded turns out, so those bought
    # nothing, and another process will find quiet turns between the bursts as these did. A
    # machine loaded throughout pays for every turn, or each open cell would take the most
    # processes for nothing.
    between_bursts = bool(open_pairs) and rested(timed) and any(r.busy_rounds for r in timed)
    loaded = [busy_s(r) if between_bursts else 0.0 for r in timed]
    next_cost = sum(cost_s(r) - s for r, s in zip(timed, loaded)) / len(timed)
    budget = policy.budget_s * (BETWEEN_BURSTS if between_bursts else 2 if open_pairs else 1)
    if spent_s(timed, policy.least) - sum(loaded) + next_cost > budget:
        return Decision(n, BUDGET)
    return Decision(n + 1)


def policy_for(options: Asked) -> Policy:
    """The policy a run's options ask for."""
    most = options.max_processes if options.adaptive else options.processes
    return Policy(least=options.processes, most=most or options.processes, rel_ci=options.rel_ci,
                  budget_s=options.max_time)


def per_process(options: Asked) -> tuple[float, int]:
    """(sampling budget in seconds, fewest samples) of one process's measurement of a cell.

    A fixed count shares the cell's budget and sample floor among its processes, as always; an
    adaptive one gives each process the share of the most it may take, so that the budget can
    pay for every one of them.
    """
    count = options.max_processes if options.adaptive else options.processes
    count = count or options.processes
    return options.max_time / count, max(3, -(-options.min_samples // count))


def timer_settings(options: Asked) -> TimerSettings:
    """Each process's timer settings for the run: a cell's budget and sample floor are shared by
    its processes (``per_process``). The one source for the workers' jobs and ``results.json``."""
    budget, least = per_process(options)
    return TimerSettings(
        target_sample_s=options.target_sample,
        min_samples=least,
        budget_s=budget,
        rel_ci=options.rel_ci,
        warmup_s=options.warmup,
        cold=options.cold,
    )
