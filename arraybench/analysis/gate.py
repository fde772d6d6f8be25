"""The one decision of every gate (``compare --fail-above``, ``run --compare ... --fail-above``,
the pytest plugin's ``--arraybench-fail-above``): whether a run may pass against its baseline.
``render/comparison`` says why not, in the caller's option names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model.record import Record
    from .compare import CellChange, Comparison
    from .memory import MemoryChange


#: A stored baseline was measured at another moment of the machine. Where either side's cell was
#: measured while other processes kept this share of the cores busy, a slowdown is the code's only
#: beyond what that load can make of a time (under a bursty tenant README's gate failed unchanged
#: code as 1.52x slower)...
BUSY_SHARE = 0.25
#: ...taken as this factor, or the load average over the cores where that is higher: a planted 20x
#: regression still fails on a busy machine, a 1.5x drift does not.
LOAD_FACTOR = 2.0
#: ...and, where this many cells or more were compared, only beyond how far they all moved (the
#: geometric mean of their ratios: the machine's drift between the two moments, or a change to all).
DRIFT_CELLS = 3


@dataclass(frozen=True)
class Undecided:
    """A slowdown above the limit that the gate cannot tell from the machine's own drift between
    the two runs: either side measured while ``others_cores`` of ``cpus`` were busy, or within
    the ``drift`` that all ``cells`` compared moved by together."""

    change: "CellChange"
    others_cores: float | None = None
    cpus: int = 1
    #: How many times slower the load could make a time (``LOAD_FACTOR`` or the load over the cores).
    load_factor: float = 1.0
    drift: float | None = None
    cells: int = 0


@dataclass(frozen=True)
class GateVerdict:
    """What fails a gate of ``limit`` (0.1: 10%); ``passed`` where nothing does."""

    limit: float
    #: Significant slowdowns above the limit.
    slower: list["CellChange"] = field(default_factory=list)
    #: Cells ok in the base run that broke in the new one.
    broken: list["CellChange"] = field(default_factory=list)
    #: Cells measured in the base run and not in the new one.
    unmeasured: list["CellChange"] = field(default_factory=list)
    #: Cells measured in the base run that the new run does not hold at all.
    missing: list["Record"] = field(default_factory=list)
    #: Cells measured in the base run that cannot be compared (sizes differ, no usable time).
    incomparable: list["CellChange"] = field(default_factory=list)
    #: Whether the new run ran to its end (an interrupted one measured only some cells).
    complete: bool = True
    #: Slower than the limit, with no test to judge it (one process on a side).
    unjudged: list["CellChange"] = field(default_factory=list)
    #: Peak memory per call grown above the limit (a memory gate only).
    grown: list["MemoryChange"] = field(default_factory=list)
    #: Whether any cell was valid in both runs.
    comparable: bool = True
    #: Slowdowns above the limit the gate cannot tell from the machine's own drift between the
    #: two moments, each with why: said, and not failed.
    undecided: list[Undecided] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.comparable and self.complete and not (
            self.slower or self.broken or self.unmeasured or self.missing or self.incomparable
            or self.unjudged or self.grown)


def _busy(r: "Record") -> tuple[float, int, float] | None:
    """(cores other processes used, the machine's cores, how many times slower that load could make
    a time) where ``r`` was measured busy."""
    u = r.usage
    if u is None or u.others_cores is None:
        return None
    cpus = u.machine_cpus or 1
    factor = max(LOAD_FACTOR, (u.load_average or 0.0) / cpus)
    return (u.others_cores, cpus, factor) if u.others_cores >= BUSY_SHARE * cpus else None


def _moved(comparison: "Comparison", limit: float) -> tuple[list["CellChange"], list[Undecided]]:
    """The significant slowdowns above ``limit``, split into those the gate takes for the code's
    and those it cannot tell from the machine's drift between the two runs."""
    n = len(comparison.comparable)
    drift = comparison.geometric_mean if n >= DRIFT_CELLS else None
    slower, undecided = [], []
    for c in comparison.slowdowns_above(limit):
        busy = _busy(c.base) or _busy(c.new)
        if busy is not None and c.ratio is not None and c.ratio <= (1 + limit) * busy[2]:
            undecided.append(Undecided(c, others_cores=busy[0], cpus=busy[1], load_factor=busy[2]))
        elif drift is not None and c.ratio is not None and c.ratio / drift <= 1 + limit:
            undecided.append(Undecided(c, drift=drift, cells=n))
        else:
            slower.append(c)
    return slower, undecided


def judge_gate(comparison: "Comparison", limit: float, *, memory: bool = False) -> GateVerdict:
    """Whether the new run passes a gate of ``limit``: it fails on a significant slowdown above
    the limit, a cell that broke, a cell the new run did not measure (skipped) or does not hold,
    a cell measured in the base run that cannot be compared, a new run that was interrupted, a
    slowdown above it that no test could judge (one process on a side), or no cell compared at
    all. A slowdown it cannot tell from the machine's drift between the two runs (``_moved``) is
    ``undecided``: said, not failed. With
    ``memory``, on a cell whose peak memory per call grew above the limit
    (``analysis.memory.memory_growth_above``)."""
    grown = []
    if memory:
        from .memory import memory_growth_above

        grown = memory_growth_above(comparison, limit)
    slower, undecided = _moved(comparison, limit)
    return GateVerdict(limit, slower=slower, undecided=undecided, broken=comparison.broken(),
                       unmeasured=comparison.unmeasured(), missing=comparison.missing(),
                       incomparable=comparison.incomparable(), complete=comparison.new_complete,
                       unjudged=comparison.unjudged_above(limit), grown=grown,
                       comparable=bool(comparison.comparable))
