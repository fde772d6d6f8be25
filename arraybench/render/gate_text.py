"""A gate's verdict (``analysis/gate``) in words: one line per reason it fails, each naming the
options its user types (the command line's, or the pytest plugin's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis.gate import GateVerdict, judge_gate
from ..errors import one_line
from ..units import format_ratio

if TYPE_CHECKING:
    from ..analysis.compare import Comparison


def _cells(cells, detail) -> str:
    return one_line(", ".join(f"{c.new.workload} {c.new.size_label} {c.new.config_label}{detail(c)}"
                              for c in cells))


def _records(records) -> str:
    return one_line(", ".join(f"{r.workload} {r.size_label} {r.config_label}" for r in records))


def gate_lines(verdict: GateVerdict, *, fail_option: str = "--fail-above",
               processes_option: str = "--processes") -> list[str]:
    """Why the new run must not pass (none: it passes)."""
    limit = verdict.limit
    lines = []
    if verdict.slower:
        n = len(verdict.slower)
        lines.append(f"{n} significant slowdown{'s' if n != 1 else ''} above {limit:.0%}: "
                     + _cells(verdict.slower, lambda c: f" ({c.ratio:.3f})"))
    if verdict.broken:
        many = len(verdict.broken) != 1
        lines.append(f"{len(verdict.broken)} cell{'s that were' if many else ' that was'} ok in the base "
                     "run broke in the new run: " + _cells(verdict.broken, lambda c: f" ({c.new.status})"))
    if verdict.unmeasured:
        many = len(verdict.unmeasured) != 1
        names = _cells(verdict.unmeasured, lambda c: f" ({c.new.reason})" if c.new.reason else "")
        lines.append(f"{len(verdict.unmeasured)} cell{'s' if many else ''} measured in the base run "
                     f"{'were' if many else 'was'} not measured in the new run: {names}; "
                     f"{fail_option} passes nothing unseen")
    if verdict.missing:
        n = len(verdict.missing)
        lines.append(f"{n} cell{'s' if n != 1 else ''} measured in the base run "
                     f"{'are' if n != 1 else 'is'} missing from the new run: {_records(verdict.missing)}; "
                     f"{fail_option} passes nothing unseen")
    if verdict.incomparable:
        n = len(verdict.incomparable)
        lines.append(f"{n} cell{'s' if n != 1 else ''} measured in the base run could not be compared: "
                     + _cells(verdict.incomparable, lambda c: f" ({c.note})" if c.note else "")
                     + f"; {fail_option} passes nothing unseen")
    if not verdict.complete:
        lines.append(f"the new run is incomplete (interrupted before every cell was measured); "
                     f"{fail_option} passes nothing unseen")
    if verdict.unjudged:
        n = len(verdict.unjudged)
        lines.append(f"{n} cell{'s' if n != 1 else ''} slower than {limit:.0%} could not be judged (one "
                     f"process on a side; measure with {processes_option} 2 or more): "
                     + _cells(verdict.unjudged, lambda c: f" ({c.ratio:.3f})")
                     + f"; {fail_option} passes nothing unseen")
    if verdict.grown:
        n = len(verdict.grown)
        lines.append(f"{n} peak memory growth{'s' if n != 1 else ''} above {limit:.0%}: "
                     f"{one_line(', '.join(m.text() for m in verdict.grown))}")
    if not verdict.comparable:
        lines.append(f"no cell could be compared (none was valid in both runs); {fail_option} "
                     "passes nothing unseen")
    return lines


def gate_notes(comparison: "Comparison", limit: float, *, against_option: str = "--against REF") -> list[str]:
    """What a gate of ``limit`` could not decide (said, not failed): slowdowns it cannot tell from
    the machine's drift between the two runs, and how to gate without that doubt."""
    verdict = judge_gate(comparison, limit)
    if not verdict.undecided:
        return []
    lines = []
    for u in verdict.undecided:
        c = u.change
        why = (f"other processes used {u.others_cores:.1f} of {u.cpus} cores while one of the two runs "
               f"measured it, which can make a time up to {format_ratio(u.load_factor)} slower"
               if u.others_cores is not None else
               f"the {u.cells} cells compared moved by {format_ratio(u.drift or 1.0)} together: the machine "
               "between the two runs, or a change to all of them")
        lines.append(f"cannot decide whether {c.new.workload} {c.new.size_label} {c.new.config_label} is "
                     f"slower ({c.ratio:.3f}): {why}; measure both versions side by side in one session "
                     f"({against_option}) to decide it")
    return lines


def gate_failures(comparison: "Comparison", limit: float, *, fail_option: str = "--fail-above",
                  processes_option: str = "--processes", memory: bool = False) -> list[str]:
    """Why the new run must not pass a gate of ``limit`` (``analysis.gate.judge_gate``), one line
    per reason; none: it passes."""
    return gate_lines(judge_gate(comparison, limit, memory=memory), fail_option=fail_option,
                      processes_option=processes_option)
