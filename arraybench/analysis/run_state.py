"""What a run has measured and what it still lacks: the one answer to "what is missing".

The live run (``session``) and a journal read back (``--resume``, and the check that a folder holds
an unfinished run, ``outdir``) ask the same object, under the run's replication policy.
"""

from __future__ import annotations

from .policy import Decision, decide_case, policy_for
from ..host.environments import twin_of
from ..model.cell import Config, case_key
from ..model.journal import JournalState
from ..model.replicate import Replicate
from ..model.options import RunOptions
from ..model.cell import Cell


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
