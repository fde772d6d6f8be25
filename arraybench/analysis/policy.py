"""When measuring stops, beyond a cell's own sampling: who takes a round's turn, and how many
worker processes a cell gets. Every threshold these rules read is in ``numeric/stopping``, with
why it has its value; a cell's own sampling rule runs in its worker (``worker/sampling``).

Turns: a case's cells take one sample a round while their own stopping rules go on. A cell whose
rule says it is done may pair on for a while beside cells of its case that still sample, so that
their pairs have rounds in common (``pairs_on``, ``takes_turn``, ``short_of_quiet``).

Processes: with ``--processes N`` every cell gets N. By default (``--processes auto``, or
``MIN:MAX``; auto is 3:6) a cell gets MIN, then one more per round while the interval between its
processes (``medians.replicate_interval``) is wider than ``--rel-ci``, fewer than MAX processes
have measured it, and the next process still fits the cell's budget (``--max-time``): the sampling
of the first MIN processes, plus the whole cost of each added one (its first call, a compilation,
warm-up and calibration included, which for a jitted gradient dwarfs the sampling), must stay
within it. So a cell costs about what it cost with a fixed MIN processes sharing the budget, and
a cell whose processes are expensive to start stops at MIN. Each process samples briefly (the
budget over MAX): between-process variation, not the samples within one process, is what limits
a cell's interval, so more short processes buy more precision than a few long ones. The cells of
one case decide together (``decide_case``): a process for a pair is wanted on both of its sides.

Each decision is a pure function of what was measured so far, so a resumed run decides as the
interrupted one would have.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Container, Mapping, Protocol, Sequence

from ..host.environments import TWIN
from ..model.cell import Cell, Config
from ..model.replicate import Replicate
from ..model.timer_settings import TimerSettings
from ..numeric.stopping import (ANSWERED_LEVEL, BETWEEN_BURSTS, LEAST_SAMPLES_PER_PROCESS, OPEN_BUDGET,
                                PAIR_ON_TURNS, PAIR_ON_WITHIN, QUIET_ROUNDS, QUIET_STRETCH, RESTED_SHARE,
                                STRETCH_S)
from ..numeric.medians import replicate_interval
from .pairs import paired_ratio


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
    # A verdict still open may spend ``OPEN_BUDGET`` times the budget; a cell with no pair to
    # decide stops at the budget. Where other processes loaded some of its turns and left others
    # quiet, the budget (``BETWEEN_BURSTS`` times) pays for the quiet ones: the pairs leave the
    # loaded turns out, so those bought nothing, and another process will find quiet turns between
    # the bursts as these did. A machine loaded throughout pays for every turn, or each open cell
    # would take the most processes for nothing.
    between_bursts = bool(open_pairs) and rested(timed) and any(r.busy_rounds for r in timed)
    loaded = [busy_s(r) if between_bursts else 0.0 for r in timed]
    next_cost = sum(cost_s(r) - s for r, s in zip(timed, loaded)) / len(timed)
    budget = policy.budget_s * (BETWEEN_BURSTS if between_bursts else OPEN_BUDGET if open_pairs else 1)
    if spent_s(timed, policy.least) - sum(loaded) + next_cost > budget:
        return Decision(n, BUDGET)
    return Decision(n + 1)


def decide_case(case: list[Cell], replicates: Mapping[str, Mapping[int, Replicate]], policy: Policy,
                unavailable: Container[Config], original: str) -> dict[str, Decision]:
    """Each decision of the cells of one case, taken together, given the ``replicates`` measured
    so far (by cell key, then index), the configurations ``unavailable`` here, and the environment
    the self-check's twin copies (``original``): a cell that wants another process for its open
    pairs gets none where none of those pairs' other sides gets one too (``UNPAIRED``), as that
    process would take turns with nobody it is to be compared with. Stops only spread, so this
    ends."""
    have = {c.key: replicates.get(c.key, {}) for c in case}
    partners: dict[str, list[Cell]] = {}
    decisions: dict[str, Decision] = {}
    # The self-check's twin takes part in no verdict: it gets what its original gets, so that
    # the pair of the two is measured as every other pair is.
    twins = [c for c in case if c.environment == TWIN]
    judged = [c for c in case if c.environment != TWIN]
    for c in judged:
        open_pairs, reachable, partners[c.key] = _open_pairs(c, judged, have, unavailable, policy.most)
        decisions[c.key] = decide([r for _, r in sorted(have[c.key].items())], policy, open_pairs, reachable)
    changed = True
    while changed:
        changed = False
        for c in judged:
            n, wanted = len(have[c.key]), decisions[c.key]
            if wanted.stop or wanted.wanted <= n or n < policy.least or not partners[c.key]:
                continue
            # A side that has not stopped (it wants more, or is still to measure the index this
            # one has) may still pair; so may one that has the next index.
            if not any(not decisions[p.key].stop or n in have[p.key] for p in partners[c.key]):
                decisions[c.key] = Decision(n, UNPAIRED)
                changed = True
    for t in twins:
        same = next((c for c in judged if c.config == (t.backend, t.device, original)
                     and c.mode == t.mode), None)
        decisions[t.key] = decisions[same.key] if same is not None else \
            decide([r for _, r in sorted(have[t.key].items())], policy, None, False)
    return decisions


def _open_pairs(cell: Cell, case: list[Cell], have: Mapping[str, Mapping[int, Replicate]],
                unavailable: Container[Config], most: int) -> tuple[bool | None, bool, list[Cell]]:
    """(Whether a pair ``cell`` is part of still lacks its answer, None where it has no pair;
    whether ``most`` processes could answer one of those, ``Ratio.reachable``; the other sides of
    those that could)."""
    mine = have.get(cell.key, {})
    answered: list[bool] = []
    reachable: list[Cell] = []
    for other in case:
        if other is cell or other.config in unavailable:
            continue
        theirs = have.get(other.key, {})
        common = sorted(set(mine) & set(theirs))
        found = paired_ratio([mine[i] for i in common], [theirs[i] for i in common])
        if found is not None:
            answered.append(found.verdict in ("faster", "slower") or found.within(ANSWERED_LEVEL))
            if not answered[-1] and found.reachable(most, ANSWERED_LEVEL):
                reachable.append(other)
    return (None if not answered else not all(answered)), bool(reachable), reachable


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
    return options.max_time / count, max(LEAST_SAMPLES_PER_PROCESS, -(-options.min_samples // count))


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


def short_of_quiet(quiet: int, spent_s: float, rested: int, rounds: int) -> bool:
    """Whether a case whose rounds took ``spent_s`` and found ``quiet`` of them free of other
    processes' load takes turns for longer, where ``rested`` of the ``rounds`` of every case so far
    were quiet. A case none of whose rounds the machine left alone would stay short of them: only
    one that found a quiet round is likely to find more in a few more rounds."""
    return 0 < quiet < QUIET_ROUNDS and spent_s < STRETCH_S and rested >= RESTED_SHARE * max(rounds, 1)


def pairs_on(mine: Sequence[float], sampling: Sequence[Sequence[float]], short_of_quiet: bool = False) -> bool:
    """Whether a cell done by its own rule, its samples so far ``mine`` (seconds per call), takes
    the next round's turn beside ``sampling``, the samples so far of its case's cells that still
    sample by their own rule.

    It pairs on with one whose calls take within ``PAIR_ON_WITHIN`` of its own time (no samples
    yet: near): a 110 ms NumPy gradient's pairs with 2 ms ones are decided by the rounds they
    have, however long the 2 ms ones' own intervals stay open. Where its case is
    ``short_of_quiet``, it pairs on with every cell of its case, done or not.
    """
    def near(other: Sequence[float]) -> bool:
        if not mine or not other:
            return True
        x, y = statistics.median(mine), statistics.median(other)
        return max(x, y) < PAIR_ON_WITHIN * min(x, y)

    return short_of_quiet or any(near(other) for other in sampling)


def takes_turn(extra: bool, taken: int, done_at: int | None, short_of_quiet: bool = False) -> bool:
    """Whether a cell that took ``taken`` turns, its own sampling done after ``done_at`` of them
    (None: not done), takes the next round's turn.

    A cell done by its own rule pairs on with its case's others for ``PAIR_ON_TURNS`` times the
    turns it took, at most; where its case is ``short_of_quiet``, ``QUIET_STRETCH`` times. A cell
    in the other allocator state (``extra``) is paired with nothing: it stops when it is done.
    """
    if done_at is None:
        return True
    return not extra and taken < (QUIET_STRETCH if short_of_quiet else PAIR_ON_TURNS) * done_at
