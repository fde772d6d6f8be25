"""What a run has measured and what it still lacks: the one answer to "what is missing".

The live run (``session``) and a journal read back (``--resume``, and the check that a folder holds
an unfinished run, ``outdir``) ask the same object, under the run's replication policy.
"""

from __future__ import annotations

from .pairs import paired_ratio
from .policy import UNPAIRED, Decision, decide, policy_for
from ..host.environments import TWIN, twin_of
from ..model.cell import Config, case_key
from ..model.journal import JournalState
from ..model.replicate import Replicate
from ..model.options import RunOptions
from ..model.cell import Cell
from ..numeric.stopping import ANSWERED_LEVEL


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
        """How many replicates the cell wants now, and why it stopped, if it did
        (``analysis.policy``: adaptive cells count what they want now, not what they may)."""
        key = case_key(cell)
        case = self._cases.get(key, [cell])
        seen = tuple(len(self.replicates.get(c.key, {})) for c in case)
        cached = self._decisions.get(key)
        if cached is None or cached[0] != seen or cell.key not in cached[1]:
            cached = (seen, self._decide_case(case if cell in case else [cell]))
            self._decisions[key] = cached
        return cached[1][cell.key]

    def _decide_case(self, case: list[Cell]) -> dict[str, Decision]:
        """Each cell's decision, the cells of one case together: a cell that wants another
        process for its open pairs gets none where none of those pairs' other sides gets one
        too (``UNPAIRED``), as that process would take turns with nobody it is to be compared
        with. Stops only spread, so this ends."""
        have = {c.key: self.replicates.get(c.key, {}) for c in case}
        partners: dict[str, list[Cell]] = {}
        decisions: dict[str, Decision] = {}
        # The self-check's twin takes part in no verdict: it gets what its original gets, so that
        # the pair of the two is measured as every other pair is.
        twins = [c for c in case if c.environment == TWIN]
        judged = [c for c in case if c.environment != TWIN]
        for c in judged:
            open_pairs, reachable, partners[c.key] = self._open_pairs(c, judged)
            decisions[c.key] = decide([r for _, r in sorted(have[c.key].items())], self._policy,
                                      open_pairs, reachable)
        changed = True
        while changed:
            changed = False
            for c in judged:
                n, wanted = len(have[c.key]), decisions[c.key]
                if wanted.stop or wanted.wanted <= n or n < self._policy.least or not partners[c.key]:
                    continue
                # A side that has not stopped (it wants more, or is still to measure the
                # index this one has) may still pair; so may one that has the next index.
                if not any(not decisions[p.key].stop or n in have[p.key] for p in partners[c.key]):
                    decisions[c.key] = Decision(n, UNPAIRED)
                    changed = True
        original = twin_of(self.options)
        for t in twins:
            same = next((c for c in judged if c.config == (t.backend, t.device, original)
                         and c.mode == t.mode), None)
            decisions[t.key] = decisions[same.key] if same is not None else \
                decide([r for _, r in sorted(have[t.key].items())], self._policy, None, False)
        return decisions

    def _open_pairs(self, cell: Cell, case: list[Cell]) -> tuple[bool | None, bool, list[Cell]]:
        """(Whether a pair ``cell`` is part of still lacks its answer, None where it has no pair;
        whether the most processes allowed could answer one of those, ``Ratio.reachable``; the
        other sides of those that could)."""
        mine = self.replicates.get(cell.key, {})
        answered: list[bool] = []
        reachable: list[Cell] = []
        for other in case:
            if other is cell or other.config in self.unavailable:
                continue
            theirs = self.replicates.get(other.key, {})
            common = sorted(set(mine) & set(theirs))
            found = paired_ratio([mine[i] for i in common], [theirs[i] for i in common])
            if found is not None:
                answered.append(found.verdict in ("faster", "slower") or found.within(ANSWERED_LEVEL))
                if not answered[-1] and found.reachable(self._policy.most, ANSWERED_LEVEL):
                    reachable.append(other)
        return (None if not answered else not all(answered)), bool(reachable), reachable

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
        # Counted from the replicates, not from todo(): a worker that failed to start leaves its
        # cells missing (a failure of this run, resumable), though no more are tried now.
        return sum(len(self.missing_indices(c)) for c in self.cells if c.config not in self.unavailable)

    def cells_done(self) -> int:
        """How many cells have every replicate they want (or cannot run here)."""
        return sum(1 for c in self.cells
                   if c.config in self.unavailable or not self.missing_indices(c))

    def add(self, cell: Cell, index: int, replicate: Replicate) -> None:
        """Count a replicate (once it is journalled)."""
        self.replicates.setdefault(cell.key, {})[index] = replicate
