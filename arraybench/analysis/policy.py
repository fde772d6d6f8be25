"""When measuring stops beyond a cell's own sampling, and what a run still lacks (``RunState``).

Turns: a cell done by its own rule may pair on beside its case's cells still sampling. Processes:
``MIN:MAX`` gives MIN, then one more while a pair it is in is open (or its interval wide) and the
next fits the budget; between-process variation limits an interval, so each samples briefly.
Each decision is a pure function of what was measured, so a resumed run decides alike.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Container, Mapping, Sequence

from ..host.environments import TWIN, twin_of
from ..model.cell import Cell, Config, case_key
from ..model.journal import JournalState
from ..model.options import RunOptions
from ..model.replicate import Replicate, TimerSettings
from ..numeric.stopping import (LEVEL_WITHIN, BETWEEN_BURSTS, LEAST_SAMPLES_PER_PROCESS, OPEN_BUDGET,
                                PAIR_ON_TURNS, PAIR_ON_WITHIN, QUIET_ROUNDS, QUIET_STRETCH, RESTED_SHARE,
                                STRETCH_S)
from ..numeric.medians import replicate_interval
from .pairs import paired_ratio


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
    """Why a cell got no more processes, its options named as the caller writes them."""
    from ..errors import option_name, spell

    return EXPLAINED[stop].format(max_time=option_name("max_time"), processes=spell("processes", "N"))


@dataclass(frozen=True)
class Policy:
    """How many processes a cell may get; ``least == most`` is a fixed count."""

    least: int
    most: int
    rel_ci: float
    budget_s: float


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


def rested(replicates: Sequence[Replicate]) -> bool:
    """Whether at least ``RESTED_SHARE`` of these replicates' turns were quiet: quiet turns come
    between bursts, so another process will likely find some too."""
    turns = sum(len(r.rounds or ()) for r in replicates)
    busy = sum(len(r.busy_rounds) for r in replicates)
    return turns > 0 and turns - busy >= RESTED_SHARE * turns


def decide(replicates: Sequence[Replicate], policy: Policy, open_pairs: bool | None = None,
           reachable: bool = True) -> Decision:
    """The number of processes the cell wants, given its replicates. ``open_pairs``: whether a pair
    of its still lacks its answer (None: it has none); processes go where a verdict is open, so one
    whose pairs are answered, or out of the most processes' reach (``reachable``), stops, however
    wide its own interval."""
    n = len(replicates)
    if n < policy.least:
        return Decision(policy.least)
    if policy.most <= policy.least:
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
    # An open verdict may spend ``OPEN_BUDGET`` times the budget. Where load left some turns
    # quiet, the budget (``BETWEEN_BURSTS`` times) pays for those alone: the pairs leave loaded
    # turns out, and another process will find quiet ones between the bursts too. A machine
    # loaded throughout pays for every turn, or each open cell would take the most processes.
    between_bursts = bool(open_pairs) and rested(timed) and any(r.busy_rounds for r in timed)
    loaded = [sum(r.samples_by_load()[1]) * (r.number or 1) if between_bursts else 0.0 for r in timed]
    next_cost = sum(cost_s(r) - s for r, s in zip(timed, loaded)) / len(timed)
    budget = policy.budget_s * (BETWEEN_BURSTS if between_bursts else OPEN_BUDGET if open_pairs else 1)
    # The budget pays the first ``least`` processes' sampling, and every later process whole.
    spent = sum(map(sampling_s, timed[:policy.least])) + sum(map(cost_s, timed[policy.least:]))
    if spent - sum(loaded) + next_cost > budget:
        return Decision(n, BUDGET)
    return Decision(n + 1)


def decide_case(case: list[Cell], replicates: Mapping[str, Mapping[int, Replicate]], policy: Policy,
                unavailable: Container[Config], original: str) -> dict[str, Decision]:
    """The decisions of one case's cells, taken together (``replicates`` by cell key, then index;
    ``original``: the environment the self-check's twin copies). A cell wanting another process
    for its open pairs gets none where none of their other sides gets one too (``UNPAIRED``): it
    would take turns with nobody it is compared with. Stops only spread, so this ends."""
    have = {c.key: replicates.get(c.key, {}) for c in case}
    partners: dict[str, list[Cell]] = {}
    decisions: dict[str, Decision] = {}
    # The self-check's twin gets what its original gets, so their pair is measured as any other.
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
            # A side not stopped, or holding the index this one would take, may still pair.
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
    """(whether a pair of ``cell``'s is still open, None where it has none; whether ``most``
    processes could answer one; the other sides of those that could)."""
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
            answered.append(found.verdict in ("faster", "slower") or found.within(LEVEL_WITHIN))
            if not answered[-1] and found.reachable(most, LEVEL_WITHIN):
                reachable.append(other)
    return (None if not answered else not all(answered)), bool(reachable), reachable


def policy_for(options: RunOptions) -> Policy:
    """The policy a run's options ask for."""
    most = options.max_processes if options.adaptive else options.processes
    return Policy(least=options.processes, most=most or options.processes, rel_ci=options.rel_ci,
                  budget_s=options.max_time)


