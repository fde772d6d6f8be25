"""The one decision of every gate (``compare --fail-above``, ``run --compare ... --fail-above``,
the pytest plugin's ``--arraybench-fail-above``): whether a run may pass against its baseline.
``render/comparison`` says why not, in the caller's option names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .memory import MemoryChange, memory_growth_above

if TYPE_CHECKING:
    from ..model.record import Record
    from .compare import CellChange, Comparison


#: A baseline was measured at another moment. Where either side ran while others kept this share
#: of the cores busy, a slowdown is the code's only beyond what that load can make of a time...
BUSY_SHARE = 0.25
#: ...this factor, or the load average over the cores where higher: 20x still fails, 1.5x does not.
LOAD_FACTOR = 2.0
#: ...and, where this many cells were compared, only beyond how far they all moved together.
DRIFT_CELLS = 3


@dataclass(frozen=True)
class Undecided:
    """A slowdown above the limit the gate cannot tell from the machine's drift: measured while
    ``others_cores`` of ``cpus`` were busy, or within the ``drift`` all ``cells`` moved by."""

    change: "CellChange"
    others_cores: float | None = None
    cpus: int = 1
    load_factor: float = 1.0
    drift: float | None = None
    cells: int = 0


@dataclass(frozen=True)
class GateVerdict:
    """What fails a gate; ``render/comparison.gate_failures`` says each."""

    # Each list as ``Comparison``'s method of that name says; ``grown``: memory gates only.
    slower: list["CellChange"] = field(default_factory=list)
    broken: list["CellChange"] = field(default_factory=list)
    unmeasured: list["CellChange"] = field(default_factory=list)
    missing: list["Record"] = field(default_factory=list)
    incomparable: list["CellChange"] = field(default_factory=list)
    complete: bool = True
    unjudged: list["CellChange"] = field(default_factory=list)
    grown: list["MemoryChange"] = field(default_factory=list)
    comparable: bool = True  # whether any cell was valid in both runs
    #: Slowdowns the gate cannot tell from the machine's drift: said, and not failed.
    undecided: list[Undecided] = field(default_factory=list)


def _busy(r: "Record") -> tuple[float, int, float] | None:
    """(others' cores, the machine's cores, how much slower that load could make a time), if busy."""
    u = r.usage
    if u is None or u.others_cores is None:
        return None
    cpus = u.machine_cpus or 1
    factor = max(LOAD_FACTOR, (u.load_average or 0.0) / cpus)
    return (u.others_cores, cpus, factor) if u.others_cores >= BUSY_SHARE * cpus else None


def _moved(comparison: "Comparison", limit: float) -> tuple[list["CellChange"], list[Undecided]]:
    """The significant slowdowns above ``limit``: (the code's, those the machine's drift may explain)."""
    n = len(comparison.comparable)
    drift = comparison.geometric_mean if n >= DRIFT_CELLS else None
    slower, undecided = [], []
    for c in comparison.slowdowns_above(limit):
        busy = _busy(c.base) or _busy(c.new)
        if busy is not None and c.ratio <= (1 + limit) * busy[2]:  # a slowdown's ratio is never None
            undecided.append(Undecided(c, others_cores=busy[0], cpus=busy[1], load_factor=busy[2]))
        elif drift is not None and c.ratio / drift <= 1 + limit:
            undecided.append(Undecided(c, drift=drift, cells=n))
        else:
            slower.append(c)
    return slower, undecided


def judge_gate(comparison: "Comparison", limit: float, *, memory: bool = False) -> GateVerdict:
    """Whether the new run passes a gate of ``limit`` (with ``memory``, peak memory grown above it fails
    too): each way it fails is a field of ``GateVerdict``; a slowdown the machine's drift may explain
    is ``undecided``: said, not failed."""
    grown = memory_growth_above(comparison, limit) if memory else []
    slower, undecided = _moved(comparison, limit)
    return GateVerdict(slower=slower, undecided=undecided, broken=comparison.broken(),
                       unmeasured=comparison.unmeasured(), missing=comparison.missing(),
                       incomparable=comparison.incomparable(), complete=comparison.new_complete,
                       unjudged=comparison.unjudged_above(limit), grown=grown,
                       comparable=bool(comparison.comparable))
