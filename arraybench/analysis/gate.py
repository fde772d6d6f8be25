"""The one decision of every gate (``compare --fail-above``, ``run --compare ... --fail-above``,
the pytest plugin's ``--arraybench-fail-above``): whether a run may pass against its baseline.
``render/gate_text`` says why not, in the caller's option names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model.record import Record
    from .compare import CellChange, Comparison
    from .memory import MemoryChange


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

    @property
    def passed(self) -> bool:
        return self.comparable and self.complete and not (
            self.slower or self.broken or self.unmeasured or self.missing or self.incomparable
            or self.unjudged or self.grown)


def judge_gate(comparison: "Comparison", limit: float, *, memory: bool = False) -> GateVerdict:
    """Whether the new run passes a gate of ``limit``: it fails on a significant slowdown above
    the limit, a cell that broke, a cell the new run did not measure (skipped) or does not hold,
    a cell measured in the base run that cannot be compared, a new run that was interrupted, a
    slowdown above it that no test could judge (one process on a side), or no cell compared at
    all; with
    ``memory``, on a cell whose peak memory per call grew above the limit
    (``analysis.memory.memory_growth_above``)."""
    grown = []
    if memory:
        from .memory import memory_growth_above

        grown = memory_growth_above(comparison, limit)
    return GateVerdict(limit, slower=comparison.slowdowns_above(limit), broken=comparison.broken(),
                       unmeasured=comparison.unmeasured(), missing=comparison.missing(),
                       incomparable=comparison.incomparable(), complete=comparison.new_complete,
                       unjudged=comparison.unjudged_above(limit), grown=grown,
                       comparable=bool(comparison.comparable))