def timer_settings(options: RunOptions) -> TimerSettings:
    """Each process's timer settings, for the workers' jobs and ``results.json``: the cell's budget
    and fewest samples shared among the most processes it may take, so the budget pays for every one."""
    count = policy_for(options).most
    return TimerSettings(target_sample_s=options.target_sample, budget_s=options.max_time / count,
                         min_samples=max(LEAST_SAMPLES_PER_PROCESS, -(-options.min_samples // count)),
                         rel_ci=options.rel_ci, warmup_s=options.warmup, cold=options.cold)


def short_of_quiet(quiet: int, spent_s: float, rested: int, rounds: int) -> bool:
    """Whether a case whose rounds took ``spent_s`` and found ``quiet`` of them free of load takes
    turns for longer (``rested`` of every case's ``rounds`` were quiet): only one that found a
    quiet round is likely to find more."""
    return 0 < quiet < QUIET_ROUNDS and spent_s < STRETCH_S and rested >= RESTED_SHARE * max(rounds, 1)


def pairs_on(mine: Sequence[float], sampling: Sequence[Sequence[float]], short_of_quiet: bool = False) -> bool:
    """Whether a cell done by its own rule (its samples ``mine``) takes the next round's turn
    beside its case's cells still sampling (``sampling``): with one whose calls take within
    ``PAIR_ON_WITHIN`` of its own time (a 110 ms call's pairs with 2 ms ones are decided by the
    rounds they have), or with every one where its case is ``short_of_quiet``."""
    def near(other: Sequence[float]) -> bool:
        if not mine or not other:
            return True
        x, y = statistics.median(mine), statistics.median(other)
        return max(x, y) < PAIR_ON_WITHIN * min(x, y)

    return short_of_quiet or any(near(other) for other in sampling)


def takes_turn(extra: bool, taken: int, done_at: int | None, short_of_quiet: bool = False) -> bool:
    """Whether a cell that took ``taken`` turns, done by its own rule after ``done_at`` (None:
    not done), takes the next: for ``PAIR_ON_TURNS`` times ``done_at`` at most (``QUIET_STRETCH``
    where ``short_of_quiet``); a cell in the other allocator state (``extra``) pairs with nothing."""
    stretch = QUIET_STRETCH if short_of_quiet else PAIR_ON_TURNS
    return done_at is None or (not extra and taken < stretch * done_at)


class RunState:
    """What a run has measured and what it still lacks, under its replication policy."""

    def __init__(self, cells: list[Cell], options: RunOptions,
                 replicates: dict[str, dict[int, Replicate]] | None = None,
                 unavailable: dict[Config, str] | None = None) -> None:
        self.cells = cells
        self.options = options
        #: cell key -> replicate index -> what that replicate measured.
        self.replicates = {k: dict(v) for k, v in (replicates or {}).items()}
        self.unavailable = dict(unavailable or {})
        # Workers that died before they were ready (not journalled, so --resume retries them).
        self.start_failures: dict[Config, str] = {}
        self._policy = policy_for(options)
        # by case: (replicates seen of each of its cells, each cell's decision by key)
        self._decisions: dict[str, tuple[tuple[int, ...], dict[str, Decision]]] = {}
        self._cases: dict[str, list[Cell]] = {}
        for c in cells:
            self._cases.setdefault(case_key(c), []).append(c)

    @classmethod
    def of(cls, journalled: JournalState) -> "RunState":
        """The state of the run a journal holds."""
        return cls(journalled.cells, journalled.options, journalled.replicates, journalled.unavailable)

    def configs(self) -> list[Config]:
        """The (backend, device, environment) configurations of the plan, in plan order."""
        return list(dict.fromkeys(c.config for c in self.cells))

    def decision(self, cell: Cell) -> Decision:
        """How many replicates the cell wants now (not the most it may), and why it stopped."""
        key = case_key(cell)
        case = self._cases.get(key, [cell])
        seen = tuple(len(self.replicates.get(c.key, {})) for c in case)
        cached = self._decisions.get(key)
        if cached is None or cached[0] != seen or cell.key not in cached[1]:
            cached = (seen, decide_case(case if cell in case else [cell], self.replicates, self._policy,
                                        self.unavailable, twin_of(self.options)))
            self._decisions[key] = cached
        return cached[1][cell.key]

    def wanted(self, cell: Cell) -> int:
        """How many replicates the cell should have, given those it has."""
        return self.decision(cell).wanted

    def replicates_of(self, cell: Cell) -> dict[int, Replicate]:
        """The cell's replicates so far, by index."""
        return self.replicates.get(cell.key, {})

    def missing_indices(self, cell: Cell) -> list[int]:
        """The replicate indices the cell still lacks (its configuration's availability aside)."""
        have = self.replicates_of(cell)
        return [i for i in range(self.wanted(cell)) if i not in have]

    def todo(self, config: Config, index: int) -> list[Cell]:
        """The cells of ``config`` still lacking their ``index``-th replicate, to try now."""
        if config in self.unavailable or config in self.start_failures:
            return []
        return [c for c in self.cells if c.config == config and index < self.wanted(c)
                and index not in self.replicates_of(c)]

    def missing(self) -> int:
        """How many (cell, replicate) measurements are still to make (0: the run is complete)."""
        # Not from todo(): a worker that failed to start leaves its cells missing, and resumable.
        return sum(len(self.missing_indices(c)) for c in self.cells if c.config not in self.unavailable)

    def cells_done(self) -> int:
        """How many cells have every replicate they want (or cannot run here)."""
        return sum(1 for c in self.cells
                   if c.config in self.unavailable or not self.missing_indices(c))

    def add(self, cell: Cell, index: int, replicate: Replicate) -> None:
        """Count a replicate (once it is journalled)."""
        self.replicates.setdefault(cell.key, {})[index] = replicate
